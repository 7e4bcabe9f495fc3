package gen

// Messages a registrar publishes through the event Registrar().Event()
// returns (framework: gen/registrar_events.go, v3.3.0). The stand-in's
// built-in registrar publishes the two node messages, for the nodes of
// this host.

// MessageRegistrarNodeJoined: a node registered with the registrar.
type MessageRegistrarNodeJoined struct {
	Name Atom
}

// MessageRegistrarNodeLeft: a node's registration ended (it stopped, or
// its link to the registrar broke).
type MessageRegistrarNodeLeft struct {
	Name Atom
}
