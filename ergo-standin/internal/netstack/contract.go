// Package netstack is the stand-in's network layer: TCP acceptors, the cookie
// handshake, framing, the codec for registered types, static routes and the
// built-in registrar. The node runtime (package node) owns process semantics
// and talks to this package only through the declarations in this file.
//
// CONTRACT between the node runtime and the network layer. Do not change the
// exported shapes here without updating both sides.
package netstack

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
	FrameMonitor       FrameKind = 4  // From (local monitor owner), To (target PID|ProcessID), Ref
	FrameDemonitor     FrameKind = 5  // From, To
	FrameLink          FrameKind = 6  // From, To, Ref
	FrameUnlink        FrameKind = 7  // From, To
	FrameReply         FrameKind = 8  // To (PID that asked), Ref, Err (nil = ok): reply to Monitor/Link
	FrameDown          FrameKind = 9  // From (dead target PID), To (monitor owner PID), Target (PID|ProcessID as monitored), Err = reason
	FrameExit          FrameKind = 10 // From (dead/linked PID), To (PID), Target, Err = reason
	FrameExitSignal    FrameKind = 11 // SendExit: From, To (PID), Err = reason
	FrameInspectUnused FrameKind = 12 // reserved
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
// Calls come from connection reader goroutines; one peer's frames are handed
// over in the order that peer sent them. Implementations must not block for
// long (push to mailboxes and return).
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
}
