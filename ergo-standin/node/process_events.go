package node

import (
	"ergo.services/ergo/gen"
)

// The event methods of gen.Process (framework: node/process.go). All of
// them need the Running state, that is, a call from inside a callback.

func (p *process) running() bool { return p.getState() == gen.ProcessStateRunning }

// RegisterEvent registers an event produced by this process and returns
// the token SendEvent needs. The event ends with the process.
func (p *process) RegisterEvent(name gen.Atom, options gen.EventOptions) (gen.Ref, error) {
	if !p.running() {
		return gen.Ref{}, gen.ErrNotAllowed
	}
	return p.node.registerEvent(name, p.pid, options)
}

// UnregisterEvent ends an event this process registered; its subscribers
// get gen.ErrUnregistered.
func (p *process) UnregisterEvent(name gen.Atom) error {
	if !p.running() {
		return gen.ErrNotAllowed
	}
	return p.node.unregisterEvent(name, p.pid)
}

// Events returns the names of the events this process registered.
func (p *process) Events() []gen.Atom { return p.node.eventsOf(p.pid) }

// SendEvent publishes message on an event of this node. Any process with
// the token may send, with its own send priority.
func (p *process) SendEvent(name gen.Atom, token gen.Ref, message any) error {
	if !p.running() {
		return gen.ErrNotAllowed
	}
	if err := p.node.sendEvent(p.pid, name, token, p.SendPriority(), message); err != nil {
		return err
	}
	p.messagesOut.Add(1)
	return nil
}

// LinkEvent subscribes to an event (of this node if target.Node is empty)
// and returns its buffered messages; the end of the event is an exit
// signal (gen.MessageExitEvent).
func (p *process) LinkEvent(target gen.Event) ([]gen.MessageEvent, error) {
	return p.subscribeEvent(target, true)
}

// UnlinkEvent drops a LinkEvent subscription.
func (p *process) UnlinkEvent(target gen.Event) error { return p.unsubscribeEvent(target, true) }

// MonitorEvent subscribes to an event (of this node if target.Node is
// empty) and returns its buffered messages; the end of the event is a
// gen.MessageDownEvent.
func (p *process) MonitorEvent(target gen.Event) ([]gen.MessageEvent, error) {
	return p.subscribeEvent(target, false)
}

// DemonitorEvent drops a MonitorEvent subscription.
func (p *process) DemonitorEvent(target gen.Event) error { return p.unsubscribeEvent(target, false) }

func (p *process) subscribeEvent(target gen.Event, link bool) ([]gen.MessageEvent, error) {
	if !p.running() {
		return nil, gen.ErrNotAllowed
	}
	if target.Node == "" {
		target.Node = p.node.name
	}
	if p.node.targets.has(p.pid, target, link) {
		return nil, gen.ErrTargetExist
	}
	return p.node.subscribe(p.pid, target, link)
}

// unsubscribeEvent does not default an empty target.Node to this node, as
// the framework's UnlinkEvent/DemonitorEvent do not: such a call finds no
// subscription (gen.ErrTargetUnknown).
func (p *process) unsubscribeEvent(target gen.Event, link bool) error {
	if !p.running() {
		return gen.ErrNotAllowed
	}
	if !p.node.targets.has(p.pid, target, link) {
		return gen.ErrTargetUnknown
	}
	return p.node.unsubscribe(p.pid, target, link)
}
