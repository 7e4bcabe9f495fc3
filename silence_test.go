package leader

import (
	"testing"
	"time"

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

// After its own reset of a silent connection this node says Hello at once:
// a follower has no other reason to write to another follower, which would
// otherwise stay a ghost and leave the view although alive. (A loss the
// framework reports, such as the loser of two crossed dials, is probed
// half a minimum election timeout later: TestEveryRoleProbesItsGhostsUntilGhostTTL.)
func TestConnectionLossProbesTheMemberAgain(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.e.members[node("b")].lastReset = h.now
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	out := h.e.takeEffects()
	assert.Len(t, sentTo[msgHello](out, "b"), 1, "a Hello to b right away")
}

// Halfway through a member's silence the actor is asked to sample its
// connection's inbound count, once per silence, before the reset; a kept
// connection (it carried other traffic) starts the measurement anew.
func TestSilenceSamplesTheConnectionBeforeTheReset(t *testing.T) {
	h := leaderOfThree(t)
	bound := h.e.silenceBound()
	var samples, resets []time.Duration
	start := h.now
	for h.now.Sub(start) < bound*3/2 {
		h.advance(h.e.cfg.heartbeatInterval)
		h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
		out := h.fire(timerHeartbeat)
		for range out.sampleInbound {
			samples = append(samples, h.now.Sub(start))
		}
		for range out.reset {
			resets = append(resets, h.now.Sub(start))
			h.e.connectionKept(node("b"))
		}
	}
	require.Len(t, resets, 1, "one reset asked within 1.5 bounds")
	require.Len(t, samples, 2, "a sample before the reset, and one in the silence measured anew")
	assert.GreaterOrEqual(t, samples[0], bound/2)
	assert.Less(t, samples[0], resets[0])
	assert.GreaterOrEqual(t, samples[1]-resets[0], bound/2, "the kept connection's silence counts from the decision")
}

// The board resets a connection only if it brought nothing since its
// sample, and the sample is old enough to tell; one reset per bound for
// all the elections of the process.
func TestConnectionBoardResetsOnlyAConnectionThatCarriesNothing(t *testing.T) {
	var b connectionBoard
	bound, quiet := 600*time.Millisecond, 150*time.Millisecond
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	claim := func(peer gen.Atom, count uint64, ms int) (resetVerdict, time.Duration) {
		return b.claim(nil, peer, count, at(ms), bound, quiet)
	}
	b.sample(nil, "x", 10, at(0))
	v, _ := claim("x", 12, 300)
	assert.Equal(t, resetCarrying, v, "two messages came meanwhile")
	b.sample(nil, "x", 12, at(400))
	v, _ = claim("x", 12, 420)
	assert.Equal(t, resetCarrying, v, "still for 120 ms only (since the last claim): too short to tell")
	b.sample(nil, "x", 12, at(600))
	v, still := claim("x", 12, 700)
	assert.Equal(t, resetNow, v, "nothing since 420 ms")
	assert.Equal(t, 280*time.Millisecond, still)
	v, _ = claim("x", 12, 800)
	assert.Equal(t, resetRecent, v, "another election just reset it")
	v, _ = claim("y", 3, 800)
	assert.Equal(t, resetCarrying, v, "no sample: no evidence that nothing came")
	v, _ = claim("y", 3, 1000)
	assert.Equal(t, resetNow, v, "still since the last claim")
	v, _ = claim("x", 0, 1400)
	assert.Equal(t, resetNow, v, "the connection made after the reset brought nothing either")
	v, _ = claim("y", 5, 1700)
	assert.Equal(t, resetCarrying, v, "the connection made after the reset brought something")
}

// A node whose own timers fire late resets a connection for silence only
// after it has brought nothing for starvedQuiet (four bounds), not minQuiet:
// the answers that look missing may be waiting to be read. The stillness
// adds up across the claims meanwhile, so a connection that is silent in
// fact is still reset while the node stays starved.
func TestConnectionBoardWaitsLongerWhileItsNodeIsStarved(t *testing.T) {
	bound, quiet := 600*time.Millisecond, 150*time.Millisecond
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var b connectionBoard
	b.sample(nil, "x", 10, at(0))
	b.markStarved(nil, at(100))
	v, _ := b.claim(nil, "x", 10, at(650), bound, quiet)
	assert.Equal(t, resetStarved, v, "still for 650 ms, but a timer fired late 550 ms ago")
	v, still := b.claim(nil, "x", 10, at(700), bound, quiet)
	assert.Equal(t, resetNow, v, "on time for a bound now, and still since 0 ms")
	assert.Equal(t, 700*time.Millisecond, still)

	var starved connectionBoard
	starved.sample(nil, "x", 10, at(0))
	for ms := 0; ms < 2400; ms += 200 {
		starved.markStarved(nil, at(ms))
		v, _ = starved.claim(nil, "x", 10, at(ms+100), bound, quiet)
		require.Equal(t, resetStarved, v, "still for %d ms of a starved node", ms+100)
	}
	starved.markStarved(nil, at(2400))
	v, _ = starved.claim(nil, "x", 10, at(2450), bound, quiet)
	assert.Equal(t, resetNow, v, "still for four bounds: silent in fact, starved or not")
	starved.sample(nil, "y", 3, at(2000))
	v, _ = starved.claim(nil, "y", 4, at(2450), bound, quiet)
	assert.Equal(t, resetCarrying, v, "a connection that brought something is kept")

	var other connectionBoard
	other.sample(nil, "x", 10, at(0))
	v, _ = other.claim(nil, "x", 10, at(650), bound, quiet)
	assert.Equal(t, resetNow, v, "the same stillness on a node that kept time")
}

// After a reset, the node whose name sorts second dials the peer again only
// after the pause, whichever of its elections asks: with many elections on
// the node, the others' dialers would otherwise dial at once, the peer (still
// holding its own silent connection on a framework with the
// simultaneous-connect bug) would refuse, and the pair would never converge.
func TestRedialPauseHoldsForEveryDialerOfTheNode(t *testing.T) {
	var b connectionBoard
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	assert.Zero(t, b.redialWait(nil, "x", at(0)), "no reset, no wait")
	b.holdRedial(nil, "x", at(900))
	assert.Equal(t, 800*time.Millisecond, b.redialWait(nil, "x", at(100)))
	assert.Zero(t, b.redialWait(nil, "y", at(100)), "another peer is not held")
	assert.Zero(t, b.redialWait(nil, "x", at(900)), "the pause is over")
	assert.Zero(t, b.redialWait(nil, "x", at(100)), "and forgotten")
	b.holdRedial(nil, "x", at(1000)) // the smaller name holds for 0: until is now
	assert.Zero(t, b.redialWait(nil, "x", at(1000)))
}

// A chore has something to look at only while a member owes an answer or
// a monitor is unconfirmed; an election with neither has no chore tick
// (keepChoreTimer).
func TestChoresArePendingOnlyWhileSomethingIsOwed(t *testing.T) {
	h := leaderOfThree(t)
	for _, m := range h.e.members {
		m.awaitingSince, m.watchAskedAt = time.Time{}, time.Time{}
	}
	assert.False(t, h.e.choresPending(), "nothing owed: nothing for a chore to find")
	b := h.e.members[node("b")]
	b.awaitingSince = h.now
	assert.True(t, h.e.choresPending(), "a request unanswered")
	b.awaitingSince = time.Time{}
	b.watchAskedAt = h.now
	assert.True(t, h.e.choresPending(), "a monitor unconfirmed")
	b.pid = gen.PID{}
	assert.False(t, h.e.choresPending(), "the monitor of a process no longer known is nobody's chore")
	assert.True(t, h.e.leaderChoresPending(), "but a leader probes a member whose process it does not know")
}

// A leader whose hub carries every round has no heartbeat timer while it
// has no chores, and gets one, a chore interval away, at the end of the
// step that gave it one.
func TestIdleLeaderArmsItsChoreTimerOnlyForAChore(t *testing.T) {
	h := leaderOfThree(t)
	h.e.hubAttached(nil, pid("hub"))
	h.e.carried = map[gen.Atom]bool{node("b"): true, node("c"): true}
	for _, m := range h.e.members {
		m.awaitingSince, m.watchAskedAt = time.Time{}, time.Time{}
	}
	h.advance(h.e.cfg.heartbeatInterval)
	h.fire(timerHeartbeat)
	require.False(t, h.e.timers[timerHeartbeat].armed, "carried and nothing owed: no chore tick")
	h.e.keepChoreTimer()
	assert.False(t, h.e.timers[timerHeartbeat].armed)

	h.e.members[node("b")].awaitingSince = h.now // the step sent b a request
	h.e.keepChoreTimer()
	require.True(t, h.e.timers[timerHeartbeat].armed, "a chore: the tick is back")
	out := h.e.takeEffects()
	require.NotEmpty(t, out.timers)
	assert.Equal(t, h.e.choreInterval(), out.timers[len(out.timers)-1].after)
}

// A follower whose leader's heartbeats come through the hub handles none,
// so it looks for silent connections on a chore timer of its own, armed
// only while a member owes it an answer. A member that answers nothing
// has its connection sampled at the first chore and reset half a silence
// bound later: on a framework with the simultaneous-connect bug, two
// followers whose Hellos crossed otherwise never hear from each other.
func TestFollowerWithAHubResetsASilentConnection(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.hubAttached(nil, pid("hub"))
	for _, m := range h.e.members {
		m.awaitingSince, m.watchAskedAt = time.Time{}, time.Time{}
	}
	h.e.keepChoreTimer()
	require.False(t, h.e.timers[timerHeartbeat].armed, "nothing owed: no chore timer")

	h.e.members[node("c")].awaitingSince = h.now // a Hello to c, unanswered
	h.e.keepChoreTimer()
	require.True(t, h.e.timers[timerHeartbeat].armed, "c owes an answer: a chore timer")
	out := h.e.takeEffects()
	require.NotEmpty(t, out.timers)
	assert.Equal(t, h.e.choreInterval(), out.timers[len(out.timers)-1].after)

	h.advance(h.e.choreInterval())
	out = h.fire(timerHeartbeat)
	assert.Equal(t, []gen.Atom{node("c")}, out.sampleInbound, "first the evidence: the connection's inbound count")
	assert.Empty(t, out.reset)
	require.True(t, h.e.timers[timerHeartbeat].armed)
	require.NotEmpty(t, out.timers)
	assert.Equal(t, h.e.silenceBound()/2, out.timers[len(out.timers)-1].after, "back half a bound later, not a chore interval")

	h.advance(h.e.silenceBound() / 2)
	out = h.fire(timerHeartbeat)
	assert.Equal(t, []gen.Atom{node("c")}, out.reset, "then the reset")
	assert.Equal(t, roleFollower, h.e.role)
}

// Without a hub the follower's leader's heartbeats do the looking
// (handleHeartbeat): no chore timer, as before coalescing.
func TestFollowerWithoutAHubHasNoChoreTimer(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.members[node("c")].awaitingSince = h.now
	h.e.keepChoreTimer()
	assert.False(t, h.e.timers[timerHeartbeat].armed)
}

// Two followers that lost each other for a moment, whose connection came
// back silent (the simultaneous-connect bug): a follower with a hub looks
// for silent connections only every chore interval, longer than this
// GhostTTL, so the ghost sweeps look too, and the connection is sampled
// and reset while the ghost is still in the view.
func TestGhostSweepsResetASilentConnectionBeforeGhostTTL(t *testing.T) {
	h := newStateHarness(t, Options{GhostTTL: 2000}, "b", "c")
	require.Greater(t, h.e.choreInterval(), h.e.cfg.ghostTTL, "the case: chores alone come too late")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.recv("c", msgHello{ClusterID: "c"})
	h.e.hubAttached(nil, pid("hub"))
	lostAt := h.now
	require.True(t, h.e.down(h.now, pid("c"), gen.ErrNoConnection))
	due := map[timerKind]time.Time{}
	note := func(out effects) {
		for _, r := range out.timers {
			due[r.kind] = h.now.Add(r.after)
		}
	}
	note(h.e.takeEffects())
	var sampled, reset time.Time
	for h.now.Sub(lostAt) < h.e.cfg.ghostTTL && reset.IsZero() {
		h.advance(5 * time.Millisecond)
		for _, kind := range []timerKind{timerGhost, timerHeartbeat} {
			if h.e.timers[kind].armed && h.now.Before(due[kind]) == false {
				out := h.fire(kind)
				note(out)
				if len(out.sampleInbound) > 0 && sampled.IsZero() {
					sampled = h.now
				}
				if len(out.reset) > 0 {
					assert.Equal(t, []gen.Atom{node("c")}, out.reset)
					reset = h.now
				}
			}
		}
	}
	require.False(t, sampled.IsZero(), "the connection to c was sampled")
	require.False(t, reset.IsZero(), "and reset before GhostTTL")
	assert.GreaterOrEqual(t, reset.Sub(lostAt), h.e.silenceBound(), "not before c was silent for a whole bound")
	assert.Contains(t, h.e.members, node("c"), "c is still in the view when its connection is reset")
}

// A request of another ClusterID is answered with this actor's
// msgHelloReply, at most once per half ElectionTimeoutMin per sender, and a
// reply is never answered; the requester drops that answer as a mismatch
// and stops waiting for one, so it never takes a healthy peer that only
// ignores it for a silent connection.
func TestRequestOfAnotherClusterIsAnsweredSoItsSenderResetsNothing(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.recv("b", msgPreVote{ClusterID: "other", Term: 3, ViewSize: 3})
	answers := sentTo[msgHelloReply](out, "b")
	require.Len(t, answers, 1, "the request is answered")
	assert.Equal(t, "c", answers[0].ClusterID, "with this actor's ClusterID")
	assert.Empty(t, sentTo[msgPreVoteReply](out, "b"), "and not as a pre-vote")
	out = h.recv("b", msgVote{ClusterID: "other", Term: 4, ViewSize: 3})
	assert.Empty(t, sentTo[msgHelloReply](out, "b"), "not again within half ElectionTimeoutMin")
	h.advance(h.e.cfg.electionTimeoutMin / 2)
	out = h.recv("b", msgHello{ClusterID: "other"})
	assert.Len(t, sentTo[msgHelloReply](out, "b"), 1, "again after it")
	h.advance(h.e.cfg.electionTimeoutMin)
	out = h.recv("b", msgHelloReply{ClusterID: "other"})
	assert.Empty(t, out.sends, "a reply is not answered")
	assert.Equal(t, uint64(0), h.e.term)

	// The other side: the misspelt node asks, is answered in the other
	// ClusterID, and waits for nothing more however long it goes on asking.
	typo := newStateHarness(t, Options{ClusterID: "other"}, "b", "c")
	typo.advance(typo.e.cfg.electionTimeoutMax)
	typo.fire(timerElection)
	require.NotZero(t, typo.e.members[node("b")].awaitingSince, "it asked b something")
	typo.recv("b", answers[0])
	assert.True(t, typo.e.members[node("b")].awaitingSince.IsZero(), "b answered, in its own ClusterID")
	var resets []gen.Atom
	for range 20 {
		typo.advance(typo.e.cfg.electionTimeoutMax)
		if typo.e.timers[timerElection].armed {
			resets = append(resets, typo.fire(timerElection).reset...)
		}
		typo.e.findSilentConnections()
		resets = append(resets, typo.e.takeEffects().reset...)
	}
	assert.NotContains(t, resets, node("b"), "b's connection is never reset")
	assert.Contains(t, resets, node("c"), "c, which never answered, is (the rule still works)")
}
