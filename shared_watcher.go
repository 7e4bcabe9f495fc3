package leader

import (
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
)

// The shared watcher of a remote node: one process per node and remote
// node, registered as watcherName(remote), that monitors the processes of
// that node for every election of this node (watcher.go).
//
// Life cycle. The first actor that needs to watch a process of the remote
// node starts it (Node().SpawnRegister, no parent link); later ones find
// it by name. Each actor monitors it, and it monitors each actor that
// asked: the actor's subscriptions end with the actor. It ends when no
// actor has used it for helperLinger (linger.go). It also ends when a
// connection to the remote node ended, the node is connected again, and a
// monitor there outlived the end (it may be one-sided, see nodeSettle): it
// unregisters its name and stops, because only a new process can monitor
// those processes again. Its actors see its down, wait nodeSettlePause and
// ask the next one, which the first of them starts. A watcher that fails
// for any other reason is replaced the same way. Until its actors have
// asked the new one, their members' downs do not come, so a failover in
// that window waits for the election timeout: late, never unsafe.
//
// Without coalescing, or when the shared watcher cannot be started, each
// actor starts its own watchers instead.

// watcherName is the registered name of the shared watcher of node's
// processes; empty when node's name is too long for one.
func watcherName(node gen.Atom) gen.Atom {
	const prefix = "leader_watch_"
	if len(prefix)+len(node) > 255 {
		return ""
	}
	return gen.Atom(prefix + string(node))
}

// sharedWatcher returns the node's shared watcher of node's processes,
// starting it on first use, and monitors it; false when there is none to
// use (coalescing disabled, or it cannot be started), and the actor starts
// a private one.
func (a *Actor) sharedWatcher(node gen.Atom) (gen.PID, bool) {
	name := watcherName(node)
	if a.noCoalescing || name == "" {
		return gen.PID{}, false
	}
	pid, err := a.Node().ProcessPID(name)
	if err != nil {
		pid, err = a.Node().SpawnRegister(name, factoryWatcher, gen.ProcessOptions{}, sharedWatch{}, a.clock)
		if errors.Is(err, gen.ErrTaken) {
			pid, err = a.Node().ProcessPID(name)
		}
	}
	if err == nil {
		err = a.monitorStarting(name, pid)
	}
	if err != nil {
		a.Log().Warning("leader %q: cannot use the node's shared watcher of %s (%s); this election watches its members there with a process of its own", a.state.cfg.clusterID, node, err)
		return gen.PID{}, false
	}
	if a.sharedWatchers == nil {
		a.sharedWatchers = make(map[gen.PID]bool)
	}
	a.sharedWatchers[pid] = true
	return pid, true
}

// monitorStarting monitors pid, the process registered as name, waiting
// out its initialization. The framework registers a name before the
// process's Init runs and its PID only after, so an election that finds
// the watcher another one on this node is starting (many elections start
// together) is refused a monitor with ErrProcessUnknown for the
// microseconds the watcher's Init takes. Falling back to a private watcher
// then would leave a node with a watcher per election.
func (a *Actor) monitorStarting(name gen.Atom, pid gen.PID) error {
	deadline := time.Now().Add(watcherStartWait)
	for {
		err := a.Monitor(pid)
		if errors.Is(err, gen.ErrProcessUnknown) == false || time.Now().After(deadline) {
			return err
		}
		if now, _ := a.Node().ProcessPID(name); now != pid {
			return err // it failed to start, or another process took the name
		}
		time.Sleep(time.Millisecond)
	}
}

// watcherStartWait bounds monitorStarting: a watcher's Init only reads its
// arguments.
const watcherStartWait = 100 * time.Millisecond

// sharedWatcherDown handles the down of a shared watcher: the actor asks
// the next one, after the pause a stopping watcher leaves the other node
// (watcher.go, nodeSettle).
func (a *Actor) sharedWatcherDown(pid gen.PID) bool {
	if a.sharedWatchers[pid] == false {
		return false
	}
	delete(a.sharedWatchers, pid)
	node, ok := a.watching[pid]
	if ok == false {
		return true
	}
	delete(a.watchers, node)
	delete(a.watching, pid)
	a.rewatchLater(node)
	return true
}

// subscribe records that actor wants to hear about req.PID and reports
// whether the watcher must now ask for its monitor: not when it monitors
// it already (the actor is told at once) or a request is under way.
func (w *watcher) subscribe(actor gen.PID, req watchRequest) bool {
	if actor.Node != w.process.PID().Node || req.PID.Node == w.process.PID().Node {
		return false
	}
	if _, known := w.actors[actor]; known == false {
		// local, so it does not block; a gone actor's requests are void
		if w.process.Monitor(actor) != nil {
			return false
		}
		if w.actors == nil {
			w.actors = make(map[gen.PID]map[gen.PID]bool)
		}
		w.actors[actor] = make(map[gen.PID]bool)
		w.linger.busy()
	}
	sub := watchSub{actor: actor, hints: req.Hints, losses: req.Losses}
	subs := w.subs[req.PID]
	if i := subIndex(subs, actor); i >= 0 {
		subs[i] = sub
	} else {
		if w.subs == nil {
			w.subs = make(map[gen.PID][]watchSub)
		}
		w.subs[req.PID] = append(subs, sub)
	}
	w.actors[actor][req.PID] = true
	if _, watching := w.watching[req.PID]; watching {
		w.process.Send(actor, watchStarted{PID: req.PID})
		return false
	}
	if w.pending[req.PID] {
		return false
	}
	if w.pending == nil {
		w.pending = make(map[gen.PID]bool)
	}
	w.pending[req.PID] = true
	return true
}

func subIndex(subs []watchSub, actor gen.PID) int {
	for i, sub := range subs {
		if sub.actor == actor {
			return i
		}
	}
	return -1
}

// unsubscribe drops actor's interest in pid.
func (w *watcher) unsubscribe(actor, pid gen.PID) {
	subs := w.subs[pid]
	if i := subIndex(subs, actor); i >= 0 {
		subs = append(subs[:i], subs[i+1:]...)
	}
	if len(subs) == 0 {
		delete(w.subs, pid)
	} else {
		w.subs[pid] = subs
	}
	delete(w.actors[actor], pid)
}

// unsubscribeAll drops every actor's interest in pid, whose down came or
// whose monitor failed: an actor that still needs it asks again.
func (w *watcher) unsubscribeAll(pid gen.PID) {
	for _, sub := range w.subs[pid] {
		delete(w.actors[sub.actor], pid)
	}
	delete(w.subs, pid)
}

// cancel drops actor's interest in node's processes (they left its view).
// The monitors stay, as a private watcher's would until its end: a
// Demonitor is a request to the other node.
func (w *watcher) cancel(actor gen.PID, node gen.Atom) {
	for pid := range w.actors[actor] {
		if pid.Node == node {
			w.unsubscribe(actor, pid)
		}
	}
}

// actorGone drops the subscriptions of an actor that terminated.
func (w *watcher) actorGone(actor gen.PID) {
	for pid := range w.actors[actor] {
		w.unsubscribe(actor, pid)
	}
	delete(w.actors, actor)
	if len(w.actors) == 0 {
		w.linger.idle(w.process, w.clock())
	}
}

// errWatcherRetired is why a shared watcher stops after a connection's end
// left one of its monitors in doubt.
var errWatcherRetired = errors.New("leader: a monitor may have outlived its connection; a new watcher takes over")

// retire ends a shared watcher that may hold a one-sided monitor on node:
// the name goes first, so that its actors, which see its down, start or
// find the next one.
func (w *watcher) retire(node gen.Atom) error {
	w.process.UnregisterName()
	w.process.Log().Info("leader: the watcher of %s stops: a monitor there may have outlived the connection that ended; its elections ask a new one in %s", node, nodeSettlePause)
	return errWatcherRetired
}

// lateDown is a down a shared watcher hands over late (downHints).
type lateDown struct {
	to   gen.PID
	down peerDown
	due  time.Time
	// the hints of a leader that spared the member (pacing.go): the
	// down is not handed over if the actor took it early
	leaderLoss *downHints
}

// lateFlush is the shared watcher's reminder to hand over the late downs
// that are due.
type lateFlush struct{}

// postpone queues a down for actor until after. A node crash gives a
// survivor's shared watcher a late down for every follower of a living
// leader, hundreds at once: one timer for all of them, not one each, so
// that the downs that may not wait go out first and cheaply.
func (w *watcher) postpone(actor gen.PID, down peerDown, after time.Duration) {
	w.late = append(w.late, lateDown{to: actor, down: down, due: w.clock().Add(after)})
	if w.lateArmed == false {
		w.armLate(after)
	}
}

func (w *watcher) armLate(after time.Duration) {
	if _, err := w.process.SendAfter(w.process.PID(), lateFlush{}, after); err != nil {
		// no timer: hand them over now rather than never
		w.late, _ = w.deliverLate(w.late, time.Time{}, 0)
		w.lateArmed = false
		return
	}
	w.lateArmed = true
}

// flushLate hands over the late downs that are due, at most lateBatch of
// them, and waits for the rest; while downs that may not wait are queued
// in the outbox, it hands over none (see lateBatch).
func (w *watcher) flushLate() {
	w.lateArmed = false
	now := w.clock()
	more := true
	if room := w.flight.room(lateBatch, now); room > 0 && len(w.outbox) == 0 {
		w.late, more = w.deliverLate(w.late, now, room)
	}
	if len(w.late) == 0 {
		return
	}
	if more {
		w.armLate(latePace)
		return
	}
	next := w.late[0].due // elections may differ in their pause
	for _, l := range w.late[1:] {
		if l.due.Before(next) {
			next = l.due
		}
	}
	w.armLate(max(next.Sub(now), time.Millisecond))
}

// outboxFlush is the shared watcher's reminder to hand over the next
// outboxBatch of a lost connection's downs.
type outboxFlush struct{}

// flushOutbox hands over at most outboxBatch of the downs due now, as
// many as downsInFlightMax allows, and comes back for the rest outboxPace
// later. Only a shared watcher's lost connections queue there: a node
// crash hands it a down for every election with a member there, a
// thousand or more at once. The watcher looks again after each process
// of a lost connection it forwards (forward), not only at its reminder: it
// takes a while over ten thousand of them (10 µs each), and the reminder
// waits for it in its mailbox, while the elections on the other cores take
// their downs and the next ones may go.
func (w *watcher) flushOutbox() {
	if len(w.outbox) == 0 {
		return
	}
	n := min(len(w.outbox), w.flight.room(outboxBatch, w.clock()))
	for _, l := range w.outbox[:n] {
		w.process.Send(l.to, w.flight.hand(l.down))
	}
	rest := copy(w.outbox, w.outbox[n:])
	clear(w.outbox[rest:])
	w.outbox = w.outbox[:rest]
	if rest == 0 || w.outboxArmed {
		return
	}
	if _, err := w.process.SendAfter(w.process.PID(), outboxFlush{}, outboxPace); err != nil {
		// no timer: hand them over now rather than never
		for _, l := range w.outbox {
			w.process.Send(l.to, l.down)
		}
		w.outbox = w.outbox[:0]
		return
	}
	w.outboxArmed = true
}

// The paced downs wait for their elections, too: at most downsInFlightMax
// of them are handed over and not done with at any time. The pace alone
// handed a 10,000-election crash's downs over faster than the survivors'
// elections took them (each one starts a failover: a step, a pre-vote,
// its answers), thousands were queued for the cores within a tenth of a
// second, and the network's readers and the liveness hub waited behind
// them past the holding lease, as above.
//
// A down is done with when its election is not campaigning at the end of
// a step (Actor.releaseDown): for a down that starts a failover, once the
// failover has won or given up, not once the down was read. Counting only
// the downs not read yet bounded the downs in the elections' mailboxes but
// not the failovers they started: each read let the next one go, so a
// 10,000-election crash still had thousands of pre-votes and votes queued
// for the survivors' cores at once, their hubs answered each other 300 ms
// late, and their own leaders stood down (the survivors spent 10 to 20 s
// of CPU on a 3,500-election wave, and 50 to 400 failovers took more than
// one term; counting the failovers, 1 to 4 s and 1 to 3 in most runs, a
// median p99 of 2.1 s against 3.0 s: docs/performance.md). A failover
// that waits for a timer first (a survivor ranked after another) is done
// with at once: it holds no core while it waits.
const downsInFlightMax = 32

// flightStall is how long the count of downs not done with may stay
// unchanged before the watcher stops waiting for it: an election that
// ended with a down in its mailbox never takes it, and must not hold the
// others back; nor may failovers that all outlast it on a starved node
// (a wait of 200 ms instead measured no better: docs/performance.md).
const flightStall = 50 * time.Millisecond

// downsInFlight counts the paced downs handed over and not done with. The
// shared watcher raises it, each election lowers it when it is done with
// its down (Actor.releaseDown).
type downsInFlight struct{ n atomic.Int64 }

// taken records that an election is done with its down.
func (d *downsInFlight) taken() {
	if d != nil {
		d.n.Add(-1)
	}
}

// holdDown keeps a paced down counted while the failover it starts goes
// on; the down held before, if any, is done with.
func (a *Actor) holdDown(d *downsInFlight) {
	if d == nil {
		return
	}
	a.heldDown.taken()
	a.heldDown = d
}

// releaseDown, at the end of every step, lets the held down go once the
// election is not campaigning: its failover won, followed another, or
// waits for a timer (downsInFlightMax).
func (a *Actor) releaseDown() {
	if a.heldDown == nil || a.state.campaigning() {
		return
	}
	a.heldDown.taken()
	a.heldDown = nil
}

// flightGauge is the shared watcher's side of downsInFlight.
type flightGauge struct {
	count *downsInFlight
	seen  int64     // the count when last looked at
	moved time.Time // when it last changed
}

// hand marks down as paced: counted until its election takes it.
func (g *flightGauge) hand(down peerDown) peerDown {
	if g.count == nil {
		g.count = &downsInFlight{}
	}
	g.count.n.Add(1)
	down.inFlight = g.count
	return down
}

// room is how many paced downs may go out now, at most batch.
func (g *flightGauge) room(batch int, now time.Time) int {
	if g.count == nil {
		return min(batch, downsInFlightMax)
	}
	n := g.count.n.Load()
	switch {
	case n != g.seen:
		g.seen, g.moved = n, now
	case n > 0 && now.Sub(g.moved) >= flightStall:
		// nobody took one for a while: downs of ended elections
		g.count.n.Add(-n)
		n, g.seen, g.moved = 0, 0, now
	}
	return max(0, min(batch, downsInFlightMax-int(n)))
}

// outboxBatch and outboxPace pace the downs that may not wait (a leader's
// loss, a candidate's): outboxBatch every outboxPace, two thousand in
// about 30 ms. Handed over in one loop, a crash's downs were thousands of
// actor steps runnable at once on each survivor, and everything else of
// the process waited behind them in the Go scheduler's queues: the
// network's readers and the liveness hub, whose answers then came 60 to
// 200 ms late, so that the leaders of every other election lost their
// holding lease and the crash of one node disturbed every election. A few
// dozen at a time keep the queue short; the failovers they start are
// what fills the cores anyway.
const (
	outboxBatch = 64
	outboxPace  = time.Millisecond
)

// lateBatch and latePace pace the late downs: at most lateBatch go out
// every latePace. A node crash under thousands of elections leaves a
// survivor's shared watcher with a late down for most of them, all due at
// the same instant; handed over at once, they were thousands of actor steps
// queued for the two cores at once, and the node's liveness hub, one
// goroutine among them, waited its turn behind all of them. At 3,000
// elections on three node processes it waited 90 to 150 ms, past the
// leaders' holding lease: every leader on the survivors stood down, and the
// crash disturbed every election instead of a third of them. Paced, the
// queue stays a millisecond deep and the hub keeps its 5 ms rhythm; the
// late downs take longer to go out (a thousand in about 125 ms), which
// costs nothing, since none of them is a leader's loss that a failover
// waits for (downHints) and GhostTTL counts from the loss (peerDown.Since).
const (
	lateBatch = 16
	latePace  = 2 * time.Millisecond
)

// The late downs also wait for the outbox: while downs that may not wait
// are queued there, none of the late ones goes out (flushLate). Both
// kinds take their turn in the same downsInFlightMax, and a crash under
// 10,000 elections handed a survivor's elections about 2,000 late downs in
// the first second of the wave, each a step and a place in flight that the
// failovers waited for. The late downs go out once the last failover's
// down has been handed over, while the wave's tail is still in flight.

// deliverLate sends the downs of list due by now (all of them for a zero
// now), at most limit of them when limit is positive, and returns the
// others, in order; more reports that some of those are due already. It
// stops at the limit: a crash leaves thousands of late downs, due alike,
// handed over lateBatch at a time, and reading the whole list at every
// batch cost the survivors' watchers a tenth of their CPU in the wave.
func (w *watcher) deliverLate(list []lateDown, now time.Time, limit int) (rest []lateDown, more bool) {
	keep := list[:0]
	sent, i := 0, 0
	for ; i < len(list); i++ {
		l := list[i]
		if now.IsZero() == false && l.due.After(now) {
			keep = append(keep, l)
			continue
		}
		if limit > 0 && sent >= limit {
			more = true
			break
		}
		if l.leaderLoss != nil && l.leaderLoss.stillDeferred(l.down.PID) == false {
			continue // the actor handled it already (takeDeferred)
		}
		down := l.down
		if limit > 0 {
			down = w.flight.hand(down) // paced
		}
		w.process.Send(l.to, down)
		sent++
	}
	if len(keep) == 0 {
		// nothing kept before the stop: the rest is where it is
		clear(list[:i])
		return list[i:], more
	}
	keep = append(keep, list[i:]...) // memmove: keep never passes i
	clear(list[len(keep):])
	return keep, more
}

// inspect is what the watcher shows in the observer.
func (w *watcher) inspect() map[string]string {
	elections := 0
	for _, pids := range w.actors {
		if len(pids) > 0 {
			elections++
		}
	}
	return map[string]string{
		"ergo:shared":    strconv.FormatBool(w.shared),
		"ergo:watching":  strconv.Itoa(len(w.watching)),
		"ergo:elections": strconv.Itoa(elections), // that watch a process now
		// downs of processes no election watches (any more): duplicates,
		// or members that left every view
		"ergo:unwatched_downs": strconv.FormatUint(w.unwatchedDowns, 10),
	}
}
