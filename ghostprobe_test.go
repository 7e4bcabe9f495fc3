package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the ghost probes shared per node (ghostprobe.go). Each names
// what breaks when it fails.

// ghostOfB is a harness whose member b was met and then lost with its
// connection.
func ghostOfB(t *testing.T) *stateHarness {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.e.takeEffects()
	require.False(t, h.e.members[node("b")].unreachableSince.IsZero())
	return h
}

// An election whose Hello found another election's dial of the ghost's
// node failed or under way probes next at the backstop, not at its ghost
// spacing. Breaks: every election of a crashed node's survivors keeps
// waking every spacing until GhostTTL, or one whose member is alive (its
// process known) stops probing it.
func TestAGhostProbeWaitsOnTheBoardAfterASharedDialFailure(t *testing.T) {
	h := ghostOfB(t)
	m := h.e.members[node("b")]
	require.True(t, h.e.probeParked(h.now, node("b")))
	assert.Equal(t, h.now.Add(parkedProbeBackstop(h.e.cfg)), m.nextProbe)
	assert.Greater(t, parkedProbeBackstop(h.e.cfg), h.e.ghostProbeSpacing()*2, "the backstop is several spacings away")
	assert.True(t, h.e.timers[timerGhost].armed, "the sweep still comes, for the backstop or GhostTTL")

	// until the backstop, the sweeps that come send no Hello
	for h.now.Before(m.nextProbe.Add(-time.Millisecond)) && h.e.timers[timerGhost].armed && h.e.timers[timerGhost].due.Before(m.nextProbe) {
		h.now = h.e.timers[timerGhost].due
		assert.Empty(t, sentTo[msgHello](h.fire(timerGhost), "b"), "probed before the backstop")
	}

	h = newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.e.takeEffects()
	assert.False(t, h.e.probeParked(h.now, node("b")), "a member that is not a ghost is not parked")
}

// When the board says the node's connection is up, the waiting ghost is
// probed within one ghost spacing, at a random moment. Breaks: a heal is
// found only at the backstop, or all the node's elections say Hello in one
// burst.
func TestPeerBackProbesTheGhostWithinASpacing(t *testing.T) {
	h := ghostOfB(t)
	m := h.e.members[node("b")]
	require.True(t, h.e.probeParked(h.now, node("b")))
	h.advance(10 * time.Millisecond)
	h.e.sharedDialConnected(h.now, node("b"), true) // the board's word
	assert.Empty(t, sentTo[msgHello](h.e.takeEffects(), "b"), "no Hello at once: the node's elections would say it in one burst")
	assert.False(t, m.nextProbe.Before(h.now))
	assert.LessOrEqual(t, m.nextProbe.Sub(h.now), h.e.ghostProbeSpacing()*5/4+time.Millisecond)
	h.now = m.nextProbe
	assert.Len(t, sentTo[msgHello](h.fire(timerGhost), "b"), 1, "probed at its moment")
}

// The board hands each waiter over once, and forgets the waiters of a
// stopped node. Breaks: a waiter is never told, is told twice, or the
// board grows with every node name it has seen.
func TestTheBoardTellsEachGhostWaiterOnce(t *testing.T) {
	var b connectionBoard
	b.awaitPeer(nil, "x", pid("a"), t0)
	b.awaitPeer(nil, "x", pid("c"), t0)
	b.awaitPeer(nil, "y", pid("a"), t0)
	assert.ElementsMatch(t, []gen.PID{pid("a"), pid("c")}, b.peerBack(nil, "x"))
	assert.Empty(t, b.peerBack(nil, "x"), "told once")
	b.forget(nil)
	assert.Empty(t, b.peerBack(nil, "y"), "forgotten with its node")
}
