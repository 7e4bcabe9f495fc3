package tests

// Behaviour of ergo v3.3.0 (v1.999.330) the stand-in reproduces: idempotent
// network registration, the graceful stop on SIGTERM, the shutdown order,
// the embedded registrar's Nodes and Event, and the node creation.

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ergo.services/ergo"
	"ergo.services/ergo/act"
	"ergo.services/ergo/app"
	"ergo.services/ergo/gen"
)

// V330Item and V330Order refer to each other's registration order only
// through the batch.
type V330Order struct {
	Items []V330Item
}

type V330Item struct{ N int }

var errV330 = errors.New("v330 registered error")

// Registering the same types, errors and atoms on three nodes of one
// process succeeds on every node (v3.3.0 node/network.go treats
// gen.ErrTaken as success), and the types then travel between them.
func TestRegisterOnEveryNodeOfTheProcess(t *testing.T) {
	nodes := []gen.Node{netNode(t, "reg1", testCookie), netNode(t, "reg2", testCookie), netNode(t, "reg3", testCookie)}
	routes(t, nodes...)
	for i, n := range nodes {
		nw := n.Network()
		if err := nw.RegisterTypes([]any{V330Order{}, V330Item{}}); err != nil {
			t.Fatalf("node %d RegisterTypes: %v", i, err)
		}
		if err := nw.RegisterType(V330Item{}); err != nil {
			t.Fatalf("node %d RegisterType: %v", i, err)
		}
		if err := nw.RegisterErrors([]error{errV330}); err != nil {
			t.Fatalf("node %d RegisterErrors: %v", i, err)
		}
		if err := nw.RegisterError(errV330); err != nil {
			t.Fatalf("node %d RegisterError: %v", i, err)
		}
		if err := nw.RegisterAtom("v330-atom"); err != nil {
			t.Fatalf("node %d RegisterAtom: %v", i, err)
		}
	}
	// still refused: what cannot be registered at all
	if err := nodes[0].Network().RegisterType(&V330Item{}); err == nil {
		t.Fatal("a pointer registered")
	}
	out := make(chan any, 10)
	pid, err := nodes[2].Spawn(newProbe(out), gen.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := nodes[1].Send(pid, V330Order{Items: []V330Item{{N: 7}}}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, out); fmt.Sprint(got) != fmt.Sprint(V330Order{Items: []V330Item{{N: 7}}}) {
		t.Fatalf("got %#v", got)
	}
}

// An application of the same spec (with Network registrations) starts on
// three nodes of one process.
func TestApplicationNetworkOnThreeNodes(t *testing.T) {
	for i := range 3 {
		ta := &testApp{spec: gen.ApplicationSpec{
			Name:  "v330app",
			Group: []gen.ApplicationMemberSpec{{Name: "member", Factory: newProbe(make(chan any, 10))}},
			Network: gen.ApplicationNetwork{
				RegisterTypes:  []any{V330Order{}, V330Item{}},
				RegisterErrors: []error{errV330},
				RegisterAtoms:  []gen.Atom{"v330-atom"},
			},
		}}
		n := startNode(t, fmt.Sprintf("app%d", i), gen.NodeOptions{
			Applications: []gen.ApplicationBehavior{ta},
			Network:      gen.NetworkOptions{Cookie: testCookie, Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1"}}},
		})
		if !slices.Contains(n.ApplicationsRunning(), "v330app") {
			t.Fatalf("node %d: application not running", i)
		}
	}
}

// lastWords sends a message to a process on another node from its
// Terminate, after a pause.
type lastWords struct {
	act.Actor
	to gen.ProcessID
}

func (l *lastWords) Init(args ...any) error { return nil }

func (l *lastWords) Terminate(reason error) {
	time.Sleep(200 * time.Millisecond)
	l.Send(l.to, fmt.Sprintf("process: shutdown %t", errors.Is(reason, gen.TerminateReasonShutdown)))
}

type lastWordsApp struct {
	app.Application
	node gen.Node
	to   gen.ProcessID
	spec gen.ApplicationSpec
}

func (a *lastWordsApp) Load(args ...any) (gen.ApplicationSpec, error) { return a.spec, nil }

func (a *lastWordsApp) Terminate(reason error) {
	time.Sleep(100 * time.Millisecond)
	a.node.Send(a.to, fmt.Sprintf("application: shutdown %t", errors.Is(reason, gen.TerminateReasonShutdown)))
}

// Stop waits for every ProcessTerminate and every application's Terminate
// before the network goes down (v3.3.0): what they send to other nodes
// still arrives.
func TestStopWaitsForTerminateBeforeTheNetwork(t *testing.T) {
	a, b := pair(t)
	out := make(chan any, 10)
	if _, err := b.SpawnRegister("listener", newProbe(out), gen.ProcessOptions{}); err != nil {
		t.Fatal(err)
	}
	to := gen.ProcessID{Name: "listener", Node: b.Name()}
	if err := a.Send(to, "hello"); err != nil { // connect first
		t.Fatal(err)
	}
	if got := recv(t, out); got != "hello" {
		t.Fatalf("got %v", got)
	}
	la := &lastWordsApp{node: a, to: to, spec: gen.ApplicationSpec{
		Name: "lastwords",
		Group: []gen.ApplicationMemberSpec{{Name: "member", Factory: func() gen.ProcessBehavior {
			return &lastWords{to: to}
		}}},
	}}
	if _, err := a.ApplicationLoad(la); err != nil {
		t.Fatal(err)
	}
	if err := a.ApplicationStart("lastwords", gen.ApplicationOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Spawn(func() gen.ProcessBehavior { return &lastWords{to: to} }, gen.ProcessOptions{}); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	var got []string
	for len(got) < 3 {
		got = append(got, recv(t, out).(string))
	}
	slices.Sort(got)
	want := []string{"application: shutdown true", "process: shutdown true", "process: shutdown true"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// The child of the SIGTERM tests: a node with an application and a
// process that print their termination, then "stopped" once Wait returns.
// With V330_SIGNAL_CHILD=keep it turns the node's handling off and takes
// SIGTERM itself.
func runSignalChild(mode string) {
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		fmt.Printf(format+"\n", args...)
		mu.Unlock()
	}
	logs := &printLogger{say: say}
	ta := &printApp{say: say, spec: gen.ApplicationSpec{
		Name:  "signalapp",
		Group: []gen.ApplicationMemberSpec{{Name: "member", Factory: func() gen.ProcessBehavior { return &printActor{say: say, name: "member"} }}},
	}}
	n, err := ergo.StartNode(gen.Atom(fmt.Sprintf("signal-%d@localhost", os.Getpid())), gen.NodeOptions{
		Applications: []gen.ApplicationBehavior{ta},
		Network:      gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:          gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}, Loggers: []gen.Logger{{Name: "print", Logger: logs}}},
	})
	if err != nil {
		say("error %s", err)
		os.Exit(2)
	}
	if _, err := n.Spawn(func() gen.ProcessBehavior { return &printActor{say: say, name: "spawned"} }, gen.ProcessOptions{}); err != nil {
		say("error %s", err)
		os.Exit(2)
	}
	if mode == "keep" {
		n.SetCTRLC(false)
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM)
		say("ready")
		<-ch
		say("program got the signal; node alive %t", n.IsAlive())
		n.Stop()
		return
	}
	say("ready")
	n.Wait()
	say("stopped")
}

type printLogger struct{ say func(string, ...any) }

func (l *printLogger) Log(m gen.MessageLog) {
	if strings.Contains(m.Format, "graceful") {
		l.say("log: "+m.Format, m.Args...)
	}
}
func (l *printLogger) Terminate() {}

type printActor struct {
	act.Actor
	say  func(string, ...any)
	name string
}

func (p *printActor) Init(args ...any) error { return nil }

func (p *printActor) Terminate(reason error) {
	time.Sleep(50 * time.Millisecond)
	p.say("process %s terminated: shutdown %t", p.name, errors.Is(reason, gen.TerminateReasonShutdown))
}

type printApp struct {
	app.Application
	say  func(string, ...any)
	spec gen.ApplicationSpec
}

func (a *printApp) Load(args ...any) (gen.ApplicationSpec, error) { return a.spec, nil }
func (a *printApp) Terminate(reason error) {
	a.say("application terminated: shutdown %t", errors.Is(reason, gen.TerminateReasonShutdown))
}

// signalChild starts this test binary as the child of runSignalChild,
// waits for "ready", sends it SIGTERM and returns its output once it has
// exited.
func signalChild(t *testing.T, mode string) []string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM to send on windows")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "V330_SIGNAL_CHILD="+mode, "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var out []string
	timeout := time.After(20 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("child ended before ready: %q", out)
			}
			out = append(out, l)
			ready = l == "ready"
		case <-timeout:
			cmd.Process.Kill()
			t.Fatal("child not ready")
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			out = append(out, l)
		case <-timeout:
			cmd.Process.Kill()
			t.Fatalf("child did not exit after SIGTERM: %q", out)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v; output %q", err, out)
	}
	return out
}

// ergo.StartNode handles SIGTERM (v3.3.0: node.Start calls SetCTRLC(true)):
// it logs the graceful shutdown and stops the node with Stop, so every
// process terminates with TerminateReasonShutdown and the application's
// Terminate runs; then Wait returns and the program exits normally.
func TestSIGTERMStopsTheNodeGracefully(t *testing.T) {
	out := signalChild(t, "stop")
	idx := func(prefix string) int {
		for i, l := range out {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no %q in the child's output %q", prefix, out)
		return -1
	}
	logged := idx("log: node 'signal-")
	if !strings.Contains(out[logged], "is starting a graceful shutdown...") {
		t.Errorf("log line %q", out[logged])
	}
	member := idx("process member terminated: shutdown true")
	spawned := idx("process spawned terminated: shutdown true")
	application := idx("application terminated: shutdown true")
	stopped := idx("stopped")
	if logged > member || logged > spawned || member > application || application > stopped || spawned > stopped {
		t.Errorf("order: %q", out)
	}
}

// SetCTRLC(false) gives SIGTERM back to the program: the node keeps running.
func TestSetCTRLCFalseKeepsTheSignal(t *testing.T) {
	out := signalChild(t, "keep")
	if !slices.Contains(out, "program got the signal; node alive true") {
		t.Fatalf("child output %q", out)
	}
	for _, l := range out {
		if strings.HasPrefix(l, "log: ") {
			t.Fatalf("the node handled the signal: %q", out)
		}
	}
}

// eventProbe forwards the events it gets to out.
type eventProbe struct {
	probe
}

func (p *eventProbe) HandleEvent(m gen.MessageEvent) error {
	p.out <- m.Message
	return nil
}

// registrarNode starts a node on the built-in registrar, resolved by name.
func registrarNode(t *testing.T, prefix string) gen.Node {
	t.Helper()
	return startNode(t, prefix, gen.NodeOptions{Network: gen.NetworkOptions{Cookie: testCookie}})
}

// subscribeRegistrar monitors the registrar event of n from a new process whose
// events go to the returned channel.
func subscribeRegistrar(t *testing.T, n gen.Node) chan any {
	t.Helper()
	reg, err := n.Network().Registrar()
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Info().SupportEvent {
		t.Fatal("the registrar does not report SupportEvent")
	}
	ev, err := reg.Event()
	if err != nil {
		t.Fatalf("Event: %v", err)
	}
	if again, err := reg.Event(); err != nil || again != ev {
		t.Fatalf("second Event: %v %v", again, err)
	}
	out := make(chan any, 100)
	pid, err := n.Spawn(func() gen.ProcessBehavior { return &eventProbe{probe{out: out}} }, gen.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := n.Call(pid, probeRun(func(p *probe) any {
		_, err := p.MonitorEvent(ev)
		return err
	}))
	if err != nil || v.(runResult).v != nil {
		t.Fatalf("MonitorEvent: %v %v", v, err)
	}
	return out
}

// awaitNode waits on out for the registrar message about name.
func awaitNode(t *testing.T, out chan any, name gen.Atom, joined bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case m := <-out:
			switch m := m.(type) {
			case gen.MessageRegistrarNodeJoined:
				if joined && m.Name == name {
					return
				}
			case gen.MessageRegistrarNodeLeft:
				if !joined && m.Name == name {
					return
				}
			}
		case <-deadline:
			t.Fatalf("no joined=%t for %s", joined, name)
		}
	}
}

// The embedded registrar lists the other nodes of the host (Nodes) and
// publishes their arrival and departure (Event), v3.3.0.
func TestRegistrarNodesAndEvent(t *testing.T) {
	nodes := []gen.Node{registrarNode(t, "esrd1"), registrarNode(t, "esrd2"), registrarNode(t, "esrd3")}
	for _, n := range nodes {
		reg, err := n.Network().Registrar()
		if err != nil {
			t.Fatal(err)
		}
		list, err := reg.Nodes()
		if err != nil {
			t.Fatalf("Nodes: %v", err)
		}
		if slices.Contains(list, n.Name()) {
			t.Errorf("%s lists itself: %v", n.Name(), list)
		}
		for _, other := range nodes {
			if other != n && !slices.Contains(list, other.Name()) {
				t.Errorf("%s does not list %s: %v", n.Name(), other.Name(), list)
			}
		}
		if !slices.IsSorted(list) {
			t.Errorf("not sorted: %v", list)
		}
	}
	subs := make([]chan any, len(nodes))
	for i, n := range nodes {
		subs[i] = subscribeRegistrar(t, n)
	}
	late, err := ergo.StartNode(nodeName("esrd4"), gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: testCookie},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range subs {
		awaitNode(t, out, late.Name(), true)
	}
	reg, _ := nodes[0].Network().Registrar()
	if list, _ := reg.Nodes(); !slices.Contains(list, late.Name()) {
		t.Errorf("the new node is not listed: %v", list)
	}
	late.Stop()
	for _, out := range subs {
		awaitNode(t, out, late.Name(), false)
	}
	if list, _ := reg.Nodes(); slices.Contains(list, late.Name()) {
		t.Errorf("the stopped node is still listed: %v", list)
	}
}

// A node's creation is its start time in seconds (framework node.Start):
// nodes started within one second share it, also two starts of one name.
func TestCreationIsTheStartSecond(t *testing.T) {
	for {
		before := time.Now()
		name := nodeName("creation")
		opts := gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
			Log: gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}}}
		first, err := ergo.StartNode(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		c1 := first.Creation()
		first.StopForce()
		second, err := ergo.StartNode(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		c2 := second.Creation()
		pid := second.PID()
		second.StopForce()
		after := time.Now()
		if first.Creation() != 0 || second.Creation() != 0 {
			// framework Stop: the creation is cleared after NetworkStop
			t.Fatalf("stopped nodes report creations %d and %d, want 0", first.Creation(), second.Creation())
		}
		if c1 < before.Unix() || c2 > after.Unix() || pid.Creation != c2 {
			t.Fatalf("creations %d %d outside [%d, %d] (pid %s)", c1, c2, before.Unix(), after.Unix(), pid)
		}
		if before.Unix() != after.Unix() {
			continue // crossed a second boundary: try again
		}
		if c1 != c2 {
			t.Fatalf("two starts within one second: creations %d and %d", c1, c2)
		}
		return
	}
}

// spawnsOnTheWayOut spawns a process from its ProcessTerminate, as a
// library might that restarts a helper it lost, and reports what the node
// said.
type spawnsOnTheWayOut struct {
	act.Actor
	out chan any
}

func (s *spawnsOnTheWayOut) Init(args ...any) error {
	s.out = args[0].(chan any)
	return nil
}

func (s *spawnsOnTheWayOut) Terminate(reason error) {
	_, err := s.Node().Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{})
	s.out <- fmt.Sprintf("alive %t, spawn error %v", s.Node().IsAlive(), err)
}

type idle struct{ act.Actor }

func (*idle) Init(args ...any) error { return nil }

// A node stays alive through a graceful Stop until its network is down
// (v3.3.0 clears the creation only after NetworkStop): IsAlive is true in
// a ProcessTerminate and a Spawn there succeeds. The process spawned then
// got no exit, so Stop waits for it until ShutdownTimeout and kills it, as
// the framework does when its shutdown timeout expires.
func TestAStoppingNodeIsAliveUntilItsNetworkIsDown(t *testing.T) {
	const timeout = 300 * time.Millisecond
	n := startNode(t, "alive", gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}, ShutdownTimeout: timeout})
	out := make(chan any, 1)
	if _, err := n.Spawn(func() gen.ProcessBehavior { return &spawnsOnTheWayOut{} }, gen.ProcessOptions{}, out); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n.Stop()
	took := time.Since(start)
	if got := recv(t, out); got != "alive true, spawn error <nil>" {
		t.Fatalf("in ProcessTerminate during Stop: %v", got)
	}
	if took < timeout {
		t.Fatalf("Stop returned after %s, before ShutdownTimeout (%s), with a process spawned after its exits still running", took, timeout)
	}
	if n.IsAlive() {
		t.Fatal("IsAlive is true after Stop returned")
	}
	if _, err := n.Spawn(func() gen.ProcessBehavior { return &idle{} }, gen.ProcessOptions{}); !errors.Is(err, gen.ErrNodeTerminated) {
		t.Fatalf("Spawn after Stop: %v, want ErrNodeTerminated", err)
	}
}
