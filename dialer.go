package leader

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

// Sending to a process by name makes the framework connect to its node
// synchronously, in the sender's goroutine: registrar lookup, TCP dial,
// handshake. To a host that does not answer at all (a deleted pod's IP, a
// firewall that drops packets) that blocks for the full dial or handshake
// timeout, seconds during which a leader sends no heartbeats and the whole
// cluster re-elects. So the actor never sends by name to a node it is not
// connected to: a small linked helper process connects instead, and the
// actor probes the member once the connection exists.

// dialRequest asks the dialer to connect to Node. With Reset, it first
// disconnects an existing connection that carries nothing (silence.go), and
// dials again after Pause (see redialPause).
type dialRequest struct {
	Node  gen.Atom
	Reset bool
	Pause time.Duration
	// NoDial, with Reset, only disconnects (gone.go).
	NoDial bool
	// Share is how long a failed dial of Node by any election of this
	// node answers for this one (connectionBoard.dial).
	Share time.Duration
	// Warning, with Reset, is what the dialer logs when it resets.
	Warning string
	// ProbeWait, with Reset, is how long the other node's framework has to
	// answer a request over the connection before the reset goes on
	// (linkprobe.go); 0 resets at once.
	ProbeWait time.Duration
}

// dialResult reports the outcome of a dialRequest to the actor.
type dialResult struct {
	Node gen.Atom
	Err  error
	// Kept: a Reset found that the connection carries requests and their
	// answers (linkCarries), and left it up.
	Kept bool
}

// dialer connects to nodes on the actor's behalf, one at a time.
type dialer struct {
	process gen.Process
	clock   func() time.Time
	probing map[gen.Atom]dialRequest // resets waiting for their probe (linkprobe.go)
}

func factoryDialer() gen.ProcessBehavior { return &dialer{} }

func (d *dialer) ProcessInit(process gen.Process, args ...any) error {
	d.process = process
	d.clock = time.Now
	for _, arg := range args {
		if clock, ok := arg.(func() time.Time); ok {
			d.clock = clock
		}
	}
	return nil
}

func (d *dialer) ProcessKind() gen.ProcessKind { return gen.ProcessKindCustom }

func (d *dialer) ProcessTerminate(reason error) {}

// ProcessRun connects for every request and reports back. Any exit signal
// (the actor it serves is gone) ends it.
func (d *dialer) ProcessRun() error {
	return serveHelper(d.process, neverEnds(func(m *gen.MailboxMessage, system bool) {
		switch message := m.Message.(type) {
		case dialRequest:
			if m.From == d.process.Parent() || m.From == d.process.PID() {
				d.serve(message)
			}
		case linkAnswered:
			if m.From.Node == d.process.PID().Node {
				d.probed(message.Node, true)
			}
		case linkProbeDue:
			if m.From == d.process.PID() {
				d.probed(message.Node, false)
			}
		}
	}))
}

// serve handles one dialRequest.
func (d *dialer) serve(request dialRequest) {
	if request.Reset {
		if remote, err := d.process.Node().Network().Node(request.Node); err == nil {
			if request.ProbeWait > 0 && d.probe(request) {
				return // the probe decides (linkprobe.go)
			}
			if request.Warning != "" {
				d.process.Log().Warning("%s", request.Warning)
			}
			remote.Disconnect()
		}
		if request.NoDial {
			return
		}
		if pause := request.Pause; pause > 0 {
			// the actor keeps the node marked as being dialed meanwhile,
			// so it asks for no other dial; sends that find a connection
			// the peer made use it
			d.process.SendAfter(d.process.PID(), dialRequest{Node: request.Node}, pause)
			return
		}
	}
	if _, err := d.process.Node().Network().Node(request.Node); err == nil {
		// connected already (the peer dialed): nothing to wait for
		d.process.Send(d.process.Parent(), dialResult{Node: request.Node})
		tellPeerBack(d.process, request.Node)
		return
	}
	if wait := connectionResets.redialWait(d.process.Node(), request.Node, d.clock()); wait > 0 {
		// another election on this node reset the connection and this
		// node waits before it dials again (redialPause): whichever
		// election asks, the node pair must see no dial from here
		d.process.SendAfter(d.process.PID(), dialRequest{Node: request.Node}, wait)
		return
	}
	waiters, err := connectionResets.dial(d.process.Node(), request.Node, d.clock, request.Share, func() error {
		_, err := d.process.Node().Network().GetNode(request.Node)
		return err
	})
	d.process.Send(d.process.Parent(), dialResult{Node: request.Node, Err: err})
	for _, pid := range waiters {
		d.process.Send(pid, sharedDialResult{Node: request.Node})
	}
	if err == nil {
		tellPeerBack(d.process, request.Node)
	}
}

// neverEnds adapts a handle that never ends its process to serveHelper.
func neverEnds(handle func(m *gen.MailboxMessage, system bool)) func(*gen.MailboxMessage, bool) error {
	return func(m *gen.MailboxMessage, system bool) error {
		handle(m, system)
		return nil
	}
}

// serveHelper is the mailbox loop of the actor's helper processes (the
// dialer and the watchers): it hands every message of the System and Main
// queues to handle, reporting which queue it came from (the framework's
// notifications come in System), until the process has nothing left to
// do; any exit signal, from the actor that is gone, ends the process.
//
// A non-nil result of handle ends the process with that reason.
func serveHelper(process gen.Process, handle func(m *gen.MailboxMessage, system bool) error) (reason error) {
	_ = reserveStack(0)
	if lib.Recover() {
		defer func() {
			if r := recover(); r != nil {
				reason = gen.TerminateReasonPanic
			}
		}()
	}
	mailbox := process.Mailbox()
	for {
		if process.State() != gen.ProcessStateRunning {
			return gen.TerminateReasonKill
		}
		if value, ok := mailbox.Urgent.Pop(); ok {
			m, isMessage := value.(*gen.MailboxMessage)
			switch {
			case isMessage && m.Type == gen.MailboxMessageTypeExit:
				gen.ReleaseMailboxMessage(m)
				return gen.TerminateReasonNormal
			case isMessage && m.Type == gen.MailboxMessageTypeInspect:
				// answered, so that the observer does not wait for its timeout
				answer := map[string]string{}
				if i, ok := process.Behavior().(interface{ inspect() map[string]string }); ok {
					answer = i.inspect()
				}
				process.SendResponse(m.From, m.Ref, answer)
				gen.ReleaseMailboxMessage(m)
			}
			continue
		}
		value, system := mailbox.System.Pop()
		if system == false {
			var ok bool
			if value, ok = mailbox.Main.Pop(); ok == false {
				return nil
			}
		}
		if m, isMessage := value.(*gen.MailboxMessage); isMessage {
			err := handle(m, system)
			gen.ReleaseMailboxMessage(m)
			if err != nil {
				return err
			}
		}
	}
}

// errQueued reports a message held until the dialer has connected.
var errQueued = errors.New("leader: queued until the node is connected")

// maxQueued bounds the messages held per node while it is being dialed;
// older ones are dropped first (the protocol repeats what matters).
const maxQueued = 16

// sendConnected sends message to a process on node only over an existing
// connection. The framework connects on demand inside Send, by PID as well
// as by name, and that blocks the sender for the whole dial and handshake,
// seconds against a host that drops packets. So without a connection the
// message is held, the dialer connects, and the actor sends what it held
// once the dialer reports the connection (dialed). A connection that drops
// between the check and the send is the one window left; the send then
// fails fast against a host that refuses, and blocks only against one that
// drops packets.
func (a *Actor) sendConnected(node gen.Atom, to any, message any) error {
	if node == "" || node == a.Node().Name() {
		return a.Send(to, message)
	}
	if a.connected(node) {
		if _, hello := message.(msgHello); hello {
			tellPeerBack(a, node) // the peer dialed: whoever waits for it probes
		}
		return a.Send(to, message)
	}
	if a.dialing[node] == false {
		// After a node crash every election of this node wants to reach
		// the dead node at once. Each dialing it from its own dialer
		// (spawned for the purpose) costs a thousand processes, TCP
		// connections and handshakes in the same few milliseconds, which
		// delays the messages of the failover itself. So a dial another
		// election of this node is making, or one that failed a moment
		// ago, answers for this election too.
		switch joined, err := connectionResets.joinDial(a.Node(), node, a.PID(), a.clock(), a.dialShare()); {
		case err != nil:
			a.state.dialed(a.clock(), node, err)
			a.parkProbe(node, message)
			return errQueued
		case joined:
			// this send fails; the election hears of the dial only if it
			// connects (sharedDialResult), and then probes at once
			a.parkProbe(node, message)
			return errDialShared
		}
	}
	if a.dial(node) == false {
		return a.Send(to, message) // no dialer: the old, blocking way
	}
	a.hold(node, to, message)
	return errQueued
}

// hold keeps message for node until the dial under way reports.
func (a *Actor) hold(node gen.Atom, to any, message any) {
	held := append(a.held[node], heldMessage{to: to, message: message})
	if len(held) > maxQueued {
		held = held[len(held)-maxQueued:]
	}
	if a.held == nil {
		a.held = make(map[gen.Atom][]heldMessage)
	}
	a.held[node] = held
}

// sharedDialResult tells an election that a dial another election's
// dialer made while this one wanted to reach Node connected
// (connectionBoard.joinDial), or, with Spread, that Node's connection is up
// while its ghost probe waited on the board (ghostprobe.go).
type sharedDialResult struct {
	Node   gen.Atom
	Spread bool
}

// errDialShared is the outcome of a send to a node that another election
// of this node is dialing: the send is not made, and the election backs
// its sends by name off as after a failure, unless the dial connects.
// Nothing is held for the node: a thousand elections would otherwise each
// be woken by the dial's failure, in the middle of the failover they are
// in. The protocol repeats what matters.
var errDialShared = errors.New("leader: not sent, another election of this node is dialing the peer")

// heldMessage is a message waiting for its node's connection.
type heldMessage struct {
	to      any
	message any
}

// connected reports whether this node has a connection to node, without
// connecting.
func (a *Actor) connected(node gen.Atom) bool {
	_, err := a.Node().Network().Node(node)
	return err == nil
}

// dial asks the dialer to connect to node, unless it already is. It
// reports false when no dialer can be started, in which case the caller
// sends synchronously as before.
func (a *Actor) dial(node gen.Atom) bool {
	return a.askDialer(dialRequest{Node: node, Share: a.dialShare()})
}

// resetConnection has the dialer drop and re-dial the connection to a node
// that answers nothing over it (silence.go), unless the connection has
// brought messages from that node since the member's silence was sampled.
func (a *Actor) resetConnection(node gen.Atom) {
	remote, err := a.Node().Network().Node(node)
	if err != nil {
		return // nothing to reset; sends by name make the dialer connect
	}
	bound := a.state.silenceBound()
	verdict, quiet := connectionResets.claim(a.Node(), node, remote.Info().MessagesIn, a.clock(), bound, silentMinQuiet(a.state.cfg))
	switch verdict {
	case resetRecent:
		return // another election on this node reset it just now
	case resetCarrying, resetStarved:
		a.state.connectionKept(node)
		return
	}
	if a.state.isGone(node) {
		// no dial from here (gone.go); the other elections of this node
		// hold theirs as long, so that the restarted node's dial finds no
		// connection here
		warning := fmt.Sprintf("leader %q: the process of peer %s terminated, and the framework still reports its node as connected although that connection has brought nothing for %s, a Hello over it went unanswered for %s, and the node's framework did not answer a request over it; "+
			"resetting it without dialing again (a connection the framework kept to a restarted node would keep that node out of the view for good)",
			a.state.cfg.clusterID, node, quiet.Round(time.Millisecond), bound)
		pause := a.state.redialHold()
		connectionResets.holdRedial(a.Node(), node, a.clock().Add(pause))
		a.askDialer(dialRequest{Node: node, Reset: true, NoDial: true, Warning: warning, ProbeWait: linkProbeWait(a.state.cfg)})
		return
	}
	warning := fmt.Sprintf("leader %q: peer %s has answered nothing for %s although the framework reports its node as connected, the connection has brought nothing from that node for %s, and the node's framework did not answer a request over it; "+
		"resetting the connection (a link that drops packets, or a simultaneous connect that left both sides waiting)",
		a.state.cfg.clusterID, node, bound, quiet.Round(time.Millisecond))
	pause := redialPause(a.Node().Name(), node, a.Node().Network().NetworkFlags(), remote.Info().NetworkFlags, a.state.redialHold())
	connectionResets.holdRedial(a.Node(), node, a.clock().Add(pause))
	a.askDialer(dialRequest{Node: node, Reset: true, Pause: pause, Warning: warning, ProbeWait: linkProbeWait(a.state.cfg)})
}

// sampleInbound notes how many messages the connection to node has brought
// so far, for resetConnection to compare.
func (a *Actor) sampleInbound(node gen.Atom) {
	if remote, err := a.Node().Network().Node(node); err == nil {
		connectionResets.sample(a.Node(), node, remote.Info().MessagesIn, a.clock())
	}
}

// connectionResets is shared by all the elections of an OS process: they
// share the connections, and when one goes silent each of them notices. One
// reset per silenceBound is enough for all; more would drop everybody's
// monitors again and again.
var connectionResets connectionBoard

// connectionBoard records, by connection, when it was last reset and how
// many messages it had brought when last sampled. Connections are keyed
// by the gen.Node itself, not its name: one OS process may run several
// nodes of the same name one after the other, or, in tests, side by side.
type connectionBoard struct {
	mu      sync.Mutex
	reset   map[connectionKey]time.Time
	inbound map[connectionKey]inboundSample
	// no dial of the peer before this, after a reset (redialPause); every
	// dialer of the node's elections reads it, not only the one whose
	// election reset the connection
	redialAt map[connectionKey]time.Time
	// dials in progress, and the last failed dial per peer (dial)
	dials    map[connectionKey]*sharedDial
	failures map[connectionKey]dialFailure
	// the elections waiting for a connection to a ghost's node
	// (ghostprobe.go)
	ghosts map[connectionKey]*ghostWaiters
	// starvedAt is, per node, when a timer of one of its elections last
	// fired late by more than starvedLateness (markStarved)
	starvedAt map[gen.Node]time.Time
	sweptAt   time.Time // the last sweepLocked
}

// boardRetention is how long the board keeps what it recorded about a
// connection: far longer than any bound the entries serve (a silence bound,
// a redial pause, a dial's sharing window). boardSweepEvery is how often it
// looks for what to forget.
const (
	boardRetention  = 2 * time.Minute
	boardSweepEvery = 10 * time.Second
)

// forget drops every entry of node.
func (b *connectionBoard) forget(node gen.Node) {
	b.mu.Lock()
	defer b.mu.Unlock()
	of := func(key connectionKey, _ time.Time) bool { return key.node == node }
	dropWhere(b.reset, of)
	dropWhere(b.redialAt, of)
	dropWhere(b.inbound, func(key connectionKey, _ inboundSample) bool { return key.node == node })
	dropWhere(b.failures, func(key connectionKey, _ dialFailure) bool { return key.node == node })
	dropWhere(b.ghosts, func(key connectionKey, _ *ghostWaiters) bool { return key.node == node })
	delete(b.starvedAt, node)
}

// dropWhere deletes the entries of m for which drop reports true.
func dropWhere[V any](m map[connectionKey]V, drop func(connectionKey, V) bool) {
	for key, v := range m {
		if drop(key, v) {
			delete(m, key)
		}
	}
}

// sweepLocked forgets, at most every boardSweepEvery, the entries older
// than boardRetention and every entry of a node that has stopped, so that
// the board, shared by the whole OS process, does not grow with the node
// names and node instances it has seen (a new pod name per deploy, a node
// restarted in the same process); b.mu is held.
func (b *connectionBoard) sweepLocked(now time.Time) {
	if now.Sub(b.sweptAt) < boardSweepEvery && now.Sub(b.sweptAt) >= 0 {
		return
	}
	b.sweptAt = now
	stale := func(key connectionKey, at time.Time) bool {
		return now.Sub(at) > boardRetention || key.node.IsAlive() == false
	}
	dropWhere(b.reset, stale)
	dropWhere(b.redialAt, stale)
	dropWhere(b.inbound, func(key connectionKey, s inboundSample) bool { return stale(key, s.since) })
	dropWhere(b.failures, func(key connectionKey, f dialFailure) bool { return stale(key, f.at) })
	dropWhere(b.ghosts, func(key connectionKey, w *ghostWaiters) bool { return stale(key, w.since) })
	for node, at := range b.starvedAt {
		if now.Sub(at) > boardRetention || node.IsAlive() == false {
			delete(b.starvedAt, node)
		}
	}
}

// markStarved records that a timer of an election of node fired late by
// more than starvedLateness at now.
//
// Why. A node whose own timers fire late is not running its processes when
// it should: its CPU is saturated (thousands of elections starting at once
// on two cores did it), or the process was paused. Its connections'
// readers wait their turn as its elections do, so a member's answers and
// the connection's inbound count can both look still while the messages
// wait to be read. A reset then cuts every election on the connection, each
// of which takes the loss, probes and campaigns: more load, more late
// timers, more resets, and a cold start of 10,000 elections that never
// settles. So while a node is starved (until its timers have been on time
// for a silence bound) a connection must stay still for starvedQuiet, not
// minQuiet, before it is reset.
func (b *connectionBoard) markStarved(node gen.Node, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweepLocked(now)
	if b.starvedAt == nil {
		b.starvedAt = make(map[gen.Node]time.Time)
	}
	if now.After(b.starvedAt[node]) {
		b.starvedAt[node] = now
	}
}

// starvedQuiet is how long a connection of a starved node must have brought
// nothing before it is reset for silence: four silence bounds (2.4 s at the
// defaults). A connection that many elections share brings something every
// few milliseconds while it works, however late its reader runs; one that
// brings nothing for seconds is silent in fact (after a simultaneous connect
// on a framework with that bug, the peer uses another connection), and
// leaving it so would keep the node starved: its elections campaign over it
// in vain. So starvation delays a reset, it does not forbid one.
func starvedQuiet(bound time.Duration) time.Duration { return 4 * bound }

// holdRedial records that node dials peer again no earlier than until.
func (b *connectionBoard) holdRedial(node gen.Node, peer gen.Atom, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.redialAt == nil {
		b.redialAt = make(map[connectionKey]time.Time)
	}
	b.redialAt[connectionKey{node: node, peer: peer}] = until
}

// redialWait is how long node must still wait before it dials peer.
func (b *connectionBoard) redialWait(node gen.Node, peer gen.Atom, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweepLocked(now)
	key := connectionKey{node: node, peer: peer}
	until, ok := b.redialAt[key]
	if ok == false {
		return 0
	}
	if now.Before(until) == false {
		delete(b.redialAt, key)
		return 0
	}
	return until.Sub(now)
}

// joinDial looks for a dial from node to peer that can answer for the
// election waiter: one that failed within share before now (its error is
// returned), or one in progress (joined: if it connects, its dialer sends
// waiter a sharedDialResult).
func (b *connectionBoard) joinDial(node gen.Node, peer gen.Atom, waiter gen.PID, now time.Time, share time.Duration) (joined bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := connectionKey{node: node, peer: peer}
	if err := b.failedDialLocked(key, now, share); err != nil {
		return false, err
	}
	if d, ok := b.dials[key]; ok {
		if d.waiters == nil {
			d.waiters = make(map[gen.PID]struct{})
		}
		d.waiters[waiter] = struct{}{}
		return true, nil
	}
	return false, nil
}

func (b *connectionBoard) failedDialLocked(key connectionKey, now time.Time, share time.Duration) error {
	f, ok := b.failures[key]
	if ok == false {
		return nil
	}
	if age := now.Sub(f.at); age < 0 || age >= share {
		if age >= maxDialShare {
			delete(b.failures, key)
		}
		return nil
	}
	return f.err
}

// maxDialShare bounds how long a failed dial is kept on the board.
const maxDialShare = time.Minute

// dial runs connect, the dial of peer from node, unless another dialer of
// node is dialing peer now, whose outcome it then waits for and returns,
// or a dial of peer failed within share, whose error it returns. The
// framework dials once per caller: a thousand dialers asking together
// would make a thousand TCP connections and handshakes to a node that
// just crashed. When the dial it ran connected, the elections that joined
// it (joinDial) are returned as waiters, for the caller to tell.
func (b *connectionBoard) dial(node gen.Node, peer gen.Atom, clock func() time.Time, share time.Duration, connect func() error) (waiters []gen.PID, err error) {
	key := connectionKey{node: node, peer: peer}
	b.mu.Lock()
	if err := b.failedDialLocked(key, clock(), share); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	if d, ok := b.dials[key]; ok {
		b.mu.Unlock()
		<-d.done
		return nil, d.err
	}
	d := &sharedDial{done: make(chan struct{})}
	if b.dials == nil {
		b.dials = make(map[connectionKey]*sharedDial)
	}
	b.dials[key] = d
	b.mu.Unlock()

	// ends the dial even if connect panics: nobody may wait on it forever
	err = errDialAborted
	defer func() {
		b.mu.Lock()
		delete(b.dials, key)
		if b.failures == nil {
			b.failures = make(map[connectionKey]dialFailure)
		}
		if err != nil {
			b.failures[key] = dialFailure{at: clock(), err: err}
		} else {
			delete(b.failures, key)
		}
		d.err = err
		if err == nil {
			for pid := range d.waiters {
				waiters = append(waiters, pid)
			}
		}
		b.mu.Unlock()
		close(d.done)
	}()
	err = connect()
	return nil, err
}

// errDialAborted is the outcome of a dial whose dialer failed in it.
var errDialAborted = errors.New("leader: the dial was aborted")

// sharedDial is a dial in progress that other dialers and elections wait
// for.
type sharedDial struct {
	done    chan struct{}
	err     error                // set before done is closed
	waiters map[gen.PID]struct{} // elections to tell if it connects (joinDial)
}

// dialFailure is the last failed dial of a peer.
type dialFailure struct {
	at  time.Time
	err error
}

type connectionKey struct {
	node gen.Node
	peer gen.Atom
}

// inboundSample is a connection's MessagesIn, and since when it has had
// that value.
type inboundSample struct {
	count uint64
	since time.Time
}

// resetVerdict is connectionBoard.claim's answer.
type resetVerdict int

const (
	resetNow      resetVerdict = iota // reset it
	resetRecent                       // another election reset it within the bound
	resetCarrying                     // it has brought messages since the sample: keep it
	resetStarved                      // still, but not for starvedQuiet, and this node is starved: keep it for now
)

// sample records count as the connection's inbound count, keeping the time
// of an earlier sample that had the same count.
func (b *connectionBoard) sample(node gen.Node, peer gen.Atom, count uint64, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweepLocked(now)
	key := connectionKey{node: node, peer: peer}
	if old, ok := b.inbound[key]; ok && old.count == count {
		return
	}
	if b.inbound == nil {
		b.inbound = make(map[connectionKey]inboundSample)
	}
	b.inbound[key] = inboundSample{count: count, since: now}
}

// claim decides whether the connection from node to peer, which has brought
// count messages so far, may be reset at now, and records the reset if so.
// It is kept when its count moved since a sample, when its count has been
// still for less than minQuiet (the sample came too late to tell), or less
// than starvedQuiet while node is starved, and when there is no sample: a
// reset needs evidence that nothing came. With resetNow it also reports how
// long the count had been still.
func (b *connectionBoard) claim(node gen.Node, peer gen.Atom, count uint64, now time.Time, bound, minQuiet time.Duration) (verdict resetVerdict, quiet time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweepLocked(now)
	key := connectionKey{node: node, peer: peer}
	if at, ok := b.reset[key]; ok && now.Sub(at) < bound && now.Sub(at) >= 0 {
		return resetRecent, 0
	}
	if b.inbound == nil {
		b.inbound = make(map[connectionKey]inboundSample)
	}
	sampled, ok := b.inbound[key]
	if ok == false || sampled.count != count {
		// moved, or never sampled (another election's reset, say, came
		// between this one's sample and now): look again
		b.inbound[key] = inboundSample{count: count, since: now}
		return resetCarrying, 0
	}
	if at, ok := b.starvedAt[node]; ok && now.Sub(at) < bound {
		// what looks still may be waiting to be read (markStarved): only
		// a connection still for starvedQuiet is silent in fact, and the
		// sample is kept so that its stillness adds up
		if now.Sub(sampled.since) < starvedQuiet(bound) {
			return resetStarved, 0
		}
	} else if now.Sub(sampled.since) < minQuiet {
		// too soon to tell: look again
		b.inbound[key] = inboundSample{count: count, since: now}
		return resetCarrying, 0
	}
	if b.reset == nil {
		b.reset = make(map[connectionKey]time.Time)
	}
	b.reset[key] = now
	// the next connection counts from zero: one that brings nothing
	// either is reset in its turn
	b.inbound[key] = inboundSample{count: 0, since: now}
	return resetNow, now.Sub(sampled.since)
}

// askDialer sends request to the dialer, starting it on first use.
func (a *Actor) askDialer(request dialRequest) bool {
	node := request.Node
	if a.dialing[node] {
		return true
	}
	if a.dialerPID == (gen.PID{}) {
		pid, err := a.Spawn(factoryDialer, gen.ProcessOptions{LinkParent: true}, a.clock)
		if err != nil {
			a.Log().Warning("leader: cannot start the dialer process (%s); unreachable peers will be dialed from the actor itself, which blocks it while they time out", err)
			return false
		}
		a.dialerPID = pid
		a.dialing = make(map[gen.Atom]bool)
	}
	if err := a.Send(a.dialerPID, request); err != nil {
		return false
	}
	if request.NoDial == false {
		a.dialing[node] = true // until the dialer reports (dialResult)
	}
	return true
}

// dialed handles the dialer's report: a connection is there, so the member
// can be probed at once; a failure backs its sends by name off.
func (a *Actor) dialed(result dialResult) {
	delete(a.dialing, result.Node)
	if result.Kept {
		a.state.connectionKept(result.Node)
	}
	held := a.held[result.Node]
	delete(a.held, result.Node)
	if result.Err == nil {
		for _, h := range held {
			a.state.sendResult(result.Node, a.sendConnected(result.Node, h.to, h.message))
		}
	}
	a.state.dialed(a.clock(), result.Node, result.Err)
}
