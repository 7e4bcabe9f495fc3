package leader

import (
	"fmt"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

// The simulated processes and nodes as the actor sees them: the parts of
// gen.Process, gen.Node and gen.Network the library uses, on the
// simulator of sim_runtime_test.go.

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
	if c := p.checker(); c != nil {
		c.terminated(p)
	}
	if reason == gen.TerminateReasonPanic {
		p.sim.fail("%s panicked", p.pid.Node)
	}
	p.sim.terminated(p.pid, reason)
	p.behavior.ProcessTerminate(reason)
}

// checker is the checker of the election whose actor runs in p; nil for
// the other processes (watchers, dialers, the hub).
func (p *simProcess) checker() *checker {
	if b, ok := p.behavior.(*simActor); ok && b.cluster != nil {
		return b.cluster.check
	}
	return nil
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
	if c := p.checker(); c != nil {
		c.kindSet(p.pid, k)
	}
	return nil
}
func (p *simProcess) Send(to any, message any) error {
	if reply, ok := message.(msgVoteReply); ok && reply.Granted {
		if c := p.checker(); c != nil {
			c.voteSent(p.pid, reply.Term, to)
		}
	}
	if reply, ok := message.(msgPreVoteReply); ok && reply.Pledged != 0 {
		if c := p.checker(); c != nil {
			c.voteSent(p.pid, reply.Pledged, to)
		}
	}
	return p.sim.send(p.pid, to, message)
}
func (p *simProcess) Monitor(target any) error {
	if id, ok := target.(gen.ProcessID); ok {
		return p.sim.monitorName(p.pid, id)
	}
	pid, ok := target.(gen.PID)
	if ok == false {
		return gen.ErrUnsupported
	}
	return p.sim.monitor(p.pid, pid)
}

// monitorName is a monitor by name of a process on another node, which the
// dialer asks of a name nobody registers (linkCarries): the other node
// answers ErrProcessUnknown over a connection that carries both ways, and
// nothing over one that does not, where the framework's request times out.
// The answer comes at once here, the timeout too (the framework blocks the
// dialer for gen.DefaultRequestTimeout first), so a reset here comes that
// much sooner than on a real node.
func (s *simulator) monitorName(watcher gen.PID, id gen.ProcessID) error {
	if id.Node == watcher.Node {
		return gen.ErrUnsupported
	}
	epoch := s.conns[pairKey(watcher.Node, id.Node)]
	if epoch == 0 {
		return gen.ErrNoConnection
	}
	if s.link(watcher.Node, id.Node) != linkUp || s.link(id.Node, watcher.Node) != linkUp || s.deadEpochs[epoch] || s.nodeStalled(id.Node) {
		s.note("monitor of %s by %s: no answer", id, watcher)
		return gen.ErrTimeout
	}
	if n := s.nodes[id.Node]; n != nil && n.names[id.Name] != nil {
		return gen.ErrUnsupported // only names nobody registers are asked
	}
	return gen.ErrProcessUnknown
}

// nodeStalled reports whether every process of node is paused, as when its
// OS process is stopped (simFleet.stallNode): its framework answers
// nothing either.
func (s *simulator) nodeStalled(node gen.Atom) bool {
	n := s.nodes[node]
	if n == nil || len(n.procs) == 0 {
		return false
	}
	for _, p := range n.procs {
		if p.paused == false {
			return false
		}
	}
	return true
}

// MonitorNode monitors the connection to node, as the framework does:
// connecting first; its end is a MessageDownNode from the core.
func (p *simProcess) MonitorNode(node gen.Atom) error {
	if p.sim.connect(p.pid.Node, node) == 0 {
		return gen.ErrNoRoute
	}
	if p.sim.nodeMons[p.pid] == nil {
		p.sim.nodeMons[p.pid] = make(map[gen.Atom]bool)
	}
	p.sim.nodeMons[p.pid][node] = true
	return nil
}

func (p *simProcess) Demonitor(target any) error {
	if pid, ok := target.(gen.PID); ok {
		p.sim.demonitor(p.pid, pid)
	}
	return nil
}

// UnregisterName frees the process's name, as a retiring shared watcher
// does before it stops.
func (p *simProcess) UnregisterName() error {
	if p.name == "" {
		return gen.ErrNameUnknown
	}
	delete(p.node.names, p.name)
	p.name = ""
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

// IsAlive reports whether the node runs: a crashed node does not, nor one
// whose name a later start took over.
func (n simGenNode) IsAlive() bool {
	n.sim.nodesMu.RLock()
	defer n.sim.nodesMu.RUnlock()
	node := n.sim.nodes[n.name]
	return node != nil && node.alive
}

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

// ProcessPID finds a named process of the node (the hub, the shared
// watchers).
func (n simGenNode) ProcessPID(name gen.Atom) (gen.PID, error) {
	if p, ok := n.sim.nodes[n.name].names[name]; ok {
		return p.pid, nil
	}
	return gen.PID{}, gen.ErrProcessUnknown
}

type simGenNetwork struct {
	gen.Network
	self gen.Atom
	sim  *simulator
}

func (simGenNetwork) Mode() gen.NetworkMode { return gen.NetworkModeDisabled }

// NetworkFlags advertise no EnableSimultaneousConnect: the simulator's
// crossed connections are the v3.2 development branch's, so its nodes keep
// the redial stagger that framework needs (olderframeworks.go).
func (simGenNetwork) NetworkFlags() gen.NetworkFlags { return gen.NetworkFlags{Enable: true} }

func (n simGenNetwork) Node(name gen.Atom) (gen.RemoteNode, error) {
	if n.sim.conns[pairKey(n.self, name)] == 0 && n.sim.now.Before(n.sim.unnoticed[[2]gen.Atom{n.self, name}]) == false {
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

// Info reports what the connection brought from the peer so far.
func (r simRemoteNode) Info() gen.RemoteNodeInfo {
	epoch := r.sim.conns[pairKey(r.self, r.peer)]
	return gen.RemoteNodeInfo{Node: r.peer, MessagesIn: r.sim.arrived[simArrivalKey{from: r.peer, to: r.self, epoch: epoch}]}
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
