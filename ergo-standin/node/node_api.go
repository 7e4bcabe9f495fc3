package node

import (
	"sort"

	"ergo.services/ergo/gen"
)

var _ gen.Node = (*node)(nil)

// Spawn starts a process whose parent is the node core.
func (n *node) Spawn(factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return n.spawn(spawnSpec{factory: factory, options: options, args: args})
}

// SpawnRegister starts a process registered under a name.
func (n *node) SpawnRegister(register gen.Atom, factory gen.ProcessFactory, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return n.spawn(spawnSpec{register: register, factory: factory, options: options, args: args})
}

// Send sends a message from the node core PID.
func (n *node) Send(to any, message any) error {
	return n.routeSend(n.core, to, message, gen.MessagePriorityNormal)
}

func (n *node) SendWithPriority(to any, message any, priority gen.MessagePriority) error {
	return n.routeSend(n.core, to, message, priority)
}

// Call makes a request from the node core PID.
func (n *node) Call(to any, request any) (any, error) {
	return n.call(n.core, to, request, gen.MessagePriorityNormal, gen.DefaultRequestTimeout)
}

func (n *node) CallWithTimeout(to any, request any, timeout int) (any, error) {
	return n.call(n.core, to, request, gen.MessagePriorityNormal, timeout)
}

func (n *node) CallWithPriority(to any, request any, priority gen.MessagePriority) (any, error) {
	return n.call(n.core, to, request, priority, gen.DefaultRequestTimeout)
}

func (n *node) CallImportant(to any, request any) (any, error) { return n.Call(to, request) }

func (n *node) CallPID(to gen.PID, request any, timeout int) (any, error) {
	return n.CallWithTimeout(to, request, timeout)
}

func (n *node) CallProcessID(to gen.ProcessID, request any, timeout int) (any, error) {
	return n.CallWithTimeout(to, request, timeout)
}

func (n *node) CallAlias(to gen.Alias, request any, timeout int) (any, error) {
	return n.CallWithTimeout(to, request, timeout)
}

// Inspect asks a local process for its state (MailboxMessageTypeInspect).
func (n *node) Inspect(target gen.PID, item ...string) (map[string]string, error) {
	return n.inspect(n.core, target, item)
}

func (n *node) inspect(from, target gen.PID, items []string) (map[string]string, error) {
	if target.Node != n.name {
		return nil, gen.ErrUnsupported
	}
	p, err := n.localProcess(target)
	if err != nil {
		return nil, err
	}
	if items == nil {
		items = []string{}
	}
	ref := n.MakeRef()
	w := n.waiters.add(ref, from)
	m := gen.TakeMailboxMessage()
	m.From = from
	m.Ref = ref
	m.Type = gen.MailboxMessageTypeInspect
	m.Message = items
	if err := p.push(gen.MessagePriorityMax, m); err != nil {
		n.waiters.remove(ref)
		return nil, err
	}
	v, err := n.waiters.wait(ref, w, gen.DefaultRequestTimeout)
	if err != nil {
		return nil, err
	}
	result, _ := v.(map[string]string)
	return result, nil
}

// SendExit sends an exit signal from the node core PID.
func (n *node) SendExit(pid gen.PID, reason error) error {
	return n.routeSendExit(n.core, pid, reason)
}

func (n *node) ProcessInfo(pid gen.PID) (gen.ProcessInfo, error) {
	p, err := n.localProcess(pid)
	if err != nil {
		return gen.ProcessInfo{}, err
	}
	info := gen.ProcessInfo{
		PID:         p.pid,
		Name:        p.getName(),
		Behavior:    p.behaviorName,
		Kind:        p.kindOf(),
		MailboxSize: p.mailbox.Main.Size(),
		MailboxQueues: gen.MailboxQueues{
			Main:   p.mailbox.Main.Len(),
			System: p.mailbox.System.Len(),
			Urgent: p.mailbox.Urgent.Len(),
			Log:    p.mailbox.Log.Len(),
		},
		MessagesIn:        p.messagesIn.Load(),
		MessagesOut:       p.messagesOut.Load(),
		MessagePriority:   p.SendPriority(),
		Uptime:            p.Uptime(),
		State:             p.getState(),
		Parent:            p.parent,
		Leader:            p.leader,
		Fields:            p.log.Fields(),
		Env:               p.EnvList(),
		Aliases:           p.Aliases(),
		Events:            p.Events(),
		LogLevel:          p.log.Level(),
		KeepNetworkOrder:  p.KeepNetworkOrder(),
		ImportantDelivery: p.ImportantDelivery(),
	}
	p.mu.RLock()
	info.Compression = p.compression
	p.mu.RUnlock()
	if p.app != nil {
		info.Application = p.app.Name()
	}
	for _, r := range n.targets.list(p.pid) {
		switch t := r.target.(type) {
		case gen.PID:
			if r.link {
				info.LinksPID = append(info.LinksPID, t)
			} else {
				info.MonitorsPID = append(info.MonitorsPID, t)
			}
		case gen.ProcessID:
			if r.link {
				info.LinksProcessID = append(info.LinksProcessID, t)
			} else {
				info.MonitorsProcessID = append(info.MonitorsProcessID, t)
			}
		case gen.Event:
			if r.link {
				info.LinksEvent = append(info.LinksEvent, t)
			} else {
				info.MonitorsEvent = append(info.MonitorsEvent, t)
			}
		case gen.Atom:
			if r.link {
				info.LinksNode = append(info.LinksNode, t)
			} else {
				info.MonitorsNode = append(info.MonitorsNode, t)
			}
		}
	}
	return info, nil
}

func (n *node) shortInfo(p *process) gen.ProcessShortInfo {
	info := gen.ProcessShortInfo{
		PID:         p.pid,
		Name:        p.getName(),
		Behavior:    p.behaviorName,
		Kind:        p.kindOf(),
		MessagesIn:  p.messagesIn.Load(),
		MessagesOut: p.messagesOut.Load(),
		Uptime:      p.Uptime(),
		State:       p.getState(),
		Parent:      p.parent,
		Leader:      p.leader,
		LogLevel:    p.log.Level(),
	}
	if p.app != nil {
		info.Application = p.app.Name()
	}
	return info
}

func (n *node) sortedProcesses() []*process {
	list := n.snapshot()
	sort.Slice(list, func(i, j int) bool { return list[i].pid.ID < list[j].pid.ID })
	return list
}

func (n *node) ProcessList() ([]gen.PID, error) {
	var pids []gen.PID
	for _, p := range n.sortedProcesses() {
		pids = append(pids, p.pid)
	}
	return pids, nil
}

// ProcessListShortInfo lists up to limit processes with ID >= start.
func (n *node) ProcessListShortInfo(start, limit int, filter ...func(gen.ProcessShortInfo) bool) ([]gen.ProcessShortInfo, error) {
	if start < 0 || limit < 0 {
		return nil, gen.ErrIncorrect
	}
	var out []gen.ProcessShortInfo
	for _, p := range n.sortedProcesses() {
		if p.pid.ID < uint64(start) {
			continue
		}
		if limit > 0 && len(out) >= limit {
			break
		}
		info := n.shortInfo(p)
		keep := true
		for _, f := range filter {
			if !f(info) {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, info)
		}
	}
	return out, nil
}

func (n *node) ProcessRangeShortInfo(fn func(gen.ProcessShortInfo) bool) error {
	for _, p := range n.sortedProcesses() {
		if !fn(n.shortInfo(p)) {
			break
		}
	}
	return nil
}

func (n *node) SetProcessLogLevel(pid gen.PID, level gen.LogLevel) error {
	p, err := n.localProcess(pid)
	if err != nil {
		return err
	}
	return p.log.SetLevel(level)
}

func (n *node) ProcessPID(name gen.Atom) (gen.PID, error) {
	p, err := n.processByName(name)
	if err != nil {
		return gen.PID{}, err
	}
	return p.pid, nil
}

func (n *node) ProcessName(pid gen.PID) (gen.Atom, error) {
	p, err := n.localProcess(pid)
	if err != nil {
		return "", err
	}
	return p.getName(), nil
}

func (n *node) ProcessState(pid gen.PID) (gen.ProcessState, error) {
	p, err := n.localProcess(pid)
	if err != nil {
		return 0, err
	}
	return p.getState(), nil
}

// RegisterName associates a name with a local process without one.
func (n *node) RegisterName(name gen.Atom, pid gen.PID) error {
	if name == "" {
		return gen.ErrIncorrect
	}
	if len(name) > 255 {
		return gen.ErrAtomTooLong
	}
	p, err := n.localProcess(pid)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, taken := n.names[name]; taken {
		return gen.ErrTaken
	}
	if !p.alive() {
		return gen.ErrProcessUnknown
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.name != "" {
		return gen.ErrTaken
	}
	p.name = name
	n.names[name] = p
	return nil
}

// UnregisterName drops a name; monitors and links of the ProcessID get a
// down/exit with gen.ErrUnregistered.
func (n *node) UnregisterName(name gen.Atom) (gen.PID, error) {
	n.mu.Lock()
	p, ok := n.names[name]
	if !ok {
		n.mu.Unlock()
		return gen.PID{}, gen.ErrNameUnknown
	}
	delete(n.names, name)
	p.mu.Lock()
	p.name = ""
	p.mu.Unlock()
	n.mu.Unlock()
	n.notifyTarget(p.pid, gen.ProcessID{Name: name, Node: n.name}, gen.ErrUnregistered)
	return p.pid, nil
}
