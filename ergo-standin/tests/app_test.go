package tests

import (
	"errors"
	"sync"
	"testing"
	"time"

	"ergo.services/ergo"
	"ergo.services/ergo/app"
	"ergo.services/ergo/gen"
	"go.uber.org/goleak"
)

type testApp struct {
	app.Application
	spec gen.ApplicationSpec

	mu         sync.Mutex
	terminated []error
}

func (a *testApp) Load(args ...any) (gen.ApplicationSpec, error) { return a.spec, nil }

func (a *testApp) Terminate(reason error) {
	a.mu.Lock()
	a.terminated = append(a.terminated, reason)
	a.mu.Unlock()
}

func (a *testApp) reasons() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]error(nil), a.terminated...)
}

func TestApplicationLifecycle(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	ta := &testApp{spec: gen.ApplicationSpec{
		Name: "myapp",
		Env:  map[gen.Env]any{"color": "blue"},
		Group: []gen.ApplicationMemberSpec{
			{Name: "first", Factory: newProbe(out)},
			{Name: "second", Factory: newProbe(out)},
		},
	}}
	name, err := n.ApplicationLoad(ta)
	if err != nil || name != "myapp" {
		t.Fatalf("load: %v %v", name, err)
	}
	if _, err := n.ApplicationLoad(&testApp{spec: ta.spec}); !errors.Is(err, gen.ErrTaken) {
		t.Fatalf("load twice: %v", err)
	}
	if err := n.ApplicationStart("myapp", gen.ApplicationOptions{}); err != nil {
		t.Fatal(err)
	}
	if ta.Name() != "myapp" || ta.State() != gen.ApplicationStateRunning {
		t.Fatalf("app view: %s %s", ta.Name(), ta.State())
	}
	first, err := n.ProcessPID("first")
	if err != nil {
		t.Fatal(err)
	}
	v := runIn(t, n, first, func(p *probe) any {
		color, _ := p.Env("COLOR")
		return []any{p.Application().Name(), color}
	}).([]any)
	if v[0] != gen.Atom("myapp") || v[1] != "blue" {
		t.Fatalf("member view: %v", v)
	}
	if err := n.ApplicationUnload("myapp"); !errors.Is(err, gen.ErrApplicationRunning) {
		t.Fatalf("unload running: %v", err)
	}
	if err := n.ApplicationStop("myapp"); err != nil {
		t.Fatal(err)
	}
	if _, err := n.ProcessPID("first"); err == nil {
		t.Fatal("member still alive")
	}
	eventually(t, "terminate callback", func() bool { return len(ta.reasons()) == 1 })
	if r := ta.reasons()[0]; !errors.Is(r, gen.TerminateReasonShutdown) {
		t.Fatalf("terminate reason %v", r)
	}
	if err := n.ApplicationUnload("myapp"); err != nil {
		t.Fatal(err)
	}
}

func TestApplicationTransient(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 100)
	ta := &testApp{spec: gen.ApplicationSpec{
		Name: "transient",
		Mode: gen.ApplicationModeTransient,
		Group: []gen.ApplicationMemberSpec{
			{Name: "t1", Factory: newProbe(out)},
			{Name: "t2", Factory: newProbe(out)},
		},
	}}
	if _, err := n.ApplicationLoad(ta); err != nil {
		t.Fatal(err)
	}
	if err := n.ApplicationStart("transient", gen.ApplicationOptions{}); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	n.Send(gen.Atom("t1"), probeStop{crash})
	eventually(t, "app stopped", func() bool { return ta.State() == gen.ApplicationStateLoaded })
	if _, err := n.ProcessPID("t2"); err == nil {
		t.Fatal("t2 still alive")
	}
	eventually(t, "terminate callback", func() bool { return len(ta.reasons()) == 1 })
	if r := ta.reasons()[0]; r != crash {
		t.Fatalf("reason %v", r)
	}
}

func TestStopLeavesNoGoroutines(t *testing.T) {
	n, err := ergo.StartNode(nodeName("leak"), gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan any, 1000)
	for i := 0; i < 50; i++ {
		pid, err := n.Spawn(newProbe(out), gen.ProcessOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Send(pid, i)
	}
	n.StopWithTimeout(5 * time.Second)
	if n.IsAlive() {
		t.Fatal("node alive after stop")
	}
	if err := n.WaitWithTimeout(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Spawn(newProbe(out), gen.ProcessOptions{}); !errors.Is(err, gen.ErrNodeTerminated) {
		t.Fatalf("spawn after stop: %v", err)
	}
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}
