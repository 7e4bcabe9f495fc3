package leader

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo"
	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/require"
)

// Helpers for the in-process cluster tests: real nodes on 127.0.0.1 talking
// over TCP, each reaching the others through a static route to their
// acceptors, and a leader actor on each node that records its callbacks.
// Only the framework's public API is used, so the same tests run on the
// real framework.
//
// Nothing here injects network faults: the framework's connection between
// two nodes is a pool of TCP links whose extra links and re-dials go
// straight to the address the accepting node advertises, so nothing that
// stands on one route (a proxy) can partition two nodes of one process.
// Partitions, half-open links and crashes are tested on the process lab
// (internal/lab, lab_*_test.go), where every node is its own OS process in
// its own network namespace.

const (
	// clCookie is every node's cookie (the framework's acceptors take the
	// node's cookie; AcceptorOptions.Cookie is not used to accept).
	clCookie = "leader-cluster-test"

	clActorName = gen.Atom("election")

	// clNodeHost is the host part of the test nodes' names. The nodes listen
	// on 127.0.0.1 and reach each other through static routes to their
	// acceptors, which are final, so the name's host is never dialed and
	// the registrar never asked; should a runtime ask it anyway, the
	// stand-in's IPv4-only lookup of an IPv6 host fails at once.
	clNodeHost = "::1"

	// deadlines for polls; generous, for a loaded 2-core box under -race
	clConverge = 20 * time.Second
	clPoll     = 10 * time.Millisecond
)

var clNodeSeq atomic.Int64

// clusterTimings are the protocol timings of a test, in milliseconds.
type clusterTimings struct {
	min, max, hb, ghost int
}

var (
	// clusterFastTimings keep the tests short; HeartbeatInterval stays at a fifth of
	// ElectionTimeoutMin so a follower tolerates a few lost heartbeats.
	clusterFastTimings = clusterTimings{min: 100, max: 200, hb: 20, ghost: 1000}
	// clusterSteadyTimings are for the tests that assert that nothing
	// happens (no leader change, no term increment) while two of five nodes
	// are away, so that a quorum hangs on every single remaining follower:
	// a longer ElectionTimeoutMin keeps a scheduling stall of a loaded CI
	// box from looking like a lost quorum.
	clusterSteadyTimings = clusterTimings{min: 200, max: 400, hb: 25, ghost: 60000}
	// clusterDefaultTimings are the library's defaults (150/300/50/5000).
	clusterDefaultTimings = clusterTimings{min: DefaultElectionTimeoutMin, max: DefaultElectionTimeoutMax, hb: DefaultHeartbeatInterval, ghost: DefaultGhostTTL}
)

func (tm clusterTimings) electionMin() time.Duration { return time.Duration(tm.min) * time.Millisecond }
func (tm clusterTimings) electionMax() time.Duration { return time.Duration(tm.max) * time.Millisecond }
func (tm clusterTimings) heartbeat() time.Duration   { return time.Duration(tm.hb) * time.Millisecond }
func (tm clusterTimings) ghostTTL() time.Duration    { return time.Duration(tm.ghost) * time.Millisecond }

func (tm clusterTimings) options(clusterID string, minClusterSize int) Options {
	return Options{
		ClusterID:          clusterID,
		MinClusterSize:     minClusterSize,
		ElectionTimeoutMin: tm.min,
		ElectionTimeoutMax: tm.max,
		HeartbeatInterval:  tm.hb,
		GhostTTL:           tm.ghost,
	}
}

// clEvidenceMode is on for the long, figure-producing runs.
func clEvidenceMode() bool {
	return testing.Short() == false && os.Getenv("LEADER_EVIDENCE") != ""
}

// The cluster

type clConfig struct {
	// unregistered skips leader.NetworkTypes() on the nodes. The type
	// registry is the process's, not the node's, so this means something
	// only in a process where nobody registered them
	// (TestClusterUnregisteredTypesRefuseToStart runs in a fresh one).
	unregistered bool
}

type clNode struct {
	idx     int
	name    gen.Atom
	node    gen.Node
	addr    string // the acceptor, "host:port"
	started int64  // the node's creation: Creation() reads 0 once it stopped
	stopped bool
	listed  bool // returned by the discovery of the other nodes
	actors  map[gen.Atom]gen.PID
}

type realCluster struct {
	t        *testing.T
	cfg      clConfig
	rec      *cbRecorder
	logs     *clLogRing
	warnings *clWarnings
	stalls   *clStallWatch

	mu    sync.Mutex
	nodes []*clNode
}

func newRealCluster(t *testing.T, cfg clConfig) *realCluster {
	c := &realCluster{
		t:        t,
		cfg:      cfg,
		rec:      &cbRecorder{},
		logs:     newClLogRing(600),
		warnings: &clWarnings{},
		stalls:   startClStallWatch(),
	}
	// Cleanups run last-in first-out: this one runs after the nodes stopped.
	t.Cleanup(func() {
		c.stalls.stop()
		if problems := c.rec.violations(); len(problems) > 0 {
			t.Errorf("callback invariants violated:\n%s", strings.Join(problems, "\n"))
		}
		if t.Failed() || os.Getenv("LEADER_TEST_DUMP") != "" {
			t.Logf("callbacks:\n%s", c.rec.dump())
			t.Logf("last log lines:\n%s", c.logs)
		}
	})
	t.Cleanup(c.teardown)
	return c
}

// clWarnings keeps every warning and error the nodes log, with the time
// it was logged, out of the ring's reach: a test asserts that a warning
// never appeared.
type clWarnings struct {
	mu    sync.Mutex
	lines []clWarning
}

type clWarning struct {
	at   time.Time
	line string
}

func (w *clWarnings) Log(m gen.MessageLog) {
	source := ""
	switch s := m.Source.(type) {
	case gen.MessageLogProcess:
		source = fmt.Sprintf("%s %s", s.Node, s.Name)
	case gen.MessageLogNode:
		source = string(s.Node)
	case gen.MessageLogNetwork:
		source = fmt.Sprintf("%s net(%s)", s.Node, s.Peer)
	}
	text := m.Format
	if len(m.Args) > 0 {
		text = fmt.Sprintf(m.Format, m.Args...)
	}
	w.mu.Lock()
	if len(w.lines) < 10000 {
		w.lines = append(w.lines, clWarning{at: m.Time, line: fmt.Sprintf("%s [%s] %s: %s", m.Time.Format("15:04:05.000000"), m.Level, source, text)})
	}
	w.mu.Unlock()
}

func (w *clWarnings) Terminate() {}

// containing returns the lines logged at or after since that contain text.
func (w *clWarnings) containing(text string, since time.Time) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var found []string
	for _, l := range w.lines {
		if l.at.Before(since) == false && strings.Contains(l.line, text) {
			found = append(found, l.line)
		}
	}
	return found
}

// teardown stops every node; it may run twice.
func (c *realCluster) teardown() {
	c.mu.Lock()
	var nodes []*clNode
	for _, n := range c.nodes {
		if n.stopped == false {
			n.stopped = true
			nodes = append(nodes, n)
		}
	}
	c.mu.Unlock()
	c.logLongestStep(nodes)
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.node.StopForce()
		}()
	}
	wg.Wait()
}

// logLongestStep reports the longest time any election actor spent on one
// message (ergo:longest_step): the worst stall of the actor's loop, which
// must never include a framework call that waits on the network.
func (c *realCluster) logLongestStep(nodes []*clNode) {
	var worst time.Duration
	var where string
	for _, n := range nodes {
		c.mu.Lock()
		pids := make([]gen.PID, 0, len(n.actors))
		for _, pid := range n.actors {
			pids = append(pids, pid)
		}
		c.mu.Unlock()
		for _, pid := range pids {
			raw, err := n.node.Inspect(pid, "ergo:longest_step")
			if err != nil {
				continue
			}
			if d, err := time.ParseDuration(raw["ergo:longest_step"]); err == nil && d > worst {
				worst, where = d, string(n.name)
			}
		}
	}
	if where != "" {
		c.t.Logf("longest step of an election actor's loop: %s (on %s)", worst, where)
	}
}

// addNode starts a node, adds static routes between it and every other
// live node and lists it in the discovery of every actor. It spawns
// nothing.
func (c *realCluster) addNode() int {
	c.t.Helper()
	name := gen.Atom(fmt.Sprintf("lt%d-%03d@%s", os.Getpid(), clNodeSeq.Add(1), clNodeHost))
	n := c.startNode(name)

	c.mu.Lock()
	n.idx = len(c.nodes)
	c.nodes = append(c.nodes, n)
	others := slices.Clone(c.nodes[:n.idx])
	c.mu.Unlock()

	for _, o := range others {
		if o.stopped {
			continue
		}
		c.route(n, o)
		c.route(o, n)
	}
	return n.idx
}

// restartNode starts node i again under the same name after stopNode, as a
// rolling restart does: a new node (a new acceptor port) takes index i, the
// static routes of every other live node to that name are replaced with
// routes to the new acceptor, and the discovery lists it again. It spawns
// nothing.
func (c *realCluster) restartNode(i int) {
	c.t.Helper()
	old := c.n(i)
	require.True(c.t, old.stopped, "restart %s: the node must be stopped first", old.name)
	// The framework's creation is the Unix second of the node's start: a
	// node started again within the second of the old one's start gives
	// its first processes the old ones' PIDs. The library tells them apart
	// (incarnations, membership.go), the callback recorder, which keys
	// actors by PID, cannot; so the new node starts in a later second.
	if wait := time.Until(time.Unix(old.started+1, 0)); wait > 0 {
		time.Sleep(wait)
	}
	n := c.startNode(old.name)
	n.idx = i

	c.mu.Lock()
	c.nodes[i] = n
	others := slices.Clone(c.nodes)
	c.mu.Unlock()

	for _, o := range others {
		if o.idx == i || o.stopped {
			continue
		}
		err := o.node.Network().RemoveRoute("^" + regexp.QuoteMeta(string(n.name)) + "$")
		if err != nil && errors.Is(err, gen.ErrUnknown) == false {
			c.t.Fatalf("node %s: remove the route to %s: %v", o.name, n.name, err)
		}
		c.route(o, n)
		c.route(n, o)
	}
}

// startNode starts the node name and registers the protocol on it; the
// caller adds it to the cluster and the routes.
func (c *realCluster) startNode(name gen.Atom) *clNode {
	c.t.Helper()
	level := gen.LogLevelInfo
	if os.Getenv("LEADER_TEST_DEBUG") != "" {
		level = gen.LogLevelDebug
	}
	options := gen.NodeOptions{
		ShutdownTimeout: clShutdownTimeout,
		Network: gen.NetworkOptions{
			Cookie: clCookie,
			Acceptors: []gen.AcceptorOptions{
				{Host: "127.0.0.1"},
			},
		},
		Log: gen.LogOptions{
			Level:         level,
			DefaultLogger: gen.DefaultLoggerOptions{Disable: true},
			Loggers: []gen.Logger{
				{Name: "capture", Logger: c.logs},
				{Name: "warnings", Logger: c.warnings, Filter: []gen.LogLevel{gen.LogLevelWarning, gen.LogLevelError, gen.LogLevelPanic}},
			},
		},
	}
	node, err := ergo.StartNode(name, options)
	require.NoError(c.t, err, "start node %s", name)
	n := &clNode{name: name, node: node, started: node.Creation(), listed: true, actors: make(map[gen.Atom]gen.PID)}

	// Register the protocol before the node connects to anyone. The
	// registry is the process's: every node after the first finds the
	// types taken.
	if c.cfg.unregistered == false {
		if err := node.Network().RegisterTypes(NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
			node.StopForce()
			c.t.Fatalf("node %s: register the types: %v", name, err)
		}
		if err := node.Network().RegisterErrors(ErrorTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
			node.StopForce()
			c.t.Fatalf("node %s: register the errors: %v", name, err)
		}
	}

	acceptors, err := node.Network().Acceptors()
	if err != nil || len(acceptors) == 0 {
		node.StopForce()
		c.t.Fatalf("node %s has no acceptor: %v", name, err)
	}
	n.addr = acceptors[0].Info().Interface
	if _, _, err := net.SplitHostPort(n.addr); err != nil {
		node.StopForce()
		c.t.Fatalf("node %s: acceptor interface %q is not host:port: %v", name, n.addr, err)
	}
	return n
}

// route adds the static route on from to to's acceptor.
func (c *realCluster) route(from, to *clNode) {
	c.t.Helper()
	host, portText, err := net.SplitHostPort(to.addr)
	require.NoError(c.t, err)
	port, err := strconv.ParseUint(portText, 10, 16)
	require.NoError(c.t, err)
	route := gen.NetworkRoute{
		Route:  gen.Route{Host: host, Port: uint16(port)},
		Cookie: clCookie,
	}
	require.NoError(c.t, from.node.Network().AddRoute("^"+regexp.QuoteMeta(string(to.name))+"$", route, 1))
}

func (c *realCluster) addNodes(count int) []int {
	var list []int
	for range count {
		list = append(list, c.addNode())
	}
	return list
}

func (c *realCluster) n(i int) *clNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

func (c *realCluster) name(i int) gen.Atom { return c.n(i).name }

// live returns the indices of the nodes not stopped.
func (c *realCluster) live() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var list []int
	for _, n := range c.nodes {
		if n.stopped == false {
			list = append(list, n.idx)
		}
	}
	return list
}

// setListed adds or removes node i from the discovery of every actor, as a
// discovery service would when a node appears or goes away.
func (c *realCluster) setListed(i int, listed bool) {
	c.mu.Lock()
	c.nodes[i].listed = listed
	c.mu.Unlock()
}

// peersOf is the discovery of an actor on node self: the actor named name
// on every other listed node.
func (c *realCluster) peersOf(self int, name gen.Atom) func() []gen.ProcessID {
	return func() []gen.ProcessID {
		c.mu.Lock()
		defer c.mu.Unlock()
		var peers []gen.ProcessID
		for _, n := range c.nodes {
			if n.idx != self && n.listed {
				peers = append(peers, gen.ProcessID{Name: name, Node: n.name})
			}
		}
		return peers
	}
}

// spawn starts a test actor on node i.
func (c *realCluster) spawn(i int, spec clActorSpec) (gen.PID, error) {
	n := c.n(i)
	if spec.name == "" {
		spec.name = clActorName
	}
	if spec.discoverEvery == 0 {
		spec.discoverEvery = 100 * time.Millisecond
	}
	if spec.discover == nil {
		spec.discover = c.peersOf(i, spec.name)
	}
	factory := func() gen.ProcessBehavior {
		return &testActor{spec: spec, rec: c.rec}
	}
	pid, err := n.node.SpawnRegister(spec.name, factory, gen.ProcessOptions{})
	if err != nil {
		return pid, err
	}
	c.mu.Lock()
	n.actors[spec.name] = pid
	c.mu.Unlock()
	return pid, nil
}

func (c *realCluster) mustSpawn(i int, spec clActorSpec) gen.PID {
	c.t.Helper()
	pid, err := c.spawn(i, spec)
	require.NoError(c.t, err, "spawn %s on %s", spec.name, c.name(i))
	return pid
}

// spawnAll starts the main actor with the same options on every given node.
func (c *realCluster) spawnAll(idxs []int, options Options, switches actorTuning) {
	c.t.Helper()
	for _, i := range idxs {
		c.mustSpawn(i, clActorSpec{options: options, switches: switches})
	}
}

func (c *realCluster) pid(i int, name gen.Atom) gen.PID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i].actors[name]
}

// send delivers a test message to the actor named name on node i.
func (c *realCluster) send(i int, name gen.Atom, message any) {
	c.t.Helper()
	require.NoError(c.t, c.n(i).node.Send(c.pid(i, name), message))
}

// clShutdownTimeout is the test nodes' ShutdownTimeout.
const clShutdownTimeout = 10 * time.Second

// stopNode stops node i gracefully (Stop). The discovery stops listing it
// first: a Join of a node that is already gone would declare a member that
// never answers, which stays in the view until someone calls Leave.
//
// A graceful Stop that takes the whole ShutdownTimeout means a process
// never ended: the framework (v3.3.0) lets a process be spawned while the
// node stops, sends it no exit, and kills it only when the timeout runs
// out. The library starts no helper once its actor is on its way out
// (Actor.watch, joinHub); this fails when one does.
func (c *realCluster) stopNode(i int) {
	n := c.n(i)
	c.setListed(i, false)
	start := time.Now()
	n.node.Stop()
	if took := time.Since(start); took > clShutdownTimeout*9/10 {
		c.t.Errorf("graceful Stop of %s took %s (ShutdownTimeout %s): a process of the node never ended; one spawned while the node stopped gets no exit", n.node.Name(), took.Round(time.Millisecond), clShutdownTimeout)
	}
	c.mu.Lock()
	n.stopped = true
	c.mu.Unlock()
}

// forceStop stops node i with StopForce: its processes are killed before
// its connections drop, so peers see a real termination (kill). This is
// not a crash (a crash is a lost connection, see the process lab).
func (c *realCluster) forceStop(i int) {
	n := c.n(i)
	c.setListed(i, false)
	n.node.StopForce()
	c.mu.Lock()
	n.stopped = true
	c.mu.Unlock()
}
