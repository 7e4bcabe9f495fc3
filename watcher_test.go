package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedProcess is the part of gen.Process the watcher's monitor path
// uses, with Monitor answering from a script. Any other method panics (the
// embedded interface is nil), which fails the test loudly.
type scriptedProcess struct {
	gen.Process
	self, parent gen.PID
	answers      []error // Monitor's answers, in order; nil once exhausted
	monitored    []gen.PID
	sent         []any
	sentTo       []any
	after        []time.Duration
	unconnected  map[gen.Atom]bool // nodes the network reports as not connected
}

// Node and Network answer only whether a node is connected.
func (p *scriptedProcess) Node() gen.Node { return scriptedNode{p: p} }

type scriptedNode struct {
	gen.Node
	p *scriptedProcess
}

func (n scriptedNode) Network() gen.Network { return scriptedNetwork{p: n.p} }

type scriptedNetwork struct {
	gen.Network
	p *scriptedProcess
}

func (n scriptedNetwork) Node(name gen.Atom) (gen.RemoteNode, error) {
	if n.p.unconnected[name] {
		return nil, gen.ErrNoConnection
	}
	return nil, nil
}

func (p *scriptedProcess) PID() gen.PID    { return p.self }
func (p *scriptedProcess) Parent() gen.PID { return p.parent }

func (p *scriptedProcess) Monitor(target any) error {
	p.monitored = append(p.monitored, target.(gen.PID))
	if len(p.answers) == 0 {
		return nil
	}
	err := p.answers[0]
	p.answers = p.answers[1:]
	return err
}

func (p *scriptedProcess) MonitorNode(node gen.Atom) error { return nil }

func (p *scriptedProcess) Send(to any, message any) error {
	p.sent = append(p.sent, message)
	p.sentTo = append(p.sentTo, to)
	return nil
}

func (p *scriptedProcess) SendAfter(to any, message any, after time.Duration) (gen.CancelFunc, error) {
	p.sent = append(p.sent, message)
	p.after = append(p.after, after)
	return func() bool { return true }, nil
}

// The other node refuses a monitor with ErrTargetExist while it still
// holds one of ours that this node already dropped with a lost connection.
// The watcher asks again until it is accepted, and does not ask again for a
// process it monitors.
func TestWatcherRetriesAMonitorTheOtherNodeStillHolds(t *testing.T) {
	target := pid("b")
	p := &scriptedProcess{self: pid("w"), parent: pid("a"), answers: []error{gen.ErrTargetExist, gen.ErrTargetExist}}
	w := &watcher{process: p}
	w.watch(target, 0)
	require.Equal(t, []any{watchRetry{PID: target, Attempt: 1}}, p.sent, "refused: try again later, nothing told to the actor")
	w.watch(target, 1)
	require.Equal(t, watchRetry{PID: target, Attempt: 2}, p.sent[1])
	assert.Greater(t, p.after[1], p.after[0], "the pauses grow")
	w.watch(target, 2)
	require.Len(t, p.sent, 3)
	assert.Equal(t, watchStarted{PID: target}, p.sent[2], "accepted: the actor is told the monitor is in place")
	w.watch(target, 0)
	assert.Len(t, p.monitored, 3, "a process the watcher monitors is not asked for again")
}

// A refusal that lasts through every retry, or any other refusal, goes to
// the actor as a failed monitor.
func TestWatcherReportsAMonitorRefusedForGood(t *testing.T) {
	target := pid("b")
	p := &scriptedProcess{self: pid("w"), parent: pid("a"), answers: []error{gen.ErrTargetExist, gen.ErrTimeout}}
	w := &watcher{process: p}
	w.watch(target, len(watchRetryPauses))
	require.Equal(t, []any{watchFailed{PID: target, Err: gen.ErrTargetExist}}, p.sent)
	w.watch(target, 0)
	require.Equal(t, watchFailed{PID: target, Err: gen.ErrTimeout}, p.sent[1])
}
