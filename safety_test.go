package leader

import (
	"math"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Regression tests of the leadership-safety rules, one event at a time.
// Each names the rule it guards; each fails if the rule is removed.

// candidateWithGrants makes node a a candidate of the next term over the
// given peers, holding grants from grants (vote replies already counted).
func candidateWithGrants(h *stateHarness, grants ...string) {
	h.t.Helper()
	for _, p := range h.e.sortedMembers() {
		h.recv(string(p.node), msgHello{ClusterID: "c"})
	}
	h.expireElection()
	for _, p := range h.e.sortedMembers() {
		h.recv(string(p.node), msgPreVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
		if h.e.role == roleCandidate {
			break
		}
	}
	require.Equal(h.t, roleCandidate, h.e.role)
	for _, p := range grants {
		h.recv(p, msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	}
	require.False(h.t, h.e.confirming, "not won yet")
}

// Finding 1: grants of members that left the view are not counted against
// the smaller view's quorum.
func TestGrantsOfRemovedMembersDoNotCount(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e", "f", "g")
	candidateWithGrants(h, "f", "g") // a, f, g: 3 of 7, quorum 4
	h.e.leave(node("f"))
	h.e.leave(node("g"))
	h.e.takeEffects()
	require.Equal(t, 5, h.e.viewSize())
	h.recv("b", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	assert.False(t, h.e.confirming, "a and b are 2 of the current view of 5; f and g no longer count")
	h.recv("c", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	assert.True(t, h.e.confirming, "a, b and c are a quorum of the current view")
}

// Finding 1, the pre-vote side of the same rule.
func TestPreVoteGrantsOfRemovedMembersDoNotCount(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e", "f", "g")
	for _, p := range []string{"b", "c", "d", "e", "f", "g"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.expireElection()
	require.True(t, h.e.preVoting)
	h.recv("f", msgPreVoteReply{ClusterID: "c", Granted: true})
	h.recv("g", msgPreVoteReply{ClusterID: "c", Granted: true})
	h.e.leave(node("f"))
	h.e.leave(node("g"))
	h.e.takeEffects()
	h.recv("b", msgPreVoteReply{ClusterID: "c", Granted: true})
	assert.True(t, h.e.preVoting, "2 of the view of 5 is no pre-vote majority")
	assert.Equal(t, uint64(0), h.e.term)
}

// Finding 2: a freshly started actor grants nothing (it may have voted or
// promised in its previous life) and does not campaign, for its quiet
// period; afterwards it grants as usual.
func TestFreshActorGrantsNothingDuringItsQuietPeriod(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.freshStart()
	out := h.recv("b", msgVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.False(t, sentTo[msgVoteReply](out, "b")[0].Granted, "fresh: no vote")
	out = h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.False(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "fresh: no pre-vote")
	assert.Equal(t, uint64(2), h.e.dropped["quiet_period"])

	h.now = h.e.startedAt.Add(h.e.quietPeriod() - time.Millisecond)
	h.e.timer(h.now, timerElection, h.e.timers[timerElection].generation)
	out = h.e.takeEffects()
	assert.Empty(t, sentTo[msgPreVote](out, "b"), "no campaign during the quiet period: its own vote is a grant too")

	h.now = h.e.startedAt.Add(h.e.quietPeriod())
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 1, ViewSize: 3}) // Join's Hello answered: the floor's word
	out = h.recv("b", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	assert.True(t, sentTo[msgVoteReply](out, "b")[0].Granted, "after the quiet period it votes again")
}

// Finding 2: the quiet period outlasts every promise and vote round of a
// previous incarnation: rounds are counted for ElectionTimeoutMin and
// promises last as long.
func TestQuietPeriodOutlastsRoundsAndPromises(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	assert.Greater(t, h.e.quietPeriod(), h.e.cfg.electionTimeoutMin)
	candidateWithGrants(h)
	assert.Equal(t, h.e.termChangedAt.Add(h.e.cfg.electionTimeoutMin), h.e.roundCloses)
}

// Finding 2: a grant processed after the candidate's round closed is not
// counted: it could be a second vote of a restarted voter.
func TestLateGrantsAfterTheRoundClosedAreNotCounted(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	candidateWithGrants(h)
	h.now = h.e.roundCloses
	h.recv("b", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	assert.False(t, h.e.confirming)
	assert.Equal(t, uint64(1), h.e.dropped["late_grant"])
}

// leaderOfThree makes a the leader of a, b, c with acks for round 2 from both.
func leaderOfThree(t *testing.T) *stateHarness {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.becomeLeader("b")
	return h
}

// Finding 3: the lease runs from the send time of the newest round a quorum
// acknowledged, not from when the acks were processed.
func TestLeaseRunsFromTheSendTimeOfTheAcknowledgedRound(t *testing.T) {
	h := leaderOfThree(t)
	require.True(t, h.e.leading(h.now))
	sent := h.now
	round := h.e.round
	h.advance(10 * time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	assert.Equal(t, sent.Add(actingLease(h.e.cfg)), h.e.leaseUntil, "stamped with the round's send time")
	assert.Equal(t, sent.Add(h.e.leaseDuration()), h.e.holdUntil, "and so is the time to stand down")
	h.now = sent.Add(actingLease(h.e.cfg))
	assert.False(t, h.e.leading(h.now), "IsLeader is false the instant the lease runs out")
}

// Finding 3: acks queued during a stall answer old rounds and renew nothing;
// the leader stands down at the first message after its lease ran out.
func TestStalledLeaderStandsDownOnResume(t *testing.T) {
	h := leaderOfThree(t)
	round := h.e.round
	h.advance(500 * time.Millisecond) // stalled
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	assert.False(t, h.e.leading(h.now))
	h.e.checkLease(h.now) // what the actor does before every message
	assert.Equal(t, roleFollower, h.e.role)
}

// Finding 3: an ack for a round this leader never sent, or of an earlier
// term, is no evidence.
func TestAcksOfUnsentRoundsAndEarlierTermsAreNoEvidence(t *testing.T) {
	h := leaderOfThree(t)
	h.advance(100 * time.Millisecond)
	before := h.e.leaseUntil
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round + 5})
	assert.Equal(t, before, h.e.leaseUntil, "a round from the future")
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term - 1, Round: h.e.round})
	assert.Equal(t, before, h.e.leaseUntil, "an ack of an earlier term")
	assert.Equal(t, uint64(1), h.e.dropped["stale_term"])
}

// Finding 3: a voter that hears a leader refuses pre-votes and votes of a
// higher term without adopting it, and grants a handover election.
func TestVoterKeepsItsPromiseToTheLeader(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	out := h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	require.Len(t, sentTo[msgVoteReply](out, "c"), 1)
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "answered no, so the connection does not look silent")
	assert.Equal(t, uint64(1), sentTo[msgVoteReply](out, "c")[0].Term)
	assert.Equal(t, uint64(1), h.e.term, "the term is not adopted while the leader is heard")
	assert.Equal(t, pid("b"), h.e.leader)

	out = h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3, Handover: true})
	require.Len(t, sentTo[msgVoteReply](out, "c"), 1)
	assert.True(t, sentTo[msgVoteReply](out, "c")[0].Granted, "a handover election is granted: the leader stood down first")

	h.advance(h.e.cfg.electionTimeoutMin)
	out = h.recv("b", msgVote{ClusterID: "c", Term: 3, ViewSize: 3})
	assert.True(t, sentTo[msgVoteReply](out, "b")[0].Granted, "the promise to c ran out")
}

// A leader refuses the pre-vote and the vote of the candidate it voted for
// in an earlier term. Its promise to that candidate is still on record (the
// promise is what a retried request of the same campaign is granted by),
// but a live leader never helps anyone unseat it. Found by the simulator
// (TestSimulationPreVotePreventsDisruptiveRejoin, seed 70): a follower
// healed from a partition pre-voted, and the leader it had once voted for
// granted, so the rejoin cost the majority its leader.
func TestLeaderRefusesTheCandidateItOnceVotedFor(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.recv("c", msgVote{ClusterID: "c", Term: 1, ViewSize: 3})
	require.True(t, sentTo[msgVoteReply](out, "c")[0].Granted)
	require.Equal(t, pid("c"), h.e.promisedTo)
	h.advance(time.Hour) // c never won; much later, this node leads term 2
	h.becomeLeader("b")
	require.Equal(t, pid("c"), h.e.promisedTo, "the earlier promise is still on record")

	out = h.recv("c", msgPreVote{ClusterID: "c", Term: h.e.term, ViewSize: 3})
	reply := sentTo[msgPreVoteReply](out, "c")
	require.Len(t, reply, 1)
	assert.False(t, reply[0].Granted, "a live leader refuses every pre-vote")
	assert.Equal(t, pid("a"), reply[0].Leader, "and names itself")
	assert.Equal(t, roleLeader, h.e.role)
}

// Finding 3: granting a vote is a promise too, and restarts the election timer.
func TestGrantingAVotePromisesAndRestartsTheTimer(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.now = h.e.electionDeadline.Add(-time.Millisecond) // about to campaign
	out := h.recv("b", msgVote{ClusterID: "c", Term: 1, ViewSize: 3})
	require.True(t, sentTo[msgVoteReply](out, "b")[0].Granted)
	assert.False(t, h.e.electionDeadline.Before(h.now.Add(h.e.cfg.electionTimeoutMin)), "the election timer restarted")
	out = h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.False(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "promised to b for ElectionTimeoutMin")
}

// Fast failover and the lease agree: a leader whose connections no longer
// reach a quorum stands down when it processes the loss.
func TestLeaderThatLosesAQuorumOfConnectionsStandsDownAtOnce(t *testing.T) {
	h := leaderOfThree(t)
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	assert.Equal(t, roleLeader, h.e.role, "a and c are still a quorum")
	require.True(t, h.e.down(h.now, pid("c"), gen.ErrNoConnection))
	assert.Equal(t, roleFollower, h.e.role, "a alone cannot be a quorum of three")
	assert.False(t, h.e.leading(h.now))
}

// With AssumeSymmetricConnectionLoss, a connection loss makes the acks over
// it no evidence for IsLeader (by default their promise holds regardless).
func TestAcksOverALostConnectionDoNotKeepTheLease(t *testing.T) {
	h := newStateHarness(t, Options{AssumeSymmetricConnectionLoss: true}, "b", "c", "d", "e")
	for _, p := range []string{"b", "c", "d", "e"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.becomeLeader("b", "c")
	h.recv("d", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	require.True(t, h.e.leading(h.now))
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	require.True(t, h.e.down(h.now, pid("c"), gen.ErrNoConnection))
	assert.Equal(t, roleLeader, h.e.role, "a, d and e can still form a quorum")
	assert.False(t, h.e.leading(h.now), "but only d has acknowledged: no lease until e does")
	h.recv("e", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	assert.True(t, h.e.leading(h.now))
}

// Finding 4: the term bound is relative; no term value stops elections.
func TestTermBoundIsRelative(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 5})
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 5 + maxTermAhead + 1})
	assert.Equal(t, uint64(5), h.e.term)
	assert.Equal(t, uint64(1), h.e.dropped["absurd_term"])
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 1 << 48})
	assert.Equal(t, uint64(5), h.e.term, "one message cannot push a node from 5 to 2^48")
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 5 + maxTermAhead})
	assert.Equal(t, uint64(5+maxTermAhead), h.e.term, "within the bound")
}

// Finding 4: from any term a node holds, the next election's term is accepted.
func TestAnyTermCanBeFollowedByTheNext(t *testing.T) {
	for _, term := range []uint64{1 << 48, 1 << 62, math.MaxUint64 - 1} {
		h := newStateHarness(t, Options{}, "b", "c")
		h.e.term = term
		out := h.recv("b", msgVote{ClusterID: "c", Term: term + 1, ViewSize: 3})
		require.Len(t, sentTo[msgVoteReply](out, "b"), 1)
		assert.True(t, sentTo[msgVoteReply](out, "b")[0].Granted, "term %d", term+1)
	}
	h := newStateHarness(t, Options{}, "b", "c")
	h.e.term = math.MaxUint64
	h.recv("b", msgHello{ClusterID: "c", Term: math.MaxUint64})
	h.recv("c", msgHello{ClusterID: "c", Term: math.MaxUint64})
	h.expireElection()
	h.recv("b", msgPreVoteReply{ClusterID: "c", Term: math.MaxUint64, Granted: true})
	assert.Equal(t, uint64(math.MaxUint64), h.e.term, "the counter never wraps")
}

// Finding 6: a message from an earlier incarnation of a member whose current
// process is known is dropped and does not replace it.
func TestStaleIncarnationCannotReplaceTheLiveOne(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	old := gen.PID{Node: node("b"), ID: 1000, Creation: 1}
	live := gen.PID{Node: node("b"), ID: 1000, Creation: 2}
	h.e.receive(h.now, live, msgHello{ClusterID: "c"})
	h.e.takeEffects()
	h.e.receive(h.now, old, msgHeartbeatAck{ClusterID: "c"})
	out := h.e.takeEffects()
	assert.Empty(t, out.monitor, "the old PID is not monitored")
	assert.Equal(t, live, h.e.members[node("b")].pid)
	assert.Equal(t, uint64(1), h.e.dropped["stale_incarnation"])

	restarted := gen.PID{Node: node("b"), ID: 1007, Creation: 2}
	h.e.receive(h.now, restarted, msgHello{ClusterID: "c"})
	assert.Equal(t, restarted, h.e.members[node("b")].pid, "a later process of the same node start is newer")
}

// Finding 6: a refused monitor of an earlier incarnation marks that PID dead
// and never removes the member.
func TestRefusedMonitorOfADeadIncarnationKeepsTheMember(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	old := gen.PID{Node: node("b"), ID: 1000, Creation: 1}
	h.e.receive(h.now, old, msgHello{ClusterID: "c"})
	h.e.takeEffects()
	h.e.monitorFailed(h.now, old, gen.ErrProcessIncarnation)
	out := h.e.takeEffects()
	assert.Empty(t, out.left, "the member stays")
	assert.Equal(t, 3, h.e.viewSize())
	assert.True(t, h.e.isDead(old))
	assert.False(t, h.e.members[node("b")].unreachableSince.IsZero(), "unreachable under GhostTTL")
}

// A vote request from a candidate one term behind is refused, and this
// node's vote stays where it was.
func TestVoteFromACandidateOneTermBehindIsRefused(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.recv("b", msgVote{ClusterID: "c", Term: 3, ViewSize: 3})
	require.True(t, sentTo[msgVoteReply](out, "b")[0].Granted)
	h.advance(h.e.cfg.electionTimeoutMin) // the promise to b is over
	out = h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	reply := sentTo[msgVoteReply](out, "c")
	require.Len(t, reply, 1)
	assert.False(t, reply[0].Granted)
	assert.Equal(t, uint64(3), reply[0].Term)
	assert.Equal(t, pid("b"), h.e.votedFor)
}

// A handover goes only to a member that acknowledged the current term.
func TestHandoverPicksOnlyAnUpToDateMember(t *testing.T) {
	h := leaderOfThree(t)
	// c answered only the previous term; b acknowledged this one
	h.e.members[node("b")].ackTerm = h.e.term - 1
	h.e.members[node("c")].ackTerm = h.e.term - 1
	assert.Equal(t, gen.Atom(""), h.e.handover(h.now, "test", nil), "nobody is up to date")
	h = leaderOfThree(t)
	h.e.members[node("b")].ackTerm = h.e.term - 1
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	assert.Equal(t, node("c"), h.e.handover(h.now, "test", nil))
}

// A TimeoutNow of another term is ignored.
func TestTimeoutNowOfAnotherTermIsIgnored(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 4, Leader: pid("b"), Round: 1})
	h.recv("b", msgTimeoutNow{ClusterID: "c", Term: 3})
	assert.Equal(t, roleFollower, h.e.role)
	assert.Equal(t, uint64(4), h.e.term)
	assert.Equal(t, uint64(1), h.e.dropped["unexpected_timeout_now"])
}

// Finding 4, the other half: a node left behind by more than the bound
// (the others adopted a term at the bound and went on electing) catches up
// once a quorum of members is that far ahead; one member never suffices.
func TestLaggingNodeBelievesAQuorumFarAhead(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e")
	far := uint64(maxTermAhead + 10)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: far})
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: far + 1})
	assert.Equal(t, uint64(0), h.e.term, "two of five are no quorum")
	assert.Equal(t, uint64(2), h.e.dropped["absurd_term"])
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: far + 5})
	assert.Equal(t, uint64(0), h.e.term, "one member repeating itself is still one member")
	h.recv("d", msgHeartbeatAck{ClusterID: "c", Term: far + 2})
	// the quorum's lowest term (far+1) is adopted, and then d's message,
	// now within the bound, is handled as usual
	assert.Equal(t, far+2, h.e.term, "a quorum is far ahead")
}

// Finding F2 of the nemesis: a Join that grows the view recomputes the
// lease at once; a leader whose acks no longer make a quorum of the larger
// view stops acting.
func TestJoinThatGrowsTheViewRecomputesTheLease(t *testing.T) {
	h := leaderOfThree(t)
	require.True(t, h.e.leading(h.now))
	h.e.join(procID("d"))
	h.e.join(procID("e"))
	h.e.join(procID("f"))
	h.e.join(procID("g"))
	h.e.takeEffects()
	assert.Equal(t, 7, h.e.viewSize())
	assert.False(t, h.e.leading(h.now), "b's ack is no quorum of seven")
	assert.Equal(t, roleFollower, h.e.role, "and the members it reaches cannot form one")
}

// Its own vote is a grant too: a node that just voted for a candidate does
// not campaign before its promise to that candidate ran out, even when an
// election timer (or a fast-failover timer) fires.
func TestANodeThatVotedDoesNotCampaignDuringItsPromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.recv("b", msgVote{ClusterID: "c", Term: 1, ViewSize: 3})
	require.True(t, sentTo[msgVoteReply](out, "b")[0].Granted)
	h.advance(10 * time.Millisecond)
	h.e.campaign()
	out = h.e.takeEffects()
	assert.Empty(t, sentTo[msgPreVote](out, "c"), "promised to b")
	assert.False(t, h.e.preVoting)
	assert.False(t, h.e.electionDeadline.Before(h.e.promisedUntil), "the next try is after the promise")
}

// An answer to a heartbeat of an older term carries this node's term, and
// rounds are numbered per term: it must not count as an ack of the same
// round number of the sender's newer term.
func TestAnswerToAStaleHeartbeatIsNoAck(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c", Term: 5})
	out := h.recv("b", msgHeartbeat{ClusterID: "c", Term: 4, Leader: pid("b"), Round: 3})
	acks := sentTo[msgHeartbeatAck](out, "b")
	require.Len(t, acks, 1)
	assert.Equal(t, uint64(5), acks[0].Term)
	assert.Equal(t, uint64(0), acks[0].Round)
}

// A refused monitor of the leader is not an observed failure: the leader's
// end knows nothing of it and its lease on this node's acks may still run,
// so the follower keeps its promise and does not fail over fast. A refusal
// that says the process is gone is one.
func TestRefusedMonitorOfTheLeaderKeepsThePromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	h.e.monitorFailed(h.now, pid("b"), gen.ErrTimeout)
	out := h.e.takeEffects()
	assert.Empty(t, sentTo[msgPreVote](out, "c"), "no fast failover")
	assert.Empty(t, sentTo[msgVote](out, "c"), "no fast failover")
	out = h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	require.Len(t, sentTo[msgVoteReply](out, "c"), 1)
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "still promised to b")

	h = newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	h.e.monitorFailed(h.now, pid("b"), gen.ErrProcessUnknown)
	h.e.takeEffects()
	assert.Equal(t, pid("b"), h.e.lostLeader, "the leader's process is gone: fail over at once")
	out = h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	require.Len(t, sentTo[msgVoteReply](out, "c"), 1)
	assert.True(t, sentTo[msgVoteReply](out, "c")[0].Granted, "the promise to a dead process is void")
}

// Rule 1: one vote per term. Once its promise to the candidate it voted
// for is over, a voter still refuses every other candidate of that term.
// Breaks: two candidates of one term each count this node's vote, and both
// win.
func TestAVoterGrantsOneVotePerTerm(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.now = h.e.electionDeadline.Add(-time.Millisecond)
	out := h.recv("b", msgVote{ClusterID: "c", Term: 1, ViewSize: 3})
	require.True(t, sentTo[msgVoteReply](out, "b")[0].Granted)
	h.advance(promiseLength(h.e.cfg) + time.Millisecond) // the promise to b is over
	out = h.recv("c", msgVote{ClusterID: "c", Term: 1, ViewSize: 3})
	require.Len(t, sentTo[msgVoteReply](out, "c"), 1)
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "term 1's vote went to b")
	out = h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	assert.True(t, sentTo[msgVoteReply](out, "c")[0].Granted, "a new term, a new vote")
}

// A leader that hears another claim its own term refuses it and keeps
// leading: two leaders of one term mean a broken election, and the error
// log says so. Breaks: the leader gives way to a heartbeat that cannot be
// genuine, and an operator never hears of it.
func TestALeaderRefusesAHeartbeatOfItsOwnTerm(t *testing.T) {
	h := leaderOfThree(t)
	term := h.e.term
	out := h.recv("c", msgHeartbeat{ClusterID: "c", Term: term, Leader: pid("c"), Round: 2})
	assert.Empty(t, sentTo[msgHeartbeatAck](out, "c"), "no acknowledgement")
	assert.Equal(t, roleLeader, h.e.role)
	assert.Equal(t, term, h.e.term)
	assert.Equal(t, uint64(1), h.e.dropped["conflicting_leader"])
}
