// Package testhook lets the stand-in's own tests freeze a node's handling of
// what arrives from its peers, as a stopped (SIGSTOP) or overloaded peer
// would look to the other side. It is internal to the stand-in module: code
// built against the real framework cannot use it, and nothing in the
// runtime changes while no hook is set.
package testhook // import "ergo.services/ergo/internal/testhook"

import (
	"sync/atomic"

	"ergo.services/ergo/gen"
)

// FrameFunc runs on a connection's reader goroutine before node handles a
// frame from peer. Blocking in it stalls that reader: frames from peer are
// neither handled nor answered until it returns, and are then handled in
// order.
type FrameFunc func(node, peer gen.Atom)

var frame atomic.Pointer[FrameFunc]

// SetFrame installs fn (nil removes the hook).
func SetFrame(fn FrameFunc) {
	if fn == nil {
		frame.Store(nil)
		return
	}
	frame.Store(&fn)
}

// Frame is called by the node runtime for every frame from a peer.
func Frame(node, peer gen.Atom) {
	if fn := frame.Load(); fn != nil {
		(*fn)(node, peer)
	}
}
