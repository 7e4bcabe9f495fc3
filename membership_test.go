package leader

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJoinCountsAtOnceAndIsIdempotentPerNode(t *testing.T) {
	h := newStateHarness(t, Options{})
	assert.Equal(t, roleUnclustered, h.e.role, "a lone node is below the default floor")
	h.e.join(procID("b"))
	out := h.e.takeEffects()
	assert.Len(t, sentTo[msgHello](out, "b"), 1, "Join opens negotiation")
	h.e.join(procID("b"))
	out = h.e.takeEffects()
	assert.Empty(t, sentTo[msgHello](out, "b"), "a repeated Join does not re-dial within ElectionTimeoutMax")
	assert.Equal(t, 2, h.e.viewSize())
	h.e.join(procID("c"))
	assert.Equal(t, 3, h.e.viewSize(), "a declared peer counts before it answers")
	assert.Equal(t, roleFollower, h.e.role, "the floor is reached without any reply")
	assert.True(t, h.e.timers[timerElection].armed)
	h.e.join(procID("a"))
	assert.Equal(t, 3, h.e.viewSize(), "joining itself is ignored")
}

func TestSenderOfAValidMessageBecomesAMember(t *testing.T) {
	h := newStateHarness(t, Options{}, "b")
	h.recv("c", msgHello{ClusterID: "c", Name: "leader"})
	assert.Equal(t, 3, h.e.viewSize())
	assert.True(t, h.e.members[node("c")].pid == pid("c"))
	h.recv("d", msgHello{ClusterID: "other"})
	assert.Equal(t, 3, h.e.viewSize(), "another cluster's message admits nobody")
}

func TestLeaveIsStickyForOneElectionTimeout(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d")
	h.e.leave(node("d"))
	assert.Equal(t, 3, h.e.viewSize())
	h.advance(100 * time.Millisecond)
	h.recv("d", msgHeartbeatAck{ClusterID: "c"})
	assert.Equal(t, 3, h.e.viewSize(), "in-flight traffic does not re-admit a withdrawn node")
	assert.Equal(t, uint64(1), h.e.dropped["withdrawn"])
	h.advance(300 * time.Millisecond)
	h.recv("d", msgHello{ClusterID: "c"})
	assert.Equal(t, 4, h.e.viewSize(), "after the sticky window a valid message admits it again")
}

// A Leave of the leader's node fails over as a lost connection does: a
// fast pre-vote once the promise has ended, F after the last
// acknowledgement, not an election timeout later (the leader's down, when
// it comes, no longer matches a member). The opt-in keeps its whole
// promise: a Leave is no loss the old leader sees.
func TestLeaveOfTheLeaderFailsOverAfterThePromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	ackedAt := h.now
	h.advance(time.Millisecond)
	h.e.leave(node("b"))
	h.e.takeEffects()
	require.True(t, h.e.timers[timerFast].armed, "a fast pre-vote is due")
	assert.False(t, h.e.timers[timerFast].due.Before(ackedAt.Add(freshness(h.e.cfg))), "not before the promise ends")
	assert.True(t, h.e.timers[timerFast].due.Before(ackedAt.Add(h.e.cfg.electionTimeoutMin)), "well before an election timeout")
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "promised", why, "the promise holds until F after the last acknowledgement")
	out := h.fire(timerFast)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1)
	assert.Len(t, sentTo[msgPreVote](out, "b"), 0, "the withdrawn node is asked nothing")

	opt := newStateHarness(t, Options{AssumeSymmetricConnectionLoss: true}, "b", "c", "d")
	opt.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	opt.e.leave(node("b"))
	opt.e.takeEffects()
	assert.False(t, opt.e.timers[timerFast].armed, "the opt-in fails over on a Leave at its election timeout")
	why, _ = opt.e.grantRefusal(false, pid("c"))
	assert.NotEqual(t, "", why, "and keeps its whole promise")
}

func TestJoinOverridesLeave(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.e.leave(node("c"))
	h.e.join(procID("c"))
	assert.Equal(t, 3, h.e.viewSize())
	h.recv("c", msgHello{ClusterID: "c"})
	assert.Equal(t, uint64(0), h.e.dropped["withdrawn"])
}

func TestConnectionLossKeepsMemberUntilGhostTTL(t *testing.T) {
	h := newStateHarness(t, Options{GhostTTL: 1000}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c"})
	require.True(t, h.e.down(h.now, pid("c"), gen.ErrNoConnection))
	h.e.takeEffects()
	assert.Equal(t, 3, h.e.viewSize(), "a blip must not lower quorum")
	assert.Equal(t, gen.PID{}, h.e.members[node("c")].pid, "only how to reach it is forgotten")
	assert.Contains(t, unreachableList(h.e), "c@test (0s ago)")
	h.advance(999 * time.Millisecond)
	assert.Equal(t, 3, h.e.viewSize())
	h.advance(time.Millisecond)
	out := h.fire(timerGhost)
	assert.Equal(t, 2, h.e.viewSize(), "dropped after GhostTTL")
	assert.Equal(t, roleUnclustered, h.e.role)
	assert.Equal(t, []gen.PID{pid("c")}, out.left)
}

func TestComingBackBeforeGhostTTLKeepsTheMember(t *testing.T) {
	h := newStateHarness(t, Options{GhostTTL: 1000}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c"})
	h.e.down(h.now, pid("c"), gen.ErrNoConnection)
	h.advance(500 * time.Millisecond)
	h.recv("c", msgHeartbeatAck{ClusterID: "c"})
	h.advance(600 * time.Millisecond)
	h.fire(timerGhost)
	assert.Equal(t, 3, h.e.viewSize())
	assert.Empty(t, unreachableList(h.e))
}

// A ghost is probed by a member that is not leading, several times inside
// GhostTTL: a follower has no other reason to write to it, and without the
// probes a link that healed at once would still cost the member its place.
// The sweep timer is armed from the loss on, the last sweep at the expiry.
func TestEveryRoleProbesItsGhostsUntilGhostTTL(t *testing.T) {
	for _, role := range []string{"follower", "unclustered"} {
		t.Run(role, func(t *testing.T) {
			peers := []string{"b", "c"}
			if role == "follower" {
				peers = append(peers, "d")
			}
			h := newStateHarness(t, Options{GhostTTL: 5000}, peers...)
			h.recv("c", msgHello{ClusterID: "c"})
			if role == "follower" {
				h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
			}
			lostAt := h.now
			h.e.down(h.now, pid("c"), gen.ErrNoConnection)
			if role == "unclustered" {
				h.e.leave(node("b")) // the view falls below the floor: nothing else is sent
				require.Equal(t, roleUnclustered, h.e.role)
			}
			out := h.e.takeEffects()
			require.Empty(t, sentTo[msgHello](out, "c"), "not in the milliseconds of the loss (a node crash's failovers)")
			first := ghostTimerIn(t, out)
			require.GreaterOrEqual(t, first, lazyDownPause(h.e.cfg), "but half a minimum election timeout later")
			require.LessOrEqual(t, first, lazyDownPause(h.e.cfg)+h.e.cfg.electionTimeoutMax, "and a random part of ElectionTimeoutMax at most, so that a crashed node's survivors do not all probe at once")
			probes := 0
			view := h.e.viewSize()
			for h.e.viewSize() == view {
				after := ghostTimerIn(t, out)
				h.advance(after)
				out = h.fire(timerGhost)
				if h.now.Sub(lostAt) < h.e.cfg.ghostTTL {
					if probes == 0 {
						require.Len(t, sentTo[msgHello](out, "c"), 1, "the first probe")
						require.Equal(t, first, h.now.Sub(lostAt))
					}
					probes += len(sentTo[msgHello](out, "c"))
				}
			}
			assert.Equal(t, h.e.cfg.ghostTTL, h.now.Sub(lostAt), "dropped at GhostTTL, not later")
			assert.GreaterOrEqual(t, probes, 5, "probed every eighth of GhostTTL or so")
			assert.LessOrEqual(t, probes, 10, "but not on every heartbeat")
		})
	}
}

// ghostTimerIn returns the delay of the ghost timer the effects armed.
func ghostTimerIn(t *testing.T, out effects) time.Duration {
	t.Helper()
	for _, tr := range out.timers {
		if tr.kind == timerGhost && tr.after >= 0 {
			return tr.after
		}
	}
	t.Fatalf("the ghost timer was not armed: %+v", out.timers)
	return 0
}

func TestRealTerminationRemovesAtOnce(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c"})
	h.e.down(h.now, pid("c"), errors.New("crashed"))
	out := h.e.takeEffects()
	assert.Equal(t, 2, h.e.viewSize())
	assert.Equal(t, []gen.PID{pid("c")}, out.left)
	assert.False(t, h.e.down(h.now, pid("x"), gen.ErrNoConnection), "a down for a non-member is the user's")
}

func TestLeaderBelowTheFloorStepsDown(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.becomeLeader("b")
	h.e.leave(node("c"))
	assert.Equal(t, roleUnclustered, h.e.role)
	assert.False(t, h.e.timers[timerHeartbeat].armed)
	assert.False(t, h.e.timers[timerElection].armed, "no campaign below the floor")
	assert.Equal(t, gen.PID{}, h.e.leader)
}

func TestHeartbeatsGoOnlyToPeersThatAnswered(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c", "d")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.becomeLeader("b", "c")
	h.advance(50 * time.Millisecond)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term})
	out := h.fire(timerHeartbeat)
	assert.Len(t, sentTo[msgHeartbeat](out, "b"), 1)
	assert.Empty(t, sentTo[msgHeartbeat](out, "d"), "d never answered")
	for _, o := range out.sends {
		if o.node == "d" {
			assert.Equal(t, procID("d"), o.to, "an unanswered peer is reached by name")
		}
	}
}

func TestLateMessagesOfADeadProcessDoNotReadmitIt(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c"})
	h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown)
	require.Equal(t, 2, h.e.viewSize())
	// the down overtook the dead process's last heartbeat ack
	h.recv("c", msgHeartbeatAck{ClusterID: "c"})
	assert.Equal(t, 2, h.e.viewSize())
	assert.Equal(t, uint64(1), h.e.dropped["dead_sender"])
	// its successor on the same node is welcome
	successor := pid("c")
	successor.ID++
	h.e.receive(h.now, successor, msgHello{ClusterID: "c"})
	assert.Equal(t, 3, h.e.viewSize())
}

// A member whose node can no longer be dialed although no down came (the
// watcher's monitor request went over a connection that then dropped, and
// waits for the framework's request timeout) is unreachable from that
// moment, under GhostTTL, as after a down; it is not an observed failure.
func TestMemberWhoseNodeCannotBeDialedIsUnreachable(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.dialed(h.now, node("b"), gen.ErrNoConnection)
	m := h.e.members[node("b")]
	assert.Equal(t, gen.PID{}, m.pid, "the PID is forgotten")
	assert.Equal(t, h.now, m.unreachableSince, "the GhostTTL wait starts now")
	assert.Equal(t, 3, h.e.viewSize(), "the member stays for GhostTTL")
	assert.Equal(t, gen.PID{}, h.e.lostLeader, "no fast failover: nobody delivered a down")
	out := h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "still promised to b")

	h.advance(h.e.cfg.ghostTTL)
	h.fire(timerGhost)
	assert.Equal(t, 2, h.e.viewSize(), "gone after GhostTTL")
}

// A member whose monitor is not confirmed within ElectionTimeoutMin has its
// connection checked by the actor; a confirmed one does not.
func TestUnconfirmedMonitorHasItsConnectionChecked(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.recv("c", msgHello{ClusterID: "c"})
	h.e.monitored(h.e.members[node("c")].pid)
	h.e.findSilentConnections()
	assert.Empty(t, h.e.takeEffects().checkConnected, "the monitor request may still be on its way")
	h.advance(h.e.cfg.electionTimeoutMin)
	h.e.now = h.now
	h.e.findSilentConnections()
	assert.Equal(t, []gen.Atom{node("b")}, h.e.takeEffects().checkConnected, "only b's monitor is unconfirmed")
}

// A discovery loop that calls Join every 50 ms for a peer that has not
// started its member yet: the Hellos to it space out (doubling up to
// 8×ElectionTimeoutMax), while a peer met before and then lost is probed
// every ElectionTimeoutMax, so that it comes back quickly after a heal.
func TestHellosToAPeerNeverMetBackOff(t *testing.T) {
	h := newStateHarness(t, Options{}, "c")
	h.recv("c", msgHello{ClusterID: "c"})
	h.e.down(h.now, pid("c"), gen.ErrNoConnection) // met, then lost
	h.e.takeEffects()
	var toNew, toLost []time.Time
	for start := h.now; h.now.Sub(start) < 20*time.Second; h.advance(50 * time.Millisecond) {
		h.e.now = h.now
		h.e.join(procID("b"))
		h.e.join(procID("c"))
		out := h.e.takeEffects()
		if len(sentTo[msgHello](out, "b")) > 0 {
			toNew = append(toNew, h.now)
		}
		if len(sentTo[msgHello](out, "c")) > 0 {
			toLost = append(toLost, h.now)
		}
	}
	max := time.Duration(DefaultElectionTimeoutMax) * time.Millisecond
	require.GreaterOrEqual(t, len(toNew), 5)
	for i := 1; i < len(toNew); i++ {
		gap := toNew[i].Sub(toNew[i-1])
		want := max << min(i-1, maxProbeBackoff)
		assert.GreaterOrEqual(t, gap, want, "Hello %d to the peer never met", i+1)
		assert.Less(t, gap, want*5/4+100*time.Millisecond, "Hello %d to the peer never met", i+1)
	}
	assert.Less(t, len(toNew), 14, "20 s of Hellos to a peer never met, backed off to 2.4 s")
	assert.Greater(t, len(toLost), 55, "20 s of Hellos to a lost member, one every ElectionTimeoutMax")
	h.recv("b", msgHello{ClusterID: "c"})
	assert.Equal(t, pid("b"), h.e.members[node("b")].pid, "the peer that finally started is a member")
}

// A monitor that fails at once, again and again, while Hellos get through
// (the v320 branch's crossed connections) must not make a loop of Hello,
// answer, monitor, failure: one Hello at once per ElectionTimeoutMin, the
// rest at the probes' pace, and one log line.
func TestRepeatedLossesDoNotProbeInALoop(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	hellos := 0
	for i := 0; i < 20; i++ {
		h.recv("c", msgHelloReply{ClusterID: "c", Name: "leader"})
		h.e.monitorFailed(h.now, pid("c"), gen.ErrTimeout)
		hellos += len(sentTo[msgHello](h.e.takeEffects(), "c"))
		h.advance(100 * time.Microsecond)
	}
	assert.Equal(t, 1, hellos, "one Hello at once, not one per failure")
	assert.Equal(t, uint64(19), h.e.dropped["lost_again"])
	h.advance(150 * time.Millisecond)
	h.recv("c", msgHelloReply{ClusterID: "c", Name: "leader"})
	h.e.monitorFailed(h.now, pid("c"), gen.ErrTimeout)
	assert.Len(t, sentTo[msgHello](h.e.takeEffects(), "c"), 1, "a loss after ElectionTimeoutMin says Hello at once again")
}

// Join reports a peer that cannot be a member to its caller, from Init as
// from a handler, and counts nothing.
func TestJoinReturnsAnErrorForAMalformedNodeName(t *testing.T) {
	var a Actor // before Init: no state yet
	err := a.Join(gen.ProcessID{Name: "leader", Node: "no-host"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrInvalidPeer))
	assert.Contains(t, err.Error(), "name@host")
	assert.Empty(t, a.pendingJoins, "nothing is kept for later")
	assert.NoError(t, a.Join(gen.ProcessID{Name: "leader", Node: "n1@host"}))
	assert.Len(t, a.pendingJoins, 1)
}

// Kept seats (seats.go): a member that stopped gracefully leaves the view
// but keeps its seat for the MinClusterSize floor for GhostTTL, so a
// three-node cluster keeps its leader through a rolling restart; a killed
// one does not, and neither does one withdrawn by Leave.
func TestAGracefullyStoppedMemberKeepsItsSeatForTheFloor(t *testing.T) {
	leaderOf := func(t *testing.T) *stateHarness {
		h := newStateHarness(t, Options{}, "b", "c")
		h.recv("b", msgHello{ClusterID: "c"})
		h.recv("c", msgHello{ClusterID: "c"})
		h.becomeLeader("b")
		return h
	}
	t.Run("shutdown", func(t *testing.T) {
		h := leaderOf(t)
		require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown))
		assert.Equal(t, 2, h.e.viewSize(), "c left the view")
		assert.Equal(t, 2, h.e.quorum())
		assert.Equal(t, roleLeader, h.e.role, "its seat keeps the floor: no stand-down")
		h.now = h.now.Add(h.e.cfg.ghostTTL)
		h.fire(timerGhost)
		assert.Equal(t, roleUnclustered, h.e.role, "the seat ran out")
	})
	t.Run("back in time", func(t *testing.T) {
		h := leaderOf(t)
		require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonNormal))
		restarted := gen.PID{Node: node("c"), ID: 2000, Creation: 2}
		h.e.receive(h.now, restarted, msgHello{ClusterID: "c", Name: "leader"})
		assert.Empty(t, h.e.seats, "a member again")
		assert.Equal(t, 3, h.e.viewSize())
	})
	t.Run("killed", func(t *testing.T) {
		h := leaderOf(t)
		require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonKill))
		assert.Equal(t, roleUnclustered, h.e.role, "no seat for a process that did not mean to stop")
	})
	t.Run("withdrawn", func(t *testing.T) {
		h := leaderOf(t)
		require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown))
		h.e.leave(node("c"))
		assert.Equal(t, roleUnclustered, h.e.role, "Leave gives the seat up")
	})
}

// A node restarted within the framework's one-second creation resolution
// may give its new actor the dead actor's PID: the new one's Hello, with
// another incarnation, is heard; the dead one's late messages are not.
func TestARestartWithTheSamePIDIsHeardByItsIncarnation(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c", Incarnation: 11})
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 22})
	require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown))
	require.NotContains(t, h.e.members, node("c"))
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 22})
	assert.NotContains(t, h.e.members, node("c"), "the dead process's late Hello does not re-admit it")
	assert.Equal(t, uint64(1), h.e.dropped["dead_sender"])
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: 0})
	assert.NotContains(t, h.e.members, node("c"))
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 33})
	assert.Contains(t, h.e.members, node("c"), "a new process with the same PID")
	assert.Equal(t, uint64(33), h.e.members[node("c")].incarnation)
}

// The same PID with another incarnation is a restart: the peer is told so
// (its term floor is then a restart's), and the behavior hears of a new
// process.
func TestASamePIDRestartIsARestart(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c", Incarnation: 11})
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 22})
	require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown))
	h.e.takeEffects()
	out := h.recv("c", msgHello{ClusterID: "c", Incarnation: 33})
	replies := sentTo[msgHelloReply](out, "c")
	require.Len(t, replies, 1)
	assert.True(t, replies[0].Restarted, "a restart: the strict term floor")
	assert.Contains(t, out.joined, pid("c"), "a new process for HandlePeerJoined")
}

// The first Hello after a reported loss waits a random part of
// ElectionTimeoutMax on top of lazyDownPause. Breaks: when a node crashes
// under thousands of elections, every election on each survivor probes it
// at the same instant, a burst of dials in the middle of the failovers.
func TestTheFirstProbesAfterALossAreSpreadOut(t *testing.T) {
	cfg := config{electionTimeoutMin: 150 * time.Millisecond, electionTimeoutMax: 300 * time.Millisecond}
	rng := rand.New(rand.NewPCG(1, 2))
	seen := make(map[time.Duration]bool)
	lo, hi := time.Hour, time.Duration(0)
	for range 200 {
		d := firstProbeAfterLoss(cfg, rng)
		seen[d/(10*time.Millisecond)] = true
		lo, hi = min(lo, d), max(hi, d)
	}
	assert.GreaterOrEqual(t, lo, lazyDownPause(cfg))
	assert.LessOrEqual(t, hi, lazyDownPause(cfg)+cfg.electionTimeoutMax)
	assert.Greater(t, len(seen), 20, "spread over the window, not at one instant")
}

// A node restarted within the framework's one-second creation resolution
// may give its new actor the old one's PID, and the new actor's Hello may
// come before the old actor's down (the down of a graceful node Stop goes
// through the watcher, the restarted node's Hello straight to the actor).
// That down is the replaced process's: the member stays, its PID is
// monitored again (the monitor that fired was the old process's), and the
// new actor is heard. Breaks: the down removed the live member and marked
// its PID dead under the new incarnation, every later message of the new
// actor was dropped, and the view stayed a member short.
func TestTheDownOfAProcessWhosePIDWasReusedKeepsTheMember(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c", Incarnation: 11})
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 22})
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 33}) // the new actor, the same PID
	require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown), "the old actor's down")
	out := h.e.takeEffects()
	require.Contains(t, h.e.members, node("c"), "the live member stays")
	assert.Equal(t, pid("c"), h.e.members[node("c")].pid)
	assert.Contains(t, out.monitor, pid("c"), "the new process is monitored")
	assert.Equal(t, uint64(1), h.e.dropped["replaced_process_down"])
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 33})
	h.recv("c", msgHeartbeatAck{ClusterID: "c"})
	assert.Zero(t, h.e.dropped["dead_sender"], "the new actor is heard")

	require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown), "the new actor's own down")
	assert.NotContains(t, h.e.members, node("c"), "removes it")
}

// The same reuse, when the connection's end had made this node forget the
// PID before the new actor's Hello came: its monitor is then asked for the
// new actor, and that actor's down is its own.
func TestTheDownOfAReusedPIDMonitoredAnewIsTheNewProcesss(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c", Incarnation: 11})
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 22})
	require.True(t, h.e.down(h.now, pid("c"), gen.ErrNoConnection))
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 33})
	require.True(t, h.e.down(h.now, pid("c"), gen.TerminateReasonShutdown))
	assert.NotContains(t, h.e.members, node("c"))
	assert.Zero(t, h.e.dropped["replaced_process_down"])
}

// A leader's PID reused the same way: the old leader's down is still the
// proof that it ended, and its follower fails over.
func TestTheDownOfALeaderWhosePIDWasReusedFailsOver(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("c", msgHello{ClusterID: "c", Incarnation: 22})
	h.recv("b", msgHello{ClusterID: "c", Term: 1, Incarnation: 11})
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	require.Equal(t, pid("b"), h.e.leader)
	h.recv("b", msgHello{ClusterID: "c", Term: 1, Incarnation: 44})
	require.True(t, h.e.down(h.now, pid("b"), gen.TerminateReasonShutdown))
	assert.Equal(t, gen.PID{}, h.e.leader, "the old leader ended")
	assert.Contains(t, h.e.members, node("b"))
	assert.True(t, h.e.failingOverFast(), "a termination: the follower fails over")
}
