package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// Config describes a cluster of node processes.
type Config struct {
	// Nodes is the number of nodes, each in its own namespace and process.
	Nodes int
	// Cookie is shared by every node. Default "leader-lab".
	Cookie string
	// Params are handed to every node's program (Child.Param).
	Params map[string]string
	// Pingers is the number of probe senders per node (0: no probes). Each
	// sends a Probe to every peer every 20 ms (Params "probe_every_ms");
	// Status.Received counts what arrived. A sender uses one link of a
	// pooled connection, so use a few more senders than links. Senders never
	// dial: they send only over a connection the node already has.
	Pingers int
	// Poll is how often a child checks its state for changes to push.
	// Default 20 ms.
	Poll time.Duration
	// Port is every node's acceptor port (each namespace has its own port
	// space). Default gen.DefaultPort.
	Port uint16
}

// Cluster is a set of node processes, node i running inside namespace i of
// the embedded Net. Stop, crash and stall nodes through Node; cut links
// through the Net methods.
type Cluster struct {
	*Net
	t       testing.TB
	cfg     Config
	dir     string
	worklog string
	nodes   []*Node

	mu       sync.Mutex
	events   []Event
	failures []string // Failed's messages, restated after the node logs

	closeOnce sync.Once
}

// Start creates the namespaces, starts every node process and waits until
// all are ready (node started, types registered, program started); then it
// tells them to go (the probes start, and Program.Go runs, typically
// joining the peers).
func Start(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.Cookie == "" {
		cfg.Cookie = "leader-lab"
	}
	if cfg.Port == 0 {
		cfg.Port = gen.DefaultPort
	}
	nt := NewNet(t, cfg.Nodes)
	dir := t.TempDir()
	if keep := os.Getenv("LEADER_LAB_LOGS"); keep != "" {
		dir = filepath.Join(keep, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("lab: %v", err)
		}
	}
	c := &Cluster{Net: nt, t: t, cfg: cfg, dir: dir, worklog: filepath.Join(dir, "worklog")}
	for i := 0; i < cfg.Nodes; i++ {
		c.nodes = append(c.nodes, &Node{
			c: c, Index: i, IP: nt.IP(i),
			Name: fmt.Sprintf("n%d@%s", i+1, nt.IP(i)),
		})
	}
	t.Cleanup(c.Close)
	for _, n := range c.nodes {
		if err := n.spawn(); err != nil {
			t.Fatalf("lab: start %s: %v", n.Name, err)
		}
	}
	for _, n := range c.nodes {
		if err := n.awaitReady(60 * time.Second); err != nil {
			t.Fatalf("lab: %s: %v", n.Name, err)
		}
	}
	for _, n := range c.nodes {
		if _, err := n.Do(OpGo); err != nil {
			t.Fatalf("lab: %s: go: %v", n.Name, err)
		}
	}
	return c
}

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Nodes returns every node.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Index returns the index of the node with the given name, -1 if none.
func (c *Cluster) Index(name string) int {
	for _, n := range c.nodes {
		if n.Name == name {
			return n.Index
		}
	}
	return -1
}

// Dir is the directory with the nodes' logs and the work log.
func (c *Cluster) Dir() string { return c.dir }

// WorkLog is the path of the shared leader-only work log.
func (c *Cluster) WorkLog() string { return c.worklog }

// Events returns every event the nodes emitted so far, in arrival order.
func (c *Cluster) Events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Event(nil), c.events...)
}

// EventsSince returns the events that happened at or after since.
func (c *Cluster) EventsSince(since time.Time) []Event {
	var out []Event
	for _, e := range c.Events() {
		if e.Time().Before(since) == false {
			out = append(out, e)
		}
	}
	return out
}

// Await polls cond every 10 ms until it holds and returns the time it did;
// at the deadline it fails the test with what, the last description cond
// gave and the current statuses.
func (c *Cluster) Await(timeout time.Duration, what string, cond func() (bool, string)) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, description := cond()
		if ok {
			return time.Now()
		}
		last = description
		if time.Now().After(deadline) {
			c.t.Fatalf("lab: %s: not within %s; last: %s\n%s", what, timeout, last, c.Describe())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Describe lists every node's latest status, one per line.
func (c *Cluster) Describe() string {
	var b strings.Builder
	for _, n := range c.nodes {
		state := "running"
		switch {
		case n.Alive() == false:
			state = "exited"
		case n.Stalled():
			state = "stalled"
		}
		fmt.Fprintf(&b, "  [%d] %s (%s): %s\n", n.Index, n.Name, state, n.Status())
	}
	return b.String()
}

// Agreement checks that every node of idxs recognises the same leader,
// which is among them and reports leading in the same term, from the
// latest statuses. It returns the leader's index and term, or ok false and
// a description of the disagreement.
func (c *Cluster) Agreement(idxs ...int) (leader int, term uint64, ok bool, description string) {
	var parts []string
	name := ""
	agree := true
	for _, i := range idxs {
		s := c.nodes[i].Status()
		parts = append(parts, s.String())
		if s.Err != "" || s.Leader() == "" {
			agree = false
			continue
		}
		if name == "" {
			name, term = s.Leader(), s.Term()
		}
		if s.Leader() != name || s.Term() != term {
			agree = false
		}
	}
	description = strings.Join(parts, "; ")
	if agree == false || name == "" {
		return -1, 0, false, description
	}
	leader = c.Index(name)
	if leader < 0 {
		return -1, 0, false, description
	}
	in := false
	for _, i := range idxs {
		in = in || i == leader
	}
	if s := c.nodes[leader].Status(); in == false || s.IsLeader() == false || s.Term() != term {
		return -1, 0, false, description
	}
	return leader, term, true, description
}

// AwaitAgreement waits until the nodes of idxs agree on a leader (see
// Agreement) and returns its index and term.
func (c *Cluster) AwaitAgreement(timeout time.Duration, idxs ...int) (int, uint64) {
	c.t.Helper()
	var leader int
	var term uint64
	c.Await(timeout, fmt.Sprintf("nodes %v agree on a leader", idxs), func() (bool, string) {
		l, tm, ok, description := c.Agreement(idxs...)
		leader, term = l, tm
		return ok, description
	})
	return leader, term
}

// WorstStall returns the longest scheduling stall of a running node process
// (Node.Stalls) that ended at or after since, and which node it was.
func (c *Cluster) WorstStall(since time.Time) (time.Duration, string) {
	var worst time.Duration
	who := ""
	for _, n := range c.nodes {
		for _, s := range n.Stalls(since) {
			if s.Gap > worst {
				worst, who = s.Gap, n.Name
			}
		}
	}
	return worst, who
}

// All returns the indexes 0..Nodes-1 except the given ones.
func (c *Cluster) All(except ...int) []int {
	var out []int
	for i := range c.nodes {
		skip := false
		for _, e := range except {
			skip = skip || e == i
		}
		if skip == false {
			out = append(out, i)
		}
	}
	return out
}

// Close kills every node process and removes the namespaces now, instead
// of at the end of the test (a test that tries a scenario again on a fresh
// cluster closes the last one first). It runs once; t.Cleanup calls it too.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		c.teardown()
		c.Net.remove()
	})
}

func (c *Cluster) teardown() {
	if c.t.Failed() && os.Getenv("LEADER_LAB_DUMP") != "" {
		for _, n := range c.nodes {
			n.mu.Lock()
			proc := n.proc
			n.mu.Unlock()
			if proc != nil && n.Alive() {
				proc.Signal(syscall.SIGQUIT)
			}
		}
		for _, n := range c.nodes {
			n.waitExit(5 * time.Second)
		}
		for _, n := range c.nodes {
			data, _ := os.ReadFile(n.logFile(n.incarnation))
			os.WriteFile(fmt.Sprintf("%s/dump-%d.log", os.Getenv("LEADER_LAB_DUMP"), n.Index), data, 0o644)
		}
	}
	for _, n := range c.nodes {
		n.kill()
	}
	for _, n := range c.nodes {
		n.waitExit(10 * time.Second)
	}
	if c.t.Failed() || os.Getenv("LEADER_LAB_VERBOSE") != "" {
		c.t.Logf("lab: logs in %s", c.dir)
		for _, n := range c.nodes {
			for inc := 0; inc <= n.incarnation; inc++ {
				c.t.Logf("lab: ---- tail of %s ----\n%s", n.logFile(inc), tail(n.logFile(inc), 40))
			}
		}
	}
	c.mu.Lock()
	failures := c.failures
	c.mu.Unlock()
	for _, f := range failures {
		c.t.Logf("lab: the failure reported above the node logs: %s", f)
	}
}

// Failed notes why the test is about to fail: the cluster's teardown
// states it again after the node logs, so that it is the last thing the
// test prints (CI shows the end of a failed test's output).
func (c *Cluster) Failed(why string) {
	c.mu.Lock()
	c.failures = append(c.failures, why)
	c.mu.Unlock()
}

func tail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
