package node

import (
	"ergo.services/ergo/gen"
)

// Subscriptions to events (LinkEvent/MonitorEvent and their removals). A
// subscription to an event of another node is a request to that node,
// blocking like a remote Monitor (see request); the answer carries the
// event's buffered messages.

// subscribe makes consumer link (link == true) or monitor an event and
// returns the event's buffered messages.
func (n *node) subscribe(consumer gen.PID, target gen.Event, link bool) ([]gen.MessageEvent, error) {
	if n.state.Load() == nodeStopped {
		return nil, gen.ErrNodeTerminated
	}
	if target.Node == n.name {
		return n.subscribeLocal(consumer, target, link)
	}
	v, err := n.addRemoteRelation(consumer, target.Node, target, link)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, nil
	}
	last, ok := v.([]gen.MessageEvent)
	if !ok {
		// framework: connection.LinkEvent/MonitorEvent; the relation
		// stays on the event's node
		n.targets.remove(consumer, target, link)
		return nil, gen.ErrMalformed
	}
	return last, nil
}

// subscribeLocal records a subscription (of a local or remote consumer)
// to an event of this node. The first subscriber of a Notify event makes
// the producer get MessageEventStart (framework: RouteLinkEvent and
// RouteMonitorEvent, local branch).
func (n *node) subscribeLocal(consumer gen.PID, target gen.Event, link bool) ([]gen.MessageEvent, error) {
	n.targets.mu.Lock()
	n.events.mu.Lock()
	ev := n.events.m[target.Name]
	if ev == nil {
		n.events.mu.Unlock()
		n.targets.mu.Unlock()
		return nil, gen.ErrEventUnknown
	}
	if err := n.targets.addLocked(consumer, target, link); err != nil {
		n.events.mu.Unlock()
		n.targets.mu.Unlock()
		return nil, err
	}
	last := append([]gen.MessageEvent(nil), ev.last...)
	ev.consumers++
	if consumer.Node != n.name {
		ev.remote[consumer.Node]++
	}
	start := ev.notify && ev.consumers <= 1
	producer := ev.producer
	n.events.mu.Unlock()
	n.targets.mu.Unlock()
	if start {
		n.notifyProducer(producer, gen.MessageEventStart{Name: target.Name})
	}
	return last, nil
}

// unsubscribe drops a subscription of consumer.
func (n *node) unsubscribe(consumer gen.PID, target gen.Event, link bool) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	if target.Node == n.name {
		return n.unsubscribeLocal(consumer, target, link)
	}
	return n.removeRelation(consumer, target, link)
}

// unsubscribeLocal drops a subscription to an event of this node; when the
// count reaches zero the producer of a Notify event gets MessageEventStop.
func (n *node) unsubscribeLocal(consumer gen.PID, target gen.Event, link bool) error {
	n.targets.mu.Lock()
	n.events.mu.Lock()
	ev := n.events.m[target.Name]
	if ev == nil {
		n.events.mu.Unlock()
		n.targets.mu.Unlock()
		return gen.ErrEventUnknown
	}
	if !n.targets.removeLocked(consumer, target, link) {
		n.events.mu.Unlock()
		n.targets.mu.Unlock()
		return gen.ErrTargetUnknown
	}
	ev.consumers--
	if consumer.Node != n.name {
		if ev.remote[consumer.Node]--; ev.remote[consumer.Node] <= 0 {
			delete(ev.remote, consumer.Node)
		}
	}
	stop := ev.notify && ev.consumers <= 0
	producer := ev.producer
	n.events.mu.Unlock()
	n.targets.mu.Unlock()
	if stop {
		n.notifyProducer(producer, gen.MessageEventStop{Name: target.Name})
	}
	return nil
}

// eventsPeerDown takes the subscriptions of peer's processes off the count
// of every local event when the connection to peer is lost; a Notify event
// whose count reaches zero then tells its producer (framework:
// RouteNodeDown). The subscriptions themselves are dropped by takePeer.
func (n *node) eventsPeerDown(peer gen.Atom) {
	type stop struct {
		producer gen.PID
		name     gen.Atom
	}
	var stops []stop
	n.events.mu.Lock()
	for name, ev := range n.events.m {
		c, ok := ev.remote[peer]
		if !ok {
			continue
		}
		delete(ev.remote, peer)
		ev.consumers -= c
		if ev.notify && ev.consumers == 0 {
			stops = append(stops, stop{ev.producer, name})
		}
	}
	n.events.mu.Unlock()
	for _, s := range stops {
		n.notifyProducer(s.producer, gen.MessageEventStop{Name: s.name})
	}
}
