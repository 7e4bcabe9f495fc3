package tests

import (
	"errors"
	"sync"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/testhook"
)

// Remote links and monitors as the framework does them: requests that
// block the caller until the peer answers or gen.DefaultRequestTimeout,
// and downs/exits with the framework's queues and senders.

// stall freezes node's handling of frames from its peers while set, as a
// stopped or overloaded peer would look to the other side: the frames are
// held on the connection's readers and handled in order once it lifts.
type stall struct {
	node    gen.Atom
	mu      sync.Mutex
	cond    *sync.Cond
	stalled bool
}

func newStall(t testing.TB, node gen.Atom) *stall {
	s := &stall{node: node}
	s.cond = sync.NewCond(&s.mu)
	testhook.SetFrame(func(local, peer gen.Atom) {
		if local != s.node {
			return
		}
		s.mu.Lock()
		for s.stalled {
			s.cond.Wait()
		}
		s.mu.Unlock()
	})
	// runs before the nodes' StopForce (cleanups run last-in first-out)
	t.Cleanup(func() {
		s.set(false)
		testhook.SetFrame(nil)
	})
	return s
}

func (s *stall) set(stalled bool) {
	s.mu.Lock()
	s.stalled = stalled
	s.cond.Broadcast()
	s.mu.Unlock()
}

// delivery is one mailbox message as a raw process received it.
type delivery struct {
	queue string // "urgent", "system" or "main"
	typ   gen.MailboxMessageType
	from  gen.PID
	msg   any
}

// rawRun runs inside ProcessRun (state Running); its result goes to the
// process's results channel.
type rawRun func(p gen.Process) any

// rawStop makes a raw probe terminate with reason.
type rawStop struct{ reason error }

type rawResult struct {
	v    any
	took time.Duration
}

// rawProbe is a bare gen.ProcessBehavior that records every message with
// its queue, type and sender, and runs rawRun functions.
type rawProbe struct {
	p       gen.Process
	out     chan delivery
	results chan rawResult
}

func (r *rawProbe) ProcessInit(p gen.Process, args ...any) error { r.p = p; return nil }
func (r *rawProbe) ProcessKind() gen.ProcessKind                 { return gen.ProcessKindCustom }
func (r *rawProbe) ProcessTerminate(reason error)                {}

func (r *rawProbe) ProcessRun() error {
	mb := r.p.Mailbox()
	for {
		if r.p.State() != gen.ProcessStateRunning {
			return gen.TerminateReasonKill
		}
		queue := "urgent"
		v, ok := mb.Urgent.Pop()
		if !ok {
			queue = "system"
			v, ok = mb.System.Pop()
		}
		if !ok {
			queue = "main"
			v, ok = mb.Main.Pop()
		}
		if !ok {
			return nil
		}
		m := v.(*gen.MailboxMessage)
		if stop, isStop := m.Message.(rawStop); isStop {
			gen.ReleaseMailboxMessage(m)
			return stop.reason
		}
		if fn, isRun := m.Message.(rawRun); isRun {
			start := time.Now()
			res := fn(r.p)
			r.results <- rawResult{res, time.Since(start)}
		} else {
			r.out <- delivery{queue: queue, typ: m.Type, from: m.From, msg: m.Message}
		}
		gen.ReleaseMailboxMessage(m)
	}
}

type raw struct {
	pid     gen.PID
	proc    *rawProbe
	out     chan delivery
	results chan rawResult
}

func spawnRaw(t testing.TB, n gen.Node) raw {
	t.Helper()
	r := raw{out: make(chan delivery, 100), results: make(chan rawResult, 10)}
	r.proc = &rawProbe{out: r.out, results: r.results}
	pid, err := n.Spawn(func() gen.ProcessBehavior { return r.proc }, gen.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r.pid = pid
	return r
}

// start runs fn in the process without waiting for it.
func (r raw) start(t testing.TB, n gen.Node, fn rawRun) {
	t.Helper()
	if err := n.Send(r.pid, fn); err != nil {
		t.Fatal(err)
	}
}

// run runs fn in the process and returns its result.
func (r raw) run(t testing.TB, n gen.Node, fn rawRun) any {
	t.Helper()
	r.start(t, n, fn)
	return recv(t, r.results).v
}

func monitorFn(target any) rawRun   { return func(p gen.Process) any { return p.Monitor(target) } }
func demonitorFn(target any) rawRun { return func(p gen.Process) any { return p.Demonitor(target) } }

func errOf(v any) error {
	err, _ := v.(error)
	return err
}

// expectDelivery waits for a message and checks its queue, type and sender.
func expectDelivery(t testing.TB, ch chan delivery, queue string, typ gen.MailboxMessageType, from gen.PID) delivery {
	t.Helper()
	d := recv(t, ch)
	if d.queue != queue || d.typ != typ || d.from != from {
		t.Fatalf("%#v: want queue %s type %d from %s", d, queue, typ, from)
	}
	return d
}

func TestRemoteMonitorBlocksOnStalledPeer(t *testing.T) {
	a, b := pair(t)
	if _, err := a.Network().GetNode(b.Name()); err != nil {
		t.Fatal(err)
	}
	peer := newStall(t, b.Name())
	pb, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	pb2, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	r1, r2 := spawnRaw(t, a), spawnRaw(t, a)

	// 1. the answer arrives once the stall ends
	peer.set(true)
	r1.start(t, a, monitorFn(pb))
	select {
	case res := <-r1.results:
		t.Fatalf("Monitor returned while the peer was stalled: %v", res.v)
	case <-time.After(time.Second):
	}
	peer.set(false)
	res := recv(t, r1.results)
	if res.v != nil {
		t.Fatalf("Monitor after the stall: %v", res.v)
	}
	if res.took < time.Second || res.took >= time.Duration(gen.DefaultRequestTimeout)*time.Second {
		t.Fatalf("Monitor took %s", res.took)
	}

	// 2. no answer in time: Monitor and Demonitor give ErrTimeout after
	// gen.DefaultRequestTimeout seconds
	peer.set(true)
	r2.start(t, a, monitorFn(pb2))
	r1.start(t, a, demonitorFn(pb))
	timeout := time.Duration(gen.DefaultRequestTimeout) * time.Second
	for _, r := range []raw{r2, r1} {
		res := recv(t, r.results)
		if !errors.Is(errOf(res.v), gen.ErrTimeout) {
			t.Fatalf("want ErrTimeout, got %v", res.v)
		}
		if res.took < timeout-100*time.Millisecond || res.took > timeout+2*time.Second {
			t.Fatalf("timed out after %s, want about %s", res.took, timeout)
		}
	}
	// the failed Monitor left nothing; the failed Demonitor left the monitor
	info, err := a.ProcessInfo(r2.pid)
	if err != nil || len(info.MonitorsPID) != 0 {
		t.Fatalf("monitors after a timed out Monitor: %v %v", info.MonitorsPID, err)
	}
	info, err = a.ProcessInfo(r1.pid)
	if err != nil || len(info.MonitorsPID) != 1 || info.MonitorsPID[0] != pb {
		t.Fatalf("monitors after a timed out Demonitor: %v %v", info.MonitorsPID, err)
	}

	// the peer handles the stalled requests late: it now has the monitor of
	// r2 (the framework answers ErrTargetExist to a second Monitor) and no
	// longer the one of r1
	peer.set(false)
	if err := errOf(r2.run(t, a, monitorFn(pb2))); !errors.Is(err, gen.ErrTargetExist) {
		t.Fatalf("Monitor again after a late registration: %v", err)
	}

	// a connection loss downs what a still has, from a's core PID, in
	// the System queue: the monitor whose Demonitor timed out included
	rn, err := a.Network().Node(b.Name())
	if err != nil {
		t.Fatal(err)
	}
	rn.Disconnect()
	d := expectDelivery(t, r1.out, "system", gen.MailboxMessageTypeRegular, a.PID())
	if m, ok := d.msg.(gen.MessageDownPID); !ok || m.PID != pb || !errors.Is(m.Reason, gen.ErrNoConnection) {
		t.Fatalf("down %#v", d.msg)
	}
}

func TestRemoteMonitorErrors(t *testing.T) {
	a, b := pair(t)
	pb, _ := b.SpawnRegister("pb", newProbe(make(chan any, 10)), gen.ProcessOptions{})
	r := spawnRaw(t, a)

	stale := pb
	stale.Creation--
	start := time.Now()
	for i, fn := range []rawRun{
		monitorFn(stale),
		func(p gen.Process) any { return p.Link(stale) },
	} {
		if err := errOf(r.run(t, a, fn)); !errors.Is(err, gen.ErrProcessIncarnation) {
			t.Fatalf("%d: want ErrProcessIncarnation, got %v", i, err)
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("incarnation check took %s", d)
	}
	unknown := gen.PID{Node: b.Name(), ID: 99999, Creation: b.Creation()}
	if err := errOf(r.run(t, a, monitorFn(unknown))); !errors.Is(err, gen.ErrProcessUnknown) {
		t.Fatalf("unknown pid: %v", err)
	}
	if err := errOf(r.run(t, a, demonitorFn(pb))); !errors.Is(err, gen.ErrTargetUnknown) {
		t.Fatalf("demonitor of nothing: %v", err)
	}
	if err := errOf(r.run(t, a, monitorFn(pb))); err != nil {
		t.Fatal(err)
	}
	if err := errOf(r.run(t, a, monitorFn(pb))); !errors.Is(err, gen.ErrTargetExist) {
		t.Fatalf("second monitor: %v", err)
	}
	if err := errOf(r.run(t, a, demonitorFn(pb))); err != nil {
		t.Fatalf("demonitor: %v", err)
	}
	// a node without a route: the dial's error
	nowhere := gen.PID{Node: "nowhere@localhost", ID: 1000, Creation: 1}
	if err := errOf(r.run(t, a, monitorFn(nowhere))); !errors.Is(err, gen.ErrNoRoute) {
		t.Fatalf("no route: %v", err)
	}
	if err := errOf(r.run(t, a, func(p gen.Process) any { return p.MonitorNode("nowhere@localhost") })); !errors.Is(err, gen.ErrNoRoute) {
		t.Fatalf("monitor node without route: %v", err)
	}
	// only inside a callback (Running): not from another goroutine while
	// the process sleeps
	eventually(t, "raw probe asleep", func() bool { return r.proc.p.State() == gen.ProcessStateSleep })
	if err := r.proc.p.Monitor(pb); !errors.Is(err, gen.ErrNotAllowed) {
		t.Fatalf("monitor while asleep: %v", err)
	}
}

func TestRemoteDownSenders(t *testing.T) {
	a, b := pair(t)
	pb, _ := b.SpawnRegister("pb", newProbe(make(chan any, 10)), gen.ProcessOptions{})
	name := gen.ProcessID{Name: "pb", Node: b.Name()}
	r := spawnRaw(t, a)
	for _, fn := range []rawRun{
		monitorFn(pb),
		monitorFn(name),
		func(p gen.Process) any { return p.Link(pb) },
	} {
		if err := errOf(r.run(t, a, fn)); err != nil {
			t.Fatal(err)
		}
	}
	custom := gen.TerminateReasonShutdown
	b.Send(pb, probeStop{custom})
	seen := 0
	for seen < 3 {
		d := recv(t, r.out)
		switch m := d.msg.(type) {
		case gen.MessageDownPID:
			if d.queue != "system" || d.typ != gen.MailboxMessageTypeRegular || d.from != pb || m.PID != pb || !errors.Is(m.Reason, custom) {
				t.Fatalf("down pid %#v", d)
			}
		case gen.MessageDownProcessID:
			// the framework sends a ProcessID down from the consumer node's core
			if d.queue != "system" || d.typ != gen.MailboxMessageTypeRegular || d.from != a.PID() || m.ProcessID != name || !errors.Is(m.Reason, custom) {
				t.Fatalf("down name %#v", d)
			}
		case gen.MessageExitPID:
			if d.queue != "urgent" || d.typ != gen.MailboxMessageTypeExit || d.from != pb || m.PID != pb || !errors.Is(m.Reason, custom) {
				t.Fatalf("exit %#v", d)
			}
		default:
			t.Fatalf("unexpected %#v", d)
		}
		seen++
	}

	// a local termination: from the dead PID as well
	local, _ := a.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	if err := errOf(r.run(t, a, monitorFn(local))); err != nil {
		t.Fatal(err)
	}
	a.Kill(local)
	d := expectDelivery(t, r.out, "system", gen.MailboxMessageTypeRegular, local)
	if m, ok := d.msg.(gen.MessageDownPID); !ok || !errors.Is(m.Reason, gen.TerminateReasonKill) {
		t.Fatalf("local down %#v", d.msg)
	}

	// a connection loss: from the local core PID
	pb2, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	for _, fn := range []rawRun{
		monitorFn(pb2),
		func(p gen.Process) any { return p.MonitorNode(b.Name()) },
	} {
		if err := errOf(r.run(t, a, fn)); err != nil {
			t.Fatal(err)
		}
	}
	rn, err := a.Network().Node(b.Name())
	if err != nil {
		t.Fatal(err)
	}
	rn.Disconnect()
	for i := 0; i < 2; i++ {
		d := expectDelivery(t, r.out, "system", gen.MailboxMessageTypeRegular, a.PID())
		switch m := d.msg.(type) {
		case gen.MessageDownPID:
			if m.PID != pb2 || !errors.Is(m.Reason, gen.ErrNoConnection) {
				t.Fatalf("down %#v", m)
			}
		case gen.MessageDownNode:
			if m.Name != b.Name() {
				t.Fatalf("down node %#v", m)
			}
		default:
			t.Fatalf("unexpected %#v", d)
		}
	}
}

func TestStopForceRemoteReasons(t *testing.T) {
	a, b := pair(t)
	idle, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	busy, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	r := spawnRaw(t, a)
	for _, target := range []any{idle, busy} {
		if err := errOf(r.run(t, a, monitorFn(target))); err != nil {
			t.Fatal(err)
		}
	}
	// busy is inside a callback when the node is stopped
	release := make(chan struct{})
	entered := make(chan struct{})
	b.Send(busy, probeRun(func(p *probe) any {
		close(entered)
		<-release
		return nil
	}))
	<-entered
	stopped := make(chan struct{})
	go func() {
		b.StopForce()
		close(stopped)
	}()
	got := map[gen.PID]error{}
	for len(got) < 2 {
		d := recv(t, r.out)
		m, ok := d.msg.(gen.MessageDownPID)
		if !ok || d.queue != "system" {
			t.Fatalf("unexpected %#v", d)
		}
		got[m.PID] = m.Reason
	}
	close(release)
	<-stopped
	// the sleeping process was killed before the connection dropped
	if !errors.Is(got[idle], gen.TerminateReasonKill) {
		t.Fatalf("idle process: %v", got[idle])
	}
	// the busy one only ends after its callback returns: the connection
	// was gone by then
	if !errors.Is(got[busy], gen.ErrNoConnection) {
		t.Fatalf("busy process: %v", got[busy])
	}
}
