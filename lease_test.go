package leader

import (
	"slices"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the lease rules of docs/safety.md, one event at a time. Each
// names the rule it breaks when it fails.

// Rule 2 (acting lease): IsLeader needs a quorum's acknowledgement of a
// round sent within the acting lease; the role lasts the holding lease.
func TestIsLeaderNeedsARoundAcknowledgedWithinTheActingLease(t *testing.T) {
	h := leaderOfThree(t)
	h.e.sendHeartbeats()
	h.e.takeEffects()
	sent, round := h.now, h.e.round
	h.advance(time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	require.Equal(t, sent.Add(actingLease(h.e.cfg)), h.e.leaseUntil, "stamped with the round's send time, F less the drift margin")
	h.now = sent.Add(actingLease(h.e.cfg) - time.Nanosecond)
	assert.True(t, h.e.leading(h.now))
	h.now = sent.Add(actingLease(h.e.cfg))
	assert.False(t, h.e.leading(h.now), "no IsLeader past the acting lease")
	h.e.checkLease(h.now)
	assert.Equal(t, roleLeader, h.e.role, "the role lasts the holding lease: a hiccup costs no callback")
	h.now = sent.Add(holdingLease(h.e.cfg))
	h.e.checkLease(h.now)
	assert.Equal(t, roleFollower, h.e.role, "and ends with it")
}

// Rule 2: the acting lease does not care whether the acknowledging
// members are still connected: their promise holds either way.
func TestALostConnectionDoesNotEndTheActingLeaseEarly(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d", "e")
	for _, p := range []string{"b", "c", "d", "e"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.becomeLeader("b", "c")
	h.e.sendHeartbeats()
	h.e.takeEffects()
	round := h.e.round
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	until := h.e.leaseUntil
	require.True(t, h.e.leading(h.now))
	h.e.down(h.now, pid("d"), gen.ErrNoConnection)
	assert.Equal(t, until, h.e.leaseUntil, "a member that never acknowledged changes nothing")
	assert.True(t, h.e.leading(h.now))
}

// Rule 3 (promises): a lost connection to the leader is a sign, not proof:
// the promise ends F after the last acknowledgement, not at the down.
func TestALostLeaderConnectionShortensThePromiseToF(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	ackedAt := h.now
	require.Equal(t, ackedAt.Add(promiseLength(h.e.cfg)), h.e.promisedUntil)
	h.advance(2 * time.Millisecond)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	assert.Equal(t, pid("b"), h.e.promisedTo, "still promised")
	assert.Equal(t, ackedAt.Add(freshness(h.e.cfg)), h.e.promisedUntil, "until F after the last acknowledgement")
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "promised", why)
}

// Rule 3: a down with a real reason is proof that the leader's process
// acts no more: the promise ends at once.
func TestARealTerminationOfTheLeaderReleasesThePromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	h.e.down(h.now, pid("b"), gen.TerminateReasonKill)
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "", why)
}

// Rule 3 through the hub: an acknowledgement the hub sent in the actor's
// name dates the promise, and the promise after a loss runs F from it.
func TestAHubAcknowledgementDatesThePromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	hubAt := h.now.Add(40 * time.Millisecond)
	h.e.promiseAt(pid("b"), true, hubAt)
	h.e.promiseAt(pid("b"), true, h.now) // an older one changes nothing
	h.advance(50 * time.Millisecond)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	assert.Equal(t, hubAt.Add(freshness(h.e.cfg)), h.e.promisedUntil)
}

// Rule 3: the survivor's own fast pre-vote (its own vote is a grant too)
// waits for its promise to end.
func TestTheFastPreVoteWaitsForThePromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	ackedAt := h.now
	h.advance(time.Millisecond)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.e.takeEffects()
	require.True(t, h.e.timers[timerFast].armed)
	assert.False(t, h.e.timers[timerFast].due.Before(ackedAt.Add(freshness(h.e.cfg))), "not before the promise ends")
	out := h.fire(timerFast)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1)
}

// The opt-in keeps the old fast path: the promise ends at the down.
func TestAssumeSymmetricConnectionLossReleasesThePromiseAtTheDown(t *testing.T) {
	h := newStateHarness(t, Options{AssumeSymmetricConnectionLoss: true}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "", why)
	assert.Equal(t, holdingLease(h.e.cfg), actingLease(h.e.cfg))
}

// Rule 4 (term floor): a restarted actor never grants the floor term itself
// nor any below it.
func TestTheFloorTermItselfIsNotGranted(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.freshStart()
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 7, Restarted: true})
	h.recv("c", msgHelloReply{ClusterID: "c", Term: 5, Restarted: true})
	h.now = h.e.startedAt.Add(quietPeriod(h.e.cfg))
	h.e.now = h.now
	require.True(t, h.e.floorReady())
	assert.Equal(t, uint64(7), h.e.floorTerm)
	assert.True(t, h.e.termBelowFloor(7), "the floor term itself was possibly won with this node's vote")
	assert.False(t, h.e.termBelowFloor(8))
}

// Rule 4: a restarted actor whose discovery knows one peer takes no floor
// from it alone: the quorum is that of the largest view it knows of.
func TestARestartedActorWithAPartialViewSettlesNoFloor(t *testing.T) {
	h := newStateHarness(t, Options{}, "c")
	h.freshStart()
	h.recv("c", msgHelloReply{ClusterID: "c", Term: 4, Restarted: true, ViewSize: 5})
	h.now = h.e.startedAt.Add(quietPeriod(h.e.cfg))
	h.e.now = h.now
	assert.False(t, h.e.floorReady(), "one peer of a view of five is no quorum")
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "quiet_period", why)
	h.recv("d", msgHello{ClusterID: "c", Term: 4, ViewSize: 5})
	assert.False(t, h.e.floorReady(), "two of the other four are not a quorum of five with this node's old vote")
	h.recv("b", msgHello{ClusterID: "c", Term: 6, ViewSize: 5})
	assert.True(t, h.e.floorReady())
	assert.Equal(t, uint64(6), h.e.floorTerm)
}

// Rule 4: a restarted actor that its peers reach before it greets them
// (their pre-votes by name, before its own discovery lists them) takes
// no floor from terms alone: each member must first say whether it knew an
// earlier process of this node, and the one that did makes this a restart
// through its Hello (msgHello.Knew), whose floor then needs a quorum of
// the other members. The lab's TestLabARestartWithAPartialViewWinsNoTermTwice
// failed this way.
func TestARestartFoundByItsPeersFirstWaitsForTheirWord(t *testing.T) {
	h := newStateHarness(t, Options{}, "c")
	h.freshStart()
	h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 5})
	h.recv("d", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 5})
	h.now = h.e.startedAt.Add(quietPeriod(h.e.cfg))
	h.e.now = h.now
	assert.False(t, h.e.floorReady(), "two members' terms without their word on a restart settle nothing")
	h.recv("c", msgHello{ClusterID: "c", Term: 1, ViewSize: 5, Incarnation: 9, Knew: h.e.incarnation + 1})
	assert.True(t, h.e.restarted, "c knew another incarnation of this node")
	h.recv("d", msgHelloReply{ClusterID: "c", Term: 1, ViewSize: 5, Incarnation: 8})
	assert.False(t, h.e.floorReady(), "a restart in a view of five needs three others")
	h.recv("b", msgHello{ClusterID: "c", Term: 2, ViewSize: 5, Incarnation: 7, Knew: h.e.incarnation})
	assert.True(t, h.e.floorReady())
	assert.Equal(t, uint64(2), h.e.floorTerm)
}

// A Hello names the incarnation the sender knew of the receiver, and one
// naming the receiver's own incarnation is no restart.
func TestAHelloNamesTheIncarnationItKnew(t *testing.T) {
	h := newStateHarness(t, Options{}, "b")
	h.recv("b", msgHello{ClusterID: "c", Term: 1, Incarnation: 42, Knew: h.e.incarnation})
	assert.False(t, h.e.restarted)
	assert.Equal(t, uint64(42), h.e.helloTo(node("b")).Knew)
	assert.Equal(t, uint64(0), h.e.helloTo(node("z")).Knew, "a node never met")
}

// Rule 4: the floor opens again when a larger view is reported after it
// settled, and settles again once enough members were heard.
func TestTheFloorOpensAgainWhenTheViewGrows(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.freshStart()
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 2, ViewSize: 3})
	h.now = h.e.startedAt.Add(quietPeriod(h.e.cfg))
	h.e.now = h.now
	require.True(t, h.e.floorReady(), "a first start in a view of three needs one other member")
	h.recv("c", msgHello{ClusterID: "c", Term: 2, ViewSize: 7})
	assert.False(t, h.e.floorKnown, "a view of seven needs three others")
	h.recv("d", msgHello{ClusterID: "c", Term: 9, ViewSize: 7})
	assert.True(t, h.e.floorKnown)
	assert.Equal(t, uint64(9), h.e.floorTerm)
}

// A view size no peer can have is ignored, not trusted.
func TestAnAbsurdToldViewSizeIsIgnored(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c", Term: 1, ViewSize: maxToldViewSize + 1})
	assert.Less(t, h.e.floorViewSize(), maxToldViewSize)
	assert.True(t, h.e.floorKnown)
}

// Rule 4: the floor settles when the quiet period ends, without waiting for
// a vote request: the ghost timer wakes the actor, which asks the members
// it has not heard. A member that stopped gracefully (a kept seat) counts
// with the term it last said.
func TestTheFloorSettlesAtTheEndOfTheQuietPeriod(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.freshStart()
	h.e.armGhostTimer()
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 3, Restarted: true})
	require.True(t, h.e.timers[timerGhost].armed)
	h.now = later(h.now, h.e.members[node("c")].nextProbe) // past the spacing of Join's Hello
	out := h.fire(timerGhost)
	require.False(t, h.e.floorKnown, "a restart of a view of three needs both others")
	assert.Len(t, sentTo[msgHello](out, "c"), 1, "c is asked for its term")
	require.True(t, h.e.timers[timerGhost].armed, "and asked again until the floor settles")
	require.True(t, h.e.down(h.now, pid("b"), gen.TerminateReasonShutdown))
	h.recv("c", msgHelloReply{ClusterID: "c", Term: 4})
	assert.True(t, h.e.floorKnown, "b stopped gracefully and keeps its seat: its term counts")
	assert.Equal(t, uint64(4), h.e.floorTerm)
}

// TestALeaseEndsWhereAQuorumsEvidenceReaches: the acting lease and the
// hub's view of it both end at the need-th latest piece of evidence.
func TestALeaseEndsWhereAQuorumsEvidenceReaches(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		times []time.Time
		need  int
		want  time.Time
		ok    bool
	}{
		{[]time.Time{at(3), at(1), at(2)}, 1, at(3), true},
		{[]time.Time{at(3), at(1), at(2)}, 2, at(2), true},
		{[]time.Time{at(3), at(1), at(2)}, 3, at(1), true},
		{[]time.Time{at(3), at(1), at(2)}, 4, time.Time{}, false},
		{[]time.Time{at(3)}, 0, time.Time{}, false},
		{nil, 1, time.Time{}, false},
	}
	for _, c := range cases {
		got, ok := latestReachedBy(slices.Clone(c.times), c.need)
		if ok != c.ok || got.Equal(c.want) == false {
			t.Errorf("latestReachedBy(%v, %d) = %v, %v; want %v, %v", c.times, c.need, got, ok, c.want, c.ok)
		}
	}
}

// Rule 4 in a view of two: a restart's floor needs a quorum of the other
// members, which is the one other member; demanding a quorum of the whole
// view less this node plus one left a restarted member of a two-node
// cluster unable ever to grant, and so the cluster without a leader.
func TestARestartInAViewOfTwoSettlesWithTheOtherMember(t *testing.T) {
	h := newStateHarness(t, Options{MinClusterSize: 2}, "b")
	h.freshStart()
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 3, Restarted: true, ViewSize: 2})
	require.True(t, h.e.restarted)
	h.now = h.e.startedAt.Add(quietPeriod(h.e.cfg))
	h.e.now = h.now
	assert.True(t, h.e.floorReady(), "the one other member of a view of two is a quorum of the others")
	assert.Equal(t, uint64(3), h.e.floorTerm)
	assert.True(t, h.e.termBelowFloor(3))
	assert.False(t, h.e.termBelowFloor(4))
}

// Rule 4 in a view of four: a restart needs two of the three others (any
// two include one of the two others that, with this node, won a term).
func TestARestartInAViewOfFourNeedsTwoOthers(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d")
	h.freshStart()
	h.recv("b", msgHelloReply{ClusterID: "c", Term: 3, Restarted: true, ViewSize: 4})
	h.now = h.e.startedAt.Add(quietPeriod(h.e.cfg))
	h.e.now = h.now
	assert.False(t, h.e.floorReady(), "one of three others may be the one that did not vote")
	h.recv("c", msgHelloReply{ClusterID: "c", Term: 5, ViewSize: 4})
	assert.True(t, h.e.floorReady())
	assert.Equal(t, uint64(5), h.e.floorTerm)
}

// Rule 3: a round whose F is longer than this node's own (adaptive
// freshness, roundFresh) keeps the promise after a sign of loss that long
// after the acknowledgement: the leader acts within that round's F, so the
// promise must outlast it.
func TestARoundsLongerFKeepsThePromiseAfterALoss(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	long := 2 * freshness(h.e.cfg)
	require.Less(t, long, promiseLength(h.e.cfg))
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3, Fresh: int64(long)})
	ackedAt := h.now
	h.advance(2 * time.Millisecond)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	assert.Equal(t, ackedAt.Add(long), h.e.promisedUntil, "until the round's F after its acknowledgement, not this node's own F")
	h.now = ackedAt.Add(freshness(h.e.cfg))
	h.e.now = h.now
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "promised", why, "the leader may still act on that round")
}

// Rule 2: rounds acknowledged before the view grew make no acting lease,
// though the members that acknowledged them are a quorum of the larger
// view: one of them may be a member of the view just merged, already bound
// to its leader's term.
func TestRoundsBeforeTheViewGrewMakeNoLease(t *testing.T) {
	h := leaderOfThree(t)
	h.e.sendHeartbeats()
	h.e.takeEffects()
	round := h.e.round
	h.advance(time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	require.True(t, h.e.leading(h.now))
	h.advance(time.Millisecond)
	out := h.recv("d", msgHello{ClusterID: "c"})
	require.Equal(t, 4, h.e.viewSize())
	assert.False(t, h.e.leading(h.now), "a, b and c are a quorum of four, but their round is older than the view")
	assert.Equal(t, roleLeader, h.e.role, "the role stays: a round is on its way")
	assert.NotEmpty(t, sentTo[msgHeartbeat](out, "b"), "a round goes at once to win the lease back")
	round = h.e.round
	h.advance(time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	assert.True(t, h.e.leading(h.now), "a round sent since counts")
}

// Rule 3, against an absurd round: an F longer than the promise itself
// (a peer's bug, or garbage) extends the promise after a loss to the full
// promise at most, so the survivor still fails over within an election
// timeout.
func TestAnAbsurdRoundFreshnessExtendsThePromiseNoFurtherThanThePromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3, Fresh: int64(time.Hour)})
	ackedAt := h.now
	h.advance(2 * time.Millisecond)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	assert.False(t, h.e.promisedUntil.After(ackedAt.Add(promiseLength(h.e.cfg))), "promised until %s, %s after the acknowledgement", h.e.promisedUntil, h.e.promisedUntil.Sub(ackedAt))
}

// Rule 5: a handover's vote request is exempt from the promise, not from
// the quiet period: a fresh actor grants it nothing. Breaks: a restarted
// voter gives the vote of a term a second time, to a handover.
func TestAHandoverIsNotExemptFromTheQuietPeriod(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.freshStart()
	out := h.recv("b", msgVote{ClusterID: "c", Term: 1, ViewSize: 3, Handover: true})
	require.Len(t, sentTo[msgVoteReply](out, "b"), 1)
	assert.False(t, sentTo[msgVoteReply](out, "b")[0].Granted)
	assert.Equal(t, uint64(1), h.e.dropped["quiet_period"])
}

// Rule 2 through the hub: what the hub recorded counts toward the lease
// only as what it is: an acknowledgement of a round that was sent, and a
// ping answered for the member's current process. Breaks: the lease counts
// an acknowledgement of a round nobody sent, or a ping answered for a
// process of the member that promised this one nothing.
func TestTheHubsRecordsCountOnlyForRoundsSentAndTheMembersProcess(t *testing.T) {
	h := leaderOfThree(t)
	h.e.hubAttached(nil, pid("hub"))
	s := &slot{cluster: "c", actor: pid("a")}
	shareTo(s, h.e)
	b := h.e.members[node("b")]
	u := h.e.leadShare(sharedView{acks: map[gen.Atom]uint64{node("b"): h.e.round + 1}, ackAt: map[gen.Atom]time.Time{node("b"): h.now}})
	assert.Empty(t, u.acks, "a round past every round opened")
	u = h.e.leadShare(sharedView{acks: map[gen.Atom]uint64{node("b"): h.e.round + 1}, ackAt: map[gen.Atom]time.Time{node("b"): h.now},
		rounds: []roundStamp{{round: h.e.round + 1, at: h.now, fresh: freshness(h.e.cfg)}}})
	assert.Len(t, u.acks, 1, "a round the hub opened")

	other := gen.PID{Node: b.pid.Node, ID: b.pid.ID + 100, Creation: b.pid.Creation + 1}
	h.advance(time.Millisecond)
	u = h.e.leadShare(sharedView{pongs: []linkPong{{node: node("b"), pid: other, sent: h.now, fresh: freshness(h.e.cfg)}}})
	assert.Empty(t, u.pongs, "answered for another process of b")
	u = h.e.leadShare(sharedView{pongs: []linkPong{{node: node("b"), pid: b.pid, sent: h.now, fresh: freshness(h.e.cfg)}}})
	assert.Len(t, u.pongs, 1, "answered for the process the leader knows")
}

// Rule 3 below the floor: an unclustered node acknowledges a leader's
// rounds (it is reachable, and the leader's view may be larger), and its
// acknowledgement comes with a follower's promise. Breaks: the leader
// counts an acknowledgement toward its lease from a node that then votes
// for another candidate.
func TestAnUnclusteredNodesAcknowledgementIsAPromise(t *testing.T) {
	h := newStateHarness(t, Options{MinClusterSize: 5}, "b", "c")
	require.Equal(t, roleUnclustered, h.e.role)
	out := h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	acks := sentTo[msgHeartbeatAck](out, "b")
	require.Len(t, acks, 1)
	require.Equal(t, uint64(3), acks[0].Round, "acknowledged")
	why, promised := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "promised", why, "and promised, as a follower's would be")
	assert.Equal(t, pid("b"), promised)
}
