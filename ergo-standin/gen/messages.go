package gen

// MessageDownPID tells that a monitored process has terminated.
type MessageDownPID struct {
	PID    PID
	Reason error
}

// MessageDownProcessID tells that a monitored named process has terminated.
type MessageDownProcessID struct {
	ProcessID ProcessID
	Reason    error
}

// MessageDownAlias tells that a monitored alias has gone.
type MessageDownAlias struct {
	Alias  Alias
	Reason error
}

// MessageDownEvent tells that a monitored event has gone.
type MessageDownEvent struct {
	Event  Event
	Reason error
}

// MessageDownNode tells that the connection to a monitored node is lost.
type MessageDownNode struct {
	Name Atom
}

// MessageExitPID is the exit signal of a linked process.
type MessageExitPID struct {
	PID    PID
	Reason error
}

// MessageExitProcessID is the exit signal of a linked named process.
type MessageExitProcessID struct {
	ProcessID ProcessID
	Reason    error
}

// MessageExitAlias is the exit signal of a linked alias.
type MessageExitAlias struct {
	Alias  Alias
	Reason error
}

// MessageExitEvent is the exit signal of a linked event.
type MessageExitEvent struct {
	Event  Event
	Reason error
}

// MessageExitNode is the exit signal of a linked node.
type MessageExitNode struct {
	Name Atom
}

// MessageEventStart tells the producer that an event got its first subscriber.
type MessageEventStart struct {
	Name Atom
}

// MessageEventStop tells the producer that an event lost its last subscriber.
type MessageEventStop struct {
	Name Atom
}

// MessageEvent is a published event message.
type MessageEvent struct {
	Event     Event
	Timestamp int64 // unix ns
	Message   any
}
