package node

import (
	"sync"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

// Events as the framework's v320 node routes them: registration in
// node/node.go (registerEvent, unregisterEvent, unregisterProcess),
// publishing in node/core.go RouteSendEvent, subscriptions in
// RouteLinkEvent/RouteMonitorEvent and their removals, the end of an event
// in RouteTerminateEvent and a lost connection in RouteNodeDown. The
// subscriptions themselves are relations in n.targets (target gen.Event),
// so a lost connection downs the subscribers of a remote event like any
// other relation.

// eventOwner is a registered event.
type eventOwner struct {
	producer gen.PID
	token    gen.Ref
	notify   bool
	buffer   int
	last     []gen.MessageEvent // the last buffer messages, oldest first

	// consumers counts subscriptions as the framework's counter does: one
	// up per Link/MonitorEvent, one down per Unlink/Demonitor, down by a
	// node's share (remote) when the connection to it is lost, and never
	// down for a subscriber that terminates. So after a subscriber died
	// the producer gets no MessageEventStop (and no MessageEventStart for
	// the next first subscriber).
	consumers int
	remote    map[gen.Atom]int
}

// eventTable holds the events registered on a node. Lock order: the
// targets lock before this one.
type eventTable struct {
	mu sync.Mutex
	m  map[gen.Atom]*eventOwner
	// byProducer indexes m by producer: a terminating process ends its own
	// events without a scan of every event on the node (the framework
	// keeps a process's events on the process).
	byProducer map[gen.PID]map[gen.Atom]struct{}
}

// add records ev under name; the caller holds mu.
func (t *eventTable) add(name gen.Atom, ev *eventOwner) {
	t.m[name] = ev
	if t.byProducer == nil {
		t.byProducer = make(map[gen.PID]map[gen.Atom]struct{})
	}
	names := t.byProducer[ev.producer]
	if names == nil {
		names = make(map[gen.Atom]struct{})
		t.byProducer[ev.producer] = names
	}
	names[name] = struct{}{}
}

// remove forgets the event name of producer; the caller holds mu.
func (t *eventTable) remove(name gen.Atom, producer gen.PID) {
	delete(t.m, name)
	names := t.byProducer[producer]
	delete(names, name)
	if len(names) == 0 {
		delete(t.byProducer, producer)
	}
}

// registerEvent registers name produced by producer (a local process or
// the core PID); the name must be free on the node.
func (n *node) registerEvent(name gen.Atom, producer gen.PID, options gen.EventOptions) (gen.Ref, error) {
	if n.state.Load() == nodeStopped {
		return gen.Ref{}, gen.ErrNodeTerminated
	}
	ev := &eventOwner{
		producer: producer,
		token:    n.MakeRef(),
		notify:   options.Notify,
		buffer:   options.Buffer,
		remote:   make(map[gen.Atom]int),
	}
	n.events.mu.Lock()
	defer n.events.mu.Unlock()
	if _, taken := n.events.m[name]; taken {
		return gen.Ref{}, gen.ErrTaken
	}
	n.events.add(name, ev)
	return ev.token, nil
}

// unregisterEvent ends an event of producer: its subscribers get their
// exit or down with gen.ErrUnregistered.
func (n *node) unregisterEvent(name gen.Atom, producer gen.PID) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	n.events.mu.Lock()
	ev := n.events.m[name]
	switch {
	case ev == nil:
		n.events.mu.Unlock()
		return gen.ErrEventUnknown
	case ev.producer != producer:
		n.events.mu.Unlock()
		return gen.ErrEventOwner
	}
	n.events.remove(name, producer)
	n.events.mu.Unlock()
	n.notifyTarget(producer, gen.Event{Name: name, Node: n.name}, gen.ErrUnregistered)
	return nil
}

// eventsOf returns the names of the events producer registered.
func (n *node) eventsOf(producer gen.PID) []gen.Atom {
	n.events.mu.Lock()
	defer n.events.mu.Unlock()
	names := []gen.Atom{}
	for name := range n.events.byProducer[producer] {
		names = append(names, name)
	}
	return names
}

// terminateEvents ends the events of a terminated producer; their
// subscribers get the producer's reason.
func (n *node) terminateEvents(producer gen.PID, reason error) {
	n.events.mu.Lock()
	var names []gen.Atom
	for name := range n.events.byProducer[producer] {
		names = append(names, name)
	}
	for _, name := range names {
		n.events.remove(name, producer)
	}
	n.events.mu.Unlock()
	for _, name := range names {
		n.notifyTarget(producer, gen.Event{Name: name, Node: n.name}, reason)
	}
}

// sendEvent publishes message on a local event. The token must be the
// event's (ErrEventOwner otherwise), whoever sends. The message joins the
// buffer and the subscribers are taken in one step, so a concurrent new
// subscriber gets it either in its buffer or delivered, never both.
func (n *node) sendEvent(from gen.PID, name gen.Atom, token gen.Ref, priority gen.MessagePriority, message any) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	em := gen.MessageEvent{
		Event:     gen.Event{Name: name, Node: n.name},
		Timestamp: time.Now().UnixNano(),
		Message:   message,
	}
	n.targets.mu.Lock()
	n.events.mu.Lock()
	ev := n.events.m[name]
	var err error
	switch {
	case ev == nil:
		err = gen.ErrEventUnknown
	case ev.token != token:
		err = gen.ErrEventOwner
	case ev.buffer > 0:
		if len(ev.last) == ev.buffer {
			// the oldest message makes room (framework: a flushing
			// lib.NewQueueLimitMPSC)
			ev.last = append(ev.last[:0:0], ev.last[1:]...)
		}
		ev.last = append(ev.last, em)
	}
	n.events.mu.Unlock()
	var consumers []gen.PID
	if err == nil {
		consumers = n.targets.subscribersLocked(em.Event)
	}
	n.targets.mu.Unlock()
	if err != nil {
		return err
	}
	n.publish(from, priority, em, consumers)
	return nil
}

// publish delivers an event message to the local subscribers and sends it
// once to every node with subscribers, over an existing connection only.
// A message that cannot be sent there (a type not registered, say) is
// logged, and SendEvent still succeeds (framework: RouteSendEvent).
func (n *node) publish(from gen.PID, priority gen.MessagePriority, em gen.MessageEvent, consumers []gen.PID) {
	remote := make(map[gen.Atom]bool)
	for _, consumer := range consumers {
		if consumer.Node == n.name {
			n.deliverEvent(consumer, from, priority, em)
			continue
		}
		remote[consumer.Node] = true
	}
	for peer := range remote {
		if _, err := n.net.Node(peer); err != nil {
			continue
		}
		f := netstack.Frame{Kind: netstack.FrameEvent, From: from, Priority: priority, Message: em}
		if err := n.net.SendFrame(peer, f); err != nil {
			n.log.Error("unable to send event message to the remote consumer on %s: %s", peer, err)
		}
	}
}

// fanOut hands an event message from peer to the local subscribers of the
// event (framework: RouteSendEvent for a remote sender).
func (n *node) fanOut(peer gen.Atom, f netstack.Frame) {
	em, ok := f.Message.(gen.MessageEvent)
	if !ok {
		return
	}
	em.Event.Node = peer
	n.targets.mu.Lock()
	consumers := n.targets.subscribersLocked(em.Event)
	n.targets.mu.Unlock()
	for _, consumer := range consumers {
		if consumer.Node == n.name {
			n.deliverEvent(consumer, f.From, f.Priority, em)
		}
	}
}

// deliverEvent queues an event message for a local subscriber: type
// MailboxMessageTypeEvent in the queue of the sender's priority, from the
// sender (framework: sendEventMessage).
func (n *node) deliverEvent(consumer, from gen.PID, priority gen.MessagePriority, em gen.MessageEvent) {
	p, err := n.localProcess(consumer)
	if err != nil {
		return
	}
	m := gen.TakeMailboxMessage()
	m.From = from
	m.Type = gen.MailboxMessageTypeEvent
	m.Message = em
	p.push(priority, m)
}

// notifyProducer sends MessageEventStart or MessageEventStop to a
// producer, as a regular message from the core PID in the System queue
// (framework: RouteSendPID with MessagePriorityHigh). A node-produced
// event gets nothing: the core PID has no mailbox.
func (n *node) notifyProducer(producer gen.PID, message any) {
	if p, err := n.localProcess(producer); err == nil {
		n.deliverDown(p, n.core, message)
	}
}

// subscribersLocked returns the consumers of an event that may get its
// messages: one entry per link and per monitor (a process that did both
// gets every message twice, as in the framework), without the
// subscriptions still waiting for the peer's answer (the framework
// records those only after it). The caller holds t.mu.
func (t *targets) subscribersLocked(event gen.Event) []gen.PID {
	var out []gen.PID
	for _, link := range []bool{false, true} {
		for consumer := range t.table(link)[event] {
			if _, pending := t.pending[pendingKey{consumer, relation{event, link}}]; !pending {
				out = append(out, consumer)
			}
		}
	}
	return out
}
