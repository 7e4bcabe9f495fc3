package leader

import (
	"errors"
	"time"

	"ergo.services/ergo/gen"
)

// A leader's lost followers can wait too.
//
// When a node crashes under many elections, each survivor's elections get
// a down for their member there at once. Those whose leader died fail over
// (they may not wait); the followers of a living leader get theirs late
// (downHints). The third kind is a survivor's own leaders: a third of the
// elections, each losing one follower. A leader that still reaches a quorum
// without that follower does nothing with its loss that cannot wait: it
// keeps its lease (acknowledgements from the others renew it), and the
// probes of the lost member start lazyDownPause after the loss anyway.
// Handled at once, those downs were half of the survivor's steps in the
// milliseconds of the failover: a third of a wave's CPU, which the
// failing-over elections waited for (docs/performance.md, section 6b).
//
// So a shared watcher hands a leader a lost connection lazyDownPause late
// when the leader can spare the member: it reaches a quorum without it and
// without every member whose loss it was already handed late (spare counts
// what the actor's view showed at its last step, deferred what it has not
// handled since). Nothing that safety rests on waits:
//   - IsLeader and LeaseExpiry read the loss board, which the watcher marks
//     at once: acknowledgements over the lost connection stop counting the
//     moment the watcher gets the down, as before.
//   - A down the leader cannot spare comes at once, and the actor handles
//     every loss it was handed late before it (takeDeferred), so a leader
//     that loses its quorum in several steps stands down on the step that
//     breaks it, as if each down had come at once.
//   - Peers, HasPeer and the successor of a handover skip members whose
//     node the framework reports as not connected, so the member the
//     leader has not heard about yet is neither listed nor chosen.
//
// A private watcher (coalescing disabled, or a shared watcher that could
// not be started) hands every down at once, as before.

// spareMembers is how many members this node, as a published leader, can
// lose and still reach a quorum; 0 in any other role.
func (e *election) spareMembers() int {
	if e.role != roleLeader || e.unpublished || e.quorum() <= 1 {
		return 0
	}
	return max(e.reachable()-e.quorum(), 0)
}

// setSpare records the actor's spareMembers after a step.
func (h *downHints) setSpare(spare int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spare = spare
}

// deferLeaderLoss reports whether a shared watcher may hand down, a lost
// connection, to a leader late, and then counts it as handed late.
func (h *downHints) deferLeaderLoss(down peerDown) bool {
	if h == nil || errors.Is(down.Reason, gen.ErrNoConnection) == false {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d, ok := h.deferred[down.PID.Node]; ok && d.PID == down.PID {
		return true
	}
	if h.following || h.spare-len(h.deferred) < 1 {
		return false
	}
	if h.deferred == nil {
		h.deferred = make(map[gen.Atom]peerDown)
	}
	h.deferred[down.PID.Node] = down
	return true
}

// stillDeferred reports whether the loss of pid is still to be handed over
// late: the actor has not taken it early (takeDeferred).
func (h *downHints) stillDeferred(pid gen.PID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.deferred[pid.Node]
	return ok && d.PID == pid
}

// lossHandled is called by the actor for a down handed over late: if it was
// a leader's loss, the member it spared is now lost in its view, and the
// spare shrinks with it in one step, so the watcher never sees the loss
// counted neither as deferred nor in the spare.
func (h *downHints) lossHandled(pid gen.PID) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d, ok := h.deferred[pid.Node]; ok && d.PID == pid {
		delete(h.deferred, pid.Node)
		h.spare = max(h.spare-1, 0)
		return true
	}
	return false
}

// takeDeferred returns the losses still to be handed over late and forgets
// them; the actor handles them now, and the spare shrinks by as many.
func (h *downHints) takeDeferred() []peerDown {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.deferred) == 0 {
		return nil
	}
	list := make([]peerDown, 0, len(h.deferred))
	for _, d := range h.deferred {
		list = append(list, d)
	}
	h.spare = max(h.spare-len(list), 0)
	clear(h.deferred)
	return list
}

// postponeLeaderLoss queues a leader's loss that its hints deferred
// (deferLeaderLoss), to be handed over with the other late downs unless
// the actor takes it first.
func (w *watcher) postponeLeaderLoss(actor gen.PID, down peerDown, hints *downHints) {
	w.late = append(w.late, lateDown{to: actor, down: down, due: w.clock().Add(hints.pause), leaderLoss: hints})
	if w.lateArmed == false {
		w.armLate(hints.pause)
	}
}

// takeLeaderLosses has a leader handle the losses handed to it late before
// a down that comes at once: that one may break its quorum only together
// with them.
func (a *Actor) takeLeaderLosses(now time.Time) {
	if a.state.role != roleLeader {
		return
	}
	for _, d := range a.hints.takeDeferred() {
		a.hinted.spare = -1 // the hints changed under the actor: tell them again
		if a.state.downAt(now, d.At, d.PID, d.Reason) {
			a.state.backdateLoss(d.PID.Node, d.Since)
		}
	}
}
