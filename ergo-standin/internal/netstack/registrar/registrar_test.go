package registrar

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// freePort finds a port free for both TCP and UDP on loopback, so the tests
// never touch the shared registrar port 4499.
func freePort(t *testing.T) uint16 {
	t.Helper()
	for i := 0; i < 50; i++ {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		pc, err := net.ListenPacket("udp4", ":"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		pc.Close()
		return uint16(port)
	}
	t.Fatal("no free port")
	return 0
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func resolves(r *Registrar, name string, port uint16) bool {
	p, err := r.Resolve(name)
	return err == nil && p == port
}

func start(port uint16, name string, acceptor uint16) *Registrar {
	return Start(Config{Name: name, Port: acceptor, Register: true, ServerPort: port})
}

func TestResolveAndFailover(t *testing.T) {
	port := freePort(t)
	a := start(port, "a@localhost", 1001)
	b := start(port, "b@localhost", 1002)
	c := start(port, "c@localhost", 1003)
	defer b.Stop()
	defer c.Stop()
	if !a.IsServer() || b.IsServer() || c.IsServer() {
		t.Fatal("the first registrar must host the server")
	}
	for _, r := range []*Registrar{a, b, c} {
		for name, p := range map[string]uint16{"a@localhost": 1001, "b@localhost": 1002, "c@localhost": 1003} {
			if !resolves(r, name, p) {
				t.Fatalf("%s not resolved", name)
			}
		}
	}
	if _, err := b.Resolve("nobody@localhost"); err != ErrNotFound {
		t.Fatalf("unknown name: %v", err)
	}
	hidden := Start(Config{Name: "h@localhost", ServerPort: port})
	defer hidden.Stop()
	if !resolves(hidden, "c@localhost", 1003) {
		t.Fatal("hidden registrar cannot resolve")
	}

	a.Stop()
	waitFor(t, "a new server", func() bool { return b.IsServer() || c.IsServer() })
	waitFor(t, "re-registration", func() bool {
		return resolves(hidden, "b@localhost", 1002) && resolves(hidden, "c@localhost", 1003) &&
			resolves(b, "c@localhost", 1003) && resolves(c, "b@localhost", 1002)
	})
	if _, err := hidden.Resolve("a@localhost"); err != ErrNotFound {
		t.Fatalf("stopped node still resolves: %v", err)
	}
}

func TestNameTaken(t *testing.T) {
	port := freePort(t)
	srv := start(port, "srv@localhost", 1)
	defer srv.Stop()
	first := start(port, "dup@localhost", 2)
	second := start(port, "dup@localhost", 3)
	defer second.Stop()
	if !resolves(srv, "dup@localhost", 2) {
		t.Fatal("first registration lost")
	}
	first.Stop()
	waitFor(t, "the second registration", func() bool { return resolves(srv, "dup@localhost", 3) })
}

// TestCrossProcess runs a registrar in a child process (this test binary
// re-executed) and checks name resolution and failover between processes.
func TestCrossProcess(t *testing.T) {
	if os.Getenv("REGISTRAR_CHILD_PORT") != "" {
		t.Skip("child process")
	}
	port := freePort(t)
	parent := start(port, "parent@localhost", 2001)
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildProcess$")
	cmd.Env = append(os.Environ(), "REGISTRAR_CHILD_PORT="+strconv.Itoa(int(port)))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the child exits when its stdin closes
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("child: %q %v", lines.Text(), lines.Err())
	}
	if !resolves(parent, "child@localhost", 2002) {
		t.Fatal("child not resolved by the server process")
	}
	parent.Stop() // the child must take the server over
	probe := Start(Config{Name: "probe@localhost", ServerPort: port})
	waitFor(t, "the child to take over", func() bool { return resolves(probe, "child@localhost", 2002) })
	again := start(port, "again@localhost", 2003)
	defer again.Stop()
	if again.IsServer() || !resolves(again, "child@localhost", 2002) {
		t.Fatal("the child process does not serve")
	}
	fmt.Fprintln(stdin, "resolve again@localhost")
	if !lines.Scan() || lines.Text() != "2003" {
		t.Fatalf("child resolved %q", lines.Text())
	}
}

// TestChildProcess is the child side of TestCrossProcess.
func TestChildProcess(t *testing.T) {
	env := os.Getenv("REGISTRAR_CHILD_PORT")
	if env == "" {
		t.Skip("only runs as the child of TestCrossProcess")
	}
	port, _ := strconv.Atoi(env)
	r := start(uint16(port), "child@localhost", 2002)
	defer r.Stop()
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var name string
		fmt.Sscanf(in.Text(), "resolve %s", &name)
		p, err := r.Resolve(name)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(p)
	}
}
