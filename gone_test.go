package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goneHellos returns the nodes the effects say Hello to over an existing
// connection only (gone.go).
func goneHellos(out effects) []gen.Atom {
	var nodes []gen.Atom
	for _, o := range out.probeGone {
		if _, ok := o.message.(msgHello); ok {
			nodes = append(nodes, o.node)
		}
	}
	return nodes
}

// runSweeps fires the ghost timer every 10 ms (early firings find nothing
// due) while it is armed and until until, and collects what the sweeps
// asked for about the nodes watched (gone.go). connected says whether the
// actor finds them connected.
func (h *stateHarness) runSweeps(until time.Time, connected bool) (hellos, samples, resets []gen.Atom) {
	hellos, samples, resets, _ = h.runSweepsTimed(until, connected)
	return hellos, samples, resets
}

// runSweepsTimed is runSweeps, which also reports when the first reset came.
func (h *stateHarness) runSweepsTimed(until time.Time, connected bool) (hellos, samples, resets []gen.Atom, firstReset time.Time) {
	h.t.Helper()
	for h.e.timers[timerGhost].armed && h.now.Before(until) {
		h.advance(10 * time.Millisecond)
		out := h.fire(timerGhost)
		for _, node := range goneHellos(out) {
			hellos = append(hellos, node)
			if connected == false {
				h.e.goneUnconnected(node)
			}
		}
		for _, node := range out.sampleInbound {
			if h.e.isGone(node) {
				samples = append(samples, node)
			}
		}
		for _, node := range out.reset {
			if h.e.isGone(node) {
				if firstReset.IsZero() {
					firstReset = h.now
				}
				resets = append(resets, node)
			}
		}
	}
	return hellos, samples, resets, firstReset
}

// A member whose process terminated leaves the view, and for GhostTTL its
// node's connection is watched: while the framework reports it connected,
// Hellos go over it by name; when they go unanswered for the silence bound
// (the connection sampled halfway), the connection is reset, and the actor
// is told the node is gone, so that it does not dial it again.
func TestGoneMemberConnectionIsWatchedAndReset(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	require.True(t, h.e.down(h.now, pid("b"), gen.TerminateReasonShutdown))
	out := h.e.takeEffects()
	require.Equal(t, 2, h.e.viewSize(), "b left the view")
	require.Empty(t, sentTo[msgHello](out, "b"), "no Hello by name at once: the node is going down")
	require.True(t, h.e.isGone(node("b")))

	left := h.now
	hellos, samples, resets, resetAt := h.runSweepsTimed(left.Add(h.e.cfg.ghostTTL), true)
	require.NotEmpty(t, hellos, "Hellos over the connection that outlived the process")
	assert.Equal(t, []gen.Atom{node("b")}, hellos[:1])
	assert.Contains(t, samples, node("b"), "the inbound count is sampled first")
	// (runSweeps counts only resets of watched nodes: the actor resets
	// those without dialing, resetConnection)
	require.NotEmpty(t, resets, "an unanswered watch resets the connection")
	assert.Equal(t, node("b"), resets[0])
	assert.Less(t, resetAt.Sub(left), h.e.cfg.electionTimeoutMax+h.e.silenceBound()+50*time.Millisecond,
		"one silence bound after the first Hello, not at the pace of the Hellos")

	h.runSweeps(left.Add(h.e.cfg.ghostTTL+time.Second), true)
	assert.False(t, h.e.timers[timerGhost].armed, "the watch ends after GhostTTL")
	assert.False(t, h.e.isGone(node("b")))
	assert.Equal(t, 2, h.e.viewSize(), "watching never counts b in the view")
}

// A node the actor finds unconnected costs nothing: no silence is measured,
// so its connection is never reset, and the watch ends after GhostTTL.
func TestGoneMemberWithoutConnectionIsNeverReset(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	require.True(t, h.e.down(h.now, pid("b"), gen.TerminateReasonShutdown))
	h.e.takeEffects()
	hellos, samples, resets := h.runSweeps(h.now.Add(h.e.cfg.ghostTTL+time.Second), false)
	assert.NotEmpty(t, hellos, "the actor is asked, and finds no connection")
	assert.Empty(t, samples)
	assert.Empty(t, resets)
	assert.False(t, h.e.timers[timerGhost].armed)
}

// A restarted member that answers the watch's Hello is back in the view;
// its node is a member again and no longer watched.
func TestGoneMemberThatAnswersIsBackInTheView(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	require.True(t, h.e.down(h.now, pid("b"), gen.TerminateReasonShutdown))
	h.e.takeEffects()
	hellos, _, _ := h.runSweeps(h.now.Add(h.e.cfg.electionTimeoutMax), true)
	require.Equal(t, []gen.Atom{node("b")}, hellos, "the first Hello one election timeout after the departure")

	restarted := gen.PID{Node: node("b"), ID: 2000, Creation: 2}
	h.e.receive(h.now, restarted, msgHelloReply{ClusterID: "c", Name: "leader"})
	h.e.takeEffects()
	assert.Equal(t, 3, h.e.viewSize())
	assert.Equal(t, restarted, h.e.members[node("b")].pid)
	assert.False(t, h.e.isGone(node("b")))
}

// A member unreachable for GhostTTL is watched too: the Hellos that went
// unanswered may have gone into a connection that outlived its node. Leave
// ends the watch at once.
func TestGhostDroppedAfterGhostTTLIsWatchedUntilLeave(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	h.e.takeEffects()
	h.advance(h.e.cfg.ghostTTL)
	h.fire(timerGhost)
	require.Equal(t, 2, h.e.viewSize(), "b dropped after GhostTTL")
	require.True(t, h.e.isGone(node("b")))

	h.e.leave(node("b"))
	assert.False(t, h.e.isGone(node("b")), "Leave: nothing to watch")
}
