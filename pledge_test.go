package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loseLeader makes "b" the harness actor's leader at term 1 and then
// reports its lost connection: the actor is failing over fast.
func loseLeader(t *testing.T, h *stateHarness) {
	t.Helper()
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
	h.advance(freshness(h.e.cfg)) // the promise after the loss has run out
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	h.e.takeEffects()
	require.True(t, h.e.timers[timerFast].armed)
}

func TestFastFailoverWinsWithPledgedVotesInOneRoundTrip(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	loseLeader(t, h)
	h.advance(10 * time.Millisecond)
	askedAt := h.now
	out := h.fire(timerFast)
	req := sentTo[msgPreVote](out, "c")
	require.Len(t, req, 1)
	assert.True(t, req[0].Pledge, "a fast pre-vote asks for pledges")

	h.advance(3 * time.Millisecond)
	out = h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 2})
	assert.Equal(t, uint64(2), h.e.term)
	assert.True(t, h.e.confirming, "won with its own vote and c's pledge")
	assert.Empty(t, sentTo[msgVote](out, "c"), "c's vote is in already: no second round trip")
	stamp, ok := h.e.sentAt(1)
	require.True(t, ok)
	assert.Equal(t, askedAt, stamp, "round 1 counts from the pre-vote: the pledge was given after it, not after the election started")
	assert.Equal(t, askedAt.Add(150*time.Millisecond), h.e.roundCloses)
	assert.Equal(t, uint64(1), h.e.pledgedElections)
}

func TestOrdinaryPreVotesAskForNoPledge(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
	out := h.expireElection()
	req := sentTo[msgPreVote](out, "c")
	require.Len(t, req, 1)
	assert.False(t, req[0].Pledge, "an election timeout's pre-vote may race others: no pledges")
	h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 2})
	assert.Equal(t, uint64(1), h.e.dropped["unexpected_pledge"])
	assert.Equal(t, 1, len(h.e.votes), "a pledge nobody asked for is no vote")
}

// The voter's side: a pledge is given exactly when a vote for Term+1 would
// be, and binds like one.
func TestVoterPledgesOnlyWhatAVoteWouldGrant(t *testing.T) {
	fast := msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3, Pledge: true}
	t.Run("a voter that lost the leader pledges to the survivor ranked first", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		loseLeader(t, h)
		out := h.recv("f", fast)
		reply := sentTo[msgPreVoteReply](out, "f")[0]
		assert.True(t, reply.Granted)
		assert.Equal(t, uint64(2), reply.Pledged)
		assert.Equal(t, uint64(1), h.e.term, "a pledge adopts no term")
		assert.False(t, h.e.timers[timerFast].armed, "its own failover is over")
		assert.Equal(t, uint64(1), h.e.pledgesGiven)
	})
	t.Run("a voter that still hears its leader pledges nothing", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		out := h.recv("f", fast)
		reply := sentTo[msgPreVoteReply](out, "f")[0]
		assert.False(t, reply.Granted)
		assert.Zero(t, reply.Pledged)
	})
	t.Run("no pledge unless asked", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		loseLeader(t, h)
		plain := fast
		plain.Pledge = false
		reply := sentTo[msgPreVoteReply](h.recv("f", plain), "f")[0]
		assert.True(t, reply.Granted)
		assert.Zero(t, reply.Pledged)
	})
	t.Run("one pledge per term", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f", "d", "c")
		loseLeader(t, h)
		h.recv("f", msgHello{ClusterID: "c", Term: 1, Name: "leader"})
		h.recv("d", msgHello{ClusterID: "c", Term: 1, Name: "leader"})
		require.Equal(t, uint64(2), sentTo[msgPreVoteReply](h.recv("f", fast), "f")[0].Pledged)
		reply := sentTo[msgPreVoteReply](h.recv("d", fast), "d")[0]
		assert.Zero(t, reply.Pledged, "term 2 is pledged to f already")
		assert.False(t, reply.Granted, "and f holds this voter's promise")
		reply = sentTo[msgPreVoteReply](h.recv("f", fast), "f")[0]
		assert.Equal(t, uint64(2), reply.Pledged, "asking again gets the same answer")
		// f is gone and its promise over: d is ranked first now, but term 2
		// stays 0's
		h.e.down(h.now, pid("f"), gen.ErrNoConnection)
		h.advance(150 * time.Millisecond)
		reply = sentTo[msgPreVoteReply](h.recv("d", fast), "d")[0]
		assert.True(t, reply.Granted)
		assert.Zero(t, reply.Pledged)
		assert.Equal(t, uint64(1), h.e.dropped["pledged_elsewhere"])
	})
	t.Run("only the survivor ranked first gets a pledge", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f", "d", "c")
		loseLeader(t, h)
		h.recv("f", msgHello{ClusterID: "c", Term: 1, Name: "leader"})
		h.recv("d", msgHello{ClusterID: "c", Term: 1, Name: "leader"})
		reply := sentTo[msgPreVoteReply](h.recv("d", fast), "d")[0]
		assert.True(t, reply.Granted, "d may pre-vote")
		assert.Zero(t, reply.Pledged, "but f, which this node reaches, is ranked before it")
		h.e.down(h.now, pid("f"), gen.ErrNoConnection)
		reply = sentTo[msgPreVoteReply](h.recv("d", fast), "d")[0]
		assert.Equal(t, uint64(2), reply.Pledged, "with f gone, d is ranked first")
		reply = sentTo[msgPreVoteReply](h.recv("c", fast), "c")[0]
		assert.Zero(t, reply.Pledged, "a survivor ranked after this node gets none")
	})
	t.Run("a voter in its quiet period pledges nothing", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		loseLeader(t, h)
		h.freshStart()
		reply := sentTo[msgPreVoteReply](h.recv("f", fast), "f")[0]
		assert.False(t, reply.Granted)
		assert.Zero(t, reply.Pledged)
	})
	t.Run("a candidate pledges nothing", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		h.expireElection()
		h.recv("b", msgPreVoteReply{ClusterID: "c", Term: 0, Granted: true})
		require.Equal(t, roleCandidate, h.e.role)
		reply := sentTo[msgPreVoteReply](h.recv("f", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3, Pledge: true}), "f")[0]
		assert.Zero(t, reply.Pledged, "it voted for itself in term 1 and will campaign for term 2")
	})
}

func TestPledgeBindsTheVoterLikeAVote(t *testing.T) {
	fast := msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3, Pledge: true}
	t.Run("it becomes the vote of the term when the voter gets there", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f", "c")
		loseLeader(t, h)
		h.recv("f", fast)
		h.advance(200 * time.Millisecond) // the promise to 0 is over
		out := h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 4})
		assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "term 2's vote was pledged to 0")
		assert.Equal(t, pid("f"), h.e.votedFor)
		out = h.recv("f", msgVote{ClusterID: "c", Term: 2, ViewSize: 4})
		assert.True(t, sentTo[msgVoteReply](out, "f")[0].Granted, "the candidate it pledged to gets it")
	})
	t.Run("its own campaign skips the pledged term", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		loseLeader(t, h)
		h.recv("f", fast)
		h.expireElection()
		h.recv("f", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true})
		assert.Equal(t, roleCandidate, h.e.role)
		assert.Equal(t, uint64(3), h.e.term, "term 2 is 0's to win")
		assert.Equal(t, pid("a"), h.e.votedFor)
	})
	t.Run("it deposes no leader, and lends it no lease while the candidate may count it", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		loseLeader(t, h)
		h.recv("f", fast)
		out := h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 7})
		ack := sentTo[msgHeartbeatAck](out, "b")
		require.Len(t, ack, 1)
		assert.Equal(t, uint64(1), ack[0].Term, "answered at term 1: the leader is not told of a higher term")
		assert.Zero(t, ack[0].Round, "an ack that counted would let b lead next to 0, elected with this pledge")
		assert.Equal(t, pid("b"), h.e.leader, "b is followed again")
		assert.False(t, h.e.mayDelegateAcks(), "nor may the hub acknowledge b's rounds for it")
		h.advance(150 * time.Millisecond)
		out = h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 8})
		assert.Equal(t, uint64(8), sentTo[msgHeartbeatAck](out, "b")[0].Round, "once the promise to 0 is over, the acks count")
	})
	t.Run("a leader it still knew but no longer heard is forgotten", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
		h.advance(160 * time.Millisecond) // its promise to b ran out; no election timeout yet
		require.Equal(t, pid("b"), h.e.leader)
		reply := sentTo[msgPreVoteReply](h.recv("f", fast), "f")[0]
		require.Equal(t, uint64(2), reply.Pledged)
		assert.Equal(t, gen.PID{}, h.e.leader, "as a vote for term 2 would have ended it")
		assert.False(t, h.e.mayDelegateAcks())
	})
}

func TestCandidateCountsPledgesOnlyWhileTheRoundIsOpen(t *testing.T) {
	t.Run("a pledge after ElectionTimeoutMin is only a pre-vote grant", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		loseLeader(t, h)
		h.fire(timerFast)
		h.advance(150 * time.Millisecond)
		out := h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 2})
		assert.Equal(t, uint64(1), h.e.dropped["late_grant"])
		assert.Equal(t, roleCandidate, h.e.role, "the grant still wins the pre-vote")
		assert.False(t, h.e.confirming, "but the vote is asked for again")
		assert.Len(t, sentTo[msgVote](out, "c"), 1)
	})
	t.Run("a later pledge of a larger view counts as a vote of the election under way", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c", "d", "e")
		loseLeader(t, h)
		h.fire(timerFast)
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 2})
		out := h.recv("d", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true})
		require.Equal(t, roleCandidate, h.e.role, "pre-vote quorum 3 of 5")
		assert.Equal(t, 2, len(h.e.votes), "its own vote and c's pledge")
		assert.Empty(t, sentTo[msgVote](out, "c"), "c has voted")
		assert.Len(t, sentTo[msgVote](out, "d"), 1)
		h.recv("e", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 2})
		assert.True(t, h.e.confirming, "e's pledge is the third vote")
	})
	t.Run("a pledge from a node that left the view is not counted", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		loseLeader(t, h)
		h.fire(timerFast)
		h.e.leave(node("c"))
		h.e.takeEffects()
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 2})
		assert.False(t, h.e.confirming)
	})
	t.Run("a pledge for another term is not a vote", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		loseLeader(t, h)
		h.fire(timerFast)
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true, Pledged: 7})
		assert.Equal(t, uint64(1), h.e.dropped["unexpected_pledge"])
		assert.False(t, h.e.confirming)
	})
}

// A leader whose lease ran out while its followers still follow it (their
// acknowledgements came late, or every node was stalled) asks at once to
// lead the next term, with pledges, and is led again within one round
// trip (reclaim).
func TestALeaderWhoseLeaseRanOutReclaimsTheNextTermInOneRoundTrip(t *testing.T) {
	h := leaderOfThree(t)
	term := h.e.term
	h.advance(h.e.cfg.electionTimeoutMax) // it has led for a while
	h.e.sendHeartbeats()
	h.e.takeEffects()
	h.advance(time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: term, Round: h.e.round})
	h.advance(holdingLease(h.e.cfg)) // the acks of later rounds came too late
	h.e.checkLease(h.now)
	out := h.e.takeEffects()
	require.Equal(t, roleFollower, h.e.role, "the lease ran out: it stood down")
	for _, peer := range []string{"b", "c"} {
		req := sentTo[msgPreVote](out, peer)
		require.Len(t, req, 1, "asks %s at once, without waiting for an election timeout", peer)
		assert.True(t, req[0].Pledge, "and asks for its pledge")
		assert.Equal(t, term, req[0].Term)
	}
	assert.Equal(t, uint64(1), h.e.reclaims)

	h.advance(2 * time.Millisecond)
	out = h.recv("b", msgPreVoteReply{ClusterID: "c", Term: term, Granted: true, Pledged: term + 1})
	assert.Equal(t, term+1, h.e.term)
	assert.True(t, h.e.confirming, "won the next term with its own vote and b's pledge")
	assert.Empty(t, sentTo[msgVote](out, "b"), "no second round trip")

	// a term whose lease lapses as soon as it is won is not reclaimed:
	// the node is too busy to hold one
	h.e.confirmResult(h.now, true, nil)
	h.e.published(h.now)
	h.e.takeEffects()
	require.Equal(t, roleLeader, h.e.role)
	h.advance(holdingLease(h.e.cfg) + time.Millisecond)
	h.e.checkLease(h.now)
	out = h.e.takeEffects()
	require.Equal(t, roleFollower, h.e.role)
	assert.Empty(t, sentTo[msgPreVote](out, "b"), "no reclaim of a term won %s ago", holdingLease(h.e.cfg))
	assert.Equal(t, uint64(1), h.e.reclaims)
}

// A lease that ends because the leader lost the connections to a quorum
// is not reclaimed at once: the others may be failing over fast already,
// and the pre-vote could not reach a quorum anyway.
func TestALeaderCutOffFromAQuorumDoesNotReclaim(t *testing.T) {
	h := leaderOfThree(t)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.e.down(h.now, pid("c"), gen.ErrNoConnection)
	h.e.checkLease(h.now)
	out := h.e.takeEffects()
	require.Equal(t, roleFollower, h.e.role)
	assert.Empty(t, sentTo[msgPreVote](out, "b"))
	assert.Zero(t, h.e.reclaims)
}

// The follower's side of reclaim: it grants and pledges to the leader it
// still follows, ranked first or not, and still refuses everyone else
// while it hears that leader.
func TestAFollowerPledgesToTheLeaderItStillFollows(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	leader, other := "b", "c"
	if h.e.rankedFirst(node("b")) {
		leader, other = "c", "b" // a leader the failover order does not put first
	}
	require.False(t, h.e.rankedFirst(node(leader)))
	h.recv(leader, msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid(leader)})
	require.Equal(t, pid(leader), h.e.leader)
	ask := msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3, Pledge: true}

	out := h.recv(other, ask)
	reply := sentTo[msgPreVoteReply](out, other)[0]
	assert.False(t, reply.Granted, "anyone else is refused while the leader is heard")
	assert.Equal(t, pid(leader), reply.Leader)

	out = h.recv(leader, ask)
	reply = sentTo[msgPreVoteReply](out, leader)[0]
	assert.True(t, reply.Granted, "the leader itself asks: its lease ran out")
	assert.Equal(t, uint64(2), reply.Pledged, "and gets the vote of the next term with the grant")
	assert.Equal(t, uint64(1), h.e.term, "a pledge adopts no term")
	assert.Equal(t, gen.PID{}, h.e.leader, "it follows no leader of term 1 any more (pledgeBinds)")

	out = h.recv(other, ask)
	reply = sentTo[msgPreVoteReply](out, other)[0]
	assert.Zero(t, reply.Pledged, "the vote of term 2 is given")
}

// A follower whose election timeout comes long past its deadline (its node
// did not run: a stall of every node) keeps its leader one more timeout,
// and the leader, whose lease ran out in the same stall, reclaims the next
// term through it at once. Once per silence: the next timeout campaigns.
func TestAStalledFollowerWaitsForItsLeadersReclaim(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
	h.now = h.e.electionDeadline.Add(stallLateness(h.e.cfg)) // stopped for a while
	out := h.fire(timerElection)
	assert.Empty(t, sentTo[msgPreVote](out, "b"), "no campaign on a silence that was this node's own")
	assert.Equal(t, pid("b"), h.e.leader, "it still follows b")
	assert.Equal(t, uint64(1), h.e.stallGraces)
	assert.True(t, h.e.electionDeadline.After(h.now), "one more election timeout, from now")

	out = h.recv("b", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3, Pledge: true})
	reply := sentTo[msgPreVoteReply](out, "b")[0]
	assert.True(t, reply.Granted)
	assert.Equal(t, uint64(2), reply.Pledged, "b's reclaim gets its pledge")

	t.Run("once per silence", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		h.recv("b", msgHello{ClusterID: "c"})
		h.recv("c", msgHello{ClusterID: "c"})
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		h.now = h.e.electionDeadline.Add(stallLateness(h.e.cfg))
		h.fire(timerElection)
		h.now = h.e.electionDeadline.Add(stallLateness(h.e.cfg)) // stalled again, nothing heard
		out := h.fire(timerElection)
		assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "the same silence twice: it campaigns")
		assert.Equal(t, uint64(1), h.e.stallGraces)
	})
	t.Run("a timeout on time campaigns", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		h.recv("b", msgHello{ClusterID: "c"})
		h.recv("c", msgHello{ClusterID: "c"})
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		h.now = h.e.electionDeadline.Add(stallLateness(h.e.cfg) - time.Millisecond)
		out := h.fire(timerElection)
		assert.Len(t, sentTo[msgPreVote](out, "c"), 1)
		assert.Zero(t, h.e.stallGraces)
	})
}
