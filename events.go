package leader

import (
	"errors"

	"ergo.services/ergo/gen"
)

// Leadership is the message of the leadership event an election actor
// publishes through the framework's event mechanism, so that code outside
// the actor (a health check, a metrics exporter, a process on another node)
// learns about leadership without polling Inspect.
//
// Each actor registers the event EventName(ClusterID) on its node when it
// starts, with a buffer of one: a new subscriber receives the current state
// at once, in the []gen.MessageEvent that MonitorEvent or LinkEvent return,
// and then one gen.MessageEvent per change, whose Message is a Leadership.
// A change is a new recognised leader (or none), or this node starting or
// stopping to lead; a new term with the same leader is not one. When the
// actor stops, the framework ends the event: monitors get a
// gen.MessageDownEvent, links an exit.
//
// Subscribe from any process, on any node (its node must have the types of
// NetworkTypes registered, which includes this one):
//
//	events, err := process.MonitorEvent(gen.Event{Name: leader.EventName("orders"), Node: "n1@host"})
//
// Each node's actor reports its own view: during a failover, nodes disagree
// for a moment, and a node cut off from the others may report an old leader
// until its election timeout. IsLeader is true only on the node that holds
// the lease, and is reported false when the lease ends.
type Leadership struct {
	ClusterID string
	Term      uint64
	Leader    gen.PID  // the leader this node recognises, zero if none
	Node      gen.Atom // the node whose view this is
	IsLeader  bool     // whether Node leads (Leader is then its actor)
}

// EventName is the name of the leadership event of the election ClusterID
// (see Leadership): "leader." followed by the ClusterID. One actor per node
// and ClusterID can publish it; a second one on the same node runs
// without publishing and says so in the log.
func EventName(clusterID string) gen.Atom { return gen.Atom("leader." + clusterID) }

// publisher publishes the actor's Leadership event.
type publisher struct {
	tried bool // registration was attempted, at the actor's first run
	name  gen.Atom
	token gen.Ref
	ok    bool
	last  Leadership
	sent  bool
}

// registerEvent registers the leadership event and publishes the initial
// state, when the actor first runs (the framework refuses to register an
// event during ProcessInit). An actor that cannot register it works all
// the same.
func (a *Actor) registerEvent() {
	name := EventName(a.state.cfg.clusterID)
	token, err := a.RegisterEvent(name, gen.EventOptions{Buffer: 1})
	switch {
	case err == nil:
		a.events = publisher{tried: true, name: name, token: token, ok: true}
		a.publish()
	case errors.Is(err, gen.ErrTaken):
		a.Log().Warning("leader %q: another process on this node already publishes the event %q, so this actor publishes no leadership events; run one actor per node and ClusterID", a.state.cfg.clusterID, name)
	default:
		a.Log().Warning("leader %q: cannot register the leadership event %q (%s); subscribers will not hear of leadership changes on this node", a.state.cfg.clusterID, name, err)
	}
}

// publish sends a Leadership event if the leadership seen here changed
// since the last one.
func (a *Actor) publish() {
	if a.events.ok == false {
		return
	}
	now := Leadership{
		ClusterID: a.state.cfg.clusterID,
		Term:      a.state.term,
		Leader:    a.reported.leader,
		Node:      a.Node().Name(),
		IsLeader:  a.reported.leading,
	}
	last := a.events.last
	if a.events.sent && now.Leader == last.Leader && now.IsLeader == last.IsLeader {
		return
	}
	if err := a.SendEvent(a.events.name, a.events.token, now); err != nil {
		a.Log().Warning("leader %q: cannot publish the leadership event (%s); subscribers miss this change (%s leads at term %d)", a.state.cfg.clusterID, err, pidText(now.Leader), now.Term)
		return
	}
	a.events.last, a.events.sent = now, true
}
