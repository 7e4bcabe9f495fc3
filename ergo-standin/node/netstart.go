package node

import "ergo.services/ergo/internal/netstack"

// startStack starts the network layer (temporary local-only stand-in until
// netstack.Start exists).
var startStack = func(opts netstack.Options) (stack, error) {
	return disabledNetwork{}, nil
}
