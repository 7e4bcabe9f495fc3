package tests

import (
	"errors"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

func TestRemoteSendCall(t *testing.T) {
	a, b := pair(t)
	outA, outB := make(chan any, 100), make(chan any, 100)
	pa, _ := a.SpawnRegister("pa", newProbe(outA), gen.ProcessOptions{})
	pb, _ := b.SpawnRegister("pb", newProbe(outB), gen.ProcessOptions{})

	// node -> remote ProcessID and PID
	if err := a.Send(gen.ProcessID{Name: "pb", Node: b.Name()}, Ping{N: 1, Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if v := recv(t, outB); v != (Ping{N: 1, Text: "x"}) {
		t.Fatalf("got %#v", v)
	}
	if err := a.Send(pb, Pong{N: 2}); err != nil {
		t.Fatal(err)
	}
	if v := recv(t, outB); v != (Pong{N: 2}) {
		t.Fatalf("got %#v", v)
	}
	// process on b -> process on a, and calls both ways
	res := runIn(t, b, pb, func(p *probe) any {
		if err := p.Send(pa, Ping{N: 3}); err != nil {
			return err
		}
		return nil
	})
	if res != nil {
		t.Fatal(res)
	}
	if v := recv(t, outA); v != (Ping{N: 3}) {
		t.Fatalf("got %#v", v)
	}
	v, err := a.Call(pb, Ping{N: 4})
	if err != nil || v != (Ping{N: 4}) {
		t.Fatalf("call a->b: %#v %v", v, err)
	}
	v = runIn(t, b, pb, func(p *probe) any {
		r, err := p.Call(gen.ProcessID{Name: "pa", Node: a.Name()}, Pong{N: 5})
		if err != nil {
			return err
		}
		return r
	})
	if v != (Pong{N: 5}) {
		t.Fatalf("call b->a: %#v", v)
	}
	// remote call timeout
	if _, err := a.CallWithTimeout(pb, 2*time.Second, 1); !errors.Is(err, gen.ErrTimeout) {
		t.Fatalf("remote call timeout: %v", err)
	}
	// stale PID
	stale := pb
	stale.Creation--
	if err := a.Send(stale, Ping{}); !errors.Is(err, gen.ErrProcessIncarnation) {
		t.Fatalf("stale pid: %v", err)
	}
}

func TestRemoteUnregisteredType(t *testing.T) {
	a, b := pair(t)
	outB := make(chan any, 10)
	pb, _ := b.Spawn(newProbe(outB), gen.ProcessOptions{})
	if err := a.Send(pb, NotRegistered{X: 1}); err == nil {
		t.Fatal("send of an unregistered type succeeded")
	}
	if _, err := a.Call(pb, NotRegistered{X: 1}); err == nil {
		t.Fatal("call with an unregistered type succeeded")
	}
	// the connection is still usable
	if err := a.Send(pb, Ping{N: 9}); err != nil {
		t.Fatal(err)
	}
	if v := recv(t, outB); v != (Ping{N: 9}) {
		t.Fatalf("got %#v", v)
	}
}

func TestWrongCookie(t *testing.T) {
	a := netNode(t, "a", testCookie)
	b := netNode(t, "b", "other-cookie")
	routes(t, a, b)
	outB := make(chan any, 10)
	b.SpawnRegister("pb", newProbe(outB), gen.ProcessOptions{})
	err := a.Send(gen.ProcessID{Name: "pb", Node: b.Name()}, Ping{})
	if !errors.Is(err, gen.ErrNoRoute) {
		t.Fatalf("want ErrNoRoute, got %v", err)
	}
	if _, err := a.Network().Node(b.Name()); err == nil {
		t.Fatal("connection exists")
	}
	if _, err := b.Network().Node(a.Name()); err == nil {
		t.Fatal("reverse connection exists")
	}
	select {
	case v := <-outB:
		t.Fatalf("delivered: %#v", v)
	case <-time.After(200 * time.Millisecond):
	}
}

// watch spawns a probe on n that monitors (or links, for a trapping probe)
// the given targets.
func watch(t testing.TB, n gen.Node, targets ...any) (gen.PID, chan any) {
	t.Helper()
	out := make(chan any, 100)
	pid, err := n.Spawn(newProbe(out), gen.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range targets {
		res := runIn(t, n, pid, func(p *probe) any {
			if node, ok := target.(gen.Atom); ok {
				return p.MonitorNode(node)
			}
			return p.Monitor(target)
		})
		if res != nil {
			t.Fatalf("monitor %v: %v", target, res)
		}
	}
	return pid, out
}

// StopForce kills the (sleeping) processes before the connections drop:
// remote monitors of a process see it killed, node monitors the node down.
func TestRemoteMonitorStopForce(t *testing.T) {
	a, b := pair(t)
	pb, _ := b.SpawnRegister("pb", newProbe(make(chan any, 10)), gen.ProcessOptions{})
	_, out := watch(t, a, pb, gen.ProcessID{Name: "pb", Node: b.Name()}, b.Name())
	b.StopForce()
	seen := map[string]bool{}
	for len(seen) < 3 {
		switch m := recv(t, out).(type) {
		case gen.MessageDownPID:
			if m.PID != pb || !errors.Is(m.Reason, gen.TerminateReasonKill) {
				t.Fatalf("down pid %#v", m)
			}
			seen["pid"] = true
		case gen.MessageDownProcessID:
			if m.ProcessID.Name != "pb" || !errors.Is(m.Reason, gen.TerminateReasonKill) {
				t.Fatalf("down name %#v", m)
			}
			seen["name"] = true
		case gen.MessageDownNode:
			if m.Name != b.Name() {
				t.Fatalf("down node %#v", m)
			}
			seen["node"] = true
		default:
			t.Fatalf("unexpected %#v", m)
		}
	}
}

func TestRemoteExitReason(t *testing.T) {
	a, b := pair(t)
	custom := errors.New("custom remote reason")
	for _, n := range []gen.Node{a, b} {
		// one registry per OS process: the second node finds it taken
		if err := n.Network().RegisterError(custom); err != nil && !errors.Is(err, gen.ErrTaken) {
			t.Fatal(err)
		}
	}
	pb, _ := b.SpawnRegister("pb", newProbe(make(chan any, 10)), gen.ProcessOptions{})
	_, out := watch(t, a, pb, gen.ProcessID{Name: "pb", Node: b.Name()})
	b.Send(pb, probeStop{custom})
	for i := 0; i < 2; i++ {
		switch m := recv(t, out).(type) {
		case gen.MessageDownPID:
			if m.PID != pb || !errors.Is(m.Reason, custom) {
				t.Fatalf("down pid %#v", m)
			}
		case gen.MessageDownProcessID:
			if !errors.Is(m.Reason, custom) {
				t.Fatalf("down name %#v", m)
			}
		default:
			t.Fatalf("unexpected %#v", m)
		}
	}
	// kill
	pk, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	_, out = watch(t, a, pk)
	b.Kill(pk)
	if m := recv(t, out).(gen.MessageDownPID); !errors.Is(m.Reason, gen.TerminateReasonKill) {
		t.Fatalf("kill reason %v", m.Reason)
	}
}

func TestRemoteMonitorUnknown(t *testing.T) {
	a, b := pair(t)
	pid, _ := a.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	unknownPID := gen.PID{Node: b.Name(), ID: 99999, Creation: b.Creation()}
	res := runIn(t, a, pid, func(p *probe) any {
		return []error{
			p.Monitor(unknownPID),
			p.Monitor(gen.ProcessID{Name: "nobody", Node: b.Name()}),
			p.Link(unknownPID),
		}
	}).([]error)
	for i, err := range res {
		if !errors.Is(err, gen.ErrProcessUnknown) {
			t.Fatalf("%d: want ErrProcessUnknown, got %v", i, err)
		}
	}
}

func TestRemoteDisconnect(t *testing.T) {
	a, b := pair(t)
	pb, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	_, out := watch(t, a, pb, b.Name())
	rn, err := a.Network().Node(b.Name())
	if err != nil {
		t.Fatal(err)
	}
	rn.Disconnect()
	for i := 0; i < 2; i++ {
		switch m := recv(t, out).(type) {
		case gen.MessageDownPID:
			if !errors.Is(m.Reason, gen.ErrNoConnection) {
				t.Fatalf("reason %v", m.Reason)
			}
		case gen.MessageDownNode:
		default:
			t.Fatalf("unexpected %#v", m)
		}
	}
	eventually(t, "disconnected", func() bool {
		_, err := a.Network().Node(b.Name())
		return err != nil
	})
	// b forgot the remote monitor: a reconnects, and b's process dying
	// later must not produce a stale down
	if err := a.Send(pb, Ping{}); err != nil {
		t.Fatal(err)
	}
	b.Kill(pb)
	select {
	case m := <-out:
		t.Fatalf("stale down %#v", m)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestRemoteLinkAndSendExit(t *testing.T) {
	a, b := pair(t)
	pb, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	linked, _ := a.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	_, out := watch(t, a, linked)
	if res := runIn(t, a, linked, func(p *probe) any { return p.Link(pb) }); res != nil {
		t.Fatal(res)
	}
	b.Send(pb, probeStop{gen.TerminateReasonShutdown})
	if m := recv(t, out).(gen.MessageDownPID); m.PID != linked || !errors.Is(m.Reason, gen.TerminateReasonShutdown) {
		t.Fatalf("linked down %#v", m)
	}
	// SendExit across nodes
	victim, _ := b.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	_, out = watch(t, b, victim)
	if err := a.SendExit(victim, gen.TerminateReasonNormal); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, out).(gen.MessageDownPID); !errors.Is(m.Reason, gen.TerminateReasonNormal) {
		t.Fatalf("exit down %#v", m)
	}
}
