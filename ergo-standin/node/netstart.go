package node

import "ergo.services/ergo/internal/netstack"

// startStack starts the network layer; a variable so tests can swap it.
var startStack = func(opts netstack.Options) (stack, error) {
	s, err := netstack.Start(opts)
	if err != nil {
		return nil, err
	}
	return s, nil
}
