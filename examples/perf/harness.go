package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// group is one election: a ClusterID and the name its members register.
type group struct {
	id   string
	name gen.Atom
}

// harnessSpec describes a set of nodes in this process and the elections
// on them.
type harnessSpec struct {
	nodes  int
	groups int // elections, each with one member on every node; default 1
	// options are the leader options of every member; ClusterID and
	// Bootstrap are filled in per group. Zero fields take the defaults.
	options    leader.Options
	rediscover time.Duration
	// deferSpawn leaves the members unspawned when a node starts, so that a
	// cold start can spawn them all at once (spawnAll).
	deferSpawn bool
	// history keeps every callback (off for the thousand-cluster run).
	history bool
	// external is 1 + the index of the node that runs in a process of its
	// own (child.go), so that its crash is a killed process; 0 for none.
	// Its callbacks are not recorded and it cannot be inspected: agreement
	// and confirmation use the other nodes (local).
	external int
}

// harness is a lab cluster of real nodes on loopback, every pair connected
// through a byte-counting proxy, and the members of its elections.
type harness struct {
	spec   harnessSpec
	cl     *lab.Cluster
	meter  *lab.Meter
	rec    *recorder
	names  []gen.Atom
	groups []group
	logs   *logSink
	child  *child // the node in a process of its own, if any
}

// runSeq tells apart the harnesses of one process; with the process id in
// the node names, parallel test binaries cannot collide either.
var runSeq atomic.Int64

const perfCookie = "leader-perf"

func newHarness(spec harnessSpec) (*harness, error) {
	if spec.groups == 0 {
		spec.groups = 1
	}
	run := runSeq.Add(1)
	h := &harness{spec: spec, rec: newRecorder(spec.history), logs: &logSink{}}
	for i := 0; i < spec.nodes; i++ {
		// letters, digits and '-' only: the lab uses the names as route patterns
		h.names = append(h.names, gen.Atom(fmt.Sprintf("perf-%d-%d-%02d@localhost", os.Getpid(), run, i)))
	}
	h.groups = groupsOf(spec.groups)
	cl, meter, err := lab.NewMetered(h.names, lab.Options{
		Cookie: perfCookie,
		Node:   h.nodeOptions,
		Setup:  h.setup,
	})
	if err != nil {
		return nil, err
	}
	h.cl, h.meter = cl, meter
	for _, name := range h.local() {
		if _, err := cl.Start(name); err != nil {
			cl.Close()
			return nil, err
		}
	}
	if spec.external > 0 {
		if h.child, err = h.startChild(h.names[spec.external-1]); err != nil {
			cl.Close()
			return nil, err
		}
	}
	return h, nil
}

// groupsOf names n elections.
func groupsOf(n int) []group {
	var groups []group
	for g := 0; g < n; g++ {
		groups = append(groups, group{id: "perf-" + strconv.Itoa(g), name: gen.Atom("perf_member_" + strconv.Itoa(g))})
	}
	return groups
}

// local returns the names of the nodes that run in this process.
func (h *harness) local() []gen.Atom {
	if h.child == nil && h.spec.external == 0 {
		return h.names
	}
	return others(h.names, h.names[h.spec.external-1])
}

func (h *harness) nodeOptions(name gen.Atom) gen.NodeOptions {
	return gen.NodeOptions{
		ShutdownTimeout: 10 * time.Second,
		Log: gen.LogOptions{
			Level:         gen.LogLevelWarning,
			DefaultLogger: gen.DefaultLoggerOptions{Disable: true},
			Loggers:       []gen.Logger{{Name: "perf", Logger: h.logs}},
		},
	}
}

// setup registers the protocol and, unless deferred, spawns the members;
// the lab runs it before any peer can reach the node. The type registry is
// one per OS process: gen.ErrTaken means another node registered it.
func (h *harness) setup(node gen.Node) error {
	if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		return err
	}
	if err := node.Network().RegisterErrors(leader.ErrorTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		return err
	}
	if h.spec.deferSpawn {
		return nil
	}
	for _, g := range h.groups {
		if err := h.spawn(node, g); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) spawn(node gen.Node, g group) error {
	options := h.spec.options
	options.ClusterID = g.id
	options.Bootstrap = nil
	for _, name := range h.names {
		if name != node.Name() {
			options.Bootstrap = append(options.Bootstrap, gen.ProcessID{Name: g.name, Node: name})
		}
	}
	spec := memberSpec{Options: options, Rediscover: h.spec.rediscover, Rec: h.rec}
	_, err := node.SpawnRegister(g.name, factoryMember, gen.ProcessOptions{}, spec)
	return err
}

// spawnAll spawns every member of every group on every node at once, one
// goroutine per node, and returns when the spawning started.
func (h *harness) spawnAll() (time.Time, time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, len(h.names))
	gate := make(chan struct{})
	if h.child != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			if err := h.child.spawn(); err != nil {
				errs <- fmt.Errorf("spawn on %s: %w", h.child.name, err)
			}
		}()
	}
	for _, name := range h.local() {
		node := h.cl.Node(name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for _, g := range h.groups {
				if err := h.spawn(node, g); err != nil {
					errs <- fmt.Errorf("spawn %s on %s: %w", g.name, node.Name(), err)
					return
				}
			}
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	spawning := time.Since(start)
	close(errs)
	return start, spawning, errors.Join(collect(errs)...)
}

func collect(errs chan error) []error {
	var list []error
	for err := range errs {
		list = append(list, err)
	}
	return list
}

func (h *harness) close() {
	if h.child != nil {
		h.child.kill()
	}
	h.cl.Close()
}

// others returns names without the excluded ones.
func others(names []gen.Atom, excluded ...gen.Atom) []gen.Atom {
	var list []gen.Atom
next:
	for _, name := range names {
		for _, x := range excluded {
			if name == x {
				continue next
			}
		}
		list = append(list, name)
	}
	return list
}

// inspect asks the member of g on node for keys.
func (h *harness) inspect(g group, name gen.Atom, keys ...string) (map[string]string, error) {
	node := h.cl.Node(name)
	if node == nil {
		return nil, fmt.Errorf("node %s is not running", name)
	}
	pid, err := node.ProcessPID(g.name)
	if err != nil {
		return nil, err
	}
	return node.Inspect(pid, keys...)
}

// confirm checks a callback agreement against what the members say through
// Inspect: each one is in state leader or follower, names the agreed leader
// and is at the agreed term. It catches a member that campaigns, which the
// callbacks do not report.
func (h *harness) confirm(g group, names []gen.Atom, a agreement) bool {
	for _, name := range names {
		s, err := h.inspect(g, name, "ergo:state", "ergo:leader_node", "ergo:term")
		if err != nil {
			return false
		}
		want := "follower"
		if name == a.leader.Node {
			want = "leader"
		}
		if s["ergo:state"] != want || s["ergo:leader_node"] != string(a.leader.Node) || s["ergo:term"] != strconv.FormatUint(a.term, 10) {
			return false
		}
	}
	return true
}

var errTimeout = errors.New("timed out")

// waitAgreed waits until the members of g on names agree on a leader that
// accept admits, and returns the agreement; its time is that of the last
// callback that completed it.
func (h *harness) waitAgreed(g group, names []gen.Atom, within time.Duration, accept func(agreement) bool) (agreement, error) {
	deadline := time.Now().Add(within)
	for {
		if a, ok := h.rec.agreed(g.id, names); ok && (accept == nil || accept(a)) && h.confirm(g, names, a) {
			return a, nil
		}
		if time.Now().After(deadline) {
			return agreement{}, fmt.Errorf("%w after %s waiting for %d members of %s to agree on a leader; they report: %s", errTimeout, within, len(names), g.id, h.describe(g, names))
		}
		h.rec.wait(20 * time.Millisecond)
	}
}

// waitStable waits until every node agrees on one leader and every member
// has the whole cluster in its view with every peer's PID known, so that the
// next disruption starts from a settled cluster.
func (h *harness) waitStable(g group, within time.Duration) (agreement, error) {
	deadline := time.Now().Add(within)
	for {
		a, err := h.waitAgreed(g, h.names, time.Until(deadline), nil)
		if err != nil {
			return a, err
		}
		if h.viewsFull(g) {
			// Two heartbeat rounds more: every follower's ack is fresh
			// at the leader, and every follower has a fresh heartbeat.
			time.Sleep(2 * h.heartbeat())
			if b, ok := h.rec.agreed(g.id, h.names); ok && b.leader == a.leader && b.term == a.term {
				return a, nil
			}
			continue
		}
		if time.Now().After(deadline) {
			return a, fmt.Errorf("%w after %s waiting for full views in %s; they report: %s", errTimeout, within, g.id, h.describe(g, h.names))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// describeKeys are what a timeout reports of each member.
var describeKeys = []string{"ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_size", "ergo:peers", "ergo:unreachable", "ergo:quiet_until", "ergo:prevote_rounds", "ergo:send_failing_peers", "ergo:dropped_by_reason"}

// describe says what the members think, for an error message.
func (h *harness) describe(g group, names []gen.Atom) string {
	var parts []string
	for _, name := range names {
		s, err := h.inspect(g, name, describeKeys...)
		if err != nil {
			parts = append(parts, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		var kv []string
		for _, k := range describeKeys {
			if v := s[k]; v != "" {
				kv = append(kv, strings.TrimPrefix(k, "ergo:")+"="+v)
			}
		}
		parts = append(parts, fmt.Sprintf("%s {%s}", name, strings.Join(kv, " ")))
	}
	return strings.Join(parts, "; ")
}

// viewsFull reports whether every member knows all the others, and
// whether every member's quiet period is over: a node restarted
// by the previous run grants no vote for ElectionTimeoutMin × 1.05 after
// its start (ergo:quiet_until), and a crash within that time is a second
// fault on top of the restart (with 3 nodes, the survivors then lack a
// quorum until it ends), not the failover of a settled cluster.
func (h *harness) viewsFull(g group) bool {
	for _, name := range h.names {
		s, err := h.inspect(g, name, "ergo:view_size", "ergo:peers", "ergo:quiet_until")
		if err != nil || s["ergo:view_size"] != strconv.Itoa(len(h.names)) || s["ergo:peers"] != strconv.Itoa(len(h.names)-1) {
			return false
		}
		if quiet, err := time.Parse(time.RFC3339Nano, s["ergo:quiet_until"]); err != nil || time.Now().Before(quiet) {
			return false
		}
	}
	return true
}

func (h *harness) heartbeat() time.Duration {
	if h.spec.options.HeartbeatInterval > 0 {
		return time.Duration(h.spec.options.HeartbeatInterval) * time.Millisecond
	}
	return leader.DefaultHeartbeatInterval * time.Millisecond
}

// timings returns ElectionTimeoutMin and ElectionTimeoutMax as resolved.
func (h *harness) timings() (time.Duration, time.Duration) { return timingsOf(h.spec.options) }

// timingsOf resolves the election timeouts of options as the actor does
// when both or neither are set (the only ways this command sets them).
func timingsOf(o leader.Options) (time.Duration, time.Duration) {
	lo, hi := o.ElectionTimeoutMin, o.ElectionTimeoutMax
	if lo == 0 && hi == 0 {
		lo, hi = leader.DefaultElectionTimeoutMin, leader.DefaultElectionTimeoutMax
	}
	return time.Duration(lo) * time.Millisecond, time.Duration(hi) * time.Millisecond
}
