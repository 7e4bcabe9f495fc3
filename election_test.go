package leader

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCampaignPreVoteThenVote(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.expireElection()
	assert.Equal(t, uint64(0), h.e.term, "a pre-vote must not change the term")
	assert.Len(t, sentTo[msgPreVote](out, "b"), 1)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1)
	assert.Equal(t, roleFollower, h.e.role)

	out = h.recv("b", msgPreVoteReply{ClusterID: "c", Term: 0, Granted: true})
	assert.Equal(t, uint64(1), h.e.term)
	assert.Equal(t, roleCandidate, h.e.role)
	assert.Equal(t, pid("a"), h.e.votedFor)
	assert.Len(t, sentTo[msgVote](out, "c"), 1, "vote requests go to everyone declared")

	h.recv("c", msgVoteReply{ClusterID: "c", Term: 1, Granted: true})
	assert.True(t, h.e.confirming)
	h.e.confirmResult(h.now, true, nil)
	assert.Equal(t, roleLeader, h.e.role)
	h.e.takeEffects()
	h.e.published(h.now)
	out = h.e.takeEffects()
	assert.Len(t, sentTo[msgHeartbeat](out, "b"), 1, "heartbeats start once published")
	assert.Len(t, sentTo[msgHeartbeat](out, "c"), 1)
}

func TestHigherTermAlwaysWinsAndStepsLeaderDown(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.becomeLeader("b")
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: 7})
	assert.Equal(t, uint64(7), h.e.term)
	assert.Equal(t, roleFollower, h.e.role)
	assert.Equal(t, gen.PID{}, h.e.leader)
}

func TestOneVotePerTerm(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.recv("b", msgVote{ClusterID: "c", Term: 3, ViewSize: 3})
	require.Len(t, sentTo[msgVoteReply](out, "b"), 1)
	assert.True(t, sentTo[msgVoteReply](out, "b")[0].Granted)
	out = h.recv("c", msgVote{ClusterID: "c", Term: 3, ViewSize: 3})
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "second candidate of the same term")
	out = h.recv("b", msgVote{ClusterID: "c", Term: 3, ViewSize: 3})
	assert.True(t, sentTo[msgVoteReply](out, "b")[0].Granted, "a repeated request from the same candidate is answered the same way")
	assert.Equal(t, pid("b"), h.e.votedFor)
}

func TestVoteDeniedToCandidateBelowFloor(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	out := h.recv("b", msgVote{ClusterID: "c", Term: 1, ViewSize: 2})
	assert.False(t, sentTo[msgVoteReply](out, "b")[0].Granted)
}

func TestStaleHeartbeatIsAnsweredWithTheRealTerm(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c", Term: 5})
	out := h.recv("b", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("b")})
	acks := sentTo[msgHeartbeatAck](out, "b")
	require.Len(t, acks, 1)
	assert.Equal(t, uint64(5), acks[0].Term, "the stale leader must learn the real term")
	assert.Equal(t, uint64(1), h.e.dropped["stale_term"])
	assert.Equal(t, gen.PID{}, h.e.leader)
}

func TestBadInputIsDroppedAndCounted(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	cases := []struct {
		name    string
		from    string
		message any
		reason  string
	}{
		{"another cluster", "b", msgHeartbeat{ClusterID: "other", Term: 1, Leader: pid("b")}, "cluster_mismatch"},
		{"absurd term", "b", msgVote{ClusterID: "c", Term: ^uint64(0), ViewSize: 3}, "absurd_term"},
		{"leader is not the sender", "b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("c")}, "leader_mismatch"},
		{"grant for a term never campaigned", "c", msgVoteReply{ClusterID: "c", Term: 0, Granted: true}, "unexpected_reply"},
		{"pre-vote grant without a pre-vote", "c", msgPreVoteReply{ClusterID: "c", Term: 0, Granted: true}, "unexpected_reply"},
		{"handover from a non-leader", "c", msgTimeoutNow{ClusterID: "c", Term: 0}, "unexpected_timeout_now"},
		{"handover of a later term", "b", msgTimeoutNow{ClusterID: "c", Term: 5}, "unexpected_timeout_now"},
		{"from this node", "a", msgHello{ClusterID: "c"}, "same_node"},
	}
	for _, tc := range cases {
		before := h.e.dropped[tc.reason]
		h.recv(tc.from, tc.message)
		assert.Equal(t, before+1, h.e.dropped[tc.reason], tc.name)
	}
	assert.Equal(t, uint64(0), h.e.term, "no bad input moved the term")
	assert.Equal(t, roleFollower, h.e.role)
	assert.Equal(t, 3, h.e.viewSize())
}

func TestHeartbeatOfAnotherLeaderInTheSameTermIsRefused(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("b")})
	require.Equal(t, pid("b"), h.e.leader)
	h.recv("c", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("c")})
	assert.Equal(t, pid("b"), h.e.leader)
	assert.Equal(t, uint64(1), h.e.dropped["conflicting_leader"])
}

func TestPreVoteLease(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
	out := h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.False(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "the leader was heard just now")
	assert.Equal(t, uint64(1), h.e.term, "a pre-vote changes nothing on the voter")
	assert.Equal(t, gen.PID{}, h.e.votedFor)

	h.advance(151 * time.Millisecond)
	out = h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.True(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "no heartbeat within ElectionTimeoutMin")
}

func TestPreVoteGrantedOnceThePromiseAfterTheLeadersLossEnds(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "f")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
	ackedAt := h.now
	h.e.takeEffects()
	h.advance(time.Millisecond)
	require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
	h.e.takeEffects()
	assert.True(t, h.e.timers[timerFast].armed, "a lost leader arms the fast pre-vote")
	assert.Equal(t, ackedAt.Add(freshness(h.e.cfg)), h.e.promisedUntil, "the promise ends F after the last acknowledgement")
	out := h.recv("f", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.False(t, sentTo[msgPreVoteReply](out, "f")[0].Granted, "a lost connection is no proof: the promise holds for F")
	h.now = ackedAt.Add(freshness(h.e.cfg))
	out = h.recv("f", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
	assert.True(t, sentTo[msgPreVoteReply](out, "f")[0].Granted, "F after the last acknowledgement it may help elect a successor")
}

// Two survivors of a leader's down must not both pre-vote and then split
// the votes of the next term (deferToRanked): the one ranked later in the
// failover order (TestTheFailoverOrderOfTheTests: f before a before c)
// gives way to the other's pre-vote, even in the middle of its own, and
// the one ranked first refuses the other's.
func TestFastFailoverDefersToTheSurvivorRankedFirst(t *testing.T) {
	lose := func(h *stateHarness) {
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		h.advance(freshness(h.e.cfg)) // the promise after the loss has run out
		require.True(t, h.e.down(h.now, pid("b"), gen.ErrNoConnection))
		h.e.takeEffects()
		require.True(t, h.e.timers[timerFast].armed)
	}
	t.Run("ranked first refuses the later one", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		lose(h)
		out := h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
		assert.False(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "a@test is ranked before c@test and fails over itself")
		assert.True(t, h.e.timers[timerFast].armed, "its own fast pre-vote stays")
		h.fire(timerFast)
		require.True(t, h.e.preVoting)
		out = h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
		assert.False(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "nor during its own fast pre-vote")
		assert.Equal(t, uint64(2), h.e.dropped["fast_failover_rank"], "refusals are counted")
	})
	t.Run("ranked later gives way before its timer", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		lose(h)
		out := h.recv("f", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
		assert.True(t, sentTo[msgPreVoteReply](out, "f")[0].Granted)
		assert.False(t, h.e.timers[timerFast].armed, "it gave up its fast pre-vote")
		assert.Equal(t, uint64(1), h.e.deferredFailovers)
	})
	t.Run("ranked later gives way in its own pre-vote", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "f")
		lose(h)
		h.fire(timerFast)
		require.True(t, h.e.preVoting)
		out := h.recv("f", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
		assert.True(t, sentTo[msgPreVoteReply](out, "f")[0].Granted)
		assert.False(t, h.e.preVoting, "its pre-vote is over")
		h.recv("f", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true})
		assert.Equal(t, roleFollower, h.e.role, "a grant of the abandoned pre-vote starts no election")
		assert.Equal(t, uint64(1), h.e.term)
	})
	t.Run("a refused fast pre-vote no longer blocks the others", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c", "d")
		lose(h)
		h.fire(timerFast)
		require.True(t, h.e.preVoting)
		h.recv("d", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: false}) // d has not seen the down yet
		assert.True(t, h.e.preVoting, "the round stays open")
		out := h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 4})
		assert.True(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "c, ranked after, may now find every voter ready")
	})
	t.Run("an ordinary pre-vote is granted to anyone", func(t *testing.T) {
		h := newStateHarness(t, Options{}, "b", "c")
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		h.advance(freshness(h.e.cfg)) // the promise after the loss has run out
		h.expireElection()            // no down: the leader fell silent
		require.True(t, h.e.preVoting)
		out := h.recv("c", msgPreVote{ClusterID: "c", Term: 1, ViewSize: 3})
		assert.True(t, sentTo[msgPreVoteReply](out, "c")[0].Granted, "ranks matter only after an observed down")
	})
}

func TestFastFailoverIsStaggeredByRank(t *testing.T) {
	// in the failover order of ClusterID "c": e, a, c
	delays := map[string]time.Duration{}
	for _, self := range []string{"a", "c", "e"} {
		options := Options{ClusterID: "c", AssumeSymmetricConnectionLoss: true}
		cfg, _, _ := options.resolve()
		e := newElection(cfg, pid(self), "leader", newStateHarness(t, Options{}).e.rng, nil)
		e.start(t0)
		for _, p := range []string{"a", "c", "e"} {
			if p != self {
				e.heard(pid(p), "leader")
			}
		}
		delays[self] = e.fastFailoverDelay(false)
	}
	step := 150 * time.Millisecond / 30
	assert.GreaterOrEqual(t, delays["e"], step, "nobody pre-votes within a step of its down (A2)")
	assert.LessOrEqual(t, delays["e"], step+step/2, "rank 0 goes first")
	assert.GreaterOrEqual(t, delays["a"], 2*step)
	assert.GreaterOrEqual(t, delays["c"], 3*step)
}

// The step counts from when the node's framework reported the down (the
// watcher's receipt, peerDown.At), not from when the actor got to it: on a
// busy survivor the actor may handle its down well after the watcher did,
// and the other end's report (A2) is bounded against the watcher's time.
func TestFastFailoverCountsTheStepFromTheReportedDown(t *testing.T) {
	step := 150 * time.Millisecond / 30
	lose := func(reportedAgo time.Duration) (*stateHarness, effects) {
		h := newStateHarness(t, Options{AssumeSymmetricConnectionLoss: true}, "b", "c")
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		require.True(t, h.e.downAt(h.now, h.now.Add(-reportedAgo), pid("b"), gen.ErrNoConnection))
		return h, h.e.takeEffects()
	}
	armedAfter := func(reportedAgo time.Duration) time.Duration {
		_, out := lose(reportedAgo)
		for _, r := range out.timers {
			if r.kind == timerFast && r.after >= 0 {
				return r.after
			}
		}
		t.Fatalf("no fast failover armed for a down reported %s ago", reportedAgo)
		return 0
	}
	now := armedAfter(0)
	assert.GreaterOrEqual(t, now, step, "a down reported now waits a whole step (A2)")
	assert.LessOrEqual(t, now, step+step/2)
	assert.Equal(t, now-2*time.Millisecond, armedAfter(2*time.Millisecond), "a down reported 2ms ago waits 2ms less (same seed)")
	assert.Equal(t, now, armedAfter(-time.Second), "a report time after now counts as now")

	// A down reported more than a step ago pre-votes in the same step: no
	// timer, no second activation of the actor.
	h, out := lose(20 * time.Millisecond)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "the pre-vote goes out at once")
	assert.True(t, h.e.preVoting && h.e.preVoteFast)
	assert.False(t, h.e.timers[timerFast].armed)
}

// A voter that refuses the fast pre-vote for the lost leader's sake has
// not seen the loss yet (one survivor's framework reports it later than
// the other's): it is asked again a step later, within the time a
// survivor ranked after this one waits in a wave, and only then.
func TestFastPreVoteAsksARefusingVoterAgain(t *testing.T) {
	step := 150 * time.Millisecond / 30
	start := func() *stateHarness {
		h := newStateHarness(t, Options{}, "b", "c")
		h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
		h.advance(freshness(h.e.cfg) + step) // the promise after the loss and the stagger have run out
		require.True(t, h.e.downAt(h.now, h.now.Add(-time.Second), pid("b"), gen.ErrNoConnection))
		out := h.e.takeEffects()
		require.Len(t, sentTo[msgPreVote](out, "c"), 1)
		return h
	}
	t.Run("refused for the lost leader: asked again until granted", func(t *testing.T) {
		h := start()
		h.advance(time.Millisecond)
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Leader: pid("b")})
		require.True(t, h.e.timers[timerFast].armed, "a second question is scheduled")
		assert.False(t, h.e.failingOverFast(), "the survivors ranked after this one may go meanwhile")
		h.advance(step)
		out := h.fire(timerFast)
		require.Len(t, sentTo[msgPreVote](out, "c"), 1, "asked again")
		assert.Equal(t, uint64(1), h.e.fastReasks)
		assert.True(t, h.e.preVoting)
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Leader: pid("b")})
		h.advance(step)
		out = h.fire(timerFast)
		require.Len(t, sentTo[msgPreVote](out, "c"), 1, "and again, while the time lasts")
		assert.Equal(t, uint64(2), h.e.fastReasks)
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true})
		assert.Equal(t, roleCandidate, h.e.role, "the second answer wins the round")
	})
	t.Run("not after a survivor ranked later would have gone", func(t *testing.T) {
		h := start()
		h.advance(waveExtra(h.e.cfg, 1))
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Leader: pid("b")})
		assert.False(t, h.e.timers[timerFast].armed)
	})
	t.Run("refused for another leader: not asked again", func(t *testing.T) {
		h := start()
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Leader: pid("d")})
		assert.False(t, h.e.timers[timerFast].armed)
	})
	t.Run("a leader's heartbeat ends it", func(t *testing.T) {
		h := start()
		h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Leader: pid("b")})
		require.True(t, h.e.timers[timerFast].armed)
		h.recv("c", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("c")})
		assert.False(t, h.e.timers[timerFast].armed)
		assert.Empty(t, h.e.fastReask)
	})
}

// In a wave of failovers (pacing.go) only the survivors ranked after the
// first wait longer: the first one's pre-vote is the one the wave needs.
func TestFastFailoverInAWaveDelaysOnlyTheLaterRanks(t *testing.T) {
	options := Options{ClusterID: "c", AssumeSymmetricConnectionLoss: true}
	cfg, _, _ := options.resolve()
	step := cfg.electionTimeoutMin / 30
	for _, tc := range []struct {
		self     string
		rank     int
		min, max time.Duration
	}{
		// in the failover order of ClusterID "c": e, g, a, c
		{"e", 0, step, step + step/2},
		{"g", 1, 2*step + cfg.electionTimeoutMin/4, 2*step + step/2 + cfg.electionTimeoutMin/4},
		{"a", 2, 3*step + cfg.electionTimeoutMin/2, 3*step + step/2 + cfg.electionTimeoutMin/2},
		{"c", 3, 4*step + cfg.electionTimeoutMin/2, 4*step + step/2 + cfg.electionTimeoutMin/2},
	} {
		e := newElection(cfg, pid(tc.self), "leader", newStateHarness(t, Options{}).e.rng, nil)
		e.start(t0)
		for _, p := range []string{"a", "c", "e", "g"} {
			if p != tc.self {
				e.heard(pid(p), "leader")
			}
		}
		d := e.fastFailoverDelay(true)
		assert.GreaterOrEqual(t, d, tc.min, "rank %d", tc.rank)
		assert.LessOrEqual(t, d, tc.max, "rank %d", tc.rank)
		assert.Equal(t, uint64(min(tc.rank, 1)), e.waveDelayed, "rank %d: counted as waiting for the wave", tc.rank)
	}
}

func TestFailoverWaveCountsTheFailoversOfOneWindow(t *testing.T) {
	var w failoverWave
	window := 50 * time.Millisecond
	for i := 0; i < 5; i++ {
		assert.Equal(t, i, w.join(t0.Add(time.Duration(i)*time.Millisecond), window))
	}
	assert.Equal(t, 5, w.join(t0.Add(window), window), "the window's last instant is still the wave")
	assert.Equal(t, 0, w.join(t0.Add(window+time.Millisecond), window), "a failover after the window starts a new wave")
	assert.Equal(t, 1, w.join(t0.Add(window+2*time.Millisecond), window))
	assert.Equal(t, 0, w.join(t0, window), "a clock that went back starts a new wave")
	var none *failoverWave
	assert.Equal(t, 0, none.join(t0, window), "an election without a hub is never in a wave")
	assert.Equal(t, 0, (&slot{}).waveOf().join(t0, window), "nor is one whose hub has not added it")
}

func TestLeaderStepsDownWithoutAcknowledgements(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.becomeLeader("b")
	for i := 0; i < 2; i++ {
		h.advance(50 * time.Millisecond)
		h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
		h.fire(timerHeartbeat)
		require.Equal(t, roleLeader, h.e.role, "acks from c keep a quorum")
	}
	// c falls silent; b only sends pre-votes, which are not acknowledgements
	for i := 0; i < 4 && h.e.role == roleLeader; i++ {
		h.advance(50 * time.Millisecond)
		h.recv("b", msgPreVote{ClusterID: "c", Term: h.e.term, ViewSize: 3})
		h.fire(timerHeartbeat)
	}
	assert.Equal(t, roleFollower, h.e.role)
}

func TestConfirmDenialBacksOffAndGrows(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	var backoffs []time.Duration
	for i := 0; i < 3; i++ {
		h.expireElection()
		h.recv("b", msgPreVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
		h.recv("b", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
		require.True(t, h.e.confirming)
		h.e.confirmResult(h.now, false, errors.New("lease held elsewhere"))
		assert.Equal(t, roleFollower, h.e.role)
		backoffs = append(backoffs, h.e.notBefore.Sub(h.now))
		h.now = h.e.notBefore
	}
	assert.Equal(t, uint64(3), h.e.confirmDenied)
	assert.Greater(t, backoffs[2], backoffs[0], "backoff grows with consecutive denials")
	assert.GreaterOrEqual(t, backoffs[2], 4*150*time.Millisecond)
}

func TestHandoverTellsAnUpToDateFollowerToCampaign(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.becomeLeader("b")
	h.advance(10 * time.Millisecond)
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
	successor := h.e.handover(h.now, "test", nil)
	out := h.e.takeEffects()
	assert.Equal(t, node("c"), successor, "the most recently heard follower")
	assert.Len(t, sentTo[msgTimeoutNow](out, "c"), 1)
	assert.Equal(t, roleFollower, h.e.role, "the leader stands down before its successor campaigns")
	assert.True(t, h.e.notBefore.After(h.now))
}

func TestTimeoutNowStartsAnElectionAtOnce(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 4, Leader: pid("b")})
	out := h.recv("b", msgTimeoutNow{ClusterID: "c", Term: 4})
	assert.Equal(t, uint64(5), h.e.term, "no pre-vote on a handover")
	assert.Equal(t, roleCandidate, h.e.role)
	assert.Len(t, sentTo[msgVote](out, "c"), 1)
}

func TestSupersededTimerIsDropped(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	stale := h.e.timers[timerElection].generation
	h.e.armTimer(timerElection, time.Second)
	h.e.timer(h.now, timerElection, stale)
	assert.Equal(t, uint64(1), h.e.dropped["stale_timer"])
}

// Found on real nodes by the recorder's invariant ("BecomeLeader twice
// without BecomeFollower between", in TestClusterGhostTTL under load) and
// reproduced here on the election state alone, so that it fails every time.
// A candidate whose election timer fires before its vote replies arrive
// opens a new pre-vote round while still a candidate. The late vote replies
// then make it leader with that round still open, and the pre-vote grants
// that follow start an election for the next term from the leader role: the
// actor goes leader -> candidate without HandleBecomeFollower, and
// HandleBecomeLeader runs twice in a row.
func TestLatePreVoteGrantsDoNotUnseatALeader(t *testing.T) {
	const cluster = "late"
	cfg, _, err := Options{ClusterID: cluster, ElectionTimeoutMin: 100, ElectionTimeoutMax: 200, HeartbeatInterval: 20}.resolve()
	require.NoError(t, err)
	self := gen.PID{Node: "self@host", ID: 1000, Creation: 1}
	a := gen.PID{Node: "a@host", ID: 1000, Creation: 1}
	b := gen.PID{Node: "b@host", ID: 1000, Creation: 1}
	e := newElection(cfg, self, "leader", rand.New(rand.NewPCG(1, 2)), nil)
	now := time.Unix(1_000_000, 0)
	e.start(now)
	e.startedAt = now.Add(-time.Hour) // long up
	settleFloor(e)
	e.join(gen.ProcessID{Name: "leader", Node: a.Node})
	e.join(gen.ProcessID{Name: "leader", Node: b.Node})
	timeout := func() {
		now = now.Add(time.Second)
		e.timer(now, timerElection, e.timers[timerElection].generation)
		e.takeEffects()
	}

	timeout() // a follower that hears no leader pre-votes for term 1
	e.receive(now, a, msgPreVoteReply{ClusterID: cluster, Term: 0, Granted: true})
	require.Equal(t, roleCandidate, e.role)
	require.EqualValues(t, 1, e.term)

	timeout() // no vote reply yet: the candidate's own election times out
	e.receive(now, a, msgVoteReply{ClusterID: cluster, Term: 1, Granted: true})
	if e.confirming {
		e.confirmResult(now, true, nil)
	}
	if e.role != roleLeader {
		return // the late vote no longer wins: nothing left to check
	}
	e.published(now)
	e.takeEffects()

	e.receive(now, b, msgPreVoteReply{ClusterID: cluster, Term: 1, Granted: true})
	require.Equal(t, roleLeader, e.role, "a late pre-vote grant must not make a leader campaign (term %d)", e.term)
	require.EqualValues(t, 1, e.term)
}

func TestLateTickDoesNotExtendTheLease(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.becomeLeader("b")
	require.True(t, h.e.leading(h.now))
	// the leader's own process was starved for 400ms: whatever the reason,
	// its lease (from the newest round a quorum acknowledged) is over
	h.advance(400 * time.Millisecond)
	assert.False(t, h.e.leading(h.now), "the lease ran out during the stall")
	h.fire(timerHeartbeat)
	assert.Equal(t, roleFollower, h.e.role, "a late tick stands the leader down instead of deferring")
}

// StepDownTo's rule: a chosen successor takes over only when it is up to
// date (successorRefusal), and then it is the one told, not the one heard
// most recently.
func TestHandoverToAChosenSuccessor(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d")
	for _, p := range []string{"b", "c", "d"} {
		h.recv(p, msgHello{ClusterID: "c"})
	}
	h.becomeLeader("b", "c")
	h.advance(10 * time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
	assert.Contains(t, h.e.successorRefusal(h.e.members[node("d")], nil), "has not acknowledged", "d never answered this term")
	assert.Equal(t, "", h.e.successorRefusal(h.e.members[node("b")], nil))
	assert.Contains(t, h.e.successorRefusal(h.e.members[node("b")], func(gen.Atom) bool { return false }), "not connected")
	successor := h.e.handoverTo(h.now, "test", nil, node("b"))
	out := h.e.takeEffects()
	assert.Equal(t, node("b"), successor, "the chosen one, although c was heard last")
	assert.Len(t, sentTo[msgTimeoutNow](out, "b"), 1)
	assert.Empty(t, sentTo[msgTimeoutNow](out, "c"))
}

// A lost connection to the leader is a sign, not a change: the callbacks
// keep naming the leader until this node looks for another (its fast
// pre-vote); a real termination is a change at once.
func TestALostConnectionChangesNoCallbackUntilThePreVote(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	require.Equal(t, pid("b"), h.e.public().leader)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.e.takeEffects()
	assert.Equal(t, pid("b"), h.e.public().leader, "a lost connection: still the recognised leader")
	h.advance(h.e.cfg.electionTimeoutMin)
	h.fire(timerFast)
	require.True(t, h.e.preVoting, "the fast pre-vote began")
	assert.Equal(t, gen.PID{}, h.e.public().leader, "looking for another leader: no leader now")

	h = newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	h.e.down(h.now, pid("b"), gen.TerminateReasonKill)
	assert.Equal(t, gen.PID{}, h.e.public().leader, "a termination is a change at once")
}

// The failover order (rankedBefore) is a total order of the members' names
// that every member computes alike, and it differs from election to
// election: over many ClusterIDs each of three nodes is ranked first in
// about a third of them, so a crashed node's elections go to all the
// survivors, not all to one.
func TestTheFailoverOrderSpreadsTheFirstRankOverTheNodes(t *testing.T) {
	nodes := []gen.Atom{"n1@host", "n2@host", "n3@host"}
	first := map[gen.Atom]int{}
	const elections = 3000
	for i := range elections {
		options := Options{ClusterID: fmt.Sprintf("shard-%d", i)}
		cfg, _, err := options.resolve()
		require.NoError(t, err)
		e := &election{cfg: cfg}
		for _, a := range nodes {
			assert.False(t, e.rankedBefore(a, a), "irreflexive")
			for _, b := range nodes {
				if a != b {
					assert.NotEqual(t, e.rankedBefore(a, b), e.rankedBefore(b, a), "%s and %s are ordered one way", a, b)
				}
			}
		}
		sorted := slices.Clone(nodes)
		slices.SortFunc(sorted, func(a, b gen.Atom) int {
			if e.rankedBefore(a, b) {
				return -1
			}
			return 1
		})
		first[sorted[0]]++
	}
	for _, n := range nodes {
		assert.InDelta(t, elections/3, first[n], elections/12, "%s is ranked first in %d of %d elections", n, first[n], elections)
	}
}

// The order the election tests of ClusterID "c" rely on: "f" is ranked
// before every other name they use, "a" (the harness's own node) before
// "c" and "0".
func TestTheFailoverOrderOfTheTests(t *testing.T) {
	e := newStateHarness(t, Options{}).e
	order := []string{"f", "d", "e", "b", "g", "a", "c", "0"}
	for i := 1; i < len(order); i++ {
		assert.True(t, e.rankedBefore(node(order[i-1]), node(order[i])), "%s before %s", order[i-1], order[i])
	}
}

// Before it has known any leader, an election campaigns later by a spread
// of the election timeout for each member ranked before it in the failover
// order: after its quiet period, and after a campaign that did not win. So
// the member ranked first usually campaigns first, and elections started
// together are led by their nodes in about equal shares. Once it has known
// a leader, its election timeouts are the plain random ones.
func TestBeforeItsFirstLeaderAnElectionCampaignsInTheFailoverOrder(t *testing.T) {
	// in the failover order of ClusterID "c": f, b, a, c
	fresh := func(self string) *election {
		peers := []string{"a", "b", "c", "f"}
		h := newStateHarness(t, Options{}, slices.DeleteFunc(slices.Clone(peers), func(p string) bool { return p == self })...)
		e := newElection(h.e.cfg, pid(self), "leader", h.e.rng, nil)
		e.start(t0)
		return e
	}
	spread := 150 * time.Millisecond
	for self, rank := range map[string]int{"f": 0, "b": 1, "a": 2, "c": 3} {
		e := fresh(self)
		require.Equal(t, rank, e.startRank(), "%s", self)
		e.now = t0
		require.True(t, e.waitQuietPeriod())
		from := t0.Add(e.quietPeriod() + time.Duration(rank)*spread)
		assert.False(t, e.electionDeadline.Before(from), "%s campaigns no earlier than %s after its quiet period", self, time.Duration(rank)*spread)
		assert.False(t, e.electionDeadline.After(from.Add(spread)), "%s", self)

		e.now = t0.Add(time.Second)
		e.resetElectionDeadline()
		from = e.now.Add(150*time.Millisecond + time.Duration(rank)*spread)
		assert.False(t, e.electionDeadline.Before(from), "%s: a campaign that did not win waits as long again", self)
		assert.False(t, e.electionDeadline.After(from.Add(spread)), "%s", self)

		e.stats.leaderChanges = 1 // it has known a leader
		e.electionDeadline = time.Time{}
		e.resetElectionDeadline()
		assert.False(t, e.electionDeadline.After(e.now.Add(300*time.Millisecond)), "%s: with a leader known, the plain election timeout", self)
	}
}
