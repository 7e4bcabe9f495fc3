package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The shared watcher of node b, on node a, serving several elections of
// node a (shared_watcher.go).

func (p *scriptedProcess) UnregisterName() error {
	p.unregistered = true
	return nil
}

func (p *scriptedProcess) Log() gen.Log { return &testLog{} }

// newSharedWatcher returns a shared watcher on node a and two actors of a.
func newSharedWatcher() (*watcher, *scriptedProcess, gen.PID, gen.PID) {
	self := gen.PID{Node: node("a"), ID: 7, Creation: 1}
	p := &scriptedProcess{self: self, parent: gen.PID{Node: node("a"), ID: 1, Creation: 1}}
	w := &watcher{process: p, shared: true, clock: func() time.Time { return t0 }}
	a1 := gen.PID{Node: node("a"), ID: 101, Creation: 1}
	a2 := gen.PID{Node: node("a"), ID: 102, Creation: 1}
	return w, p, a1, a2
}

func request(from gen.PID, message any) *gen.MailboxMessage {
	return &gen.MailboxMessage{From: from, Type: gen.MailboxMessageTypeRegular, Message: message}
}

// Two elections that watch the same process cost one monitor request; each
// is told the monitor is in place, the second at once. Each election that
// asks is monitored itself (locally), once.
func TestSharedWatcherMonitorsAProcessOnceForEveryElection(t *testing.T) {
	w, p, a1, a2 := newSharedWatcher()
	target := pid("b")
	require.NoError(t, w.handle(request(a1, watchRequest{PID: target}), false))
	require.NoError(t, w.handle(request(a2, watchRequest{PID: target}), false))
	assert.Equal(t, []gen.PID{a1, target, a2}, p.monitored, "the two actors, and the target once")
	assert.Equal(t, []any{watchStarted{PID: target}, watchStarted{PID: target}}, p.sent)
	assert.ElementsMatch(t, []any{a1, a2}, p.sentTo)

	// a request from another node is not served
	require.NoError(t, w.handle(request(pid("c"), watchRequest{PID: target}), false))
	assert.Len(t, p.sent, 2)
	assert.Equal(t, "2", w.inspect()["ergo:elections"])
	assert.Equal(t, "1", w.inspect()["ergo:watching"])
}

// A lost connection reaches each election as its own hints allow: the
// follower whose leader died there at once, the follower of a leader
// elsewhere late; every loss board at once. The late downs of many
// elections share one timer.
func TestSharedWatcherHandsEachElectionItsDownItsOwnWay(t *testing.T) {
	const pause = 75 * time.Millisecond
	w, p, a1, a2 := newSharedWatcher()
	leader, member := pid("b"), pid("b")
	member.ID++
	h1, h2 := &downHints{pause: pause}, &downHints{pause: pause}
	h1.set(true, leader)
	h2.set(true, pid("c"))
	l1, l2 := &lossBoard{}, &lossBoard{}
	w.handle(request(a1, watchRequest{PID: leader, Hints: h1, Losses: l1}), false)
	w.handle(request(a2, watchRequest{PID: leader, Hints: h2, Losses: l2}), false)
	w.handle(request(a2, watchRequest{PID: member, Hints: h2, Losses: l2}), false)
	p.sent, p.sentTo = nil, nil

	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: leader.Node}), true))
	require.Len(t, p.sent, 3)
	assert.ElementsMatch(t, []any{peerDown{PID: leader, Reason: gen.ErrNoConnection, At: t0}, lateFlush{}}, p.sent[:2],
		"a1's leader at once; a2's two downs wait for one timer")
	assert.Equal(t, nodeSettleCheck{Node: leader.Node}, p.sent[2])
	assert.Equal(t, []any{a1, p.self}, p.sentTo, "(the timer is not a send)")
	assert.Equal(t, []time.Duration{pause}, p.after)
	assert.True(t, l1.since(leader.Node, t0) && l2.since(leader.Node, t0), "both boards marked at once")

	p.sent, p.sentTo = nil, nil
	w.clock = func() time.Time { return t0.Add(pause) }
	require.NoError(t, w.handle(fromSelf(p, lateFlush{}), false))
	assert.ElementsMatch(t, []any{peerDown{PID: leader, Reason: gen.ErrNoConnection, Since: t0, At: t0}, peerDown{PID: member, Reason: gen.ErrNoConnection, Since: t0, At: t0}}, p.sent)
	assert.Equal(t, []any{a2, a2}, p.sentTo)
	assert.Empty(t, w.late)
}

// An election that ended, or that no longer has members on the node, hears
// nothing more; a down nobody watches is counted and dropped.
func TestSharedWatcherForgetsElectionsThatNoLongerWatch(t *testing.T) {
	w, p, a1, a2 := newSharedWatcher()
	target := pid("b")
	w.handle(request(a1, watchRequest{PID: target}), false)
	w.handle(request(a2, watchRequest{PID: target}), false)
	require.NoError(t, w.handle(request(a1, watchCancel{Node: target.Node}), false))
	// a2 terminated: its down comes from a2 itself
	require.NoError(t, w.handle(&gen.MailboxMessage{From: a2, Type: gen.MailboxMessageTypeRegular, Message: gen.MessageDownPID{PID: a2, Reason: gen.TerminateReasonKill}}, true))
	assert.Equal(t, "0", w.inspect()["ergo:elections"], "a1 no longer watches, a2 is forgotten")
	assert.NotContains(t, w.actors, a2)
	p.sent = nil
	require.NoError(t, w.handle(&gen.MailboxMessage{From: target, Type: gen.MailboxMessageTypeRegular, Message: gen.MessageDownPID{PID: target, Reason: gen.TerminateReasonKill}}, true))
	assert.Empty(t, p.sent, "nobody to tell")
	assert.Equal(t, "1", w.inspect()["ergo:unwatched_downs"])
	assert.Equal(t, "0", w.inspect()["ergo:watching"])
}

// settleAfterEnd has a shared watcher that watches a process of node b see
// the connection to b end, and then its nodeSettle, with b connected again
// or not; it returns what nodeSettle returned.
func settleAfterEnd(t *testing.T, connected bool) (*watcher, *scriptedProcess, error) {
	t.Helper()
	w, p, a1, _ := newSharedWatcher()
	gone := pid("b")
	w.handle(request(a1, watchRequest{PID: gone}), false)
	w.handle(fromCore(gen.MessageDownNode{Name: gone.Node}), true)
	require.NoError(t, w.handle(fromSelf(p, nodeSettleCheck{Node: gone.Node}), false))
	require.True(t, w.watchesOn(gone.Node), "its own down has not come yet")
	if connected == false {
		p.unconnected = map[gen.Atom]bool{gone.Node: true}
	}
	return w, p, w.handle(fromSelf(p, nodeSettle{Node: gone.Node}), false)
}

// A monitor that outlived its connection (nodeSettle), the node connected
// again, retires the shared watcher: it gives up its name and stops, and
// its elections, which see its down, ask the next one.
func TestSharedWatcherRetiresWhenAMonitorOutlivedItsConnection(t *testing.T) {
	_, p, err := settleAfterEnd(t, true)
	assert.ErrorIs(t, err, errWatcherRetired, "the process ends")
	assert.True(t, p.unregistered, "after giving up its name")
}

// After a connection's end to a node that is not connected again (a
// crash), the shared watcher keeps serving: what it still holds of the
// node is forgotten. Breaks: a watcher that retires there makes every
// election on the node take a down, a new watch and a failed monitor in
// the middle of a node crash's failovers (3,000 elections on three node
// processes: every election disturbed instead of a third).
func TestSharedWatcherKeepsServingAfterACrash(t *testing.T) {
	w, p, err := settleAfterEnd(t, false)
	require.NoError(t, err, "the process goes on")
	assert.False(t, p.unregistered, "with its name")
	assert.False(t, w.watchesOn(pid("b").Node), "and nothing of the node")
}

// A watcher does not ask the framework for a monitor on a node it has no
// connection to: Monitor would dial, blocking the watcher for the dial.
func TestWatcherDoesNotDialForAMonitor(t *testing.T) {
	w, p, a1, _ := newSharedWatcher()
	target := pid("b")
	p.unconnected = map[gen.Atom]bool{target.Node: true}
	w.handle(request(a1, watchRequest{PID: target}), false)
	assert.Equal(t, []gen.PID{a1}, p.monitored, "only the actor, locally")
	assert.Equal(t, []any{watchFailed{PID: target, Err: gen.ErrNoConnection}}, p.sent)
}

// After a connection's end the elections stay subscribed: the process's
// own down may still say it terminated (its connection dropped just before
// it ended), which takes the member out of the view at once.
func TestSharedWatcherPassesOnATerminationAfterTheConnectionsEnd(t *testing.T) {
	w, p, a1, _ := newSharedWatcher()
	target := pid("b")
	w.handle(request(a1, watchRequest{PID: target}), false)
	w.handle(fromCore(gen.MessageDownNode{Name: target.Node}), true)
	p.sent, p.sentTo = nil, nil
	w.handle(&gen.MailboxMessage{From: target, Type: gen.MailboxMessageTypeRegular, Message: gen.MessageDownPID{PID: target, Reason: gen.TerminateReasonShutdown}}, true)
	assert.Equal(t, []any{peerDown{PID: target, Reason: gen.TerminateReasonShutdown, At: t0}}, p.sent)
	assert.Equal(t, []any{a1}, p.sentTo)
}

// The first down of a lost connection stands for all of them: the
// framework has no connection to the node any more, so every monitor there
// ended, and the elections whose leader was there get their downs first,
// in one pass, whatever the framework's order of the rest. Their own downs
// change nothing after that. With the connection up again (a new one), a
// down is one process's.
func TestSharedWatcherTakesTheFirstDownOfALostConnectionForAll(t *testing.T) {
	const pause = 75 * time.Millisecond
	setup := func(connected bool) (*watcher, *scriptedProcess, []gen.PID, []gen.PID) {
		w, p, a1, a2 := newSharedWatcher()
		a3 := gen.PID{Node: node("a"), ID: 103, Creation: 1}
		b1, b2, b3 := pid("b"), pid("b"), pid("b")
		b2.ID, b3.ID = b1.ID+1, b1.ID+2
		for _, e := range []struct {
			actor, watched, leader gen.PID
		}{{a1, b1, b1}, {a2, b2, pid("c")}, {a3, b3, b3}} {
			hints := &downHints{pause: pause}
			hints.set(true, e.leader)
			w.handle(request(e.actor, watchRequest{PID: e.watched, Hints: hints, Losses: &lossBoard{}}), false)
		}
		p.sent, p.sentTo = nil, nil
		if connected == false {
			p.unconnected = map[gen.Atom]bool{b1.Node: true}
		}
		return w, p, []gen.PID{a1, a2, a3}, []gen.PID{b1, b2, b3}
	}

	w, p, actors, watched := setup(false)
	require.NoError(t, w.handle(fromCore(gen.MessageDownPID{PID: watched[1], Reason: gen.ErrNoConnection}), true))
	require.Len(t, p.sent, 3, "two downs at once, one timer for the late one")
	assert.ElementsMatch(t, []any{actors[0], actors[2]}, p.sentTo[:2], "the elections whose leader was there, first")
	assert.Equal(t, lateFlush{}, p.sent[2], "the follower of a leader elsewhere: late")
	for _, b := range []gen.PID{watched[0], watched[2]} {
		require.NoError(t, w.handle(fromCore(gen.MessageDownPID{PID: b, Reason: gen.ErrNoConnection}), true))
	}
	assert.Len(t, p.sent, 3, "the other downs of the same end change nothing")

	w, p, actors, watched = setup(true)
	require.NoError(t, w.handle(fromCore(gen.MessageDownPID{PID: watched[0], Reason: gen.ErrNoConnection}), true))
	assert.Equal(t, []any{peerDown{PID: watched[0], Reason: gen.ErrNoConnection, At: t0}}, p.sent, "connected again: this process's down alone")
	assert.Equal(t, []any{actors[0]}, p.sentTo)
}

// A lost connection's downs that may not wait go out outboxBatch at a time,
// outboxPace apart, every one of them, in the order they came, and never
// more than downsInFlightMax that their elections have not taken yet.
// Breaks: handed over in one loop, or faster than the elections take them,
// a node crash under thousands of elections made thousands of actor steps
// runnable at once on each survivor, and the network's readers and the
// liveness hub queued behind them long enough for every other election's
// leader to lose its holding lease.
func TestSharedWatcherPacesALostConnectionsDowns(t *testing.T) {
	w, p, _, _ := newSharedWatcher()
	const elections = outboxBatch*2 + 5
	target := pid("b")
	var actors []gen.PID
	for i := range elections {
		actor := gen.PID{Node: node("a"), ID: uint64(1000 + i), Creation: 1}
		actors = append(actors, actor)
		require.NoError(t, w.handle(request(actor, watchRequest{PID: target}), false))
	}
	p.sent, p.sentTo, p.after = nil, nil, nil
	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: target.Node}), true))
	downsTo := func() []gen.PID {
		var to []gen.PID
		j := 0 // sentTo has no entry for what SendAfter sent
		for _, m := range p.sent {
			switch m.(type) {
			case outboxFlush, lateFlush:
				continue
			case peerDown:
				to = append(to, p.sentTo[j].(gen.PID))
			}
			j++
		}
		return to
	}
	first := min(outboxBatch, downsInFlightMax)
	require.Equal(t, actors[:first], downsTo(), "the first batch at once")
	require.Contains(t, p.sent, any(outboxFlush{}), "and a reminder for the rest")
	assert.Contains(t, p.after, outboxPace)
	require.Len(t, p.inFlight, first, "every one of them counted until taken")

	require.NoError(t, w.handle(fromSelf(p, outboxFlush{}), false))
	assert.Len(t, downsTo(), first, "none more while the elections have not taken theirs")
	taken := 0
	takeAll := func() {
		for ; taken < len(p.inFlight); taken++ {
			p.inFlight[taken].taken()
		}
	}
	for batch := 1; len(downsTo()) < elections; batch++ {
		require.LessOrEqual(t, batch, elections/min(outboxBatch, downsInFlightMax)+1, "every down goes out")
		takeAll()
		before := len(downsTo())
		require.NoError(t, w.handle(fromSelf(p, outboxFlush{}), false))
		sent := len(downsTo()) - before
		require.Positive(t, sent, "taken: the next ones go out")
		require.LessOrEqual(t, sent, min(outboxBatch, downsInFlightMax), "at most a batch per reminder, and no more than may be in flight")
	}
	assert.Equal(t, actors, downsTo(), "every election told once, in order")
	assert.Empty(t, w.outbox)
}

// A paced down whose election never takes it (the election ended with it
// in its mailbox) holds the others back for flightStall at most.
func TestSharedWatcherStopsWaitingForDownsNobodyTakes(t *testing.T) {
	w, p, _, _ := newSharedWatcher()
	const elections = downsInFlightMax + 3
	target := pid("b")
	for i := range elections {
		actor := gen.PID{Node: node("a"), ID: uint64(1000 + i), Creation: 1}
		require.NoError(t, w.handle(request(actor, watchRequest{PID: target}), false))
	}
	p.sent, p.sentTo, p.after = nil, nil, nil
	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: target.Node}), true))
	require.Equal(t, downsInFlightMax, countOf[peerDown](p.sent))
	now := t0
	w.clock = func() time.Time { return now }
	require.NoError(t, w.handle(fromSelf(p, outboxFlush{}), false))
	now = now.Add(flightStall - time.Millisecond)
	require.NoError(t, w.handle(fromSelf(p, outboxFlush{}), false))
	require.Equal(t, downsInFlightMax, countOf[peerDown](p.sent), "waiting for them, within flightStall")
	now = now.Add(2 * time.Millisecond)
	require.NoError(t, w.handle(fromSelf(p, outboxFlush{}), false))
	assert.Equal(t, elections, countOf[peerDown](p.sent), "past it: the rest go out")
}

// The late downs (followers of a living leader, downHints) go out
// lateBatch at a time, latePace apart, once due. Breaks: all due at the
// same instant after a node crash, they were a burst of their own in the
// middle of the failovers.
func TestSharedWatcherPacesItsLateDowns(t *testing.T) {
	w, p, _, _ := newSharedWatcher()
	const elections = lateBatch*2 + 3
	target := pid("b")
	for i := range elections {
		actor := gen.PID{Node: node("a"), ID: uint64(1000 + i), Creation: 1}
		hints := &downHints{following: true, leader: pid("c"), pause: 75 * time.Millisecond}
		require.NoError(t, w.handle(request(actor, watchRequest{PID: target, Hints: hints}), false))
	}
	p.sent, p.sentTo, p.after = nil, nil, nil
	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: target.Node}), true))
	downs := func() int { return countOf[peerDown](p.sent) }
	require.Zero(t, downs(), "none at once: they may wait")
	require.Len(t, w.late, elections)
	now := t0.Add(75 * time.Millisecond)
	w.clock = func() time.Time { return now }
	taken := 0
	perBatch := min(lateBatch, downsInFlightMax) // a batch waits for room in flight too
	for batch := 0; downs() < elections; batch++ {
		require.LessOrEqual(t, batch, elections/perBatch, "every late down goes out in as few batches as fit")
		for ; taken < len(p.inFlight); taken++ {
			p.inFlight[taken].taken() // the elections took what they were given
		}
		before, after := downs(), len(p.after)
		require.NoError(t, w.handle(fromSelf(p, lateFlush{}), false))
		require.LessOrEqual(t, downs()-before, perBatch, "at most a batch per reminder")
		if downs() < elections {
			require.Equal(t, []time.Duration{latePace}, p.after[after:], "the next batch latePace later")
		}
	}
	assert.Empty(t, w.late)
}

// An election lowers the count of paced downs for every one it takes, the
// ones it drops included. Breaks: a down the actor does not count stays in
// flight, and the watcher waits flightStall for it at every batch.
func TestAnElectionCountsEveryPacedDownItTakes(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	a := &Actor{state: h.e, clock: func() time.Time { return h.now }}
	var g flightGauge
	for range 3 {
		down := g.hand(peerDown{PID: pid("b"), Reason: gen.ErrNoConnection, At: t0})
		require.NoError(t, a.handleRegular(pid("x"), down)) // not its watcher: dropped
	}
	assert.Zero(t, g.count.n.Load(), "every down taken, though dropped")
	assert.EqualValues(t, 3, h.e.dropped["foreign_down"])
}

// A paced down that starts a failover stays counted until the failover is
// over, so that the watcher lets a crash's failovers run a few dozen at a
// time, not only its downs be read a few dozen at a time; a down that
// starts nothing is done with at the end of its step. Breaks: the count
// drops when the down is read, and a 10,000-election crash queues
// thousands of pre-votes and votes on the survivors' cores at once
// (downsInFlightMax).
func TestAPacedDownCountsUntilItsFailoverIsOver(t *testing.T) {
	step := 150 * time.Millisecond / 30
	h := newStateHarness(t, Options{}, "b", "c")
	a := &Actor{state: h.e, clock: func() time.Time { return h.now }}
	var g flightGauge
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b")})
	h.advance(freshness(h.e.cfg) + step) // the promise after the loss has run out

	a.holdDown(g.hand(peerDown{PID: pid("x"), Reason: gen.ErrNoConnection, At: h.now}).inFlight)
	a.releaseDown()
	assert.Zero(t, g.count.n.Load(), "a down that starts no campaign: done with at the end of its step")

	a.holdDown(g.hand(peerDown{PID: pid("b"), Reason: gen.ErrNoConnection, At: h.now}).inFlight)
	require.True(t, h.e.downAt(h.now, h.now.Add(-time.Second), pid("b"), gen.ErrNoConnection))
	require.Len(t, sentTo[msgPreVote](h.e.takeEffects(), "c"), 1, "the fast pre-vote goes")
	a.releaseDown()
	assert.EqualValues(t, 1, g.count.n.Load(), "counted while it pre-votes")
	h.recv("c", msgPreVoteReply{ClusterID: "c", Term: 1, Granted: true})
	require.Equal(t, roleCandidate, h.e.role)
	a.releaseDown()
	assert.EqualValues(t, 1, g.count.n.Load(), "and while its vote round is open")
	h.recv("c", msgVoteReply{ClusterID: "c", Term: 2, Granted: true})
	require.True(t, h.e.confirming)
	h.e.confirmResult(h.now, true, nil) // flush asks HandleConfirmLeader before the step ends
	require.Equal(t, roleLeader, h.e.role)
	a.releaseDown()
	assert.Zero(t, g.count.n.Load(), "done with once it won")

	a.holdDown(g.hand(peerDown{PID: pid("x"), Reason: gen.ErrNoConnection, At: h.now}).inFlight)
	a.holdDown(g.hand(peerDown{PID: pid("y"), Reason: gen.ErrNoConnection, At: h.now}).inFlight)
	assert.EqualValues(t, 1, g.count.n.Load(), "a second down held lets the first go")
}

// Downs go out as soon as their elections take the ones before, not only
// at the watcher's reminder: a lost connection of ten thousand processes
// keeps the watcher busy for a while, with the reminder queued behind.
// Breaks: the first downsInFlightMax go out, and the rest wait for the
// end of the whole lost connection.
func TestSharedWatcherHandsDownsOverWhileStillForwarding(t *testing.T) {
	w, p, _, _ := newSharedWatcher()
	target := pid("b")
	for i := range downsInFlightMax * 3 {
		actor := gen.PID{Node: node("a"), ID: uint64(1000 + i), Creation: 1}
		require.NoError(t, w.handle(request(actor, watchRequest{PID: target}), false))
	}
	p.sent, p.sentTo, p.after = nil, nil, nil
	require.NoError(t, w.handle(fromCore(gen.MessageDownNode{Name: target.Node}), true))
	require.Equal(t, downsInFlightMax, countOf[peerDown](p.sent))
	require.True(t, w.outboxArmed, "a reminder on its way")
	took := downsInFlightMax / 2
	for _, d := range p.inFlight[:took] {
		d.taken()
	}
	w.flushOutbox() // what forward does after each process
	assert.Equal(t, downsInFlightMax+took, countOf[peerDown](p.sent), "as many more as were taken")
	assert.Equal(t, 1, countOf[outboxFlush](p.sent), "and one reminder still")
}

// deliverLate hands over the due downs in order, at most the limit, and
// keeps every other one in order: the ones not due yet where they were,
// then the due ones past the limit. Breaks: a late down lost, sent twice,
// or out of its order when the scan stops at the limit.
func TestLateDownsGoInOrderAndStopAtTheLimit(t *testing.T) {
	w, p, _, _ := newSharedWatcher()
	actor := func(i int) gen.PID { return gen.PID{Node: node("a"), ID: uint64(1000 + i), Creation: 1} }
	now := t0.Add(time.Second)
	var list []lateDown
	notDue := map[int]bool{1: true, 4: true}
	for i := range 8 {
		due := now
		if notDue[i] {
			due = now.Add(time.Millisecond)
		}
		list = append(list, lateDown{to: actor(i), down: peerDown{PID: pid("b"), Reason: gen.ErrNoConnection}, due: due})
	}
	order := func(l []lateDown) (ids []uint64) {
		for _, d := range l {
			ids = append(ids, d.to.ID)
		}
		return ids
	}
	rest, more := w.deliverLate(list, now, 3)
	assert.Equal(t, []any{actor(0), actor(2), actor(3)}, p.sentTo, "the first three due, in order")
	assert.Equal(t, []uint64{1001, 1004, 1005, 1006, 1007}, order(rest), "the rest in order, the ones not due where they were")
	assert.True(t, more)

	p.sentTo = nil
	rest, more = w.deliverLate(rest, now, 3)
	assert.Equal(t, []any{actor(5), actor(6), actor(7)}, p.sentTo)
	assert.Equal(t, []uint64{1001, 1004}, order(rest))
	assert.False(t, more, "none left due")

	p.sentTo = nil
	rest, more = w.deliverLate(rest, now.Add(time.Millisecond), 3)
	assert.Equal(t, []any{actor(1), actor(4)}, p.sentTo)
	assert.Empty(t, rest)
	assert.False(t, more)

	// all due: the rest is the tail, with nothing moved
	p.sentTo = nil
	all := make([]lateDown, 5)
	for i := range all {
		all[i] = lateDown{to: actor(i), due: now}
	}
	rest, more = w.deliverLate(all, now, 2)
	assert.Equal(t, []uint64{1002, 1003, 1004}, order(rest))
	assert.True(t, more)
	assert.Equal(t, lateDown{}, all[0], "what went out is let go")
}

// The late downs wait while downs that may not wait are queued: they would
// take their places in flight and their steps from the failovers. Breaks:
// a crash's wave shares its pace with thousands of downs that could wait.
func TestLateDownsWaitForTheOutbox(t *testing.T) {
	w, p, a1, a2 := newSharedWatcher()
	w.late = []lateDown{{to: a1, down: peerDown{PID: pid("b"), Reason: gen.ErrNoConnection}, due: t0}}
	w.outbox = []lateDown{{to: a2, down: peerDown{PID: pid("b"), Reason: gen.ErrNoConnection}}}
	w.flushLate() // room in flight: only the outbox holds it back
	assert.NotContains(t, p.sentTo, any(a1), "a late down went out while the outbox waited")
	assert.Len(t, w.late, 1)
	assert.True(t, w.lateArmed, "it looks again")

	w.outbox = nil
	w.flushLate()
	assert.Contains(t, p.sentTo, any(a1), "the outbox is empty: the late down goes")
	assert.Empty(t, w.late)
}
