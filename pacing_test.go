package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Node-wide pacing (pacing.go): campaign admission, then spare losses; the
// failover waves are in election_test.go and sim_wave_test.go.

// gateNode is a gen.Node of its own for a gate test: only its identity is
// used.
type gateNode struct {
	gen.Node
	name string
}

func newGateNode(t *testing.T) gen.Node {
	n := &gateNode{name: t.Name()}
	t.Cleanup(func() {
		campaignGates.Lock()
		delete(campaignGates.byNode, n)
		campaignGates.Unlock()
		forgetBoard(n)
	})
	return n
}

func gatePID(id uint64) gen.PID { return gen.PID{Node: "gate@localhost", ID: id, Creation: 1} }

func TestGateHandsOutAtMostItsTurnsAndQueuesTheRest(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 2}, time.Second
	for id := uint64(1); id <= 2; id++ {
		ok, wake := node.acquire(gatePID(id), t0, hold)
		assert.True(t, ok, "election %d: a turn is free", id)
		assert.Empty(t, wake)
	}
	ok, wake := node.acquire(gatePID(3), t0, hold)
	assert.False(t, ok, "both turns are taken")
	assert.Empty(t, wake)
	ok, _ = node.acquire(gatePID(4), t0, hold)
	assert.False(t, ok)

	// the first to finish gives its turn to the first in the queue
	wake = node.release(gatePID(1), t0, hold)
	assert.Equal(t, []gen.PID{gatePID(3)}, wake)
	ok, wake = node.acquire(gatePID(3), t0, hold)
	assert.True(t, ok, "the turn given to 3 is 3's when it comes to take it")
	assert.Empty(t, wake)
	ok, _ = node.acquire(gatePID(5), t0, hold)
	assert.False(t, ok, "a newcomer does not overtake the queue")
}

// While the node's liveness hub ticks late, the gate hands out at most
// campaignsWhenLate turns; once no tick came late for a turn hold, its
// whole limit again, first to those who waited. Breaks: an overloaded node
// keeps admitting campaigns, its hubs tick later still, its leaders' leases
// run out, and 10,000 elections on three node processes never settle.
func TestGateBacksOffWhileTheNodesHubTicksLate(t *testing.T) {
	n := newGateNode(t)
	node, hold := nodeTurns{node: n, limit: campaignsWhenLate + 2}, time.Second
	boardOf(n).noteLate(t0)
	id := uint64(0)
	for ; id < campaignsWhenLate; id++ {
		ok, _ := node.acquire(gatePID(id+1), t0, hold)
		assert.True(t, ok, "election %d: a turn while the node is late", id+1)
	}
	ok, _ := node.acquire(gatePID(id+1), t0.Add(hold/2), hold)
	assert.False(t, ok, "no more than campaignsWhenLate while the late tick is recent")

	later := t0.Add(hold)
	wake := node.release(gatePID(1), later, hold)
	assert.Equal(t, []gen.PID{gatePID(id + 1)}, wake, "a hold after the late tick, the waiter gets a turn")
	for next := id + 2; next <= campaignsWhenLate+3; next++ { // 2 and id+1 hold the other two
		ok, _ := node.acquire(gatePID(next), later, hold)
		assert.True(t, ok, "election %d: the whole limit again", next)
	}
	ok, _ = node.acquire(gatePID(99), later, hold)
	assert.False(t, ok, "and no more than the limit")
}

func TestGateSendsARetryToTheBackOfTheQueue(t *testing.T) {
	// Elections that cannot win (their node is cut off from most of their
	// members) retry at every election timeout; they must not keep their
	// turns while others wait.
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold)
	require.True(t, ok)
	ok, _ = node.acquire(gatePID(2), t0, hold)
	require.False(t, ok)

	ok, wake := node.acquire(gatePID(1), t0.Add(300*time.Millisecond), hold)
	assert.False(t, ok, "1 tries again while 2 waits: 1 waits now")
	assert.Equal(t, []gen.PID{gatePID(2)}, wake, "and 2 has the turn")

	// alone, an election keeps its turn from one attempt to the next
	node.release(gatePID(2), t0.Add(300*time.Millisecond), hold) // gives it to 1
	ok, _ = node.acquire(gatePID(1), t0.Add(310*time.Millisecond), hold)
	require.True(t, ok)
	ok, wake = node.acquire(gatePID(1), t0.Add(600*time.Millisecond), hold)
	assert.True(t, ok, "nobody waits")
	assert.Empty(t, wake)
}

func TestGateExpiresTheTurnOfAnElectionThatNeverGaveItBack(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold) // then its process is killed
	require.True(t, ok)
	ok, _ = node.acquire(gatePID(2), t0, hold)
	require.False(t, ok)
	ok, _ = node.acquire(gatePID(2), t0.Add(hold), hold)
	assert.False(t, ok, "not before the hold is over")
	ok, _ = node.acquire(gatePID(2), t0.Add(hold+time.Millisecond), hold)
	assert.True(t, ok, "the waiter that looks again after the hold finds the turn free")
}

func TestGateSkipsAWaiterThatLeft(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold)
	require.True(t, ok)
	for id := uint64(2); id <= 4; id++ {
		ok, _ = node.acquire(gatePID(id), t0, hold)
		require.False(t, ok)
	}
	assert.Empty(t, node.release(gatePID(2), t0, hold), "a waiter that terminates frees no turn")
	ok, _ = node.acquire(gatePID(2), t0, hold) // a new incarnation of it, say: at the back
	require.False(t, ok)
	assert.Equal(t, []gen.PID{gatePID(3)}, node.release(gatePID(1), t0, hold), "the turn skips the place 2 left")
	assert.Equal(t, []gen.PID{gatePID(4)}, node.release(gatePID(3), t0, hold))
	assert.Equal(t, []gen.PID{gatePID(2)}, node.release(gatePID(4), t0, hold), "2 comes last, where it queued again")
}

func TestGateForgetsANodeNobodyWaitsOn(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	node.acquire(gatePID(1), t0, hold)
	campaignGates.Lock()
	_, kept := campaignGates.byNode[node.node]
	campaignGates.Unlock()
	require.True(t, kept)
	node.release(gatePID(1), t0, hold)
	campaignGates.Lock()
	_, kept = campaignGates.byNode[node.node]
	campaignGates.Unlock()
	assert.False(t, kept, "a stopped node's gate is not kept for ever")
}

// fullGate is a gate whose turns are all taken by other elections.
type fullGate struct {
	asked, released int
	grant           bool
	waiting         int // places before the asker's
}

func (g *fullGate) acquire(pid gen.PID, now time.Time, hold time.Duration) (bool, []gen.PID) {
	g.asked++
	return g.grant, nil
}

func (g *fullGate) release(pid gen.PID, now time.Time, hold time.Duration) []gen.PID {
	g.released++
	return []gen.PID{gatePID(9)}
}

func (g *fullGate) ahead(pid gen.PID) int { return g.waiting }

func TestAnElectionWithoutATurnWaitsForIt(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	gate := &fullGate{}
	h.e.turns = gate
	out := h.expireElection()
	assert.Empty(t, sentTo[msgPreVote](out, "b"), "no turn: no campaign")
	assert.Equal(t, uint64(1), h.e.campaignsQueued)
	assert.True(t, h.e.awaitsTurn)
	assert.True(t, h.e.electionDeadline.After(h.now.Add(turnHold(h.e.cfg))), "it looks at the gate again after a hold at the latest")

	gate.grant = true
	h.e.turnCame(h.now)
	out = h.e.takeEffects()
	assert.Len(t, sentTo[msgPreVote](out, "b"), 1, "its turn came: it campaigns")
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1)
	h.e.endTurn()
	assert.Zero(t, gate.released, "the turn is kept while the pre-vote runs")

	h.recv("b", msgPreVoteReply{ClusterID: "c", Granted: true})
	h.recv("b", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	require.True(t, h.e.confirming)
	h.e.confirmResult(h.now, true, nil)
	h.e.endTurn()
	assert.Equal(t, 1, gate.released, "won: the turn is given on")
	assert.Equal(t, []gen.PID{gatePID(9)}, h.e.takeEffects().turnWakes, "to the next in the queue")
}

func TestATurnThatCameTooLateIsGivenOn(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	gate := &fullGate{}
	h.e.turns = gate
	h.expireElection()
	require.True(t, h.e.awaitsTurn)
	// a leader is heard while it waits
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	require.Equal(t, pid("b"), h.e.leader)
	h.e.turnCame(h.now)
	out := h.e.takeEffects()
	assert.Empty(t, sentTo[msgPreVote](out, "c"), "it has a leader: no campaign")
	h.e.endTurn()
	assert.Equal(t, 1, gate.released, "the turn it was given goes to the next")
}

func TestFastFailoverDoesNotWaitForATurn(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	gate := &fullGate{}
	h.e.turns = gate
	h.e.leaderLost(pid("b"), h.e.now, false)
	h.now = h.now.Add(h.e.fastFailoverDelay(false) * 3)
	out := h.fire(timerFast)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "a fast failover campaigns at once")
	assert.Zero(t, gate.asked)
}

// A leader's lost followers can wait (pacing.go, spare losses).

// The hints count what a leader can spare: a loss is deferred only while
// the leader keeps a quorum without it and without every loss deferred
// before it; a handled loss leaves the balance as it was; a follower's
// losses are the follower rule's business, and only lost connections wait.
func TestLeaderSpareCountsWhatALeaderCanLose(t *testing.T) {
	b, c, d := pid("b"), pid("c"), pid("d")
	lost := func(p gen.PID) peerDown { return peerDown{PID: p, Reason: gen.ErrNoConnection, Since: t0, At: t0} }

	h := &downHints{pause: 75 * time.Millisecond}
	assert.False(t, h.deferLeaderLoss(lost(b)), "no spare: not a leader")
	h.setSpare(2) // five members, quorum three, all reachable
	assert.True(t, h.deferLeaderLoss(lost(b)))
	assert.True(t, h.deferLeaderLoss(lost(b)), "the same loss again: still deferred, counted once")
	assert.True(t, h.deferLeaderLoss(lost(c)))
	assert.False(t, h.deferLeaderLoss(lost(d)), "a third loss would break the quorum: at once")
	assert.False(t, h.deferLeaderLoss(peerDown{PID: d, Reason: gen.TerminateReasonKill}), "a termination: at once")

	// handling b late: the spare shrinks with the deferred count, so d still may not wait
	assert.True(t, h.lossHandled(b))
	assert.False(t, h.lossHandled(b), "once")
	assert.False(t, h.stillDeferred(b))
	assert.True(t, h.stillDeferred(c))
	assert.False(t, h.deferLeaderLoss(lost(d)))

	// taking the rest early (a down that came at once): nothing is left to hand over
	taken := h.takeDeferred()
	assert.Equal(t, []peerDown{lost(c)}, taken)
	assert.False(t, h.stillDeferred(c))
	assert.Nil(t, h.takeDeferred())
	assert.False(t, h.deferLeaderLoss(lost(d)), "the spare went with them")

	// a follower's losses are never a leader's
	f := &downHints{pause: 75 * time.Millisecond}
	f.setSpare(2)
	f.set(true, b)
	assert.False(t, f.deferLeaderLoss(lost(c)))

	var none *downHints
	assert.False(t, none.deferLeaderLoss(lost(b)))
	assert.False(t, none.lossHandled(b))
	assert.Nil(t, none.takeDeferred())
}

// A shared watcher hands a leader that can spare the member its lost
// connection late, with the followers' late downs and their one timer, and
// marks the loss board at once. A leader that cannot spare it gets it at
// once; so does every leader of a private watcher. A loss the actor took
// early is not handed over again.
func TestSharedWatcherHandsALeaderItsSpareLossLate(t *testing.T) {
	const pause = 75 * time.Millisecond
	w, p, a1, a2 := newSharedWatcher()
	b1, b2 := pid("b"), pid("b")
	b2.ID++
	spares, cannot := &downHints{pause: pause}, &downHints{pause: pause}
	spares.setSpare(1)
	l1, l2 := &lossBoard{}, &lossBoard{}
	w.handle(request(a1, watchRequest{PID: b1, Hints: spares, Losses: l1}), false)
	w.handle(request(a2, watchRequest{PID: b2, Hints: cannot, Losses: l2}), false)
	p.sent, p.sentTo = nil, nil

	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: b1.Node}), true))
	assert.ElementsMatch(t, []any{peerDown{PID: b2, Reason: gen.ErrNoConnection, At: t0}, lateFlush{}, nodeSettleCheck{Node: b1.Node}}, p.sent,
		"a2 at once; a1's loss waits for the timer")
	assert.Equal(t, []time.Duration{pause}, p.after)
	assert.True(t, l1.since(b1.Node, t0) && l2.since(b2.Node, t0), "both boards marked at once")
	assert.True(t, spares.stillDeferred(b1))

	p.sent, p.sentTo = nil, nil
	w.clock = func() time.Time { return t0.Add(pause) }
	require.NoError(t, w.handle(fromSelf(p, lateFlush{}), false))
	assert.Equal(t, []any{peerDown{PID: b1, Reason: gen.ErrNoConnection, Since: t0, At: t0}}, p.sent)
	assert.Equal(t, []any{a1}, p.sentTo)

	// taken early: the timer hands nothing over
	w, p, a1, _ = newSharedWatcher()
	spares = &downHints{pause: pause}
	spares.setSpare(1)
	w.handle(request(a1, watchRequest{PID: b1, Hints: spares, Losses: &lossBoard{}}), false)
	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: b1.Node}), true))
	require.Len(t, spares.takeDeferred(), 1)
	p.sent, p.sentTo = nil, nil
	w.clock = func() time.Time { return t0.Add(pause) }
	require.NoError(t, w.handle(fromSelf(p, lateFlush{}), false))
	assert.Empty(t, p.sent, "the actor handled it already")
	assert.Empty(t, w.late)

	// a private watcher: at once, spare or not
	priv := &scriptedProcess{self: pid("w"), parent: pid("a")}
	hints := &downHints{pause: pause}
	hints.setSpare(1)
	pw := &watcher{process: priv, clock: func() time.Time { return t0 }, losses: &lossBoard{}, hints: hints}
	pw.watch(b1, 0)
	priv.sent, priv.after = nil, nil
	pw.handle(fromCore(gen.MessageDownPID{PID: b1, Reason: gen.ErrNoConnection}), true)
	assert.Equal(t, []any{peerDown{PID: b1, Reason: gen.ErrNoConnection, At: t0}}, priv.sent)
	assert.Empty(t, priv.after)
}

// TestSimulationALeaderStandsDownOnTheLossThatBreaksItsQuorum: five nodes,
// four to six elections. Two nodes that lead none of the busiest leader's
// elections crash together: that leader can spare both members, hears of
// them late and goes on leading. A third crashes 10 ms later: now its
// elections reach two of five, and each must stand down in the step that
// handles that down, not when the spared losses come or the lease runs
// out; without takeLeaderLosses the spared members still count as
// reachable and it leads on. While a loss is spared, Peers and HasPeer
// already leave the member out.
func TestSimulationALeaderStandsDownOnTheLossThatBreaksItsQuorum(t *testing.T) {
	t.Parallel()
	spared := 0
	for _, seed := range scenarioSeeds(t, 20) {
		k := 4 + int(seed%3)
		s, f, names := convergedFleet(t, seed, 5, k)
		keeper, _ := f.busiest()
		led := f.ledBy(keeper)
		var others []gen.Atom
		for _, name := range names {
			if name != keeper {
				others = append(others, name)
			}
		}
		first := others[:2]
		s.note("NEMESIS crash %v together, then %s", first, others[2])
		for _, name := range first {
			f.clusters[0].crash(name)
		}
		s.runFor(10 * time.Millisecond)
		for _, c := range led {
			a := c.actors[keeper]
			if a.state.role != roleLeader {
				t.Fatalf("seed %d: election %q: %s stopped leading after losing two of five members\n%s", seed, c.options.ClusterID, keeper, s.report())
			}
			for _, name := range first {
				if m := a.state.members[name]; m != nil && m.pid != (gen.PID{}) {
					spared++ // the loss was handed over late
					// not listed although the view has not heard of it yet
					for _, p := range a.Peers() {
						if p.Node == name {
							t.Fatalf("seed %d: election %q: %s lists %s among its peers after its connection was lost\n%s", seed, c.options.ClusterID, keeper, name, s.report())
						}
					}
					if a.HasPeer(m.pid) {
						t.Fatalf("seed %d: election %q: %s has %s as a peer after its connection was lost\n%s", seed, c.options.ClusterID, keeper, m.pid, s.report())
					}
				}
			}
		}
		f.clusters[0].crash(others[2])
		cfg := f.clusters[0].cfg()
		s.runFor(s.net.maxDelay + failoverStep(cfg))
		for _, c := range led {
			a := c.actors[keeper]
			if a.state.role == roleLeader || a.IsLeader() {
				t.Fatalf("seed %d: election %q: %s still leads %s after losing three of five members\n%s",
					seed, c.options.ClusterID, keeper, s.net.maxDelay+failoverStep(cfg), s.report())
			}
		}
		requireNoViolation(t, s)
	}
	if spared == 0 {
		t.Fatalf("no leader spared a lost member in any seed: the scenario no longer reaches the rule it is for")
	}
	t.Logf("lost members a leader heard of late: %d", spared)
}

// A handover skips a member whose node the framework no longer reaches: a
// leader that spared its loss (it has not handled the down) must not
// choose it as the successor.
func TestHandoverSkipsAMemberWithoutAConnection(t *testing.T) {
	h := leaderOfThree(t)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	h.advance(time.Millisecond)
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	connected := func(n gen.Atom) bool { return n != node("c") }
	assert.Equal(t, node("b"), h.e.handover(h.now, "test", connected), "c was heard last, but its connection is gone")

	h = leaderOfThree(t)
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	h.advance(time.Millisecond)
	h.recv("c", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: h.e.round})
	assert.Equal(t, node("c"), h.e.handover(h.now, "test", nil), "without the check: the one heard last")
}

// A waiter looks at the gate again after a turnHold when it is among the
// first campaignsInFlight of the queue, and later the further back it
// waits, up to maxTurnLooks turnHolds; its turn still comes by message as
// soon as it is its. Breaks: thousands of waiters of a cold start each
// take a step every turnHold to find the queue unmoved (the first one
// fails), or the first waiters sleep for longer than a turnHold and a
// gate whose holders all died stays shut (the second), or a waiter sleeps
// without bound (the third).
func TestWaitersFurtherBackLookAtTheGateLessOften(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold)
	require.True(t, ok)
	const waiters = campaignsInFlight * (maxTurnLooks + 2)
	for id := uint64(2); id <= waiters+1; id++ {
		ok, _ := node.acquire(gatePID(id), t0, hold)
		require.False(t, ok)
	}
	assert.Zero(t, node.ahead(gatePID(1)), "a holder does not wait")
	assert.Zero(t, node.ahead(gatePID(2)), "the first waiter")
	assert.Equal(t, 9, node.ahead(gatePID(11)))
	assert.Zero(t, node.ahead(gatePID(waiters+5)), "nor does an election the gate never saw")

	cfg := mustResolve(t, Options{ClusterID: "c"})
	first := lookAgainAfter(cfg, node.ahead(gatePID(2)))
	assert.Equal(t, turnHold(cfg), first, "the first waiters look after a turnHold")
	assert.Equal(t, turnHold(cfg), lookAgainAfter(cfg, campaignsInFlight-1))
	assert.Greater(t, lookAgainAfter(cfg, node.ahead(gatePID(waiters/2))), first, "those further back, later")
	assert.Equal(t, maxTurnLooks*turnHold(cfg), lookAgainAfter(cfg, node.ahead(gatePID(waiters+1))), "up to maxTurnLooks turnHolds")
	assert.Equal(t, maxTurnLooks*turnHold(cfg), lookAgainAfter(cfg, 1<<30))

	// the queue moves: the first waiter's turn, and 3 is first now
	assert.Equal(t, []gen.PID{gatePID(2)}, node.release(gatePID(1), t0, hold))
	assert.Zero(t, node.ahead(gatePID(3)))
}

// An election that waits far back in the queue arms its election timer
// for its later look, and campaigns when its turn's message comes.
func TestAWaiterFarBackSleepsLongerAndStillCampaignsOnItsTurn(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	gate := &fullGate{waiting: campaignsInFlight * maxTurnLooks}
	h.e.turns = gate
	h.expireElection()
	require.True(t, h.e.awaitsTurn)
	assert.False(t, h.e.electionDeadline.Before(h.now.Add(maxTurnLooks*turnHold(h.e.cfg))), "far back: it looks again after maxTurnLooks turnHolds")
	gate.grant = true
	h.e.turnCame(h.now)
	assert.Len(t, sentTo[msgPreVote](h.e.takeEffects(), "b"), 1, "its turn came: it campaigns")
}

// Owed downs (pacing.go): a follower whose leader's connection is gone
// waits for the down, which starts the fast failover, instead of
// campaigning on its election timer.

// followingMonitored is a harness following b at term 1, whose process is
// monitored.
func followingMonitored(t *testing.T) *stateHarness {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.monitored(pid("b"))
	h.e.takeEffects()
	require.Equal(t, pid("b"), h.e.leader)
	return h
}

func TestAnElectionTimeoutWaitsForTheLeadersOwedDown(t *testing.T) {
	h := followingMonitored(t)
	h.now = h.e.electionDeadline.Add(time.Millisecond)
	h.e.leaderDownOwed(h.now, time.Time{}) // the actor found no connection to b's node
	out := h.fire(timerElection)
	assert.Empty(t, sentTo[msgPreVote](out, "c"), "the down is on its way: no campaign on the timer")
	assert.Equal(t, pid("b"), h.e.leader)
	assert.True(t, h.e.timers[timerElection].armed, "the timer stays the backstop")
	assert.EqualValues(t, 1, h.e.owedDownWaits)

	// the down comes: the ranked fast failover, pledged, as for any down
	h.advance(20 * time.Millisecond)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	out = h.e.takeEffects()
	if h.e.timers[timerFast].armed {
		out = h.fire(timerFast)
	}
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "the down starts the fast pre-vote")
	assert.EqualValues(t, 1, h.e.fastRounds)
}

func TestAnOwedDownIsWaitedForOnlyForItsBound(t *testing.T) {
	h := followingMonitored(t)
	h.now = h.e.electionDeadline.Add(time.Millisecond)
	since := h.now
	for i := 0; ; i++ {
		h.e.leaderDownOwed(h.now, time.Time{}) // at every firing, as the actor does
		out := h.fire(timerElection)
		if len(sentTo[msgPreVote](out, "c")) > 0 {
			assert.GreaterOrEqual(t, h.now.Sub(since), owedDownWait(h.e.cfg), "campaigned before the bound")
			assert.Less(t, h.now.Sub(since), owedDownWait(h.e.cfg)+h.e.cfg.electionTimeoutMax+time.Millisecond, "waited past the bound")
			assert.Zero(t, h.e.fastRounds, "no down came: an ordinary campaign")
			assert.Equal(t, 1, i, "one wake while it waits, at the bound")
			assert.EqualValues(t, 1, h.e.owedDownWaits)
			return
		}
		require.Less(t, i, 100, "never campaigned")
		h.now = h.e.electionDeadline.Add(time.Millisecond)
	}
}

func TestADownIsOwedOnlyForAMonitoredLeaderAndAnewAfterItWasHeard(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.takeEffects()
	require.False(t, h.e.members[node("b")].watchAskedAt.IsZero(), "the harness's leader is not monitored yet")
	assert.Zero(t, h.e.owedDownHold(), "no monitor: the hub may not hold the timer either")
	h.now = h.e.electionDeadline.Add(time.Millisecond)
	h.e.leaderDownOwed(h.now, time.Time{})
	out := h.fire(timerElection)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "no monitor, no down owed: it campaigns on its timer")

	h = followingMonitored(t)
	assert.Equal(t, owedDownWait(h.e.cfg), h.e.owedDownHold())
	h.e.leaderDownOwed(h.now, time.Time{})
	first := h.e.owedDownSince
	h.advance(owedDownWait(h.e.cfg))
	h.e.leaderDownOwed(h.now, time.Time{})
	assert.Equal(t, first, h.e.owedDownSince, "the same wait: its bound counts from the first")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	h.advance(time.Millisecond)
	h.e.leaderDownOwed(h.now, time.Time{})
	assert.Equal(t, h.now, h.e.owedDownSince, "the leader was heard since: a new wait")
}

func TestAnElectionTimeoutLeavesAFastFailoverToItsOwnTimer(t *testing.T) {
	h := followingMonitored(t)
	h.e.leaderLost(pid("b"), h.now, false)
	require.True(t, h.e.failingOverFast())
	h.now = h.e.electionDeadline.Add(time.Millisecond)
	h.e.armElectionTimer(h.now) // the election timer comes first (a busy node)
	out := h.fire(timerElection)
	assert.Empty(t, sentTo[msgPreVote](out, "c"), "no second, unranked campaign")
	out = h.fire(timerFast)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "the fast failover's own")
	assert.EqualValues(t, 1, h.e.fastRounds)
}

func TestAnElectionTimeoutCampaignsAgainForAFastPreVoteNobodyAnswered(t *testing.T) {
	h := followingMonitored(t)
	h.e.leaderLost(pid("b"), h.now, false)
	out := h.fire(timerFast)
	require.Len(t, sentTo[msgPreVote](out, "c"), 1, "the fast pre-vote went out")
	require.True(t, h.e.failingOverFast())
	// lost with its connection: no answer ever comes
	out = h.expireElection()
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "the election timer asks again")
	assert.EqualValues(t, 2, h.e.preVoteRounds, "a second round")
}

// The hub holds a follower's parked election timer while the actor's loss
// board shows the loss of its leader's node after the hub last heard that
// leader: the down is with the shared watcher, and waking the follower
// only to wait for it was a step per follower of a crash's wave. Breaks:
// the hub wakes every follower of a crashed leader at its timeout (the
// holding never happens), holds a follower whose leader was heard after
// the loss (a new connection), holds one for whom no down is owed, or
// holds it past the bound.
func TestAHubHoldsAParkedElectionTimerForAnOwedDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const slack = 150 * time.Millisecond
	wait := owedDownWait(config{electionTimeoutMax: 300 * time.Millisecond})
	newFollower := func(owedWait time.Duration) *slot {
		s := &slot{cluster: "c", actor: pid("a"), follow: pid("b"), followTerm: 4, beatAt: t0, losses: &lossBoard{}}
		_, parked := s.park(timerElection, parkedTimer{generation: 1, at: t0.Add(slack), slack: slack, owedWait: owedWait}, t0, parkHorizon(5*time.Millisecond))
		require.True(t, parked)
		return s
	}
	due := func(s *slot) time.Time {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.dueAt(0)
	}

	s := newFollower(wait)
	assert.Equal(t, t0.Add(slack), due(s), "nothing lost: due at its timeout")
	lost := t0.Add(20 * time.Millisecond)
	s.losses.mark(node("b"), lost)
	assert.Equal(t, lost.Add(wait), due(s), "held for the owed down, its bound counted from the loss")
	s.mu.Lock()
	wakes := s.dueParked(t0.Add(2*slack), parkHorizon(5*time.Millisecond), nil)
	s.mu.Unlock()
	assert.Empty(t, wakes, "no wake while the down is owed")
	s.mu.Lock()
	wakes = s.dueParked(lost.Add(wait), parkHorizon(5*time.Millisecond), nil)
	s.mu.Unlock()
	assert.Len(t, wakes, 1, "woken at the bound")

	s = newFollower(wait)
	s.losses.mark(node("b"), t0.Add(-time.Millisecond))
	assert.Equal(t, t0.Add(slack), due(s), "a loss before the leader was last heard is an older connection's")

	s = newFollower(0)
	s.losses.mark(node("b"), t0.Add(slack+50*time.Millisecond))
	assert.Equal(t, t0.Add(slack), due(s), "no down owed (the leader is not monitored): not held")

	s = newFollower(wait)
	s.losses.mark(node("c"), lost)
	assert.Equal(t, t0.Add(slack), due(s), "another node's loss is not the leader's")
}

// The actor's side of the hold: an election woken at the bound counts its
// wait from the loss and campaigns, rather than waiting a bound more; a
// loss older than the leader's last word starts the wait now. Breaks: a
// down that never comes costs twice the bound.
func TestAnOwedDownWaitCountsFromTheLoss(t *testing.T) {
	h := followingMonitored(t)
	lost := h.now.Add(time.Millisecond)
	h.now = lost.Add(owedDownWait(h.e.cfg))
	h.e.leaderDownOwed(h.now, lost)
	assert.Equal(t, lost, h.e.owedDownSince)
	out := h.fire(timerElection)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "the bound ran out while the hub held the timer: it campaigns")

	h = followingMonitored(t)
	heard := h.e.members[node("b")].lastHeard
	h.advance(time.Second)
	h.e.leaderDownOwed(h.now, heard.Add(-time.Millisecond))
	assert.Equal(t, h.now, h.e.owedDownSince, "an older connection's loss: the wait starts now")
}

// A down that comes after the leader's election timeout ran out re-arms
// the election timer a timeout ahead, as the fast failover's backstop.
// Breaks: the timer fires at once, a step per election of a wave that only
// finds its failover pending.
func TestADownAfterTheElectionTimeoutRanOutPutsTheBackstopAhead(t *testing.T) {
	h := followingMonitored(t)
	h.now = h.e.electionDeadline.Add(time.Second) // the hub held the timer
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	require.True(t, h.e.failingOverFast())
	assert.True(t, h.e.timers[timerElection].armed)
	assert.GreaterOrEqual(t, h.e.electionFireAt.Sub(h.now), h.e.cfg.electionTimeoutMin, "the backstop a timeout ahead")
}
