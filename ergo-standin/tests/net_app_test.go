package tests

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo/app"
	"ergo.services/ergo/gen"
	"go.uber.org/goleak"
)

func goleakOpts() []goleak.Option { return []goleak.Option{goleak.IgnoreCurrent()} }

// AppMsg is registered by the application spec, not by the test.
type AppMsg struct{ Value string }

const appMsgName = "#ergo.services/ergo/tests/AppMsg"

type netApp struct {
	app.Application
	out chan any
}

func (a *netApp) Load(args ...any) (gen.ApplicationSpec, error) {
	checkTypes := func(p *probe) error {
		if _, ok := p.Node().Network().LookupType(appMsgName); !ok {
			return fmt.Errorf("%s is not registered before spawn", appMsgName)
		}
		return nil
	}
	return gen.ApplicationSpec{
		Name:    "netapp",
		Network: gen.ApplicationNetwork{RegisterTypes: []any{AppMsg{}}},
		Group: []gen.ApplicationMemberSpec{
			{Name: "appmember", Factory: newProbe(a.out), Args: []any{checkTypes}},
		},
	}, nil
}

func TestApplicationRegistersTypes(t *testing.T) {
	a, b := pair(t)
	outB := make(chan any, 10)
	if _, ok := a.Network().LookupType(appMsgName); ok {
		t.Fatal("registered too early")
	}
	for _, n := range []gen.Node{a, b} {
		// The first load registers AppMsg for the whole OS process (one
		// registry per process, as in the framework); the second finds it.
		if _, err := n.ApplicationLoad(&netApp{out: outB}); err != nil {
			t.Fatal(err)
		}
		if _, ok := n.Network().LookupType(appMsgName); !ok {
			t.Fatal("not registered by ApplicationLoad")
		}
	}
	if err := b.ApplicationStart("netapp", gen.ApplicationOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(gen.ProcessID{Name: "appmember", Node: b.Name()}, AppMsg{Value: "hi"}); err != nil {
		t.Fatal(err)
	}
	if v := recv(t, outB); v != (AppMsg{Value: "hi"}) {
		t.Fatalf("got %#v", v)
	}
}

func BenchmarkRemoteSend(b *testing.B) {
	na, nb := pair(b)
	var count atomic.Int64
	target, err := nb.Spawn(func() gen.ProcessBehavior { return &counter{} }, gen.ProcessOptions{}, &count)
	if err != nil {
		b.Fatal(err)
	}
	if err := na.Send(target, Ping{}); err != nil { // connect
		b.Fatal(err)
	}
	eventually(b, "first message", func() bool { return count.Load() == 1 })
	msg := Ping{N: 1, Text: "benchmark"}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := na.Send(target, msg); err != nil {
			b.Fatal(err)
		}
	}
	eventually(b, "all delivered", func() bool { return count.Load() == int64(b.N)+1 })
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "msg/s")
}

func TestNetworkStopLeavesNoGoroutines(t *testing.T) {
	before := goleakOpts()
	a := netNode(t, "leak-a", testCookie)
	b := netNode(t, "leak-b", testCookie)
	routes(t, a, b)
	outB := make(chan any, 10)
	pb, _ := b.SpawnRegister("pb", newProbe(outB), gen.ProcessOptions{})
	_, out := watch(t, a, pb)
	if err := a.Send(pb, Ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	recv(t, outB)
	b.Stop()
	m := recv(t, out).(gen.MessageDownPID)
	if !errors.Is(m.Reason, gen.TerminateReasonShutdown) && !errors.Is(m.Reason, gen.ErrNoConnection) {
		t.Fatalf("graceful stop reason %v", m.Reason)
	}
	a.Stop()
	goleak.VerifyNone(t, before...)
}
