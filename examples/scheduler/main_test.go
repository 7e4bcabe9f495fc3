package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// testConfig is the demo's configuration with a faster job and election
// timeouts wide enough for a loaded CI box under -race.
func testConfig(t *testing.T) config {
	cfg, err := parseConfig([]string{"-tick", "100ms", "-election-min", "500", "-election-max", "1000", "-heartbeat", "100", "-rediscover", "200ms"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestJobRunsOnOneNode runs the demo: the job runs on exactly one node at a
// time, moves when that node dies, a follower forwards a request to the
// leader, and a request without a leader is rejected.
func TestJobRunsOnOneNode(t *testing.T) {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := runDemo(ctx, testConfig(t), &syncWriter{w: &out})
	if err != nil {
		t.Fatalf("%v\noutput:\n%s", err, out.String())
	}
	if r.First == r.Second {
		t.Fatalf("the job did not move: %s before and after the failover", r.First)
	}

	// One node at a time: each leadership's runs, from its first to its
	// last, never overlap another's.
	type span struct{ first, last time.Time }
	spans := make(map[string]*span)
	next := make(map[string]int)
	for _, run := range r.Runs {
		key := fmt.Sprintf("%s/%d", run.Node, run.Term)
		if sp, ok := spans[key]; ok {
			sp.last = run.At
		} else {
			spans[key] = &span{run.At, run.At}
		}
		// one tick chain per leadership: run numbers count up by one
		if run.Seq != next[key]+1 {
			t.Errorf("%s term %d: run #%d after #%d", run.Node, run.Term, run.Seq, next[key])
		}
		next[key] = run.Seq
	}
	for a, sa := range spans {
		for b, sb := range spans {
			if a < b && sa.first.After(sb.last) == false && sb.first.After(sa.last) == false {
				t.Errorf("leaderships %s and %s ran the job at the same time", a, b)
			}
		}
	}

	// The job moved on failover: nothing ran on the killed node afterwards,
	// and the new leader did run it.
	movedRuns := 0
	for _, run := range r.Runs {
		if run.At.After(r.Killed) {
			if run.Node == r.First {
				t.Errorf("the killed node %s ran the job after the kill", r.First)
			}
			if run.Node == r.Second {
				movedRuns++
			}
		}
	}
	if movedRuns == 0 {
		t.Errorf("the new leader %s never ran the job", r.Second)
	}

	if r.Forwarded.Job != "nightly-report" || r.Forwarded.Node == "" {
		t.Errorf("forwarded submit answered %+v", r.Forwarded)
	}
	if errors.Is(r.Rejected, gen.ErrNotAllowed) == false {
		t.Errorf("submit without a leader: %v, want %v", r.Rejected, gen.ErrNotAllowed)
	}
}

// TestDiscoveryLeaves removes a node from the peer list: the others
// withdraw it from their views within a discovery round, without waiting
// for GhostTTL.
func TestDiscoveryLeaves(t *testing.T) {
	cfg := testConfig(t)
	var names []gen.Atom
	for i := 1; i <= 3; i++ {
		names = append(names, gen.Atom(fmt.Sprintf("scheduler-leave-%d-s%d@localhost", os.Getpid(), i)))
	}
	peers := filepath.Join(t.TempDir(), "peers.txt")
	write := func(list []gen.Atom) {
		var b strings.Builder
		for _, name := range list {
			b.WriteString(string(name) + "\n")
		}
		if err := os.WriteFile(peers+".tmp", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		// rename, so a discovery round never reads half a file
		if err := os.Rename(peers+".tmp", peers); err != nil {
			t.Fatal(err)
		}
	}
	write(names)
	cluster, err := lab.New(names, lab.Options{
		Cookie: cfg.cookie,
		Node: func(gen.Atom) gen.NodeOptions {
			return gen.NodeOptions{Log: lab.ActorLog(io.Discard, gen.LogLevelWarning)}
		},
		Setup: func(node gen.Node) error {
			name, err := node.ApplicationLoad(&schedulerApp{spec: cfg.spec(peers, func(Run) {})})
			if err != nil {
				return err
			}
			return node.ApplicationStart(name, gen.ApplicationOptions{})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	if err := cluster.StartAll(); err != nil {
		t.Fatal(err)
	}

	viewOf := func(name gen.Atom) string {
		node := cluster.Node(name)
		pid, err := node.ProcessPID(coordinatorName)
		if err != nil {
			return ""
		}
		info, err := node.Inspect(pid, "ergo:view_size")
		if err != nil {
			return ""
		}
		return info["ergo:view_size"]
	}
	waitView := func(name gen.Atom, want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for viewOf(name) != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s: view size %s, want %s", name, viewOf(name), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitView(names[0], "3")

	// The node goes away and discovery stops listing it. Its lost
	// connection alone would keep it in the views for GhostTTL (5s); Leave
	// takes it out on the next discovery round.
	write(names[:2])
	cluster.Kill(names[2])
	start := time.Now()
	waitView(names[0], "2")
	waitView(names[1], "2")
	if took := time.Since(start); took >= 4*time.Second {
		t.Errorf("the views shrank after %s: that is GhostTTL at work, not Leave", took)
	}
}

// syncWriter serialises writes from the nodes' goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestSummaryFlagsSlowFigures: a time far above the election timeout plus
// a tick is flagged as SLOW, never reported as ok.
func TestSummaryFlagsSlowFigures(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard) // max 300 ms, tick 500 ms: the limit is 1.4s
	if err != nil {
		t.Fatal(err)
	}
	for took, want := range map[time.Duration]string{
		600 * time.Millisecond:  "600ms (ok)",
		1400 * time.Millisecond: "1.4s (ok)",
		2 * time.Second:         "2s - SLOW: above 1.4s",
	} {
		if got := cfg.figure(took); strings.HasPrefix(got, want) == false {
			t.Errorf("figure(%s) = %q, want it to start with %q", took, got, want)
		}
	}
}
