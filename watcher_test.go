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
	inFlight     []*downsInFlight  // the count each paced down went with, in order
	unconnected  map[gen.Atom]bool // nodes the network reports as not connected
	unregistered bool              // UnregisterName was called
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
	if d, ok := message.(peerDown); ok && d.inFlight != nil {
		// kept apart, so that the tests compare what the election is told
		p.inFlight = append(p.inFlight, d.inFlight)
		d.inFlight = nil
		message = d
	}
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

func (n scriptedNode) PID() gen.PID { return gen.PID{Node: "core@host", ID: 1} }

// After a connection's end the watcher waits nodeSettlePause and then
// reports the node if it still monitors a process there and the node is
// connected again (a one-sided monitor), or forgets it if it is not. When every monitor on the node came back as a down of the
// same cleanup, as after a node crash, nothing is scheduled: the
// watchers of a thousand elections would otherwise each wake once more in
// the middle of the failover.
func TestWatcherSettlesANodeOnlyIfAMonitorOutlivedItsConnection(t *testing.T) {
	for _, outlived := range []bool{false, true} {
		p := &scriptedProcess{self: pid("w"), parent: pid("a")}
		w := &watcher{process: p, clock: func() time.Time { return t0 }}
		gone := pid("b")
		w.watch(gone, 0)
		p.sent, p.after = nil, nil
		w.handle(fromCore(gen.MessageDownPID{PID: gone, Reason: gen.ErrNoConnection}), true)
		require.Equal(t, []any{peerDown{PID: gone, Reason: gen.ErrNoConnection, At: t0}}, p.sent)
		if outlived {
			// a monitor made over a new connection that the other node
			// dropped with the old one: it stays, and no down comes
			w.watch(gone, 0)
			p.sent = p.sent[:1]
		}
		w.handle(fromCore(gen.MessageDownNode{Name: gone.Node}), true)
		if outlived == false {
			assert.Len(t, p.sent, 1, "nothing left on the node: nothing to settle")
			assert.Empty(t, p.after)
			continue
		}
		require.Equal(t, []any{peerDown{PID: gone, Reason: gen.ErrNoConnection, At: t0}, peerDown{PID: gone, Reason: gen.ErrNoConnection, At: t0}, nodeSettleCheck{Node: gone.Node}}, p.sent,
			"the connection's end is the down of what it still monitors there; look again after the queued downs")
		w.handle(fromSelf(p, nodeSettleCheck{Node: gone.Node}), false)
		require.Len(t, p.sent, 4)
		assert.Equal(t, nodeSettle{Node: gone.Node}, p.sent[3], "its own down did not come: settle")
		assert.Equal(t, []time.Duration{nodeSettlePause}, p.after)
		w.handle(fromSelf(p, nodeSettle{Node: gone.Node}), false)
		assert.Equal(t, watchSuspect{Node: gone.Node}, p.sent[4], "connected again: report the node to the actor")
		p.sent = p.sent[:4]
		p.unconnected = map[gen.Atom]bool{gone.Node: true}
		w.handle(fromSelf(p, nodeSettle{Node: gone.Node}), false)
		assert.Len(t, p.sent, 4, "not connected: forget it, nothing to tell the actor")
		assert.False(t, w.watchesOn(gone.Node))
	}
}

// When a connection ends, every process the watcher monitors on that node
// is reported down with ErrNoConnection at the node monitor's down: the
// framework owes a down for each monitor too, but under a node crash it
// did not deliver most of them. The processes' own downs that do come
// later are not reported twice, unless they say something else (the
// process terminated); a process whose own down came is not a reason to
// settle the node.
func TestWatcherReportsEveryProcessOfALostConnection(t *testing.T) {
	p := &scriptedProcess{self: pid("w"), parent: pid("a")}
	w := &watcher{process: p, clock: func() time.Time { return t0 }, losses: &lossBoard{}}
	b1, b2, c1 := pid("b"), pid("b"), pid("c")
	b2.ID++
	for _, target := range []gen.PID{b1, b2, c1} {
		w.watch(target, 0)
	}
	p.sent = nil
	w.handle(fromCore(gen.MessageDownNode{Name: b1.Node}), true)
	require.Len(t, p.sent, 3)
	assert.ElementsMatch(t, []any{peerDown{PID: b1, Reason: gen.ErrNoConnection, At: t0}, peerDown{PID: b2, Reason: gen.ErrNoConnection, At: t0}}, p.sent[:2], "both processes on the lost node")
	assert.Equal(t, nodeSettleCheck{Node: b1.Node}, p.sent[2])
	assert.True(t, w.losses.since(b1.Node, t0), "the loss is on the board for IsLeader")

	w.handle(fromCore(gen.MessageDownPID{PID: b1, Reason: gen.ErrNoConnection}), true)
	assert.Len(t, p.sent, 3, "b1's own down for the same loss is not reported twice")
	w.handle(fromCore(gen.MessageDownPID{PID: b2, Reason: gen.TerminateReasonKill}), true)
	require.Len(t, p.sent, 4)
	assert.Equal(t, peerDown{PID: b2, Reason: gen.TerminateReasonKill, At: t0}, p.sent[3], "a down that says more is reported")
	w.handle(fromSelf(p, nodeSettleCheck{Node: b1.Node}), false)
	assert.Len(t, p.sent, 4, "every process's own down came: nothing to settle")
	assert.Empty(t, p.after)
	assert.True(t, w.watchesOn(c1.Node), "the other node's monitor is untouched")
}

func fromCore(message any) *gen.MailboxMessage {
	return &gen.MailboxMessage{From: scriptedNode{}.PID(), Type: gen.MailboxMessageTypeRegular, Message: message}
}

func fromSelf(p *scriptedProcess, message any) *gen.MailboxMessage {
	return &gen.MailboxMessage{From: p.self, Type: gen.MailboxMessageTypeRegular, Message: message}
}

// A follower of a living leader gets a lost connection to another member
// late (downHints): those are the steps a node crash makes every survivor
// take at once. The leader's own down, any down while the actor leads or
// campaigns, and a termination come at once, and the loss is on the board
// for IsLeader at once whatever the delay.
func TestWatcherDelaysOnlyTheLostConnectionsAFollowerCanWaitFor(t *testing.T) {
	const pause = 75 * time.Millisecond
	leader, other, third := pid("b"), pid("c"), pid("d")
	cases := []struct {
		name      string
		following bool
		down      gen.MessageDownPID
		late      bool
	}{
		{"another member's lost connection, following", true, gen.MessageDownPID{PID: other, Reason: gen.ErrNoConnection}, true},
		{"the leader's lost connection", true, gen.MessageDownPID{PID: leader, Reason: gen.ErrNoConnection}, false},
		{"another member's termination", true, gen.MessageDownPID{PID: other, Reason: gen.TerminateReasonKill}, false},
		{"another member's lost connection, not following", false, gen.MessageDownPID{PID: other, Reason: gen.ErrNoConnection}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &scriptedProcess{self: pid("w"), parent: pid("a")}
			hints := &downHints{pause: pause}
			hints.set(c.following, leader)
			w := &watcher{process: p, clock: func() time.Time { return t0 }, losses: &lossBoard{}, hints: hints}
			w.watch(c.down.PID, 0)
			p.sent, p.after = nil, nil
			w.handle(fromCore(c.down), true)
			// At: when the watcher got it, which the fast failover's step counts from
			want := peerDown{PID: c.down.PID, Reason: c.down.Reason, At: t0}
			if c.late {
				want.Since = t0 // GhostTTL counts from here
			}
			require.Equal(t, []any{want}, p.sent)
			if c.late {
				assert.Equal(t, []time.Duration{pause}, p.after, "handed over late")
			} else {
				assert.Empty(t, p.after, "handed over at once")
			}
			if c.down.Reason == gen.ErrNoConnection {
				assert.True(t, w.losses.since(c.down.PID.Node, t0), "the loss is on the board at once")
			}
		})
	}

	// a whole node's lost connection, reported with its end
	p := &scriptedProcess{self: pid("w"), parent: pid("a")}
	hints := &downHints{pause: pause}
	hints.set(true, leader)
	w := &watcher{process: p, clock: func() time.Time { return t0 }, losses: &lossBoard{}, hints: hints}
	w.watch(third, 0)
	p.sent, p.after = nil, nil
	w.handle(fromCore(gen.MessageDownNode{Name: third.Node}), true)
	assert.Equal(t, peerDown{PID: third, Reason: gen.ErrNoConnection, Since: t0, At: t0}, p.sent[0])
	assert.Equal(t, []time.Duration{pause}, p.after, "a follower's member's node: late too")
}

// countOf returns how many of sent are a T.
func countOf[T any](sent []any) int {
	n := 0
	for _, m := range sent {
		if _, ok := m.(T); ok {
			n++
		}
	}
	return n
}
