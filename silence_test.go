package leader

import (
	"testing"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A member that answers none of this node's requests for silenceBound has
// its connection reset, once per bound; an answer clears the suspicion.
func TestSilentConnectionIsReset(t *testing.T) {
	h := leaderOfThree(t)
	var resets []gen.Atom
	deadline := h.now.Add(h.e.silenceBound() * 3 / 2)
	for h.now.Before(deadline) {
		h.advance(h.e.cfg.heartbeatInterval)
		// c keeps answering; b has gone silent
		h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
		out := h.fire(timerHeartbeat)
		resets = append(resets, out.reset...)
	}
	assert.Equal(t, []gen.Atom{node("b")}, resets, "b once per bound, c never")
}

// A down caused by this node's own reset is not an observed failure of the
// leader: no fast failover, and the promise to the leader is kept.
func TestOwnResetStartsNoFastFailover(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.members[node("b")].lastReset = h.now
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	h.e.takeEffects()
	assert.False(t, h.e.timers[timerFast].armed, "no fast pre-vote after a reset of our own")
	out := h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.False(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "the promise to b still holds")
}

// After a connection loss (its own reset of a silent connection, or the
// loser of two crossed dials dropped by the framework), this node says
// Hello at once: a follower has no other reason to write to another
// follower, which would otherwise stay a ghost and leave the view although
// alive.
func TestConnectionLossProbesTheMemberAgain(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.e.members[node("b")].lastReset = h.now
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	out := h.e.takeEffects()
	assert.Len(t, sentTo[msgHello](out, "b"), 1, "a Hello to b right away")
}
