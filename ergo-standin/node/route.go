package node

import (
	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

// resolveTarget normalizes a send target: Atom and string become a local
// ProcessID. ok is false for unsupported types.
func (n *node) resolveTarget(to any) (any, bool) {
	switch t := to.(type) {
	case gen.PID, gen.Alias:
		return t, true
	case gen.ProcessID:
		if t.Node == "" {
			t.Node = n.name
		}
		return t, true
	case gen.Atom:
		return gen.ProcessID{Name: t, Node: n.name}, true
	case string:
		return gen.ProcessID{Name: gen.Atom(t), Node: n.name}, true
	}
	return nil, false
}

// lookupTarget finds the local process behind a resolved target.
func (n *node) lookupTarget(target any) (*process, error) {
	switch t := target.(type) {
	case gen.PID:
		return n.localProcess(t)
	case gen.ProcessID:
		return n.processByName(t.Name)
	case gen.Alias:
		n.mu.RLock()
		p, ok := n.aliases[t]
		n.mu.RUnlock()
		if !ok {
			return nil, gen.ErrAliasUnknown
		}
		return p, nil
	}
	return nil, gen.ErrUnsupported
}

// mailboxTarget is what MailboxMessage.Target carries for a target.
func mailboxTarget(target any) any {
	switch t := target.(type) {
	case gen.ProcessID:
		return t.Name
	case gen.Alias:
		return t
	}
	return nil
}

// remote sends f to peer, checking the incarnation of a PID target.
func (n *node) remote(peer gen.Atom, f netstack.Frame) error {
	if pid, ok := f.To.(gen.PID); ok {
		rn, err := n.net.GetNode(peer)
		if err != nil {
			return err
		}
		if pid.Creation != rn.Creation() {
			return gen.ErrProcessIncarnation
		}
	}
	return n.net.SendFrame(peer, f)
}

// remoteIfConnected sends a notification frame only over an existing
// connection (never dials).
func (n *node) remoteIfConnected(peer gen.Atom, f netstack.Frame) {
	if _, err := n.net.Node(peer); err != nil {
		return
	}
	if err := n.net.SendFrame(peer, f); err != nil {
		n.log.Trace("notify %s: %s", peer, err)
	}
}

// routeSend delivers a regular message.
func (n *node) routeSend(from gen.PID, to any, message any, priority gen.MessagePriority) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	target, ok := n.resolveTarget(to)
	if !ok {
		return gen.ErrUnsupported
	}
	if peer := targetNode(target); peer != n.name {
		return n.remote(peer, netstack.Frame{
			Kind: netstack.FrameSend, From: from, To: target, Priority: priority, Message: message,
		})
	}
	p, err := n.lookupTarget(target)
	if err != nil {
		return err
	}
	m := gen.TakeMailboxMessage()
	m.From = from
	m.Type = gen.MailboxMessageTypeRegular
	m.Target = mailboxTarget(target)
	m.Message = message
	return p.push(priority, m)
}

// routeRequest delivers a Call request carrying ref.
func (n *node) routeRequest(from gen.PID, to any, ref gen.Ref, request any, priority gen.MessagePriority) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	target, ok := n.resolveTarget(to)
	if !ok {
		return gen.ErrUnsupported
	}
	if peer := targetNode(target); peer != n.name {
		return n.remote(peer, netstack.Frame{
			Kind: netstack.FrameRequest, From: from, To: target, Ref: ref, Priority: priority, Message: request,
		})
	}
	p, err := n.lookupTarget(target)
	if err != nil {
		return err
	}
	m := gen.TakeMailboxMessage()
	m.From = from
	m.Ref = ref
	m.Type = gen.MailboxMessageTypeRequest
	m.Target = mailboxTarget(target)
	m.Message = request
	return p.push(priority, m)
}

// call sends a request from 'from' and waits for the response.
func (n *node) call(from gen.PID, to any, request any, priority gen.MessagePriority, timeout int) (any, error) {
	ref := n.MakeRef()
	w := n.waiters.add(ref, from)
	if err := n.routeRequest(from, to, ref, request, priority); err != nil {
		n.waiters.remove(ref)
		return nil, err
	}
	return n.waiters.wait(ref, w, timeout)
}

// routeResponse answers a request; responses nobody waits for are dropped.
func (n *node) routeResponse(from, to gen.PID, ref gen.Ref, value any, err error) error {
	if to.Node == n.name {
		return n.deliverResponse(to, ref, response{value: value, err: err})
	}
	return n.remote(to.Node, netstack.Frame{
		Kind: netstack.FrameResponse, From: from, To: to, Ref: ref, Message: value, Err: err,
	})
}

// deliverResponse hands a response to the call waiting for it. A process
// still in Init is not registered yet in the framework, which finds no
// process to answer: a Call made in Init times out (localProcess).
func (n *node) deliverResponse(to gen.PID, ref gen.Ref, r response) error {
	if p, err := n.localProcessAny(to); err == nil && p.getState() == gen.ProcessStateInit {
		return gen.ErrProcessUnknown
	}
	n.waiters.deliver(to, ref, r)
	return nil
}

// deliverExit pushes an exit signal onto the Urgent queue of p.
func (n *node) deliverExit(p *process, from gen.PID, message any) error {
	m := gen.TakeMailboxMessage()
	m.From = from
	m.Type = gen.MailboxMessageTypeExit
	m.Message = message
	return p.push(gen.MessagePriorityMax, m)
}

// deliverDown pushes a down message onto the System queue of p, as the
// framework's RouteSendPID with MessagePriorityHigh does (Target is the
// consumer PID there too).
func (n *node) deliverDown(p *process, from gen.PID, message any) error {
	m := gen.TakeMailboxMessage()
	m.From = from
	m.Type = gen.MailboxMessageTypeRegular
	m.Target = p.pid
	m.Message = message
	return p.push(gen.MessagePriorityHigh, m)
}

// routeSendExit delivers an exit signal (SendExit) from 'from' to pid.
func (n *node) routeSendExit(from, to gen.PID, reason error) error {
	if reason == nil {
		return gen.ErrIncorrect
	}
	if to.Node != n.name {
		return n.remote(to.Node, netstack.Frame{
			Kind: netstack.FrameExitSignal, From: from, To: to, Err: reason,
		})
	}
	p, err := n.localProcess(to)
	if err != nil {
		return err
	}
	return n.deliverExit(p, from, gen.MessageExitPID{PID: from, Reason: reason})
}

// notifyLocal hands a down or exit about target to a local consumer.
func (n *node) notifyLocal(consumer gen.PID, from gen.PID, target any, link bool, reason error) {
	p, err := n.localProcess(consumer)
	if err != nil {
		return
	}
	if link {
		n.deliverExit(p, from, exitMessage(target, reason))
		return
	}
	n.deliverDown(p, from, downMessage(target, reason))
}

// notifyTarget tells every consumer of a local target that it is gone
// (dead is the process it belonged to). Local consumers get the notice
// from noticeFrom(target); the node of a remote consumer does the same.
func (n *node) notifyTarget(dead gen.PID, target any, reason error) {
	from := n.noticeFrom(target)
	for _, nt := range n.targets.takeTarget(target) {
		if nt.consumer.Node == n.name {
			n.notifyLocal(nt.consumer, from, target, nt.link, reason)
			continue
		}
		kind := netstack.FrameDown
		if nt.link {
			kind = netstack.FrameExit
		}
		n.remoteIfConnected(nt.consumer.Node, netstack.Frame{
			Kind: kind, From: dead, To: nt.consumer, Target: target, Err: reason,
		})
	}
}

// dropConsumer removes the links and monitors a dead process owned and
// tells remote target nodes to forget them.
func (n *node) dropConsumer(consumer gen.PID) {
	for _, r := range n.targets.takeConsumer(consumer) {
		peer := targetNode(r.target)
		if peer == n.name {
			continue
		}
		if _, isNode := r.target.(gen.Atom); isNode {
			continue
		}
		kind := netstack.FrameDemonitor
		if r.link {
			kind = netstack.FrameUnlink
		}
		n.remoteIfConnected(peer, netstack.Frame{Kind: kind, From: consumer, To: r.target})
	}
}
