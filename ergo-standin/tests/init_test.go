package tests

import (
	"errors"
	"fmt"
	"testing"

	"ergo.services/ergo/gen"
)

func TestInitCanActAndKind(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 10)
	server, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	initFn := func(p *probe) error {
		if err := p.RegisterName("from-init"); err != nil {
			return err
		}
		// as in the framework, links and monitors need the Running state
		if err := p.Monitor(server); !errors.Is(err, gen.ErrNotAllowed) {
			return fmt.Errorf("monitor in init: %v", err)
		}
		if _, err := p.Call(server, "in init"); err != nil {
			return err
		}
		if p.State() != gen.ProcessStateInit {
			return errors.New("not in init state")
		}
		return p.SetProcessKind("candidate")
	}
	pid, err := n.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{}, initFn)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := n.ProcessPID("from-init"); got != pid {
		t.Fatalf("name registered in init: %s", got)
	}
	info, err := n.ProcessInfo(pid)
	if err != nil || info.Kind != "candidate" || len(info.MonitorsPID) != 0 {
		t.Fatalf("info %+v %v", info, err)
	}
	if k := runIn(t, n, pid, func(p *probe) any { return p.SetProcessKind(gen.ProcessKindLeader) }); k != nil {
		t.Fatalf("set kind while running: %v", k)
	}

	failing := func(p *probe) error { return errors.New("init failed") }
	if _, err := n.SpawnRegister("broken", newProbe(out), gen.ProcessOptions{}, failing); err == nil {
		t.Fatal("spawn with a failing init succeeded")
	}
	if _, err := n.ProcessPID("broken"); err == nil {
		t.Fatal("failed process stays registered")
	}
	if _, err := n.SpawnRegister("from-init", newProbe(out), gen.ProcessOptions{}); !errors.Is(err, gen.ErrTaken) {
		t.Fatalf("duplicate name: %v", err)
	}
}

func TestKillSleepingProcess(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 10)
	pid, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	eventually(t, "sleep", func() bool {
		st, _ := n.ProcessState(pid)
		return st == gen.ProcessStateSleep
	})
	if err := n.Kill(pid); err != nil {
		t.Fatal(err)
	}
	term := recv(t, out).(terminated)
	if term.pid != pid || !errors.Is(term.reason, gen.TerminateReasonKill) {
		t.Fatalf("terminate %#v", term)
	}
	if err := n.Send(pid, 1); !errors.Is(err, gen.ErrProcessUnknown) {
		t.Fatalf("send to killed: %v", err)
	}
	if err := n.Kill(pid); err == nil {
		t.Fatal("second kill succeeded")
	}
}
