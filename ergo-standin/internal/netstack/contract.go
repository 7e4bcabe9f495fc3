// Package netstack is the stand-in's network layer: TCP acceptors, the cookie
// handshake, framing, the codec for registered types, static routes and the
// built-in registrar. The node runtime (package node) owns process semantics
// and talks to this package only through the declarations in this file.
//
// CONTRACT between the node runtime and the network layer. Do not change the
// exported shapes here without updating both sides.
//
// Behaviour reproduced from the framework (v320 branch; the mirror's master
// has the same network code):
//
//   - A connection is a pool of TCP links (default 3, set by the accepting
//     side's handshake: net/handshake.Create(Options{PoolSize})). The
//     accepting side advertises the local address of the accepted socket;
//     the dialing side opens the extra links and every re-dial there, not
//     through the route that made the first link. Frames of one sender
//     share a link (per-sender order); see conn for what ends a
//     connection and what a re-dialed link still carries.
//   - Handshakes are accepted one at a time per acceptor. An acceptor
//     authenticates with the node's cookie, never with
//     AcceptorOptions.Cookie (node/network.go startAcceptor and accept).
//   - Types, errors and atoms are registered once per OS process
//     (net/edf); a registered error keeps its identity only on connections
//     formed after it was registered.
//   - A send connects first, then encodes; a failed write is not reported.
//     A message that does not decode is logged and dropped.
//
// Simultaneous connect is resolved by default (the connection dialed by the
// smaller node name wins, see admit). Setting ERGO_STANDIN_BUGS to a list
// containing simultaneous-connect (read when a stack starts) reproduces the
// v320 branch instead: both nodes may keep different connections, report
// each other connected, and deliver nothing either way.
package netstack // import "ergo.services/ergo/internal/netstack"

import (
	"ergo.services/ergo/gen"
)

// FrameKind says what a Frame carries. The node runtime gives the kinds their
// meaning; the network layer only encodes and delivers them.
type FrameKind uint8

const (
	FrameSend          FrameKind = 1  // From, To (PID|ProcessID|Alias), Priority, Message
	FrameRequest       FrameKind = 2  // From, To, Ref, Priority, Message (a Call)
	FrameResponse      FrameKind = 3  // From, To (PID), Ref, Message or Err
	FrameMonitor       FrameKind = 4  // From (local monitor owner), To (target PID|ProcessID|Alias|Event), Ref
	FrameDemonitor     FrameKind = 5  // From, To
	FrameLink          FrameKind = 6  // From, To, Ref
	FrameUnlink        FrameKind = 7  // From, To
	FrameReply         FrameKind = 8  // To (PID that asked), Ref, Err (nil = ok), Message ([]gen.MessageEvent for an event): reply to Monitor/Link
	FrameDown          FrameKind = 9  // From (dead target PID), To (monitor owner PID), Target (PID|ProcessID as monitored), Err = reason
	FrameExit          FrameKind = 10 // From (dead/linked PID), To (PID), Target, Err = reason
	FrameExitSignal    FrameKind = 11 // SendExit: From, To (PID), Err = reason
	FrameInspectUnused FrameKind = 12 // reserved
	FrameEvent         FrameKind = 13 // From (producer), Priority, Message = gen.MessageEvent; once per subscribing node

	frameLast = FrameEvent
)

// Frame is one unit the node runtime exchanges with a peer node. Message may
// be any value the codec can encode: builtin kinds, gen identifiers (Atom,
// PID, ProcessID, Ref, Alias, Event), registered types, and errors.
type Frame struct {
	Kind     FrameKind
	From     gen.PID
	To       any // gen.PID | gen.ProcessID | gen.Alias | nil
	Target   any // gen.PID | gen.ProcessID | nil
	Ref      gen.Ref
	Priority gen.MessagePriority
	Message  any
	Err      error
}

// Handler receives what arrives from peers. Implemented by the node runtime.
// Calls come from the goroutines of a connection's receive queues,
// concurrently, as in the framework: a frame goes to the queue its order
// byte names (orderOf: mostly the recipient), and the frames of one queue
// are handed over in the order they were read. The frames of one sender
// (From) use one link while the pool does not change, so those of one
// sender to one recipient keep their order, except FrameDown, FrameExit
// and FrameReply, which take the links and the queues round-robin (the
// framework sends them without an order). Implementations must not block
// for long (push to mailboxes and return).
type Handler interface {
	// HandleFrame is called for every decoded frame from an authenticated peer.
	HandleFrame(peer gen.Atom, creation int64, frame Frame)
	// HandleConnected is called once a connection to peer is established.
	HandleConnected(peer gen.Atom)
	// HandleDisconnected is called once when an established connection to
	// peer is gone (closed, reset, failed read, Disconnect, network stop).
	// The node then delivers ErrNoConnection downs/exits (TerminatedTargetNode).
	HandleDisconnected(peer gen.Atom)
}

// Options configure a network stack for one node.
type Options struct {
	Name     gen.Atom
	Creation int64
	Network  gen.NetworkOptions
	Log      gen.Log
	Handler  Handler
	// Events, when set, is the node that registers and publishes the
	// event of the built-in registrar (Registrar().Event()).
	Events EventProducer
	// Node is the node a custom registrar (NetworkOptions.Registrar) is
	// given when the stack registers with it.
	Node gen.NodeRegistrar
}

// EventProducer registers and publishes node-level events (gen.Node does).
type EventProducer interface {
	RegisterEvent(name gen.Atom, options gen.EventOptions) (gen.Ref, error)
	SendEvent(name gen.Atom, token gen.Ref, options gen.MessageOptions, message any) error
}
