package main

import (
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

// member is the measured leader actor: leader.Actor plus a report of every
// leadership callback to the recorder. It does no work of its own, so what
// is measured is the election and the framework underneath it.
type member struct {
	leader.Actor

	spec memberSpec
}

// memberSpec reaches a member through its spawn args (a local spawn, so
// nothing here is ever encoded).
type memberSpec struct {
	Options leader.Options // Bootstrap lists the peers
	// Rediscover re-runs Join over Bootstrap at this period, as the
	// documented discovery loop does; 0 turns the loop off so that it adds
	// nothing to the cost being measured.
	Rediscover time.Duration
	Rec        *recorder
}

// msgRediscover re-runs the discovery loop; the member sends it to itself.
type msgRediscover struct{}

// msgStepDown makes the member call StepDown on its own goroutine, where
// the actor's methods must be called from.
type msgStepDown struct{ result chan error }

func factoryMember() gen.ProcessBehavior { return &member{} }

// Init records the new incarnation, so that a restarted node is not taken
// for its predecessor, and starts the discovery loop if asked to.
func (m *member) Init(args ...any) (leader.Options, error) {
	m.spec = args[0].(memberSpec)
	m.spec.Rec.add(event{kind: evStarted, cluster: m.spec.Options.ClusterID, node: m.Node().Name(), pid: m.PID(), at: time.Now()})
	if m.spec.Rediscover > 0 {
		if _, err := m.SendAfter(m.PID(), msgRediscover{}, m.spec.Rediscover); err != nil {
			return leader.Options{}, err
		}
	}
	return m.spec.Options, nil
}

// HandleMessage runs the discovery loop and the harness's requests.
func (m *member) HandleMessage(from gen.PID, message any) error {
	switch msg := message.(type) {
	case msgRediscover:
		for _, peer := range m.spec.Options.Bootstrap {
			m.Join(peer)
		}
		_, err := m.SendAfter(m.PID(), msgRediscover{}, m.spec.Rediscover)
		return err
	case msgStepDown:
		msg.result <- m.StepDown()
	}
	return nil
}

// HandleBecomeLeader records the promotion.
func (m *member) HandleBecomeLeader() error {
	m.record(evLeading, m.PID())
	return nil
}

// HandleBecomeFollower records the demotion or the newly recognised leader.
func (m *member) HandleBecomeFollower(leader gen.PID) error {
	m.record(evFollowing, leader)
	return nil
}

// Terminate records the end of the incarnation.
func (m *member) Terminate(reason error) {
	m.record(evTerminated, gen.PID{})
}

func (m *member) record(kind eventKind, leaderPID gen.PID) {
	m.spec.Rec.add(event{
		kind:    kind,
		cluster: m.spec.Options.ClusterID,
		node:    m.Node().Name(),
		pid:     m.PID(),
		leader:  leaderPID,
		term:    m.Term(),
		at:      time.Now(),
	})
}
