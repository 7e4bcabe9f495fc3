package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// What the library does only for a framework older than the one it
// requires (v3.3.0), kept so that the real-framework check, which builds
// against the v3.2 development branch (docs/performance.md, section 0),
// still converges. Each rule here is off when both ends of the connection
// show the fix.

// redialPause is how long a node waits, after it reset a silent connection,
// before it dials the peer again: nothing when both nodes advertise
// EnableSimultaneousConnect (v3.3.0 settles simultaneous connects with one
// connection per pair, so an immediate dial is accepted); otherwise
// nothing for the node whose name sorts first, pause for the other one.
//
// Why, on a framework without the fix. The silent connection usually has
// a twin on the other side: after two nodes dialed each other at the same
// instant, the v3.2 development branch leaves each of them holding a
// connection the other does not use, and each acceptor refuses a new dial
// while it holds one. A reset on one side followed by a dial at once is
// refused by the other, whose connection is still there, and leaves a new
// silent connection behind: the two sides, each resetting in turn, never
// converge. The other side finds its own connection silent and resets it
// within its silence bound; if one of the two waits that long before it
// dials, the other's dial finds no connection there and is accepted, and
// the waiting side then uses that connection. Sends by name from other
// processes of the node still dial at once: code of your own that sends to
// the peer all the time can keep the pair from converging on such a
// framework.
func redialPause(self, peer gen.Atom, own, theirs gen.NetworkFlags, pause time.Duration) time.Duration {
	if own.EnableSimultaneousConnect && theirs.EnableSimultaneousConnect {
		return 0
	}
	if self < peer {
		return 0
	}
	return pause
}
