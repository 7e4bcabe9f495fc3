package tests

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo"
	"ergo.services/ergo/act"
	"ergo.services/ergo/gen"
)

var nodeCounter atomic.Int64

// nodeName returns a node name unique across tests and test binaries.
func nodeName(prefix string) gen.Atom {
	return gen.Atom(fmt.Sprintf("%s-%d-%d@localhost", prefix, os.Getpid(), nodeCounter.Add(1)))
}

// logCapture is a LoggerBehavior that records formatted messages.
type logCapture struct {
	mu    sync.Mutex
	lines []string
}

func (l *logCapture) Log(m gen.MessageLog) {
	text := m.Format
	if len(m.Args) > 0 {
		text = fmt.Sprintf(m.Format, m.Args...)
	}
	l.mu.Lock()
	l.lines = append(l.lines, m.Level.String()+": "+text)
	l.mu.Unlock()
}

func (l *logCapture) Terminate() {}

func (l *logCapture) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

// startNode starts a node (network disabled unless opts says otherwise)
// stopped at cleanup.
func startNode(t testing.TB, prefix string, opts gen.NodeOptions) gen.Node {
	t.Helper()
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	opts.Log.DefaultLogger.Disable = true
	n, err := ergo.StartNode(nodeName(prefix), opts)
	if err != nil {
		t.Fatalf("start node: %s", err)
	}
	t.Cleanup(n.StopForce)
	return n
}

func localNode(t testing.TB) gen.Node {
	return startNode(t, "local", gen.NodeOptions{Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled}})
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// recv waits for a value on ch.
func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for a %T", *new(T))
	}
	var zero T
	return zero
}

// probe is an actor that forwards everything it gets to a channel and
// runs test-supplied functions on request.
type probe struct {
	act.Actor
	out chan any
}

type probeRun func(p *probe) any

type probeStop struct{ reason error }

func newProbe(out chan any) gen.ProcessFactory {
	return func() gen.ProcessBehavior { return &probe{out: out} }
}

func (p *probe) Init(args ...any) error {
	for _, a := range args {
		if fn, ok := a.(func(*probe) error); ok {
			if err := fn(p); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *probe) HandleMessage(from gen.PID, message any) error {
	switch m := message.(type) {
	case probeRun:
		p.out <- m(p)
		return nil
	case probeStop:
		return m.reason
	}
	p.out <- message
	return nil
}

func (p *probe) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	switch r := request.(type) {
	case probeRun:
		return runResult{r(p)}, nil
	case time.Duration:
		time.Sleep(r)
		return "slept", nil
	case string:
		if r == "later" {
			p.out <- ref
			return nil, nil
		}
	}
	return request, nil
}

func (p *probe) HandleInspect(from gen.PID, item ...string) map[string]string {
	return map[string]string{"items": strings.Join(item, ","), "name": string(p.Name())}
}

func (p *probe) Terminate(reason error) {
	select {
	case p.out <- terminated{p.PID(), reason}:
	default:
	}
}

// runResult wraps the result of a probeRun call (nil is a valid result).
type runResult struct{ v any }

type terminated struct {
	pid    gen.PID
	reason error
}

// runIn executes fn inside the process and returns its result.
func runIn(t testing.TB, n gen.Node, pid gen.PID, fn probeRun) any {
	t.Helper()
	v, err := n.Call(pid, fn)
	if err != nil {
		t.Fatalf("call %s: %s", pid, err)
	}
	return v.(runResult).v
}
