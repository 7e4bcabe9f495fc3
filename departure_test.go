package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An outgoing leader (it handed over on its way out and waits for its
// successor, departure.go) learns the successor's term from its vote
// request, which is what ends it, and grants nothing: its grant would leave
// the view with it a moment later.
func TestAnOutgoingLeaderLearnsItsSuccessorsTermButGrantsNothing(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e")
	for _, p := range []string{"b", "c", "d", "e"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.becomeLeader("b", "c")
	h.advance(10 * time.Millisecond)
	h.recv("d", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
	handedOver := h.e.term
	successor := h.e.handover(h.now, "the actor is stopping (shutdown)", nil)
	require.Equal(t, node("d"), successor)
	h.e.outgoing = true
	h.e.takeEffects()

	h.advance(time.Millisecond)
	out := h.recv("d", msgVote{ClusterID: "c", Term: handedOver + 1, Name: "leader", ViewSize: 5, Handover: true})
	assert.Equal(t, handedOver+1, h.e.term, "the successor's term is what tells the outgoing leader to end")
	replies := sentTo[msgVoteReply](out, "d")
	require.Len(t, replies, 1, "the vote request is answered, so the candidate sees a live connection")
	assert.False(t, replies[0].Granted, "an outgoing leader grants no vote")
	assert.Equal(t, uint64(1), h.e.dropped["outgoing"])
	assert.Equal(t, gen.PID{}, h.e.votedFor)
}

// A grant that reaches a leader after its win counts as an acknowledgement
// of round 1, like the grants that made it. So a voter whose process stops
// right after the election (as an outgoing leader's did before it stopped
// granting) does not take the lease's quorum along: found on real nodes,
// where the new leader stood down at once and the cluster was leaderless
// for an election timeout.
func TestALateGrantKeepsTheLeaseWhenAVoterLeaves(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e")
	for _, p := range []string{"b", "c", "d", "e"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.becomeLeader("b", "c")
	h.advance(time.Millisecond)
	h.recv("d", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	assert.Zero(t, h.e.dropped["unexpected_reply"], "a late grant of this term is not an unexpected reply")

	h.advance(time.Millisecond)
	h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown)
	h.e.takeEffects()
	require.Equal(t, 4, h.e.viewSize(), "a terminated voter leaves the view at once")
	assert.Equal(t, roleLeader, h.e.role, "self, b and d still acknowledged round 1: a quorum of the view of 4")
	assert.True(t, h.e.leaseUntil.After(h.now), "the lease holds")
}

// A grant that comes after the vote round closed proves nothing (a
// restarted voter may have granted twice, lease.go); a leader does not
// count it either.
func TestAGrantAfterTheRoundClosedDoesNotRenewTheLease(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e")
	for _, p := range []string{"b", "c", "d", "e"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.becomeLeader("b", "c")
	h.now = h.e.roundCloses
	h.recv("d", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	assert.Zero(t, h.e.members[node("d")].ackRound)
}

// The end of a connection that a newer one already replaced (a half-open
// connection that outlived a silent partition, whose other end closed it
// seconds before and has since reconnected and been elected) is no
// observed loss of the leader: the leader noticed nothing now and may lead
// over the newer connection, with this node's acknowledgements in its
// lease. Found in TestLabPartitionWalkthrough/silent: both followers of
// the new leader failed over 100 ms after they accepted its new connection
// and elected another leader while it still led. The follower keeps its
// promise, starts no fast failover and says Hello at once; a down with no
// connection left is a failover as before.
func TestTheEndOfAReplacedConnectionIsNoLossOfTheLeader(t *testing.T) {
	lose := func(reconnected bool) (*stateHarness, effects) {
		h := newStateHarness(t, Options{AssumeSymmetricConnectionLoss: true}, "b", "c")
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
		require.True(t, h.e.promisedUntil.After(h.now), "the ack promised the leader")
		h.advance(time.Millisecond)
		require.True(t, h.e.downReported(h.now, h.now, pid("b"), gen.ErrNoConnection, reconnected))
		return h, h.e.takeEffects()
	}
	fastArmed := func(out effects) bool {
		for _, r := range out.timers {
			if r.kind == timerFast && r.after >= 0 {
				return true
			}
		}
		return false
	}

	h, out := lose(true)
	assert.False(t, fastArmed(out), "no fast failover for the end of a replaced connection")
	assert.Equal(t, pid("b"), h.e.promisedTo, "the promise to the leader holds")
	assert.True(t, h.e.promisedUntil.After(h.now))
	assert.Len(t, sentTo[msgHello](out, "b"), 1, "the member is probed at once over the newer connection")

	h, out = lose(false)
	assert.True(t, fastArmed(out), "a down with no connection left is a failover")
	assert.Equal(t, gen.PID{}, h.e.promisedTo, "and releases the promise")
}
