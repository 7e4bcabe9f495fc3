package tests

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

func TestSpawnSendCall(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	pid, err := n.SpawnRegister("probe", newProbe(out), gen.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, to := range []any{pid, gen.Atom("probe"), "probe", gen.ProcessID{Name: "probe", Node: n.Name()}} {
		if err := n.Send(to, 42); err != nil {
			t.Fatalf("send to %v: %s", to, err)
		}
		if v := recv(t, out); v != 42 {
			t.Fatalf("got %v", v)
		}
	}
	if err := n.Send(3.14, 1); !errors.Is(err, gen.ErrUnsupported) {
		t.Fatalf("send to float: %v", err)
	}
	if err := n.Send(gen.Atom("nobody"), 1); !errors.Is(err, gen.ErrProcessUnknown) {
		t.Fatalf("send to unknown: %v", err)
	}
	v, err := n.Call(pid, "echo")
	if err != nil || v != "echo" {
		t.Fatalf("call: %v %v", v, err)
	}
	if name, _ := n.ProcessName(pid); name != "probe" {
		t.Fatalf("name %s", name)
	}
	if got, _ := n.ProcessPID("probe"); got != pid {
		t.Fatalf("pid %s", got)
	}
	// process-to-process call
	pid2, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	v = runIn(t, n, pid2, func(p *probe) any {
		r, err := p.Call(pid, "hello")
		if err != nil {
			return err
		}
		return r
	})
	if v != "hello" {
		t.Fatalf("process call: %v", v)
	}
}

func TestCallTimeoutAndLateResponse(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	pid, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	start := time.Now()
	_, err := n.CallWithTimeout(pid, "later", 1)
	if !errors.Is(err, gen.ErrTimeout) {
		t.Fatalf("want timeout, got %v", err)
	}
	if d := time.Since(start); d < time.Second || d > 3*time.Second {
		t.Fatalf("timeout took %s", d)
	}
	ref := recv(t, out).(gen.Ref)
	// answering the timed out call is harmless and dropped
	res := runIn(t, n, pid, func(p *probe) any { return p.SendResponse(n.PID(), ref, "late") })
	if res != nil {
		t.Fatalf("late response: %v", res)
	}
	if v, err := n.Call(pid, "again"); err != nil || v != "again" {
		t.Fatalf("call after timeout: %v %v", v, err)
	}
}

func TestInspect(t *testing.T) {
	n := localNode(t)
	pid, _ := n.SpawnRegister("inspected", newProbe(make(chan any, 10)), gen.ProcessOptions{})
	m, err := n.Inspect(pid, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	if m["items"] != "a,b" || m["name"] != "inspected" {
		t.Fatalf("inspect: %v", m)
	}
	if _, err := n.Inspect(gen.PID{Node: n.Name(), ID: 999999, Creation: n.Creation()}); !errors.Is(err, gen.ErrProcessUnknown) {
		t.Fatalf("inspect unknown: %v", err)
	}
}

func TestSendAfterAndCancel(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	pid, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	runIn(t, n, pid, func(p *probe) any {
		cancel, err := p.SendAfter(p.PID(), "cancelled", 200*time.Millisecond)
		if err != nil || !cancel() {
			t.Errorf("cancel: %v", err)
		}
		if _, err := p.SendAfter(p.PID(), "fired", 20*time.Millisecond); err != nil {
			t.Error(err)
		}
		if _, err := p.SendAfter(1.5, "x", time.Millisecond); !errors.Is(err, gen.ErrUnsupported) {
			t.Errorf("bad target: %v", err)
		}
		return nil
	})
	if v := recv(t, out); v != "fired" {
		t.Fatalf("got %v", v)
	}
	select {
	case v := <-out:
		t.Fatalf("cancelled message delivered: %v", v)
	case <-time.After(400 * time.Millisecond):
	}
}

// counter is a raw ProcessBehavior draining its mailbox by hand.
type counter struct {
	proc  gen.Process
	count *atomic.Int64
}

func (c *counter) ProcessInit(p gen.Process, args ...any) error {
	c.proc = p
	c.count = args[0].(*atomic.Int64)
	return nil
}

func (c *counter) ProcessRun() error {
	mb := c.proc.Mailbox()
	for {
		if c.proc.State() != gen.ProcessStateRunning {
			return gen.TerminateReasonKill
		}
		v, ok := mb.Main.Pop()
		if !ok {
			if v, ok = mb.System.Pop(); !ok {
				if v, ok = mb.Urgent.Pop(); !ok {
					return nil
				}
			}
		}
		c.count.Add(1)
		gen.ReleaseMailboxMessage(v.(*gen.MailboxMessage))
	}
}

func (c *counter) ProcessTerminate(reason error) {}
func (c *counter) ProcessKind() gen.ProcessKind  { return gen.ProcessKindCustom }

func TestMailboxNoLostWakeup(t *testing.T) {
	n := localNode(t)
	var count atomic.Int64
	pid, err := n.Spawn(func() gen.ProcessBehavior { return &counter{} }, gen.ProcessOptions{}, &count)
	if err != nil {
		t.Fatal(err)
	}
	const senders, each = 16, 5000
	var wg sync.WaitGroup
	for i := 0; i < senders; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < each; j++ {
				if err := n.SendWithPriority(pid, j, gen.MessagePriority(j%3)); err != nil {
					t.Error(err)
					return
				}
			}
		}(i)
	}
	wg.Wait()
	eventually(t, "all messages counted", func() bool { return count.Load() == senders*each })
	eventually(t, "process asleep", func() bool {
		st, _ := n.ProcessState(pid)
		return st == gen.ProcessStateSleep
	})
	if c := count.Load(); c != senders*each {
		t.Fatalf("count %d", c)
	}
}

func TestMonitorLinkLocal(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	watcher, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	target, _ := n.SpawnRegister("target", newProbe(make(chan any, 10)), gen.ProcessOptions{})

	res := runIn(t, n, watcher, func(p *probe) any {
		if err := p.Monitor(target); err != nil {
			return err
		}
		if err := p.Monitor(gen.Atom("target")); err != nil {
			return err
		}
		if err := p.Monitor(target); !errors.Is(err, gen.ErrTargetExist) {
			return err
		}
		unknown := gen.PID{Node: n.Name(), ID: 999999, Creation: n.Creation()}
		if err := p.Monitor(unknown); !errors.Is(err, gen.ErrProcessUnknown) {
			return err
		}
		if err := p.Monitor(gen.ProcessID{Name: "nobody", Node: n.Name()}); !errors.Is(err, gen.ErrProcessUnknown) {
			return err
		}
		if err := p.Monitor(1); !errors.Is(err, gen.ErrUnsupported) {
			return err
		}
		return nil
	})
	if res != nil {
		t.Fatal(res)
	}
	custom := errors.New("custom reason")
	n.Send(target, probeStop{custom})
	got := map[string]error{}
	for len(got) < 2 {
		switch m := recv(t, out).(type) {
		case gen.MessageDownPID:
			if m.PID != target {
				t.Fatalf("down pid %s", m.PID)
			}
			got["pid"] = m.Reason
		case gen.MessageDownProcessID:
			got["name"] = m.Reason
		default:
			t.Fatalf("unexpected %#v", m)
		}
	}
	if got["pid"] != custom || got["name"] != custom {
		t.Fatalf("reasons %v", got)
	}

	// links: exit kills a non-trapping actor; its monitor sees the reason
	linked, _ := n.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	victim, _ := n.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	runIn(t, n, watcher, func(p *probe) any { return p.Monitor(linked) })
	runIn(t, n, linked, func(p *probe) any { return p.Link(victim) })
	if err := n.Kill(victim); err != nil {
		t.Fatal(err)
	}
	down := recv(t, out).(gen.MessageDownPID)
	if down.PID != linked || !errors.Is(down.Reason, gen.TerminateReasonKill) {
		t.Fatalf("linked down: %#v", down)
	}
}

type panicky struct{ probe }

func (p *panicky) HandleMessage(from gen.PID, message any) error { panic("boom") }

func TestPanicAndExit(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	watcher, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	pp, _ := n.Spawn(func() gen.ProcessBehavior { return &panicky{probe{out: make(chan any, 10)}} }, gen.ProcessOptions{})
	runIn(t, n, watcher, func(p *probe) any { return p.Monitor(pp) })
	n.Send(pp, 1)
	if d := recv(t, out).(gen.MessageDownPID); d.Reason != gen.TerminateReasonPanic {
		t.Fatalf("panic down: %v", d.Reason)
	}
	victim, _ := n.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	runIn(t, n, watcher, func(p *probe) any { return p.Monitor(victim) })
	reason := errors.New("go away")
	if err := n.SendExit(victim, reason); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, out).(gen.MessageDownPID); d.Reason != reason {
		t.Fatalf("exit down: %v", d.Reason)
	}
}

func TestLoggerCapture(t *testing.T) {
	capture := &logCapture{}
	n := startNode(t, "log", gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log: gen.LogOptions{
			Level:   gen.LogLevelInfo,
			Loggers: []gen.Logger{{Name: "capture", Logger: capture}},
		},
	})
	pid, _ := n.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	runIn(t, n, pid, func(p *probe) any {
		p.Log().Debug("hidden debug")
		p.Log().Warning("visible %d", 7)
		return nil
	})
	if !capture.contains("warning: visible 7") || capture.contains("hidden debug") {
		t.Fatalf("lines: %v", capture.lines)
	}
	pid2, _ := n.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{LogLevel: gen.LogLevelDebug})
	runIn(t, n, pid2, func(p *probe) any { p.Log().Debug("debug shown"); return nil })
	if !capture.contains("debug: debug shown") {
		t.Fatalf("lines: %v", capture.lines)
	}
}
