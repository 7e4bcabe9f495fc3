package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// A node of a harness can run in a process of its own (harnessSpec.external),
// so that its crash is what a crash is in production: the OS process is
// killed, its connections drop, and it takes no CPU from the survivors
// while they fail over. A node of this process that is stopped instead
// (StopForce) terminates its thousands of processes on the same two cores
// the survivors need, during the very milliseconds that are measured.
//
// The child is this program (or test binary) again, with childEnv set: it
// starts the node with the lab's routes through the proxies, answers
// "ready", spawns its members when told "spawn" on stdin (so that a cold
// start spawns on every node at once) and answers "spawned", and then
// runs until it is killed or its stdin closes.

// childEnv carries the child's childSpec, as JSON.
const childEnv = "LEADER_PERF_CHILD"

// childSpec is what the child needs to be its node.
type childSpec struct {
	Name              gen.Atom
	Cookie            string
	Port              uint16
	Routes            map[gen.Atom]uint16
	Names             []gen.Atom // every node of the harness, for Bootstrap
	Groups            int
	DisableCoalescing bool
	SymmetricLoss     bool // Options.AssumeSymmetricConnectionLoss (-symmetric)
}

func init() {
	if spec, ok := os.LookupEnv(childEnv); ok {
		if err := runChild(spec, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "perf child: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// runChild is the child's whole life.
func runChild(encoded string, in io.Reader, out io.Writer) error {
	var spec childSpec
	if err := json.Unmarshal([]byte(encoded), &spec); err != nil {
		return err
	}
	h := &harness{
		spec:  harnessSpec{nodes: len(spec.Names), groups: spec.Groups, deferSpawn: true},
		rec:   newRecorder(false),
		names: spec.Names,
		logs:  &logSink{},
	}
	h.spec.options.DisableCoalescing = spec.DisableCoalescing
	h.spec.options.AssumeSymmetricConnectionLoss = spec.SymmetricLoss
	h.groups = groupsOf(spec.Groups)
	node, err := lab.StartRouted(spec.Name, h.nodeOptions(spec.Name), spec.Cookie, spec.Port, spec.Routes, h.setup)
	if err != nil {
		return err
	}
	defer node.StopForce()
	fmt.Fprintln(out, "ready")
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		if lines.Text() != "spawn" {
			continue
		}
		for _, g := range h.groups {
			if err := h.spawn(node, g); err != nil {
				return fmt.Errorf("spawn %s: %w", g.name, err)
			}
		}
		fmt.Fprintln(out, "spawned")
	}
	return nil // stdin closed: the harness is gone
}

// child is a node of the harness in a process of its own.
type child struct {
	name  gen.Atom
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
}

// startChild starts the node name in a process of its own and adopts it
// into the lab cluster once it is ready.
func (h *harness) startChild(name gen.Atom) (*child, error) {
	port, err := lab.FreePort()
	if err != nil {
		return nil, err
	}
	spec, err := json.Marshal(childSpec{
		Name: name, Cookie: perfCookie, Port: port, Routes: h.cl.ProxyPorts(name),
		Names: h.names, Groups: len(h.groups), DisableCoalescing: h.spec.options.DisableCoalescing,
		SymmetricLoss: h.spec.options.AssumeSymmetricConnectionLoss,
	})
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{name: name, cmd: cmd, in: in, lines: bufio.NewScanner(out)}
	if err := c.await("ready", 30*time.Second); err != nil {
		c.kill()
		return nil, fmt.Errorf("node %s in its own process: %w", name, err)
	}
	h.cl.Adopt(name, fmt.Sprintf("127.0.0.1:%d", port))
	return c, nil
}

// await waits for the child to say word.
func (c *child) await(word string, within time.Duration) error {
	got := make(chan error, 1)
	go func() {
		for c.lines.Scan() {
			if strings.TrimSpace(c.lines.Text()) == word {
				got <- nil
				return
			}
		}
		got <- errors.New("the process ended before it said " + word)
	}()
	select {
	case err := <-got:
		return err
	case <-time.After(within):
		return fmt.Errorf("no %q within %s", word, within)
	}
}

// spawn has the child spawn its members and waits until it has.
func (c *child) spawn() error {
	if _, err := fmt.Fprintln(c.in, "spawn"); err != nil {
		return err
	}
	return c.await("spawned", 5*time.Minute)
}

// kill ends the child's process with SIGKILL: a crash.
func (c *child) kill() {
	if c.cmd.Process != nil {
		c.cmd.Process.Kill()
		c.cmd.Wait()
	}
}
