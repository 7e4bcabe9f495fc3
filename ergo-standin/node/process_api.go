package node

import (
	"time"

	"ergo.services/ergo/gen"
)

var _ gen.Process = (*process)(nil)

func (p *process) Node() gen.Node                { return p.node }
func (p *process) Name() gen.Atom                { return p.getName() }
func (p *process) PID() gen.PID                  { return p.pid }
func (p *process) Leader() gen.PID               { return p.leader }
func (p *process) Parent() gen.PID               { return p.parent }
func (p *process) Uptime() int64                 { return int64(time.Since(p.started).Seconds()) }
func (p *process) State() gen.ProcessState       { return p.getState() }
func (p *process) Log() gen.Log                  { return p.log }
func (p *process) Mailbox() gen.ProcessMailbox   { return p.mailbox }
func (p *process) Behavior() gen.ProcessBehavior { return p.behavior }
func (p *process) BehaviorName() string          { return p.behaviorName }

// Application returns the application the process belongs to, or nil.
func (p *process) Application() gen.Application {
	if p.app == nil {
		return nil
	}
	return p.app
}

// SetProcessKind changes the reported kind; only in Init or Running.
func (p *process) SetProcessKind(kind gen.ProcessKind) error {
	switch p.getState() {
	case gen.ProcessStateInit, gen.ProcessStateRunning:
		p.kind.Store(kind)
		return nil
	}
	return gen.ErrNotAllowed
}

func (p *process) kindOf() gen.ProcessKind { return p.kind.Load().(gen.ProcessKind) }

// canAct reports whether the process may act (Init, Running or waiting).
func (p *process) canAct() bool {
	switch p.getState() {
	case gen.ProcessStateInit, gen.ProcessStateRunning, gen.ProcessStateWaitResponse:
		return true
	}
	return false
}

func (p *process) Spawn(factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	if !p.canAct() {
		return gen.PID{}, gen.ErrNotAllowed
	}
	return p.node.spawn(spawnSpec{parent: p, factory: factory, options: options, args: args, app: p.app})
}

func (p *process) SpawnRegister(register gen.Atom, factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	if !p.canAct() {
		return gen.PID{}, gen.ErrNotAllowed
	}
	return p.node.spawn(spawnSpec{parent: p, register: register, factory: factory, options: options, args: args, app: p.app})
}

func (p *process) RegisterName(name gen.Atom) error { return p.node.RegisterName(name, p.pid) }

func (p *process) UnregisterName() error {
	name := p.getName()
	if name == "" {
		return gen.ErrNameUnknown
	}
	_, err := p.node.UnregisterName(name)
	return err
}

func (p *process) SendPriority() gen.MessagePriority {
	return gen.MessagePriority(p.sendPriority.Load())
}

func (p *process) SetSendPriority(priority gen.MessagePriority) error {
	if priority < gen.MessagePriorityNormal || priority > gen.MessagePriorityMax {
		return gen.ErrIncorrect
	}
	p.sendPriority.Store(int32(priority))
	return nil
}

// Send sends a regular message with the process send priority.
func (p *process) Send(to any, message any) error {
	return p.SendWithPriority(to, message, p.SendPriority())
}

func (p *process) SendPID(to gen.PID, message any) error             { return p.Send(to, message) }
func (p *process) SendProcessID(to gen.ProcessID, message any) error { return p.Send(to, message) }
func (p *process) SendAlias(to gen.Alias, message any) error         { return p.Send(to, message) }
func (p *process) SendImportant(to any, message any) error           { return p.Send(to, message) }

// SendWithPriority sends a regular message with the given priority; also
// allowed from ProcessTerminate (state Terminated), as in the framework.
func (p *process) SendWithPriority(to any, message any, priority gen.MessagePriority) error {
	if !p.canAct() && p.getState() != gen.ProcessStateTerminated {
		return gen.ErrNotAllowed
	}
	if pid, ok := to.(gen.PID); ok && pid == p.pid && p.getState() == gen.ProcessStateInit {
		// the framework queues a message a process in Init sends to
		// itself, which its PID could not reach yet (localProcess)
		m := gen.TakeMailboxMessage()
		m.From, m.Type, m.Target, m.Message = p.pid, gen.MailboxMessageTypeRegular, nil, message
		if err := p.push(priority, m); err != nil {
			return err
		}
		p.messagesOut.Add(1)
		return nil
	}
	if err := p.node.routeSend(p.pid, to, message, priority); err != nil {
		return err
	}
	p.messagesOut.Add(1)
	return nil
}

// SendAfter sends the message after a delay; CancelFunc is Timer.Stop.
func (p *process) SendAfter(to any, message any, after time.Duration) (gen.CancelFunc, error) {
	return p.SendWithPriorityAfter(to, message, p.SendPriority(), after)
}

func (p *process) SendWithPriorityAfter(to any, message any, priority gen.MessagePriority, after time.Duration) (gen.CancelFunc, error) {
	if _, ok := p.node.resolveTarget(to); !ok {
		return nil, gen.ErrUnsupported
	}
	t := time.AfterFunc(after, func() {
		if err := p.node.routeSend(p.pid, to, message, priority); err == nil {
			p.messagesOut.Add(1)
		}
	})
	return t.Stop, nil
}

func (p *process) SendExit(to gen.PID, reason error) error {
	if to == p.pid {
		return gen.ErrNotAllowed
	}
	return p.node.routeSendExit(p.pid, to, reason)
}

func (p *process) SendExitAfter(to gen.PID, reason error, after time.Duration) (gen.CancelFunc, error) {
	if to == p.pid {
		return nil, gen.ErrNotAllowed
	}
	t := time.AfterFunc(after, func() { p.node.routeSendExit(p.pid, to, reason) })
	return t.Stop, nil
}

func (p *process) SendResponse(to gen.PID, ref gen.Ref, message any) error {
	return p.node.routeResponse(p.pid, to, ref, message, nil)
}

func (p *process) SendResponseError(to gen.PID, ref gen.Ref, err error) error {
	return p.node.routeResponse(p.pid, to, ref, nil, err)
}

func (p *process) SendResponseImportant(to gen.PID, ref gen.Ref, message any) error {
	return p.SendResponse(to, ref, message)
}

func (p *process) SendResponseErrorImportant(to gen.PID, ref gen.Ref, err error) error {
	return p.SendResponseError(to, ref, err)
}

// Call makes a synchronous request with DefaultRequestTimeout.
func (p *process) Call(to any, message any) (any, error) {
	return p.callWith(to, message, p.SendPriority(), gen.DefaultRequestTimeout)
}

// CallWithTimeout makes a synchronous request; timeout is in seconds.
func (p *process) CallWithTimeout(to any, message any, timeout int) (any, error) {
	return p.callWith(to, message, p.SendPriority(), timeout)
}

func (p *process) CallWithPriority(to any, message any, priority gen.MessagePriority) (any, error) {
	return p.callWith(to, message, priority, gen.DefaultRequestTimeout)
}

func (p *process) CallImportant(to any, message any) (any, error) { return p.Call(to, message) }
func (p *process) CallPID(to gen.PID, message any, timeout int) (any, error) {
	return p.CallWithTimeout(to, message, timeout)
}
func (p *process) CallProcessID(to gen.ProcessID, message any, timeout int) (any, error) {
	return p.CallWithTimeout(to, message, timeout)
}
func (p *process) CallAlias(to gen.Alias, message any, timeout int) (any, error) {
	return p.CallWithTimeout(to, message, timeout)
}

func (p *process) isSelf(to any) bool {
	switch t := to.(type) {
	case gen.PID:
		return t == p.pid
	case gen.ProcessID:
		return t.Name != "" && t.Name == p.getName() && (t.Node == p.node.name || t.Node == "")
	case gen.Atom:
		return t != "" && t == p.getName()
	case string:
		return t != "" && gen.Atom(t) == p.getName()
	}
	return false
}

// callWith sends a request and blocks (state WaitResponse when called from
// ProcessRun) until the response or the timeout.
func (p *process) callWith(to any, message any, priority gen.MessagePriority, timeout int) (any, error) {
	if !p.canAct() {
		return nil, gen.ErrNotAllowed
	}
	if p.isSelf(to) {
		return nil, gen.ErrNotAllowed
	}
	waiting := p.casState(gen.ProcessStateRunning, gen.ProcessStateWaitResponse)
	value, err := p.node.call(p.pid, to, message, priority, timeout)
	if waiting && !p.casState(gen.ProcessStateWaitResponse, gen.ProcessStateRunning) {
		return nil, gen.ErrProcessTerminated
	}
	if err == nil {
		p.messagesOut.Add(1)
	}
	return value, err
}

// Inspect asks a local process for its state.
func (p *process) Inspect(target gen.PID, item ...string) (map[string]string, error) {
	if target == p.pid {
		return nil, gen.ErrNotAllowed
	}
	return p.node.inspect(p.pid, target, item)
}

// Links and monitors follow node/process.go of the framework: allowed only
// while the process is Running (inside a callback; gen.ErrNotAllowed from
// Init, or from another goroutine while the process sleeps), an existing
// relation is gen.ErrTargetExist, a missing one gen.ErrTargetUnknown. A
// remote target blocks the caller until the peer answers or
// gen.DefaultRequestTimeout seconds pass (see relations.go).

// relationTarget turns what Link and Monitor accept (a local name, a PID,
// a ProcessID or an Alias) into the target of a relation.
func (p *process) relationTarget(target any) (any, bool) {
	switch t := target.(type) {
	case gen.Atom:
		return gen.ProcessID{Name: t, Node: p.node.name}, true
	case gen.PID, gen.ProcessID, gen.Alias:
		return t, true
	}
	return nil, false
}

// ownsAlias reports whether alias is one of the process's aliases.
func (p *process) ownsAlias(alias gen.Alias) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	for _, a := range p.aliases {
		if a == alias {
			return true
		}
	}
	return false
}

func (p *process) relate(target any, link bool) error {
	if p.getState() != gen.ProcessStateRunning {
		return gen.ErrNotAllowed
	}
	if link {
		switch t := target.(type) {
		case gen.PID:
			if t == p.pid {
				return gen.ErrNotAllowed
			}
		case gen.ProcessID:
			if t.Name == p.getName() && t.Node == p.node.name {
				return gen.ErrNotAllowed
			}
		case gen.Alias:
			if p.ownsAlias(t) {
				return gen.ErrNotAllowed
			}
		}
	}
	if p.node.targets.has(p.pid, target, link) {
		return gen.ErrTargetExist
	}
	if node, ok := target.(gen.Atom); ok {
		return p.node.addNodeRelation(p.pid, node, link)
	}
	return p.node.addRelation(p.pid, target, link)
}

func (p *process) unrelate(target any, link bool) error {
	if p.getState() != gen.ProcessStateRunning {
		return gen.ErrNotAllowed
	}
	if !p.node.targets.has(p.pid, target, link) {
		return gen.ErrTargetUnknown
	}
	if node, ok := target.(gen.Atom); ok {
		return p.node.removeNodeRelation(p.pid, node, link)
	}
	return p.node.removeRelation(p.pid, target, link)
}

// Link links a local name (Atom), PID, ProcessID or Alias: the process
// receives an exit signal when the target goes away.
func (p *process) Link(target any) error {
	t, ok := p.relationTarget(target)
	if !ok {
		return gen.ErrUnsupported
	}
	return p.relate(t, true)
}

func (p *process) Unlink(target any) error {
	t, ok := p.relationTarget(target)
	if !ok {
		return gen.ErrUnsupported
	}
	return p.unrelate(t, true)
}

func (p *process) LinkPID(target gen.PID) error               { return p.relate(target, true) }
func (p *process) UnlinkPID(target gen.PID) error             { return p.unrelate(target, true) }
func (p *process) LinkProcessID(target gen.ProcessID) error   { return p.relate(target, true) }
func (p *process) UnlinkProcessID(target gen.ProcessID) error { return p.unrelate(target, true) }
func (p *process) LinkAlias(target gen.Alias) error           { return p.relate(target, true) }
func (p *process) UnlinkAlias(target gen.Alias) error         { return p.unrelate(target, true) }
func (p *process) LinkNode(target gen.Atom) error             { return p.relate(target, true) }
func (p *process) UnlinkNode(target gen.Atom) error           { return p.unrelate(target, true) }

// Monitor monitors a local name (Atom), PID, ProcessID or Alias.
func (p *process) Monitor(target any) error {
	t, ok := p.relationTarget(target)
	if !ok {
		return gen.ErrUnsupported
	}
	return p.relate(t, false)
}

func (p *process) Demonitor(target any) error {
	t, ok := p.relationTarget(target)
	if !ok {
		return gen.ErrUnsupported
	}
	return p.unrelate(t, false)
}

func (p *process) MonitorPID(pid gen.PID) error               { return p.relate(pid, false) }
func (p *process) DemonitorPID(pid gen.PID) error             { return p.unrelate(pid, false) }
func (p *process) MonitorProcessID(pid gen.ProcessID) error   { return p.relate(pid, false) }
func (p *process) DemonitorProcessID(pid gen.ProcessID) error { return p.unrelate(pid, false) }
func (p *process) MonitorAlias(alias gen.Alias) error         { return p.relate(alias, false) }
func (p *process) DemonitorAlias(alias gen.Alias) error       { return p.unrelate(alias, false) }
func (p *process) MonitorNode(node gen.Atom) error            { return p.relate(node, false) }
func (p *process) DemonitorNode(node gen.Atom) error          { return p.unrelate(node, false) }

// CreateAlias makes a new alias routed to this process.
func (p *process) CreateAlias() (gen.Alias, error) {
	if !p.canAct() {
		return gen.Alias{}, gen.ErrNotAllowed
	}
	alias := gen.Alias(p.node.MakeRef())
	p.mu.Lock()
	p.aliases = append(p.aliases, alias)
	p.mu.Unlock()
	p.node.mu.Lock()
	p.node.aliases[alias] = p
	p.node.mu.Unlock()
	return alias, nil
}

func (p *process) DeleteAlias(alias gen.Alias) error {
	p.mu.Lock()
	found := false
	for i, a := range p.aliases {
		if a == alias {
			p.aliases = append(p.aliases[:i:i], p.aliases[i+1:]...)
			found = true
			break
		}
	}
	p.mu.Unlock()
	if !found {
		return gen.ErrAliasUnknown
	}
	p.node.mu.Lock()
	delete(p.node.aliases, alias)
	p.node.mu.Unlock()
	p.node.notifyTarget(p.pid, alias, gen.ErrUnregistered)
	return nil
}

func (p *process) Aliases() []gen.Alias {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return append([]gen.Alias(nil), p.aliases...)
}

// Info returns a snapshot of the process.
func (p *process) Info() (gen.ProcessInfo, error) { return p.node.ProcessInfo(p.pid) }

func (p *process) Forward(to gen.PID, message *gen.MailboxMessage, priority gen.MessagePriority) error {
	if message == nil {
		return gen.ErrIncorrect
	}
	target, err := p.node.localProcess(to)
	if err != nil {
		return err
	}
	return target.push(priority, message)
}
