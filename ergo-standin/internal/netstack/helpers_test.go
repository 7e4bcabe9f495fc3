package netstack

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// received is one frame handed to the Handler.
type received struct {
	peer     gen.Atom
	creation int64
	frame    Frame
}

// recorder is a Handler that records everything.
type recorder struct {
	mu           sync.Mutex
	frames       []received
	events       []string // "+peer" on connect, "-peer" on disconnect
	onFrame      func(peer gen.Atom, f Frame)
	connected    map[gen.Atom]int
	disconnected map[gen.Atom]int
}

func newRecorder() *recorder {
	return &recorder{connected: map[gen.Atom]int{}, disconnected: map[gen.Atom]int{}}
}

func (r *recorder) HandleFrame(peer gen.Atom, creation int64, f Frame) {
	r.mu.Lock()
	r.frames = append(r.frames, received{peer, creation, f})
	cb := r.onFrame
	r.mu.Unlock()
	if cb != nil {
		cb(peer, f)
	}
}

func (r *recorder) HandleConnected(peer gen.Atom) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connected[peer]++
	r.events = append(r.events, "+"+string(peer))
}

func (r *recorder) HandleDisconnected(peer gen.Atom) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.disconnected[peer]++
	r.events = append(r.events, "-"+string(peer))
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.frames)
}

func (r *recorder) frame(i int) received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.frames[i]
}

func (r *recorder) ups(peer gen.Atom) (int, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.connected[peer], r.disconnected[peer]
}

// testLog is a gen.Log that keeps the messages.
type testLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *testLog) add(level, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, level+": "+fmt.Sprintf(format, args...))
}

func (l *testLog) has(sub string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, sub) {
			return true
		}
	}
	return false
}

func (l *testLog) Level() gen.LogLevel                { return gen.LogLevelDebug }
func (l *testLog) SetLevel(gen.LogLevel) error        { return nil }
func (l *testLog) Logger() string                     { return "" }
func (l *testLog) SetLogger(string)                   {}
func (l *testLog) Fields() []gen.LogField             { return nil }
func (l *testLog) AddFields(...gen.LogField)          {}
func (l *testLog) DeleteFields(...string)             {}
func (l *testLog) PushFields() int                    { return 0 }
func (l *testLog) PopFields() int                     { return 0 }
func (l *testLog) Trace(format string, args ...any)   { l.add("trace", format, args...) }
func (l *testLog) Debug(format string, args ...any)   { l.add("debug", format, args...) }
func (l *testLog) Info(format string, args ...any)    { l.add("info", format, args...) }
func (l *testLog) Warning(format string, args ...any) { l.add("warning", format, args...) }
func (l *testLog) Error(format string, args ...any)   { l.add("error", format, args...) }
func (l *testLog) Panic(format string, args ...any)   { l.add("panic", format, args...) }

// node is a started stack with its handler and log.
type node struct {
	*Stack
	rec *recorder
	log *testLog
}

var nameSeq atomic.Int64

// uniqueName makes node names unique across test binaries running at once.
func uniqueName(base string) gen.Atom {
	return gen.Atom(fmt.Sprintf("%s-%d-%d@localhost", base, os.Getpid(), nameSeq.Add(1)))
}

func startNode(t *testing.T, base string, tweak ...func(*Options)) *node {
	t.Helper()
	n := &node{rec: newRecorder(), log: &testLog{}}
	opts := Options{
		Name:     uniqueName(base),
		Creation: time.Now().UnixNano(),
		Network:  gen.NetworkOptions{Cookie: "secret"},
		Log:      n.log,
		Handler:  n.rec,
	}
	for _, f := range tweak {
		f(&opts)
	}
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("start %s: %v", opts.Name, err)
	}
	n.Stack = s
	t.Cleanup(s.Stop)
	return n
}

// routeTo lets n dial peer by its port, without the registrar.
func (n *node) routeTo(t *testing.T, peer *node) {
	t.Helper()
	err := n.AddRoute(string(peer.name), gen.NetworkRoute{Route: gen.Route{Host: "localhost", Port: peer.Port()}}, 0)
	if err != nil {
		t.Fatal(err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func pid(n *node, id uint64) gen.PID {
	return gen.PID{Node: n.name, ID: id, Creation: n.opts.Creation}
}
