package leader

import (
	"errors"
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

// Monitoring a process on another node is a request to that node: the
// framework blocks the caller until the other node answers or its request
// timeout (seconds) expires, and a node that is stalled or shutting down
// does not answer. An actor that monitored its peers itself would stop
// heartbeating for that long. So a helper process, the watcher, monitors
// the members' processes and forwards their downs to the actor; the actor
// never calls Monitor or Demonitor on the network.
//
// One watcher per remote node. By default (coalescing on) the watcher of a
// remote node is shared by every election of this node: a process
// registered as watcherName(node), started by the first actor that needs
// it (shared_watcher.go). A node crash then costs each survivor one
// notification per watched process and one for the node, all into one
// mailbox, instead of two for every election, each waking a process of its
// own: on two cores, a thousand elections' watchers took 40 ms to drain
// them. With DisableCoalescing each actor has private watchers, linked to
// it, one per member node.
//
// Demonitor is not called at all: when a member's process is replaced or
// the member leaves, the old monitor stays until that process's down, which
// no longer matches a member and is dropped. A monitor on a process that
// terminates or whose connection drops costs nothing afterwards.
//
// While the watcher waits on a monitor request to a stalled node, downs of
// that node's processes wait in its mailbox: fast failover then falls back
// to the election timeout, which is the bound anyway, and the election
// itself goes on. Other nodes have watchers of their own.

// watchRequest asks the watcher to monitor PID. A shared watcher tells the
// requesting actor about PID from then on, through Hints and Losses.
type watchRequest struct {
	PID    gen.PID
	Hints  *downHints
	Losses *lossBoard
}

// watchCancel tells a shared watcher that the sending actor no longer
// needs to hear about Node's processes (they left its view).
type watchCancel struct{ Node gen.Atom }

// sharedWatch, among a watcher's spawn arguments, makes it a shared one.
type sharedWatch struct{}

// watchSub is an actor a shared watcher reports a process to.
type watchSub struct {
	actor  gen.PID
	hints  *downHints
	losses *lossBoard
}

// watchFailed reports that the framework refused to monitor PID.
type watchFailed struct {
	PID gen.PID
	Err error
}

// watchStarted reports that the monitor of PID is in place.
type watchStarted struct{ PID gen.PID }

// watchSuspect reports that the watcher's monitors of Node's processes may
// be gone on that node (see nodeSettle): the actor replaces the watcher.
type watchSuspect struct{ Node gen.Atom }

// nodeSettle is the watcher's reminder to itself, a moment after a
// connection to Node ended, to look at what it still monitors there.
//
// Why. When a node has two connections to a peer for a moment (two dials
// crossed, or a new connection came up before the old one's end was
// processed), the end of the old one makes each side drop every link and
// monitor the other side's processes hold, by node name, whichever
// connection they were made over. A monitor whose request went over the
// new connection and reached the peer before the peer processed the old
// connection's end is dropped there, while this node, which got the answer
// after its own cleanup, keeps it: the peer's process would then terminate
// without a down ever coming. The monitors this node's cleanup removed
// came back as downs, and are forgotten; whatever the watcher still
// monitors on the node once those are in may be such a one-sided monitor,
// and only a fresh watcher (another PID, so no ErrTargetExist) can make it
// again.
//
// Only while the node is connected again, though. With no connection there
// is nothing a monitor could be one-sided over: the watcher forgets what it
// still holds of the node and goes on. A crashed node is never connected
// again this soon, and replacing the watcher there cost, with thousands of
// elections, every election on each survivor a down, a new watch and a
// failed monitor in the middle of the failovers: the crash of one node
// disturbed every election.
type nodeSettle struct{ Node gen.Atom }

// nodeSettleCheck is the watcher's note to itself, sent when a
// connection's end came while it still monitored a process of the node:
// it is handled after the downs the framework queued before it (those come
// in the System queue, the note in Main), and only if a monitor on the node
// is left then does the watcher wait out nodeSettlePause. After a node
// crash every monitor on it comes back as a down, and the thousand
// watchers of a node's elections would otherwise each wake once more,
// 50 ms into the failover, to find nothing.
//
// Nothing lost by the shortcut: no monitor of the node is made before
// nodeSettlePause is over (watch), so a watcher that monitors nothing
// there now monitors nothing there when the pause ends.
type nodeSettleCheck struct{ Node gen.Atom }

// nodeSettlePause is how long the watcher waits after a connection's end
// for the downs of the same cleanup to arrive, and how long it leaves the
// node to process that end before it asks it for a monitor again.
const nodeSettlePause = 50 * time.Millisecond

// peerDown forwards a down the framework delivered for a watched process.
type peerDown struct {
	PID    gen.PID
	Reason error
	// Since is when the watcher got a down it handed over late
	// (downHints); zero when it came at once
	Since time.Time
	// At is when the watcher got the down from the framework: this
	// node's report of the loss, which assumption A2 bounds against the
	// other end's. A fast failover's safety step counts from it, not from
	// when the actor got to the down: on a survivor of a node crash, the
	// actor of the last of a thousand elections gets its down tens of
	// milliseconds after the watcher did, and its step has run by then.
	At time.Time
	// inFlight is the shared watcher's count of the paced downs not taken
	// yet, which the actor lowers when this one comes (nil for a down
	// handed over unpaced)
	inFlight *downsInFlight
}

// forgedDown reports a down-shaped message the framework did not deliver.
type forgedDown struct{ From gen.PID }

// watchRetry is the watcher's reminder to itself to try a monitor again.
type watchRetry struct {
	PID     gen.PID
	Attempt int
}

// A remote Monitor is refused with gen.ErrTargetExist by the other node
// when that node still holds a monitor of this watcher's that this node has
// already dropped: this node lost a connection and delivered the downs, and
// the other node has not processed its side of that loss yet (or a new
// connection came up before it did). Nothing is recorded here then, so no
// down would ever come for that process. The other node drops its stale
// entry when it handles the loss, so the watcher asks again, with growing
// pauses; if it is still refused after watchRetryPauses, the actor is told,
// as for any failed monitor, and treats the member as unreachable.
var watchRetryPauses = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Second, 2 * time.Second, 2 * time.Second,
}

// watcher monitors members' processes on the actors' behalf.
type watcher struct {
	process gen.Process
	// shared: the watcher serves every actor of the node that asks
	// (watchRequest) and reports to subs; otherwise only its parent, with
	// the parent's losses and hints
	shared  bool
	losses  *lossBoard
	hints   *downHints
	clock   func() time.Time
	subs    map[gen.PID][]watchSub       // shared: per process, who to tell
	actors  map[gen.PID]map[gen.PID]bool // shared: per actor, its processes
	pending map[gen.PID]bool             // shared: monitor asked, no answer yet
	// shared: downs of processes no actor watches (any more), dropped
	unwatchedDowns uint64
	late           []lateDown  // shared: downs handed over late, in order
	lateArmed      bool        // a lateFlush is on its way
	outbox         []lateDown  // shared: a lost connection's downs due now, paced (outboxBatch)
	outboxArmed    bool        // an outboxFlush is on its way
	flight         flightGauge // shared: the paced downs not taken yet (downsInFlightMax)
	// watching holds the processes this watcher monitors (its Monitor
	// succeeded and no down has come since): only for those does an
	// ErrTargetExist mean the monitor is in place.
	watching map[gen.PID]struct{}
	// nodes whose connection the watcher monitors (MonitorNode), to learn
	// of every connection's end (see nodeSettle)
	nodes map[gen.Atom]bool
	// no monitor request to a node before this, after a connection's end
	settleUntil map[gen.Atom]time.Time
	// processes reported down with their connection's end whose own down
	// has not come yet (connectionLost)
	reported map[gen.PID]struct{}
	// shared: ends the watcher when no election has asked it for a while
	// (linger.go)
	linger linger
}

// downHints tell the watchers of an election which downs may wait. When a
// node crashes, each survivor's elections all get a down for their member
// there at once, a thousand with a thousand elections, and each down is an
// actor step in the same milliseconds as the failovers of the elections
// the node led. The followers of a living leader need none of those steps
// soon: their lost member is not their leader, and what a follower does
// with a member's lost connection (a probe, a mark in its view) is not
// urgent. So a lost connection to a member other than the leader, while
// the actor follows a leader it still hears, reaches the actor
// lazyDownPause late, when the failovers are over. Nothing that safety
// rests on waits: a leader's and a candidate's downs, the leader's down
// itself, and every termination (not a lost connection) are forwarded at
// once, and the lossBoard is marked at once whatever the delay (IsLeader
// reads it). A down that arrives late is what the election handles anyway
// when a watcher is busy (a monitor request stuck on a stalled node).
type downHints struct {
	mu        sync.Mutex
	following bool    // a follower with a leader it hears
	leader    gen.PID // that leader
	pause     time.Duration
	// A leader's side (pacing.go): how many members it can lose
	// and still reach a quorum, and the losses a shared watcher handed it
	// late on that account, which its view does not show yet.
	spare    int
	deferred map[gen.Atom]peerDown
}

// set records the actor's role after a step.
func (h *downHints) set(following bool, leader gen.PID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.following, h.leader = following, leader
}

// delay returns how long a down of pid for reason may wait; 0: none.
func (h *downHints) delay(pid gen.PID, reason error) time.Duration {
	if h == nil || errors.Is(reason, gen.ErrNoConnection) == false {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.following == false || pid == h.leader {
		return 0
	}
	return h.pause
}

// downHintsState is what an actor last told its watchers (downHints).
type downHintsState struct {
	following bool
	leader    gen.PID
	spare     int
}

// hint tells the watchers the actor's role after a step, when it changed.
func (a *Actor) hint() {
	now := downHintsState{following: a.state.role == roleFollower && a.state.leader != (gen.PID{})}
	if now.following {
		now.leader = a.state.leader
	}
	now.spare = a.state.spareMembers()
	if now == a.hinted || a.hints == nil {
		return
	}
	a.hinted = now
	a.hints.set(now.following, now.leader)
	a.hints.setSpare(now.spare)
}

// forward hands a down to the actors that watch pid, each at once or as
// late as its hints allow; a lost connection goes on their loss boards at
// once.
func (w *watcher) forward(pid gen.PID, reason error) {
	lost := errors.Is(reason, gen.ErrNoConnection)
	at := w.clock()
	for _, sub := range w.audience(pid) {
		if lost && sub.losses != nil {
			sub.losses.mark(pid.Node, at)
		}
		if lost && w.shared {
			late := peerDown{PID: pid, Reason: reason, Since: at, At: at}
			if sub.hints.deferLeaderLoss(late) {
				w.postponeLeaderLoss(sub.actor, late, sub.hints)
				continue
			}
		}
		if d := sub.hints.delay(pid, reason); d > 0 {
			late := peerDown{PID: pid, Reason: reason, Since: at, At: at}
			if w.shared {
				w.postpone(sub.actor, late, d)
				continue
			}
			if _, err := w.process.SendAfter(sub.actor, late, d); err == nil {
				continue
			}
		}
		if lost && w.shared {
			w.outbox = append(w.outbox, lateDown{to: sub.actor, down: peerDown{PID: pid, Reason: reason, At: at}})
			continue
		}
		w.process.Send(sub.actor, peerDown{PID: pid, Reason: reason, At: at})
	}
	w.flushOutbox()
}

// audience returns the actors to tell about pid.
func (w *watcher) audience(pid gen.PID) []watchSub {
	if w.shared {
		return w.subs[pid]
	}
	return []watchSub{{actor: w.process.Parent(), hints: w.hints, losses: w.losses}}
}

// tell sends message to the actors that watch pid.
func (w *watcher) tell(pid gen.PID, message any) {
	for _, sub := range w.audience(pid) {
		w.process.Send(sub.actor, message)
	}
}

// lossBoard is where the watcher notes, the moment it gets the down, when
// each node's connection was lost. The actor reads it in IsLeader: a leader
// busy in a callback (or stalled) has not handled the down yet, and its
// connection may even be back (a new one), but the acknowledgements it got
// over the lost connection no longer count toward its lease, because the
// other side may already be failing over (lease.go). The node's liveness
// hub reads it too, to hold the timers of followers whose leader's down is
// owed (pacing.go). The watcher, the actor and the hub are goroutines of
// one OS process, hence the mutex, which is never held while another lock
// is taken.
type lossBoard struct {
	mu   sync.Mutex
	lost map[gen.Atom]time.Time
}

func (b *lossBoard) mark(node gen.Atom, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lost == nil {
		b.lost = make(map[gen.Atom]time.Time)
	}
	b.lost[node] = at
}

// at returns when node's connection was last lost; false if never.
func (b *lossBoard) at(node gen.Atom) (time.Time, bool) {
	if b == nil {
		return time.Time{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	at, ok := b.lost[node]
	return at, ok
}

// since reports whether node's connection was lost after t.
func (b *lossBoard) since(node gen.Atom, t time.Time) bool {
	at, ok := b.at(node)
	return ok && at.Before(t) == false
}

func factoryWatcher() gen.ProcessBehavior { return &watcher{} }

func (w *watcher) ProcessInit(process gen.Process, args ...any) error {
	w.process = process
	w.clock = time.Now
	for _, arg := range args {
		switch a := arg.(type) {
		case *lossBoard:
			w.losses = a
		case *downHints:
			w.hints = a
		case func() time.Time:
			w.clock = a
		case sharedWatch:
			w.shared = true
		}
	}
	if w.shared {
		w.linger.idle(process, w.clock())
	}
	return nil
}

func (w *watcher) ProcessKind() gen.ProcessKind { return gen.ProcessKindCustom }

func (w *watcher) ProcessTerminate(reason error) {}

// ProcessRun serves monitor requests and forwards downs. Any exit signal
// (the actor it serves is gone, or the node stops) ends it; a shared
// watcher also ends when it suspects a one-sided monitor (nodeSettle).
func (w *watcher) ProcessRun() error {
	return serveHelper(w.process, w.handle)
}

// handle serves one message of the watcher's mailbox; system tells whether
// it came in the System queue, where the framework puts its notifications.
// A non-nil result ends the watcher.
func (w *watcher) handle(m *gen.MailboxMessage, system bool) error {
	parent := w.process.Parent()
	switch message := m.Message.(type) {
	case watchRequest:
		if w.shared {
			if w.subscribe(m.From, message) {
				w.watch(message.PID, 0)
			}
			return nil
		}
		if m.From != parent {
			return nil
		}
		w.watch(message.PID, 0)
	case watchCancel:
		if w.shared {
			w.cancel(m.From, message.Node)
		}
	case lingerCheck:
		if w.shared && m.From == w.process.PID() && w.linger.expired(w.process, w.clock()) {
			return gen.TerminateReasonNormal
		}
	case watchRetry:
		if m.From != w.process.PID() {
			return nil
		}
		w.watch(message.PID, message.Attempt)
	case gen.MessageDownNode:
		if system && m.From == w.process.Node().PID() {
			delete(w.nodes, message.Name)
			if w.settleUntil == nil {
				w.settleUntil = make(map[gen.Atom]time.Time)
			}
			w.settleUntil[message.Name] = w.clock().Add(nodeSettlePause)
			if w.watchesOn(message.Name) {
				w.connectionLost(message.Name)
				// the downs of the same cleanup may still be queued
				// behind this one: look again once they are in
				w.process.Send(w.process.PID(), nodeSettleCheck{Node: message.Name})
			}
		}
	case lateFlush:
		if m.From == w.process.PID() {
			w.flushLate()
		}
	case outboxFlush:
		if m.From == w.process.PID() {
			w.outboxArmed = false
			w.flushOutbox()
		}
	case nodeSettleCheck:
		if m.From == w.process.PID() && w.watchesOn(message.Node) {
			wait := max(w.settleUntil[message.Node].Sub(w.clock()), 0)
			w.process.SendAfter(w.process.PID(), nodeSettle{Node: message.Node}, wait)
		}
	case nodeSettle:
		if m.From != w.process.PID() || w.watchesOn(message.Node) == false {
			return nil
		}
		if _, err := w.process.Node().Network().Node(message.Node); err != nil {
			w.forgetNode(message.Node) // no connection: nothing there can be monitored
			return nil
		}
		if w.shared {
			return w.retire(message.Node)
		}
		w.process.Send(parent, watchSuspect{Node: message.Node})
	case gen.MessageDownPID:
		if deliveredByFramework(w.process, m, system, message) == false {
			// to whoever watches the process it names (a private
			// watcher's actor in any case)
			w.tell(message.PID, forgedDown{From: m.From})
			return nil
		}
		if w.shared && message.PID.Node == w.process.PID().Node {
			w.actorGone(message.PID)
			return nil
		}
		if w.shared && len(w.subs[message.PID]) == 0 {
			// a duplicate, or the down of a process every election
			// stopped watching: nobody to tell
			w.unwatchedDowns++
			delete(w.watching, message.PID)
			delete(w.reported, message.PID)
			return nil
		}
		if _, reported := w.reported[message.PID]; reported {
			delete(w.reported, message.PID)
			if errors.Is(message.Reason, gen.ErrNoConnection) {
				// the connection's end was reported for it already; the
				// subscriptions stay, as those of an actor that asked
				// again since, for a new monitor, may be among them (a
				// member's leaving its views ends them: watchCancel)
				return nil
			}
		}
		if w.connectionEnded(message) {
			// the first of the lost connection's downs: all of them now
			w.connectionLost(message.PID.Node)
			return nil
		}
		delete(w.watching, message.PID)
		w.forward(message.PID, message.Reason)
		w.unsubscribeAll(message.PID)
	}
	return nil
}

// connectionEnded reports whether down, delivered by the framework, says
// that the connection to its process's node ended: ErrNoConnection, with
// more processes watched there, and the framework has no connection to
// the node now. Then every monitor there ended with it, and their downs
// are on their way in the framework's order, the node monitor's at some
// random place among them (after a thousand others, as likely as not).
// Handling them all at the first (connectionLost) hands the elections
// whose leader was there their downs first, in one pass, instead of
// spread over the whole batch; the downs that follow find their processes
// reported and change nothing. A connection that is up again (a new one)
// makes this down one process's, as before.
func (w *watcher) connectionEnded(down gen.MessageDownPID) bool {
	if errors.Is(down.Reason, gen.ErrNoConnection) == false {
		return false
	}
	others := false
	for pid := range w.watching {
		if pid.Node == down.PID.Node && pid != down.PID {
			others = true
			break
		}
	}
	if others == false {
		return false
	}
	_, err := w.process.Node().Network().Node(down.PID.Node)
	return err != nil
}

// watch monitors pid, unless this watcher already does; attempt counts the
// refusals with ErrTargetExist so far (see watchRetryPauses).
func (w *watcher) watch(pid gen.PID, attempt int) {
	if _, ok := w.watching[pid]; ok {
		return
	}
	if until, ok := w.settleUntil[pid.Node]; ok {
		// a connection to the node ended just now: let the node process
		// that end before asking it for a monitor (see nodeSettle)
		if wait := until.Sub(w.clock()); wait > 0 {
			if _, err := w.process.SendAfter(w.process.PID(), watchRetry{PID: pid, Attempt: attempt}, wait); err == nil {
				return
			}
		}
	}
	if _, err := w.process.Node().Network().Node(pid.Node); err != nil {
		// no connection: the framework would dial inside Monitor, and a
		// dial to a node that drops packets blocks this process (and, for
		// a shared watcher, every election's monitors there) for seconds;
		// the actor probes the member through its dialer and asks again
		// once it hears from it
		delete(w.pending, pid)
		w.tell(pid, watchFailed{PID: pid, Err: gen.ErrNoConnection})
		w.unsubscribeAll(pid)
		return
	}
	if w.nodes[pid.Node] == false {
		// first the node, so that no connection's end goes unseen while
		// the process's monitor is made (the actor heard from the node, so
		// it is connected and this does not dial)
		if w.process.MonitorNode(pid.Node) == nil {
			if w.nodes == nil {
				w.nodes = make(map[gen.Atom]bool)
			}
			w.nodes[pid.Node] = true
		}
	}
	err := w.process.Monitor(pid)
	switch {
	case err == nil:
		if w.watching == nil {
			w.watching = make(map[gen.PID]struct{})
		}
		w.watching[pid] = struct{}{}
		delete(w.pending, pid)
		w.tell(pid, watchStarted{PID: pid})
		return
	case errors.Is(err, gen.ErrTargetExist) && attempt < len(watchRetryPauses):
		_, err = w.process.SendAfter(w.process.PID(), watchRetry{PID: pid, Attempt: attempt + 1}, watchRetryPauses[attempt])
		if err == nil {
			return
		}
	}
	delete(w.pending, pid)
	w.tell(pid, watchFailed{PID: pid, Err: err})
	w.unsubscribeAll(pid)
}

// forgetNode drops what the watcher still holds of node's processes
// (nodeSettle).
func (w *watcher) forgetNode(node gen.Atom) {
	for pid := range w.watching {
		if pid.Node == node {
			delete(w.watching, pid)
		}
	}
	for pid := range w.reported {
		if pid.Node == node {
			delete(w.reported, pid)
		}
	}
}

// watchesOn reports whether the watcher monitors a process of node, or
// reported one lost with the connection (connectionLost) whose own down has
// not come since.
func (w *watcher) watchesOn(node gen.Atom) bool {
	for pid := range w.watching {
		if pid.Node == node {
			return true
		}
	}
	for pid := range w.reported {
		if pid.Node == node {
			return true
		}
	}
	return false
}

// connectionLost reports every process of node the watcher monitors as
// down with gen.ErrNoConnection, when the connection to node ended (the
// node monitor's down): that is the down each of their monitors owes, and
// the framework sends those too, but it does not always deliver them. Under
// a node crash on v3.2, with a thousand monitors of the dead node's
// processes on a node, a third to four fifths of their downs never came
// (the node monitors' downs all did), and the elections whose leader died
// there waited out their election timeouts and split their votes. The
// processes stay in reported until their own down comes; one still there
// when the node settles may hold a monitor the other side dropped, and the
// watcher is replaced as for any monitor that outlived its connection
// (nodeSettle).
//
// The downs that may not wait (downHints: a leader's, a candidate's) go
// out first, the ones postponed for followers of a living leader after
// them.
func (w *watcher) connectionLost(node gen.Atom) {
	var later []gen.PID
	for pid := range w.watching {
		if pid.Node != node {
			continue
		}
		delete(w.watching, pid)
		if w.reported == nil {
			w.reported = make(map[gen.PID]struct{})
		}
		w.reported[pid] = struct{}{}
		if w.mayWait(pid) {
			later = append(later, pid)
			continue
		}
		// the actors stay subscribed: the process's own down may still
		// say it terminated, which removes the member at once
		w.forward(pid, gen.ErrNoConnection)
	}
	for _, pid := range later {
		w.forward(pid, gen.ErrNoConnection)
	}
}

// mayWait reports whether every actor that watches pid may get its lost
// connection late (downHints).
func (w *watcher) mayWait(pid gen.PID) bool {
	for _, sub := range w.audience(pid) {
		if sub.hints.delay(pid, gen.ErrNoConnection) == 0 {
			return false
		}
	}
	return true
}

// deliveredByFramework reports whether a down came the way the framework
// delivers monitor notifications: a regular message in the System queue
// (the framework sends downs with high priority), sent by the terminated
// process itself (a termination, reported locally or by the process's node)
// or by this node's core process (a lost connection). A down forwarded or
// made up by any other process fails the check, so nobody can shrink a view
// by sending one.
func deliveredByFramework(process gen.Process, m *gen.MailboxMessage, system bool, down gen.MessageDownPID) bool {
	if system == false || m.Type != gen.MailboxMessageTypeRegular {
		return false
	}
	return m.From == down.PID || m.From == process.Node().PID()
}
