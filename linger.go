package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// The node-level helpers (the liveness hub and the shared watchers) are
// started by an election and serve every election of their node. They end
// when no election has used them for helperLinger.
//
// Why not live as long as the node: the framework's Stop sends its
// shutdown exit to the processes registered when Stop begins and then
// waits for every process, with no deadline. An election that is in a
// step while its node begins to stop may start a helper after that
// broadcast; nothing would ever tell that helper to end, and the node's
// Stop would wait for it forever. A helper that ends once its elections
// are gone cannot outlive them by more than helperLinger.

// helperLinger is how long a node-level helper stays up with no election
// to serve: long enough that elections restarting one by one (a
// supervisor's restart, a rolling deploy of the embedding actor) keep the
// same helper, short enough that a node's Stop is not kept waiting.
const helperLinger = time.Second

// lingerCheck reminds an idle helper to look whether it is still idle.
type lingerCheck struct{}

// linger tracks how long a helper has had nothing to serve.
type linger struct {
	idleSince time.Time // zero while some election uses the helper
	armed     bool      // a lingerCheck is on its way
}

// idle records that the helper has no election to serve from now, and
// arms the check that ends it if none comes.
func (l *linger) idle(process gen.Process, now time.Time) {
	if l.idleSince.IsZero() == false {
		return
	}
	l.idleSince = now
	l.arm(process, helperLinger)
}

// busy records that an election uses the helper.
func (l *linger) busy() { l.idleSince = time.Time{} }

func (l *linger) arm(process gen.Process, after time.Duration) {
	if l.armed {
		return
	}
	if _, err := process.SendAfter(process.PID(), lingerCheck{}, after); err == nil {
		l.armed = true
	}
}

// expired handles a lingerCheck: true when the helper has been idle for
// helperLinger and must end now. Its name goes first, so that an election
// looking for the helper from then on starts a new one rather than
// sending to this one as it ends.
func (l *linger) expired(process gen.Process, now time.Time) bool {
	l.armed = false
	if l.idleSince.IsZero() {
		return false
	}
	if left := helperLinger - now.Sub(l.idleSince); left > 0 {
		l.arm(process, left)
		return false
	}
	process.UnregisterName()
	return true
}
