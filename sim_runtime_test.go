package leader

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

// The deterministic simulator runs the library's own Actor for N nodes in
// one goroutine under virtual time. Each actor gets a simProcess as its
// gen.Process: sends go through a simulated network, SendAfter schedules a
// virtual timer, monitors receive downs, and every random choice, including
// the actors' election jitter, comes from the seed.

// simEvent is one scheduled step. Events at the same instant run in the
// order they were scheduled, so a seed always replays the same way.
type simEvent struct {
	at   time.Time
	seq  uint64
	what string
	fn   func()
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// linkMode is the state of one direction between two nodes.
type linkMode int

const (
	linkUp        linkMode = iota
	linkCut                // no connection can exist: sends fail, connections drop
	linkBlackhole          // the connection stays up but bytes in this direction vanish
)

type simNetwork struct {
	minDelay, maxDelay time.Duration
	dropRate, dupRate  float64
	// stragglers: a small share of messages is held up for much longer (a
	// retransmission, a GC pause on the way), up to stragglerMax
	stragglerRate float64
	stragglerMax  time.Duration
	reorder       bool // false: per-link FIFO, as over one TCP connection
}

// worstDelay is the longest a message may travel.
func (n simNetwork) worstDelay() time.Duration {
	if n.stragglerRate > 0 {
		return n.maxDelay + n.stragglerMax
	}
	return n.maxDelay
}

type simulator struct {
	seed    uint64
	rng     *rand.Rand
	start   time.Time
	now     time.Time
	events  eventHeap
	seq     uint64
	stopped bool

	net      simNetwork
	links    map[[2]gen.Atom]linkMode // directed
	conns    map[[2]gen.Atom]uint64   // undirected, sorted pair -> connection epoch (0 = none)
	epochs   uint64
	lastSend map[[2]gen.Atom]time.Time // FIFO delivery per directed link

	nodes     map[gen.Atom]*simNode
	monitors  map[gen.PID]map[gen.PID]bool // target -> watchers
	creations int64

	trace    []string
	tracing  bool // keep the trace; off by default for speed, a failing seed replays with it on
	verbose  bool
	failures []string
	check    *checker
	logs     bool
	warnings []string // every warning and error logged, for tests to assert on
}

type simNode struct {
	name     gen.Atom
	creation int64
	alive    bool
	procs    map[uint64]*simProcess
	names    map[gen.Atom]*simProcess
	nextID   uint64
}

func newSimulator(seed uint64, network simNetwork) *simulator {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &simulator{
		seed:     seed,
		rng:      rand.New(rand.NewPCG(seed, 0x5eed)),
		start:    start,
		now:      start,
		net:      network,
		links:    make(map[[2]gen.Atom]linkMode),
		conns:    make(map[[2]gen.Atom]uint64),
		lastSend: make(map[[2]gen.Atom]time.Time),
		nodes:    make(map[gen.Atom]*simNode),
		monitors: make(map[gen.PID]map[gen.PID]bool),
	}
	s.check = newChecker(s)
	return s
}

func (s *simulator) elapsed() time.Duration { return s.now.Sub(s.start) }

func (s *simulator) at(when time.Time, what string, fn func()) {
	s.seq++
	heap.Push(&s.events, &simEvent{at: when, seq: s.seq, what: what, fn: fn})
}

func (s *simulator) after(d time.Duration, what string, fn func()) {
	s.at(s.now.Add(d), what, fn)
}

// runUntil processes events up to the virtual time limit, checking the
// invariants after each one. It stops early at the first violation.
func (s *simulator) runUntil(limit time.Time) {
	for s.events.Len() > 0 && len(s.failures) == 0 {
		next := s.events[0]
		if next.at.After(limit) {
			break
		}
		heap.Pop(&s.events)
		s.now = next.at
		if next.what != "" {
			s.note("%s", next.what)
		}
		next.fn()
		s.check.afterEvent()
	}
	if s.now.Before(limit) {
		s.now = limit
	}
}

func (s *simulator) runFor(d time.Duration) { s.runUntil(s.now.Add(d)) }

// note appends a line to the trace kept for failure reports.
func (s *simulator) note(format string, args ...any) {
	if s.tracing == false {
		return
	}
	line := fmt.Sprintf("%9.3fms ", float64(s.elapsed().Microseconds())/1000) + fmt.Sprintf(format, args...)
	if s.verbose {
		fmt.Println(line)
	}
	s.trace = append(s.trace, line)
	if len(s.trace) > 400 {
		s.trace = s.trace[len(s.trace)-300:]
	}
}

func (s *simulator) fail(format string, args ...any) {
	msg := fmt.Sprintf("t=%s: ", s.elapsed()) + fmt.Sprintf(format, args...)
	s.note("VIOLATION %s", msg)
	s.failures = append(s.failures, msg)
}

// report describes the failures with the trace of the last events. Runs
// without tracing say how to replay the seed with it.
func (s *simulator) report() string {
	if s.tracing == false {
		return fmt.Sprintf("seed %d: %s\nreplay with the trace: LEADER_SIM_SEED=%d LEADER_SIM_VERBOSE=1 go test -run %s -v .",
			s.seed, strings.Join(s.failures, "; "), s.seed, "TestSimulation")
	}
	last := s.trace
	if len(last) > 80 {
		last = last[len(last)-80:]
	}
	return fmt.Sprintf("seed %d: %s\nreplay: LEADER_SIM_SEED=%d LEADER_SIM_VERBOSE=1 go test -run TestSimulationRandomSeeds .\nlast events:\n%s",
		s.seed, strings.Join(s.failures, "; "), s.seed, strings.Join(last, "\n"))
}

// --- nodes and connections ---

func (s *simulator) addNode(name gen.Atom) *simNode {
	s.creations++
	n := &simNode{name: name, creation: s.creations, alive: true, procs: make(map[uint64]*simProcess), names: make(map[gen.Atom]*simProcess), nextID: 1000}
	s.nodes[name] = n
	return n
}

func pairKey(a, b gen.Atom) [2]gen.Atom {
	if a > b {
		a, b = b, a
	}
	return [2]gen.Atom{a, b}
}

func (s *simulator) link(from, to gen.Atom) linkMode { return s.links[[2]gen.Atom{from, to}] }

// canConnect: a TCP connection needs both directions to carry the handshake.
func (s *simulator) canConnect(a, b gen.Atom) bool {
	na, nb := s.nodes[a], s.nodes[b]
	return na != nil && nb != nil && na.alive && nb.alive && s.link(a, b) != linkCut && s.link(b, a) != linkCut
}

// connect returns the epoch of the connection between a and b, dialing one
// when needed (as the framework does on a send), or 0 when it cannot.
func (s *simulator) connect(a, b gen.Atom) uint64 {
	key := pairKey(a, b)
	if epoch := s.conns[key]; epoch != 0 {
		return epoch
	}
	if s.canConnect(a, b) == false {
		return 0
	}
	s.epochs++
	s.conns[key] = s.epochs
	return s.epochs
}

// disconnect drops the connection between a and b: every monitor across it
// gets a down with ErrNoConnection, as the framework reports any loss.
func (s *simulator) disconnect(a, b gen.Atom) {
	key := pairKey(a, b)
	if s.conns[key] == 0 {
		return
	}
	delete(s.conns, key)
	s.note("connection %s <-> %s dropped", a, b)
	for _, target := range sortedPIDs(s.monitors) {
		watchers := s.monitors[target]
		for _, watcher := range sortedPIDs(watchers) {
			if (target.Node == a && watcher.Node == b) || (target.Node == b && watcher.Node == a) {
				delete(watchers, watcher)
				s.deliverDown(watcher, target, gen.ErrNoConnection, s.delay())
			}
		}
	}
}

func (s *simulator) delay() time.Duration {
	lo, hi := s.net.minDelay, s.net.maxDelay
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// process finds a live process by PID or registered name.
func (s *simulator) process(to any) *simProcess {
	switch t := to.(type) {
	case gen.PID:
		n := s.nodes[t.Node]
		if n == nil || n.alive == false || n.creation != t.Creation {
			return nil
		}
		return n.procs[t.ID]
	case gen.ProcessID:
		n := s.nodes[t.Node]
		if n == nil || n.alive == false {
			return nil
		}
		return n.names[t.Name]
	}
	return nil
}

func targetNode(to any) gen.Atom {
	switch t := to.(type) {
	case gen.PID:
		return t.Node
	case gen.ProcessID:
		return t.Node
	}
	return ""
}

// send routes a message like the framework: local delivery skips the
// network; a remote send connects on demand and fails with ErrNoRoute when
// it cannot; an accepted send may still be lost, duplicated or delayed.
func (s *simulator) send(from gen.PID, to any, message any) error {
	dst := targetNode(to)
	if dst == "" {
		return gen.ErrUnsupported
	}
	desc := ""
	if s.tracing {
		desc = fmt.Sprintf("%s -> %v: %s", from.Node, dst, describe(message))
	}
	if dst == from.Node {
		if s.process(to) == nil {
			return gen.ErrProcessUnknown // as the framework reports a local send
		}
		s.after(0, "", func() {
			if p := s.process(to); p != nil {
				s.note("deliver %s", desc)
				p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, from, message)
			}
		})
		return nil
	}
	epoch := s.connect(from.Node, dst)
	if epoch == 0 {
		return gen.ErrNoRoute
	}
	if pid, ok := to.(gen.PID); ok && pid.Creation != s.nodes[dst].creation {
		return gen.ErrProcessIncarnation
	}
	if s.link(from.Node, dst) == linkBlackhole {
		s.note("blackholed %s", desc)
		return nil
	}
	if s.rng.Float64() < s.net.dropRate {
		s.note("lost %s", desc)
		return nil
	}
	copies := 1
	if s.rng.Float64() < s.net.dupRate {
		copies = 2
	}
	for i := 0; i < copies; i++ {
		at := s.now.Add(s.delay())
		if s.net.stragglerRate > 0 && s.rng.Float64() < s.net.stragglerRate {
			at = at.Add(time.Duration(s.rng.Int64N(int64(s.net.stragglerMax))))
		}
		key := [2]gen.Atom{from.Node, dst}
		if s.net.reorder == false {
			if last := s.lastSend[key]; at.Before(last) {
				at = last
			}
			s.lastSend[key] = at
		}
		s.at(at, "", func() {
			if s.conns[pairKey(from.Node, dst)] != epoch {
				return // the connection it travelled on is gone
			}
			if p := s.process(to); p != nil {
				s.note("deliver %s", desc)
				p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, from, message)
			}
		})
	}
	return nil
}

// monitor registers watcher's monitor of target, connecting on demand.
func (s *simulator) monitor(watcher gen.PID, target gen.PID) error {
	if target.Node != watcher.Node && s.connect(watcher.Node, target.Node) == 0 {
		return gen.ErrNoRoute
	}
	// as the framework answers: a PID of an earlier start of its node is
	// refused by the connection, a missing process by the node
	if n := s.nodes[target.Node]; n != nil && n.creation != target.Creation {
		return gen.ErrProcessIncarnation
	}
	if s.process(target) == nil {
		return gen.ErrProcessUnknown
	}
	if s.monitors[target] == nil {
		s.monitors[target] = make(map[gen.PID]bool)
	}
	s.monitors[target][watcher] = true
	return nil
}

func (s *simulator) demonitor(watcher gen.PID, target gen.PID) {
	delete(s.monitors[target], watcher)
}

// deliverDown delivers a MessageDownPID to watcher after delay, as the
// framework does: into the System queue, from the terminated process, or
// from the watcher's node's core process for a lost connection.
func (s *simulator) deliverDown(watcher gen.PID, target gen.PID, reason error, after time.Duration) {
	from := target
	if errors.Is(reason, gen.ErrNoConnection) {
		from = simCorePID(s.nodes[watcher.Node])
	}
	s.after(after, "", func() {
		if p := s.process(watcher); p != nil {
			s.note("down %s at %s: %s", target.Node, watcher.Node, reason)
			p.push(p.mailbox.System, gen.MailboxMessageTypeRegular, from, gen.MessageDownPID{PID: target, Reason: reason})
		}
	})
}

// simCorePID is a simulated node's core process, the sender of the
// framework's notifications.
func simCorePID(n *simNode) gen.PID {
	if n == nil {
		return gen.PID{}
	}
	return gen.PID{Node: n.name, ID: 1, Creation: n.creation}
}

// terminated notifies every watcher of a process that ended with reason.
// Watchers across a live connection learn the real reason.
func (s *simulator) terminated(pid gen.PID, reason error) {
	for _, watcher := range sortedPIDs(s.monitors[pid]) {
		if watcher.Node == pid.Node || s.conns[pairKey(watcher.Node, pid.Node)] != 0 {
			s.deliverDown(watcher, pid, reason, s.delay())
		}
	}
	delete(s.monitors, pid)
}

// crash kills a node abruptly: its processes vanish without running any
// code, and every connection to it drops.
func (s *simulator) crash(name gen.Atom) {
	n := s.nodes[name]
	if n == nil || n.alive == false {
		return
	}
	s.note("CRASH %s", name)
	for _, p := range n.procs {
		p.state = gen.ProcessStateTerminated
		s.check.terminated(p)
	}
	others := make([]gen.Atom, 0, len(s.nodes))
	for other := range s.nodes {
		others = append(others, other)
	}
	slices.Sort(others)
	for _, other := range others {
		if other != name {
			s.disconnect(name, other)
		}
	}
	n.alive = false
	n.procs = map[uint64]*simProcess{}
	n.names = map[gen.Atom]*simProcess{}
}

// sortedPIDs returns a map's PID keys in a fixed order: map iteration is
// random, and a seed must replay identically.
func sortedPIDs[V any](m map[gen.PID]V) []gen.PID {
	keys := make([]gen.PID, 0, len(m))
	for pid := range m {
		keys = append(keys, pid)
	}
	slices.SortFunc(keys, func(a, b gen.PID) int {
		if a.Node != b.Node {
			return strings.Compare(string(a.Node), string(b.Node))
		}
		if a.Creation != b.Creation {
			return int(a.Creation - b.Creation)
		}
		return int(a.ID) - int(b.ID)
	})
	return keys
}

func describe(message any) string {
	switch m := message.(type) {
	case msgHeartbeat:
		return fmt.Sprintf("Heartbeat{t%d}", m.Term)
	case msgHeartbeatAck:
		return fmt.Sprintf("HeartbeatAck{t%d}", m.Term)
	case msgVote:
		return fmt.Sprintf("Vote{t%d}", m.Term)
	case msgVoteReply:
		return fmt.Sprintf("VoteReply{t%d %v}", m.Term, m.Granted)
	case msgPreVote:
		return fmt.Sprintf("PreVote{t%d}", m.Term)
	case msgPreVoteReply:
		return fmt.Sprintf("PreVoteReply{t%d %v}", m.Term, m.Granted)
	case msgHello:
		return fmt.Sprintf("Hello{t%d}", m.Term)
	case msgHelloReply:
		return fmt.Sprintf("HelloReply{t%d}", m.Term)
	case msgTimeoutNow:
		return fmt.Sprintf("TimeoutNow{t%d}", m.Term)
	case msgBeats:
		return fmt.Sprintf("Beats{%d}", len(m.Beats))
	case msgBeatAcks:
		return fmt.Sprintf("BeatAcks{%d}", len(m.Acks))
	}
	return fmt.Sprintf("%T", message)
}

// --- the gen.Process the actor runs on ---

// simProcess implements the part of gen.Process the leader actor uses. The
// embedded interface is nil: calling anything else panics, which the
// checker reports, so the simulator cannot silently diverge from what the
// actor really needs from the framework.
type simProcess struct {
	gen.Process
	sim      *simulator
	node     *simNode
	pid      gen.PID
	name     gen.Atom
	behavior gen.ProcessBehavior
	mailbox  gen.ProcessMailbox
	state    gen.ProcessState
	kind     gen.ProcessKind
	log      simLog
	paused   bool // a stall: messages queue up, nothing runs
	parent   gen.PID
	events   []Leadership // the Leadership events it published, in order
}

// RegisterEvent accepts the actor's leadership event; SendEvent records what
// it publishes, so tests can read the events of a process.
func (p *simProcess) RegisterEvent(name gen.Atom, options gen.EventOptions) (gen.Ref, error) {
	return gen.Ref{Node: p.pid.Node, ID: [3]uint64{p.pid.ID, 1, 1}}, nil
}
func (p *simProcess) SendEvent(name gen.Atom, token gen.Ref, message any) error {
	if l, ok := message.(Leadership); ok {
		p.events = append(p.events, l)
	}
	return nil
}

// Spawn starts a child process on the same node (the actor's dialer).
func (p *simProcess) Spawn(factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	child, err := p.sim.spawnChild(p.node, "", factory(), p.pid, args...)
	if err != nil {
		return gen.PID{}, err
	}
	return child.pid, nil
}

// pause stops the process from running for d, as a blocked callback or a
// long pause of its goroutine would; then it drains everything that queued
// up. An election actor is then in the middle of a step, so what it shared
// with the node's liveness hub is withdrawn, as at the start of every step
// (coalesce.go): the hub does not answer or renew for it meanwhile.
func (p *simProcess) pause(d time.Duration) {
	p.paused = true
	if a, ok := p.behavior.(interface{ stepBegins() }); ok {
		a.stepBegins()
	}
	p.sim.note("STALL %s for %s", p.pid.Node, d)
	p.sim.after(d, "RESUME "+string(p.pid.Node), func() {
		p.paused = false
		p.run()
	})
}

func (s *simulator) spawn(n *simNode, name gen.Atom, behavior gen.ProcessBehavior) (*simProcess, error) {
	return s.spawnChild(n, name, behavior, simCorePID(n))
}

func (s *simulator) spawnChild(n *simNode, name gen.Atom, behavior gen.ProcessBehavior, parent gen.PID, args ...any) (*simProcess, error) {
	n.nextID++
	p := &simProcess{
		parent:   parent,
		sim:      s,
		node:     n,
		pid:      gen.PID{Node: n.name, ID: n.nextID, Creation: n.creation},
		name:     name,
		behavior: behavior,
		mailbox: gen.ProcessMailbox{
			Main: lib.NewQueueMPSC(), System: lib.NewQueueMPSC(), Urgent: lib.NewQueueMPSC(), Log: lib.NewQueueMPSC(),
		},
		state: gen.ProcessStateInit,
	}
	p.log = simLog{p: p}
	n.procs[p.pid.ID] = p
	if name != "" {
		n.names[name] = p
	}
	if err := behavior.ProcessInit(p, args...); err != nil {
		delete(n.procs, p.pid.ID)
		if name != "" {
			delete(n.names, name)
		}
		return nil, err
	}
	p.state = gen.ProcessStateSleep
	return p, nil
}

// push delivers into one of the mailbox queues and runs the actor until its
// mailbox is drained, as the framework's run loop does.
func (p *simProcess) push(queue lib.QueueMPSC, kind gen.MailboxMessageType, from gen.PID, message any) {
	if p.state == gen.ProcessStateTerminated {
		return
	}
	m := gen.TakeMailboxMessage()
	m.Type, m.From, m.Message = kind, from, message
	queue.Push(m)
	p.run()
}

func (p *simProcess) run() {
	if p.paused || p.state == gen.ProcessStateTerminated {
		return
	}
	p.state = gen.ProcessStateRunning
	reason := p.behavior.ProcessRun()
	if reason == nil {
		p.state = gen.ProcessStateSleep
		return
	}
	p.terminate(reason)
}

func (p *simProcess) terminate(reason error) {
	p.state = gen.ProcessStateTerminated
	delete(p.node.procs, p.pid.ID)
	delete(p.node.names, p.name)
	p.sim.note("%s terminated: %s", p.pid.Node, reason)
	p.sim.check.terminated(p)
	if reason == gen.TerminateReasonPanic {
		p.sim.fail("%s panicked", p.pid.Node)
	}
	p.sim.terminated(p.pid, reason)
	p.behavior.ProcessTerminate(reason)
}

func (p *simProcess) PID() gen.PID                  { return p.pid }
func (p *simProcess) Name() gen.Atom                { return p.name }
func (p *simProcess) Parent() gen.PID               { return p.parent }
func (p *simProcess) State() gen.ProcessState       { return p.state }
func (p *simProcess) Mailbox() gen.ProcessMailbox   { return p.mailbox }
func (p *simProcess) Behavior() gen.ProcessBehavior { return p.behavior }
func (p *simProcess) Log() gen.Log                  { return &p.log }
func (p *simProcess) Node() gen.Node                { return simGenNode{name: p.pid.Node, sim: p.sim} }
func (p *simProcess) SetProcessKind(k gen.ProcessKind) error {
	p.kind = k
	p.sim.check.kindSet(p.pid, k)
	return nil
}
func (p *simProcess) Send(to any, message any) error {
	if reply, ok := message.(msgVoteReply); ok && reply.Granted {
		p.sim.check.voteSent(p.pid, reply.Term, to)
	}
	return p.sim.send(p.pid, to, message)
}
func (p *simProcess) Monitor(target any) error {
	pid, ok := target.(gen.PID)
	if ok == false {
		return gen.ErrUnsupported
	}
	return p.sim.monitor(p.pid, pid)
}
func (p *simProcess) Demonitor(target any) error {
	if pid, ok := target.(gen.PID); ok {
		p.sim.demonitor(p.pid, pid)
	}
	return nil
}
func (p *simProcess) SendResponse(to gen.PID, ref gen.Ref, message any) error { return nil }

// SendExit delivers an exit signal to a local process, as the framework
// does: into its Urgent queue.
func (p *simProcess) SendExit(to gen.PID, reason error) error {
	target := p.sim.process(to)
	if target == nil {
		return gen.ErrProcessUnknown
	}
	target.push(target.mailbox.Urgent, gen.MailboxMessageTypeExit, p.pid, gen.MessageExitPID{PID: p.pid, Reason: reason})
	return nil
}
func (p *simProcess) SendResponseError(to gen.PID, ref gen.Ref, err error) error {
	return nil
}

// SendAfter schedules a virtual timer; the CancelFunc reports whether the
// timer was stopped before it fired, as time.Timer.Stop does.
func (p *simProcess) SendAfter(to any, message any, after time.Duration) (gen.CancelFunc, error) {
	fired, cancelled := false, false
	p.sim.after(after, "", func() {
		if cancelled {
			return
		}
		fired = true
		if target := p.sim.process(to); target != nil {
			target.push(target.mailbox.Main, gen.MailboxMessageTypeRegular, p.pid, message)
		}
	})
	return func() bool {
		if fired || cancelled {
			return false
		}
		cancelled = true
		return true
	}, nil
}

// simGenNode and simGenNetwork answer what the actor asks the framework
// about the network: whether a connection exists, and connecting (from the
// dialer). A simulated node has no codec, so the registration check sees a
// disabled network.
type simGenNode struct {
	gen.Node
	name gen.Atom
	sim  *simulator
}

func (n simGenNode) Name() gen.Atom       { return n.name }
func (n simGenNode) PID() gen.PID         { return simCorePID(n.sim.nodes[n.name]) }
func (n simGenNode) Network() gen.Network { return simGenNetwork{self: n.name, sim: n.sim} }

// SpawnRegister starts a named process on the node (the liveness hub).
func (n simGenNode) SpawnRegister(name gen.Atom, factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	node := n.sim.nodes[n.name]
	if _, taken := node.names[name]; taken {
		return gen.PID{}, gen.ErrTaken
	}
	p, err := n.sim.spawnChild(node, name, factory(), simCorePID(node), args...)
	if err != nil {
		return gen.PID{}, err
	}
	return p.pid, nil
}

type simGenNetwork struct {
	gen.Network
	self gen.Atom
	sim  *simulator
}

func (simGenNetwork) Mode() gen.NetworkMode { return gen.NetworkModeDisabled }

func (n simGenNetwork) Node(name gen.Atom) (gen.RemoteNode, error) {
	if n.sim.conns[pairKey(n.self, name)] == 0 {
		return nil, gen.ErrNoConnection
	}
	return simRemoteNode{self: n.self, peer: name, sim: n.sim}, nil
}

// simRemoteNode is a connection as the dialer sees it: it can drop it.
type simRemoteNode struct {
	gen.RemoteNode
	self, peer gen.Atom
	sim        *simulator
}

func (r simRemoteNode) Disconnect() {
	r.sim.note("connection %s <-> %s reset by %s", r.self, r.peer, r.self)
	r.sim.disconnect(r.self, r.peer)
}

func (n simGenNetwork) GetNode(name gen.Atom) (gen.RemoteNode, error) {
	if n.sim.connect(n.self, name) == 0 {
		return nil, gen.ErrNoRoute
	}
	return nil, nil
}

// simLog sends the actor's log lines to the trace when logs are enabled.
type simLog struct {
	gen.Log
	p *simProcess
}

func (l *simLog) line(level, format string, args ...any) {
	if level == "warning" || level == "error" {
		l.p.sim.warnings = append(l.p.sim.warnings, fmt.Sprintf(format, args...))
	}
	if l.p.sim.logs {
		l.p.sim.note("%s [%s] %s", l.p.pid.Node, level, fmt.Sprintf(format, args...))
	}
}
func (l *simLog) Level() gen.LogLevel              { return gen.LogLevelDebug }
func (l *simLog) Trace(format string, args ...any) { l.line("trace", format, args...) }
func (l *simLog) Debug(format string, args ...any) { l.line("debug", format, args...) }
func (l *simLog) Info(format string, args ...any)  { l.line("info", format, args...) }
func (l *simLog) Warning(format string, args ...any) {
	l.line("warning", format, args...)
}
func (l *simLog) Error(format string, args ...any) { l.line("error", format, args...) }
func (l *simLog) Panic(format string, args ...any) {
	l.line("panic", format, args...)
	l.p.sim.fail("%s logged a panic: %s", l.p.pid.Node, fmt.Sprintf(format, args...))
}
