package tests

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

func TestInitCanActAndKind(t *testing.T) {
	n := localNode(t)
	out := make(chan any, 10)
	server, _ := n.Spawn(newProbe(out), gen.ProcessOptions{})
	initFn := func(p *probe) error {
		// as in the framework, a PID is registered only after its Init
		// succeeded, and a name is given to a registered PID: naming
		// itself in Init finds no process (SpawnRegister names it)
		if err := p.RegisterName("from-init"); !errors.Is(err, gen.ErrProcessUnknown) {
			return fmt.Errorf("register name in init: %v", err)
		}
		// as in the framework, links and monitors need the Running state
		if err := p.Monitor(server); !errors.Is(err, gen.ErrNotAllowed) {
			return fmt.Errorf("monitor in init: %v", err)
		}
		// as in the framework, a PID is registered only after its Init:
		// the answer to a Call made in Init finds no process, and the
		// Call times out
		if _, err := p.CallWithTimeout(server, "in init", 1); !errors.Is(err, gen.ErrTimeout) {
			return fmt.Errorf("call in init: %v", err)
		}
		if err := p.Send(p.PID(), "to itself"); err != nil {
			return fmt.Errorf("send to itself in init: %v", err)
		}
		if p.State() != gen.ProcessStateInit {
			return errors.New("not in init state")
		}
		return p.SetProcessKind("candidate")
	}
	self := make(chan any, 10)
	pid, err := n.SpawnRegister("from-init", newProbe(self), gen.ProcessOptions{}, initFn)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := n.ProcessPID("from-init"); got != pid {
		t.Fatalf("name registered by SpawnRegister: %s", got)
	}
	select {
	case m := <-self:
		if m != "to itself" {
			t.Fatalf("first message after init: %v, want the one it sent itself in Init", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the message it sent itself in Init never came")
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

// As in the framework, the PID of a process in Init is unknown to the node
// (only its name is registered): a message sent to it then, a SendAfter
// to itself firing then included, is refused and lost.
func TestAPIDIsUnknownUntilInitReturns(t *testing.T) {
	n := localNode(t)
	inInit := make(chan gen.PID)
	proceed := make(chan struct{})
	initFn := func(p *probe) error {
		inInit <- p.PID()
		<-proceed
		return nil
	}
	out := make(chan any, 10)
	spawned := make(chan error, 1)
	go func() {
		_, err := n.SpawnRegister("starting", newProbe(out), gen.ProcessOptions{}, initFn)
		spawned <- err
	}()
	pid := <-inInit
	if err := n.Send(pid, "early"); !errors.Is(err, gen.ErrProcessUnknown) {
		t.Errorf("send to the PID of a process in Init: %v, want %v", err, gen.ErrProcessUnknown)
	}
	if err := n.Send(gen.Atom("starting"), "by name"); err != nil {
		t.Errorf("send to the name of a process in Init: %v", err)
	}
	close(proceed)
	if err := <-spawned; err != nil {
		t.Fatal(err)
	}
	if err := n.Send(pid, "late"); err != nil {
		t.Fatalf("send after Init: %v", err)
	}
	for _, want := range []string{"by name", "late"} {
		select {
		case m := <-out:
			if m != want {
				t.Fatalf("got %v, want %q", m, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q never came", want)
		}
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
