package node

import (
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

// process is the runtime state of one spawned process.
type process struct {
	node         *node
	pid          gen.PID
	parent       gen.PID
	leader       gen.PID
	app          *application
	behavior     gen.ProcessBehavior
	behaviorName string
	mailbox      gen.ProcessMailbox
	started      time.Time
	log          *plog

	state        atomic.Int32
	kind         atomic.Value // gen.ProcessKind
	unregistered atomic.Bool
	messagesIn   atomic.Uint64
	messagesOut  atomic.Uint64
	sendPriority atomic.Int32
	keepOrder    atomic.Bool
	important    atomic.Bool

	mu   sync.RWMutex
	name gen.Atom
	envStore
	aliases     []gen.Alias
	compression gen.Compression
	propagating gen.Tracing
	sampler     gen.TracingSampler
	tracingAttr []gen.TracingAttribute
}

func (p *process) getState() gen.ProcessState { return gen.ProcessState(p.state.Load()) }

func (p *process) casState(from, to gen.ProcessState) bool {
	return p.state.CompareAndSwap(int32(from), int32(to))
}

func (p *process) getName() gen.Atom {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.name
}

// alive reports whether the process still accepts messages.
func (p *process) alive() bool {
	st := p.getState()
	return st != gen.ProcessStateTerminated && st != gen.ProcessStateZombee && !p.unregistered.Load()
}

func queueFor(mb gen.ProcessMailbox, priority gen.MessagePriority) lib.QueueMPSC {
	switch priority {
	case gen.MessagePriorityHigh:
		return mb.System
	case gen.MessagePriorityMax:
		return mb.Urgent
	}
	return mb.Main
}

// push queues m with the given priority and wakes the process.
func (p *process) push(priority gen.MessagePriority, m *gen.MailboxMessage) error {
	if !p.alive() {
		gen.ReleaseMailboxMessage(m)
		return gen.ErrProcessTerminated
	}
	if !queueFor(p.mailbox, priority).Push(m) {
		gen.ReleaseMailboxMessage(m)
		return gen.ErrProcessMailboxFull
	}
	p.messagesIn.Add(1)
	p.run()
	return nil
}

// pushLog queues a log message for a process acting as a logger.
func (p *process) pushLog(m gen.MessageLog) {
	if p.alive() && p.mailbox.Log.Push(m) {
		p.run()
	}
}

func (p *process) hasMessages() bool {
	mb := p.mailbox
	return mb.Urgent.Item() != nil || mb.System.Item() != nil ||
		mb.Main.Item() != nil || mb.Log.Item() != nil
}

// run starts the process goroutine unless it is already running.
func (p *process) run() {
	if !p.casState(gen.ProcessStateSleep, gen.ProcessStateRunning) {
		return
	}
	p.node.goStart()
	go p.loop()
}

func (p *process) loop() {
	defer p.node.goDone()
	for {
		if reason := p.callRun(); reason != nil {
			p.terminate(reason)
			return
		}
		if !p.casState(gen.ProcessStateRunning, gen.ProcessStateSleep) {
			// killed while running
			p.terminate(gen.TerminateReasonKill)
			return
		}
		// a message may have arrived between the last Pop and the CAS
		if !p.hasMessages() {
			return
		}
		if !p.casState(gen.ProcessStateSleep, gen.ProcessStateRunning) {
			return // another goroutine took it (or it was killed)
		}
	}
}

func (p *process) callRun() (reason error) {
	if lib.Recover() {
		defer func() {
			if r := recover(); r != nil {
				p.log.Panic("panic in ProcessRun: %v\n%s", r, debug.Stack())
				reason = gen.TerminateReasonPanic
			}
		}()
	}
	return p.behavior.ProcessRun()
}

func (p *process) callInit(args []any) (err error) {
	if lib.Recover() {
		defer func() {
			if r := recover(); r != nil {
				p.log.Panic("panic in ProcessInit: %v\n%s", r, debug.Stack())
				err = gen.TerminateReasonPanic
			}
		}()
	}
	return p.behavior.ProcessInit(p, args...)
}

func (p *process) callTerminate(reason error) {
	if lib.Recover() {
		defer func() {
			if r := recover(); r != nil {
				p.log.Panic("panic in ProcessTerminate: %v\n%s", r, debug.Stack())
			}
		}()
	}
	p.behavior.ProcessTerminate(reason)
}

// terminate ends the process (framework: the tail of process.run): the
// state becomes Terminated, the process is unregistered and its consumers
// notified with the reason unwrapped once, then ProcessTerminate gets the
// reason as returned. Nothing happens if the process was terminated
// already (a second Kill of a killed process got there first).
func (p *process) terminate(reason error) {
	if gen.ProcessState(p.state.Swap(int32(gen.ProcessStateTerminated))) == gen.ProcessStateTerminated {
		return
	}
	unwrapped := reason
	if u := errors.Unwrap(reason); u != nil {
		unwrapped = u
	}
	p.node.unregisterProcess(p, unwrapped, true)
	p.callTerminate(reason)
	p.terminated()
	p.drain()
}

// terminated tells the application of p that its ProcessTerminate returned.
func (p *process) terminated() {
	if p.app != nil {
		p.app.memberDone(p.pid)
	}
}

// drain releases whatever is left in the mailbox.
func (p *process) drain() {
	for _, q := range []lib.QueueMPSC{p.mailbox.Urgent, p.mailbox.System, p.mailbox.Main} {
		for {
			v, ok := q.Pop()
			if !ok {
				break
			}
			if m, ok := v.(*gen.MailboxMessage); ok {
				gen.ReleaseMailboxMessage(m)
			}
		}
	}
}

func behaviorName(b gen.ProcessBehavior) string {
	return strings.TrimPrefix(reflect.TypeOf(b).String(), "*")
}

// spawnSpec describes a process to spawn.
type spawnSpec struct {
	parent   *process
	register gen.Atom
	factory  gen.ProcessFactory
	options  gen.ProcessOptions
	args     []any
	app      *application
}

func newMailbox(size int64) gen.ProcessMailbox {
	return gen.ProcessMailbox{
		Main:   lib.NewQueueLimitMPSC(size),
		System: lib.NewQueueLimitMPSC(size),
		Urgent: lib.NewQueueLimitMPSC(size),
		Log:    lib.NewQueueLimitMPSC(size),
	}
}

func (n *node) newProcess(s spawnSpec, b gen.ProcessBehavior) *process {
	opts := s.options
	p := &process{
		node:         n,
		pid:          gen.PID{Node: n.name, ID: n.nextPID.Add(1), Creation: n.creation},
		parent:       n.core,
		leader:       n.core,
		app:          s.app,
		behavior:     b,
		behaviorName: behaviorName(b),
		mailbox:      newMailbox(opts.MailboxSize),
		started:      time.Now(),
		name:         s.register,
		compression:  opts.Compression,
		sampler:      gen.TracingSamplerDisable,
	}
	level := n.log.Level()
	if s.app != nil && s.app.logLevel != gen.LogLevelDefault {
		level = s.app.logLevel
	}
	p.merge(n.EnvList())
	if s.app != nil {
		p.merge(s.app.EnvList())
	}
	if s.parent != nil {
		p.parent = s.parent.pid
		p.leader = s.parent.leader
		level = s.parent.log.Level()
		p.merge(s.parent.EnvList())
	}
	p.merge(opts.Env)
	if opts.Leader != (gen.PID{}) {
		p.leader = opts.Leader
	}
	if opts.LogLevel != gen.LogLevelDefault {
		level = opts.LogLevel
	}
	p.log = newLog(n.logger, level, func() any {
		return gen.MessageLogProcess{Node: n.name, PID: p.pid, Name: p.getName(), Behavior: p.behaviorName}
	})
	p.sendPriority.Store(int32(opts.SendPriority))
	p.important.Store(opts.ImportantDelivery)
	kind := b.ProcessKind()
	if kind == "" {
		kind = gen.ProcessKindCustom
	}
	p.kind.Store(kind)
	p.state.Store(int32(gen.ProcessStateInit))
	return p
}

// spawn creates, registers and initializes a process.
func (n *node) spawn(s spawnSpec) (gen.PID, error) {
	if !n.IsAlive() {
		return gen.PID{}, gen.ErrNodeTerminated
	}
	if s.factory == nil {
		return gen.PID{}, gen.ErrIncorrect
	}
	if len(s.register) > 255 {
		return gen.PID{}, gen.ErrAtomTooLong
	}
	if s.register != "" {
		n.mu.RLock()
		_, taken := n.names[s.register]
		n.mu.RUnlock()
		if taken {
			return gen.PID{}, gen.ErrTaken
		}
	}
	b := s.factory()
	if b == nil {
		return gen.PID{}, gen.ErrIncorrect
	}
	p := n.newProcess(s, b)

	n.mu.Lock()
	if s.register != "" {
		if _, taken := n.names[s.register]; taken {
			n.mu.Unlock()
			return gen.PID{}, gen.ErrTaken
		}
		n.names[s.register] = p
	}
	n.processes[p.pid.ID] = p
	n.mu.Unlock()
	if s.app != nil {
		s.app.addMember(p.pid)
	}

	timeout := s.options.InitTimeout
	if timeout <= 0 {
		timeout = gen.DefaultRequestTimeout
	}
	done := make(chan error, 1)
	n.goStart()
	go func() {
		defer n.goDone()
		done <- p.callInit(s.args)
	}()
	t := time.NewTimer(time.Duration(timeout) * time.Second)
	var err error
	select {
	case err = <-done:
	case <-t.C:
		err = gen.ErrTimeout
	}
	t.Stop()
	if err != nil {
		p.state.Store(int32(gen.ProcessStateTerminated))
		n.unregisterProcess(p, err, false)
		return gen.PID{}, err
	}

	if s.parent != nil {
		if s.options.LinkParent {
			n.linkLocal(p.pid, s.parent.pid)
		}
		if s.options.LinkChild {
			n.linkLocal(s.parent.pid, p.pid)
		}
	}
	if !p.casState(gen.ProcessStateInit, gen.ProcessStateSleep) {
		return gen.PID{}, gen.ErrProcessTerminated
	}
	p.run()
	return p.pid, nil
}

// linkLocal links consumer to a local target, ignoring a dead target.
func (n *node) linkLocal(consumer, target gen.PID) {
	if err := n.addRelation(consumer, target, true); err != nil {
		n.log.Trace("link %s -> %s: %s", consumer, target, err)
	}
}

// unregisterProcess removes p from the node and notifies its consumers.
// With terminating set, ProcessTerminate runs next (then terminated is
// called): the application of p waits for it before its own Terminate.
func (n *node) unregisterProcess(p *process, reason error, terminating bool) {
	if !p.unregistered.CompareAndSwap(false, true) {
		return
	}
	n.mu.Lock()
	delete(n.processes, p.pid.ID)
	name := p.getName()
	if name != "" && n.names[name] == p {
		delete(n.names, name)
	}
	p.mu.RLock()
	aliases := append([]gen.Alias(nil), p.aliases...)
	p.mu.RUnlock()
	for _, a := range aliases {
		delete(n.aliases, a)
	}
	n.mu.Unlock()

	n.notifyTarget(p.pid, p.pid, reason)
	if name != "" {
		n.notifyTarget(p.pid, gen.ProcessID{Name: name, Node: n.name}, reason)
	}
	for _, a := range aliases {
		n.notifyTarget(p.pid, a, reason)
	}
	n.terminateEvents(p.pid, reason)
	n.dropConsumer(p.pid)
	if p.app != nil {
		p.app.memberTerminated(p.pid, reason, terminating)
	}
	n.signal()
}

// Kill terminates a process with TerminateReasonKill (framework:
// node.Kill). A process inside a callback (Running or WaitResponse) only
// becomes a zombee: it stays registered, and is unregistered (its
// consumers notified) once the callback returns. Any other process is
// unregistered at once and ProcessTerminate runs in a new goroutine.
func (n *node) Kill(pid gen.PID) error {
	p, err := n.localProcess(pid)
	if err != nil {
		return err
	}
	for {
		old := p.getState()
		switch old {
		case gen.ProcessStateTerminated:
			return gen.ErrProcessTerminated
		case gen.ProcessStateRunning, gen.ProcessStateWaitResponse:
			if p.casState(old, gen.ProcessStateZombee) {
				return nil
			}
		case gen.ProcessStateInit:
			// ProcessInit still runs: spawn fails once it returns
			if p.casState(old, gen.ProcessStateZombee) {
				n.unregisterProcess(p, gen.TerminateReasonKill, false)
				return nil
			}
		case gen.ProcessStateZombee:
			// killed already; it ends when its callback returns
			return nil
		default: // sleeping
			if p.casState(old, gen.ProcessStateTerminated) {
				n.unregisterProcess(p, gen.TerminateReasonKill, true)
				n.goStart()
				go func() {
					defer n.goDone()
					p.callTerminate(gen.TerminateReasonKill)
					p.terminated()
					p.drain()
				}()
				return nil
			}
		}
	}
}

// localProcess looks up a live local process by PID. A process still in
// ProcessInit is not found: the framework registers a PID only when its
// initialization succeeded (its name, in Register, is taken before), so a
// message to the PID of a process in Init, including a SendAfter to
// itself that fires then, is refused with ErrProcessUnknown and lost. Only
// the process's own Send to itself is queued (processOrSelf).
func (n *node) localProcess(pid gen.PID) (*process, error) {
	p, err := n.localProcessAny(pid)
	if err == nil && p.getState() == gen.ProcessStateInit {
		return nil, gen.ErrProcessUnknown
	}
	return p, err
}

// localProcessAny is localProcess that also finds a process in Init.
func (n *node) localProcessAny(pid gen.PID) (*process, error) {
	if pid.Node != n.name {
		return nil, gen.ErrProcessUnknown
	}
	if pid.Creation != n.creation {
		return nil, gen.ErrProcessIncarnation
	}
	n.mu.RLock()
	p, ok := n.processes[pid.ID]
	n.mu.RUnlock()
	if !ok {
		return nil, gen.ErrProcessUnknown
	}
	return p, nil
}

// processByName looks up a live local process by registered name.
func (n *node) processByName(name gen.Atom) (*process, error) {
	n.mu.RLock()
	p, ok := n.names[name]
	n.mu.RUnlock()
	if !ok {
		return nil, gen.ErrProcessUnknown
	}
	return p, nil
}

func (p *process) String() string { return fmt.Sprintf("%s %s", p.pid, p.behaviorName) }
