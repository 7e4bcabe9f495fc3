package netstack

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// The child side of TestRegistrarAcrossProcesses: this test binary started
// again with NETSTACK_CHILD set. It runs one node on the built-in registrar,
// echoes every frame back to its sender, and obeys "send <node>" lines.
func runChild() bool {
	name := os.Getenv("NETSTACK_CHILD")
	if name == "" {
		return false
	}
	h := newRecorder()
	s, err := Start(Options{Name: gen.Atom(name), Creation: 1, Network: gen.NetworkOptions{Cookie: "secret"}, Handler: h})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	h.onFrame = func(peer gen.Atom, f Frame) {
		go s.SendFrame(peer, Frame{Kind: FrameSend, Message: fmt.Sprintf("echo %v", f.Message)})
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if peer, ok := strings.CutPrefix(in.Text(), "send "); ok {
			err := s.SendFrame(gen.Atom(peer), Frame{Kind: FrameSend, Message: "hello from the child"})
			fmt.Println("sent", err)
		}
	}
	s.Stop()
	return true
}

func TestRegistrarAcrossProcesses(t *testing.T) {
	childName := uniqueName("child")
	cmd := exec.Command(os.Args[0])
	// GORACE: a -race child would otherwise sleep 1 s at exit
	cmd.Env = append(os.Environ(), "NETSTACK_CHILD="+string(childName), "GORACE=atexit_sleep_ms=0")
	cmd.Stderr = os.Stderr
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
		stdin.Close() // the child stops when its stdin closes
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("child: %q", lines.Text())
	}

	// the child finds us by name alone
	p1 := startNode(t, "p1")
	fmt.Fprintln(stdin, "send "+string(p1.name))
	if !lines.Scan() || lines.Text() != "sent <nil>" {
		t.Fatalf("child send: %q", lines.Text())
	}
	eventually(t, "the child's frame", func() bool { return p1.rec.count() == 1 })

	// and we find the child by name alone
	p2 := startNode(t, "p2")
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := p2.SendFrame(childName, Frame{Kind: FrameSend, Message: "ping"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cannot reach the child by name: %v", err)
		}
		time.Sleep(20 * time.Millisecond) // the registrar may be failing over
	}
	eventually(t, "the echo", func() bool { return p2.rec.count() == 1 })
	if got := p2.rec.frame(0).frame.Message; got != "echo ping" {
		t.Errorf("echo: %v", got)
	}
}
