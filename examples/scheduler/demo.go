package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/actor/leader/examples/internal/demokit"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// journal collects every run of the job across the nodes of the demo.
type journal struct {
	mu   sync.Mutex
	runs []Run
}

func (j *journal) add(r Run) {
	j.mu.Lock()
	j.runs = append(j.runs, r)
	j.mu.Unlock()
}

func (j *journal) all() []Run {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.runs)
}

// since returns the runs after t.
func (j *journal) since(t time.Time) []Run {
	return slices.DeleteFunc(j.all(), func(r Run) bool { return r.At.After(t) == false })
}

// demoReport is what the in-process demo observed, for the tests.
type demoReport struct {
	Runs      []Run
	First     gen.Atom // the first leader, killed in the demo
	Second    gen.Atom // the leader after the failover
	Forwarded Accepted // the answer to a job submitted on a follower
	Rejected  error    // the answer to a job submitted with no leader
	Killed    time.Time
	FirstRun  time.Duration // from the start to the job's first run
	Failover  time.Duration
}

// demoRuns tells apart demos started by one process (tests run several).
var demoRuns atomic.Int64

// runDemo runs three nodes in this process and walks through the example.
func runDemo(ctx context.Context, cfg config, out io.Writer) (demoReport, error) {
	var report demoReport
	seq := demoRuns.Add(1)
	var names []gen.Atom
	for i := 1; i <= 3; i++ {
		names = append(names, gen.Atom(fmt.Sprintf("scheduler-%d-%d-s%d@localhost", os.Getpid(), seq, i)))
	}
	short := func(node gen.Atom) string {
		return string(node[strings.LastIndexByte(string(node), '-')+1 : strings.IndexByte(string(node), '@')])
	}

	// The static peer list every node re-reads.
	dir, err := os.MkdirTemp("", "scheduler-demo")
	if err != nil {
		return report, err
	}
	defer os.RemoveAll(dir)
	peers := filepath.Join(dir, "peers.txt")
	var list strings.Builder
	for _, name := range names {
		list.WriteString(string(name) + "\n")
	}
	if err := os.WriteFile(peers, []byte(list.String()), 0o644); err != nil {
		return report, err
	}

	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	var runs journal
	onRun := func(r Run) {
		runs.add(r)
		jobs := ""
		if len(r.Jobs) > 0 {
			jobs = fmt.Sprintf(", ran submitted jobs %v", r.Jobs)
		}
		say("  job run #%d on %s (term %d)%s", r.Seq, short(r.Node), r.Term, jobs)
	}

	cluster, err := lab.New(names, lab.Options{
		Cookie: cfg.cookie,
		Node: func(gen.Atom) gen.NodeOptions {
			// Static routes only (the lab's): no registrar to wait for.
			return gen.NodeOptions{
				Network: gen.NetworkOptions{Registrar: demokit.NoRegistrar()},
				Log:     lab.ActorLog(out, gen.LogLevelWarning),
			}
		},
		Setup: func(node gen.Node) error {
			name, err := node.ApplicationLoad(&schedulerApp{spec: cfg.spec(peers, onRun)})
			if err != nil {
				return err
			}
			return node.ApplicationStart(name, gen.ApplicationOptions{})
		},
	})
	if err != nil {
		return report, err
	}
	defer cluster.Close()

	timeout := 30*time.Second + 20*cfg.tick
	// waitRuns waits until the last n runs since t came from one node, and
	// returns it: the node leading now.
	waitRuns := func(since time.Time, n int) (gen.Atom, error) {
		deadline := time.Now().Add(timeout)
		for {
			recent := runs.since(since)
			if len(recent) >= n {
				last := recent[len(recent)-n:]
				if slices.IndexFunc(last, func(r Run) bool { return r.Node != last[0].Node }) < 0 {
					return last[0].Node, nil
				}
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("the job did not run %d times in a row on one node within %s", n, timeout)
			}
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	say("Starting %d nodes; each one reads the peer list %s every %s.", len(names), peers, cfg.rediscover)
	if err := cluster.StartAll(); err != nil {
		return report, err
	}
	current, err := waitRuns(start, 3)
	if err != nil {
		return report, err
	}
	report.FirstRun = runs.all()[0].At.Sub(start)
	say("The job runs on %s only: it checks IsLeader on every tick.", short(current))

	// A request submitted on a follower is forwarded to the leader. Jobs
	// queued on a leader are lost with its leadership (nothing is
	// replicated), so if leadership moves before the job runs, submit again.
	for attempt := 1; ; attempt++ {
		var follower gen.Atom
		for _, name := range names {
			if name != current {
				follower = name
				break
			}
		}
		submitted := time.Now()
		answer, err := cluster.Node(follower).Call(gen.ProcessID{Name: coordinatorName, Node: follower}, Submit{Job: "nightly-report"})
		accepted, ok := answer.(Accepted)
		if err == nil && ok {
			report.Forwarded = accepted
			say("Submitted %q on follower %s: forwarded, and accepted by leader %s at term %d.", accepted.Job, short(follower), short(accepted.Node), accepted.Term)
			ran := false
			for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				recent := runs.since(submitted)
				if slices.ContainsFunc(recent, func(r Run) bool { return slices.Contains(r.Jobs, accepted.Job) }) {
					ran = true
					break
				}
				if slices.ContainsFunc(recent, func(r Run) bool { return r.Node != accepted.Node }) {
					break // leadership moved, and the queue with it
				}
			}
			if ran {
				break
			}
		}
		if attempt == 5 {
			return report, fmt.Errorf("submitting on follower %s: answered %#v, %v; the job never ran", short(follower), answer, err)
		}
		say("Leadership moved before the job ran (answer %v, %v); submitting again.", answer, err)
		if current, err = waitRuns(time.Now(), 2); err != nil {
			return report, err
		}
	}

	// The leader dies; the job moves.
	first, err := waitRuns(time.Now(), 1)
	if err != nil {
		return report, err
	}
	report.First = first
	say("Killing the leader %s (StopForce).", short(first))
	killed := time.Now()
	report.Killed = killed
	cluster.Kill(first)
	second, err := waitRuns(killed, 3)
	if err != nil {
		return report, err
	}
	report.Second = second
	after := runs.since(killed)
	report.Failover = after[0].At.Sub(killed)
	say("The job moved to %s: its first run came %s after the kill.", short(second), report.Failover.Round(time.Millisecond))

	// With two of three nodes gone there is no majority and no leader:
	// a request is rejected instead of waiting for a leader that may never
	// come back.
	say("Killing %s too: the last node cannot win a majority of its view of 3.", short(second))
	cluster.Kill(second)
	var last gen.Atom
	for _, name := range names {
		if name != first && name != second {
			last = name
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		_, err := cluster.Node(last).Call(gen.ProcessID{Name: coordinatorName, Node: last}, Submit{Job: "too-late"})
		if errors.Is(err, gen.ErrNotAllowed) {
			report.Rejected = err
			break
		}
		if time.Now().After(deadline) {
			return report, fmt.Errorf("submit without a leader: %v, want %v", err, gen.ErrNotAllowed)
		}
		time.Sleep(20 * time.Millisecond)
	}
	say("Submitted a job on %s with no leader: rejected (%v).", short(last), report.Rejected)

	report.Runs = runs.all()
	counts := make(map[gen.Atom]int)
	for _, r := range report.Runs {
		counts[r.Node]++
	}
	say("Summary: %d job runs; %s ran %d, %s ran %d, %s ran %d.",
		len(report.Runs), short(names[0]), counts[names[0]], short(names[1]), counts[names[1]],
		short(names[2]), counts[names[2]])
	say("  first run after the start: %s", cfg.figure(report.FirstRun))
	say("  failover moved the job in: %s", cfg.figure(report.Failover))
	return report, nil
}

// figure is a measured time for the summary, flagged when it is far above
// what the election timeout and one tick of the job explain.
func (c config) figure(took time.Duration) string {
	text := took.Round(time.Millisecond).String()
	if demokit.Slow(took, c.electionMax, c.tick) {
		return text + " - " + demokit.SlowNote(c.electionMax, c.tick)
	}
	return text + " (ok)"
}
