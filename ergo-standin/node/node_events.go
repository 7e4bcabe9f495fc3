package node

import (
	"ergo.services/ergo/gen"
)

// The event methods of gen.Node: events produced by the node itself, with
// the core PID as producer and sender (framework: node/node.go).

// SendEvent publishes message on an event the node registered, with
// options.Priority; the other options are ignored.
func (n *node) SendEvent(name gen.Atom, token gen.Ref, options gen.MessageOptions, message any) error {
	return n.sendEvent(n.core, name, token, options.Priority, message)
}

// RegisterEvent registers an event produced by the node.
func (n *node) RegisterEvent(name gen.Atom, options gen.EventOptions) (gen.Ref, error) {
	return n.registerEvent(name, n.core, options)
}

// UnregisterEvent ends an event the node registered.
func (n *node) UnregisterEvent(name gen.Atom) error {
	return n.unregisterEvent(name, n.core)
}
