package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/demokit"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// stall holds one node's writer inside its write handler, after it checked
// IsLeader and before it writes: what a long GC pause does to a leader.
type stall struct {
	mu      sync.Mutex
	node    gen.Atom    // armed for this node's next write
	stalled chan int64  // gets the token the stalled write will carry
	release chan string // closed to let it continue
}

func newStall() *stall {
	return &stall{stalled: make(chan int64, 1), release: make(chan string)}
}

func (s *stall) arm(node gen.Atom) {
	s.mu.Lock()
	s.node = node
	s.mu.Unlock()
}

// beforeWrite is the writers' BeforeWrite hook.
func (s *stall) beforeWrite(node gen.Atom, token int64) {
	s.mu.Lock()
	armed := s.node == node
	if armed {
		s.node = ""
	}
	s.mu.Unlock()
	if armed == false {
		return
	}
	s.stalled <- token
	select {
	case <-s.release:
	case <-time.After(2 * time.Minute): // never hold a node forever
	}
}

// events collects what the writers reported.
type events struct {
	mu   sync.Mutex
	list []event
}

func (e *events) add(ev event) {
	e.mu.Lock()
	e.list = append(e.list, ev)
	e.mu.Unlock()
}

// find returns the first event after since that matches.
func (e *events) find(since time.Time, match func(event) bool) (event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.list {
		if ev.At.After(since) && match(ev) {
			return ev, true
		}
	}
	return event{}, false
}

// newestWrite returns the newest token that a write went through with.
func (e *events) newestWrite() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	var newest int64
	for _, ev := range e.list {
		if ev.Kind == "write" && ev.Token > newest {
			newest = ev.Token
		}
	}
	return newest
}

// fencingReport is what the demo observed, for the tests.
type fencingReport struct {
	Database    string
	TokenBefore int64    // the counter before this run
	Stale       gen.Atom // the leader that was cut off while stalled
	StaleToken  int64
	StaleRows   int64 // rows its write updated after it resumed
	Fenced      bool  // it reported zero rows and stopped
	Fresh       gen.Atom
	FreshToken  int64
	Row         row           // the resource at the end
	TokenAfter  int64         // the counter at the end
	Newest      int64         // the newest token that any write went through with
	Elected     time.Duration // from the nodes' start to the first token
	Failover    time.Duration // from the cut to the majority's first token
}

var demoRuns atomic.Int64

// runDemo runs three writers in this process and forces a stale leader.
func runDemo(ctx context.Context, cfg config, out io.Writer) (fencingReport, error) {
	var report fencingReport
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	admin, err := openStore(cfg.dsn, cfg.db)
	if err != nil {
		return report, err
	}
	defer admin.close()
	setUpCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := admin.setUp(setUpCtx, cfg.resource); err != nil {
		return report, fmt.Errorf("setting up the %s database: %w", admin.kind(), err)
	}
	if report.TokenBefore, err = admin.token(setUpCtx, cfg.cluster); err != nil {
		return report, err
	}
	report.Database = admin.kind()
	where := cfg.db
	if cfg.dsn != "" {
		where = "(DSN given)"
	}
	say("%s %s: token counter of %q at %d, resource %q.", admin.kind(), where, cfg.cluster, report.TokenBefore, cfg.resource)

	seq := demoRuns.Add(1)
	var names []gen.Atom
	for _, n := range []string{"a", "b", "c"} {
		names = append(names, gen.Atom(fmt.Sprintf("fencing-%d-%d-%s@localhost", os.Getpid(), seq, n)))
	}
	short := func(node gen.Atom) string { return strings.ToUpper(string(node[len(node)-len("x@localhost")])) }

	var log events
	stall := newStall()
	var stores []*store
	var storesMu sync.Mutex
	defer func() {
		for _, s := range stores {
			s.close()
		}
	}()
	onEvent := func(e event) {
		log.add(e)
		switch e.Kind {
		case "token":
			say("%s won the election and took token %d from the database", short(e.Node), e.Token)
		case "write":
			say("  %s write #%d with token %d: %d row updated", short(e.Node), e.Seq, e.Token, e.Rows)
		case "fenced":
			say("  %s write #%d with token %d: 0 rows updated - a newer token owns the row; %s stops writing", short(e.Node), e.Seq, e.Token, short(e.Node))
		case "error":
			say("  %s: %v", short(e.Node), e.Err)
		}
	}

	cluster, err := lab.New(names, lab.Options{
		Cookie: "fencing-demo",
		Node: func(gen.Atom) gen.NodeOptions {
			// Static routes only (the lab's): no registrar to wait for.
			return gen.NodeOptions{
				Network: gen.NetworkOptions{Registrar: demokit.NoRegistrar()},
				Log:     lab.ActorLog(io.Discard, gen.LogLevelWarning),
			}
		},
		Setup: func(node gen.Node) error {
			s, err := openStore(cfg.dsn, cfg.db)
			if err != nil {
				return err
			}
			storesMu.Lock()
			stores = append(stores, s)
			storesMu.Unlock()
			// one registry per OS process: ErrTaken from the second node on
			if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
				return err
			}
			var peers []gen.ProcessID
			for _, name := range names {
				if name != node.Name() {
					peers = append(peers, gen.ProcessID{Name: writerName, Node: name})
				}
			}
			spec := writerSpec{
				Options: leader.Options{
					ClusterID:          "fencing",
					MinClusterSize:     3,
					ElectionTimeoutMin: cfg.electionMin,
					ElectionTimeoutMax: cfg.electionMax(),
					HeartbeatInterval:  cfg.electionMin / 5,
				},
				Peers:          peers,
				Rediscover:     time.Second,
				Store:          s,
				Cluster:        cfg.cluster,
				Resource:       cfg.resource,
				Every:          cfg.every,
				ConfirmTimeout: cfg.confirmTimeout(),
				BeforeWrite:    stall.beforeWrite,
				OnEvent:        onEvent,
			}
			_, err = node.SpawnRegister(writerName, factoryWriter, gen.ProcessOptions{}, spec)
			return err
		},
	})
	if err != nil {
		return report, err
	}
	defer cluster.Close()

	timeout := 60 * time.Second
	waitEvent := func(what string, since time.Time, match func(event) bool) (event, error) {
		deadline := time.Now().Add(timeout)
		for {
			if ev, ok := log.find(since, match); ok {
				return ev, nil
			}
			if time.Now().After(deadline) {
				return event{}, fmt.Errorf("no %s within %s", what, timeout)
			}
			select {
			case <-ctx.Done():
				return event{}, ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}

	started := time.Now()
	if err := cluster.StartAll(); err != nil {
		return report, err
	}
	// 1. A leader takes a token and writes with it.
	second, err := waitEvent("second write", start, func(e event) bool { return e.Kind == "write" && e.Seq == 2 })
	if err != nil {
		return report, err
	}
	report.Stale, report.StaleToken = second.Node, second.Token
	stale := second.Node

	// 2. It stalls between its leadership check and its next write.
	stall.arm(stale)
	var stalledToken int64
	select {
	case stalledToken = <-stall.stalled:
	case <-time.After(timeout):
		return report, fmt.Errorf("%s never reached its next write", short(stale))
	}
	say("%s stalls after checking IsLeader, before its next write (think of a long GC pause); it still believes it leads.", short(stale))

	// 3. While it is stalled, the network cuts it off; the majority elects.
	var majority []gen.Atom
	for _, name := range names {
		if name != stale {
			majority = append(majority, name)
		}
	}
	cut := time.Now()
	cluster.Partition([]gen.Atom{stale}, majority)
	say("Partition {%s} | {%s,%s}: the majority elects a new leader.", short(stale), short(majority[0]), short(majority[1]))
	fresh, err := waitEvent("write by a new leader", cut, func(e event) bool {
		return e.Kind == "write" && e.Node != stale && e.Token > stalledToken
	})
	if err != nil {
		return report, err
	}
	report.Fresh, report.FreshToken = fresh.Node, fresh.Token
	if first, ok := log.find(started, func(e event) bool { return e.Kind == "token" }); ok {
		report.Elected = first.At.Sub(started)
	}
	if taken, ok := log.find(cut, func(e event) bool { return e.Kind == "token" && e.Node != stale }); ok {
		report.Failover = taken.At.Sub(cut)
	}

	// 4. The stale leader resumes and writes with its old token.
	resumed := time.Now()
	say("%s resumes: its write carries token %d, older than %d.", short(stale), stalledToken, fresh.Token)
	close(stall.release)
	fenced, err := waitEvent("verdict on the stale write", resumed, func(e event) bool {
		return e.Node == stale && (e.Kind == "fenced" || e.Kind == "write")
	})
	if err != nil {
		return report, err
	}
	report.Fenced = fenced.Kind == "fenced"
	report.StaleRows = fenced.Rows

	// 5. Heal; the stale node follows the new leader.
	cluster.Heal()
	node := cluster.Node(stale)
	deadline := time.Now().Add(timeout)
	for {
		if pid, err := node.ProcessPID(writerName); err == nil {
			if info, err := node.Inspect(pid, "ergo:leader_node"); err == nil && info["ergo:leader_node"] == string(report.Fresh) {
				break
			}
		}
		if time.Now().After(deadline) {
			return report, fmt.Errorf("%s did not follow %s after the heal", short(stale), short(report.Fresh))
		}
		time.Sleep(20 * time.Millisecond)
	}
	say("Healed: %s follows %s.", short(stale), short(report.Fresh))

	readCtx, cancelRead := context.WithTimeout(ctx, 30*time.Second)
	defer cancelRead()
	if report.Row, err = admin.read(readCtx, cfg.resource); err != nil {
		return report, err
	}
	if report.TokenAfter, err = admin.token(readCtx, cfg.cluster); err != nil {
		return report, err
	}
	report.Newest = log.newestWrite()
	say("Row %q: owner_token %d, value %q, %d writes in all.", cfg.resource, report.Row.OwnerToken, report.Row.Value, report.Row.Writes)
	verdict := "the stale write took effect: fencing FAILED"
	if report.Fenced && report.StaleRows == 0 && report.Row.OwnerToken == report.Newest {
		verdict = "the stale write updated 0 rows; the row holds the newest token"
	}
	say("Summary: %s led with token %d and was cut off; %s took token %d; %s. Tokens %s; a run after a full restart continues above %d.",
		short(stale), report.StaleToken, short(report.Fresh), report.FreshToken, verdict,
		tokenRange(report.TokenBefore, report.TokenAfter), report.TokenAfter)
	say("  first leader's token after the start: %s", cfg.figure(report.Elected))
	say("  majority's token after the cut:       %s", cfg.figure(report.Failover))
	return report, nil
}

// figure is a measured time for the summary, flagged when it is far above
// what the election timeout and the token's confirmation explain.
func (c config) figure(took time.Duration) string {
	text := took.Round(time.Millisecond).String()
	if demokit.Slow(took, c.electionMax(), c.confirmTimeout()) {
		return text + " - " + demokit.SlowNote(c.electionMax(), c.confirmTimeout())
	}
	return text + " (ok)"
}

func tokenRange(before, after int64) string {
	if after <= before {
		return "none handed out"
	}
	return fmt.Sprintf("%d..%d handed out", before+1, after)
}
