package main

import (
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

// processName is the name the demo actor registers on every node; Join
// addresses peers by it.
const processName gen.Atom = "leader_demo"

// member is the demo's leader actor: leader.Actor, a discovery loop over a
// static list of peers, and a report of every role change.
type member struct {
	leader.Actor

	spec memberSpec
}

// memberSpec is what the demo hands to a member through its spawn args.
type memberSpec struct {
	Options leader.Options
	// Peers is the demo's whole "discovery": the other nodes, always the
	// same list. A real deployment would ask its registrar or orchestrator.
	Peers      []gen.ProcessID
	Rediscover time.Duration
	// OnRole is told about every HandleBecomeLeader and HandleBecomeFollower.
	OnRole func(roleChange)
}

// roleChange is one leadership callback, as seen by the node it ran on.
type roleChange struct {
	Node    gen.Atom
	Leading bool
	Leader  gen.Atom // the node of the recognised leader, "" when none
	Term    uint64
	At      time.Time
}

// messageDiscover re-runs discovery; the member sends it to itself.
type messageDiscover struct{}

func factoryMember() gen.ProcessBehavior { return &member{} }

// Init returns the options and starts discovery. Join would work here as
// well (it takes effect once Init has returned the options), but discovery
// repeats on a timer, so it runs from a handler.
func (m *member) Init(args ...any) (leader.Options, error) {
	m.spec = args[0].(memberSpec)
	if err := m.Send(m.PID(), messageDiscover{}); err != nil {
		return leader.Options{}, err
	}
	return m.spec.Options, nil
}

// HandleMessage runs the discovery loop. Join is idempotent per node, so
// repeating it is cheap; repeating it is also what brings back a peer that
// was dropped from the view (GhostTTL) while it was unreachable.
func (m *member) HandleMessage(from gen.PID, message any) error {
	switch message.(type) {
	case messageDiscover:
		for _, peer := range m.spec.Peers {
			m.Join(peer)
		}
		_, err := m.SendAfter(m.PID(), messageDiscover{}, m.spec.Rediscover)
		return err
	}
	return nil
}

// HandleBecomeLeader reports the promotion. The demo has no singleton work;
// a real actor would start it here (see examples/scheduler).
func (m *member) HandleBecomeLeader() error {
	m.report(true, m.Node().Name())
	return nil
}

// HandleBecomeFollower reports the demotion or the new leader.
func (m *member) HandleBecomeFollower(leader gen.PID) error {
	m.report(false, leader.Node)
	return nil
}

func (m *member) report(leading bool, leaderNode gen.Atom) {
	if m.spec.OnRole == nil {
		return
	}
	m.spec.OnRole(roleChange{
		Node:    m.Node().Name(),
		Leading: leading,
		Leader:  leaderNode,
		Term:    m.Term(),
		At:      time.Now(),
	})
}
