package leader

import (
	"errors"
	"fmt"
	"math"
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

// ---------------------------------------------------------------------------
// Callback recorder

type cbKind int

const (
	cbLeader cbKind = iota
	cbFollower
	cbTerminate
	cbPeerJoined
	cbPeerLeft
)

func (k cbKind) String() string {
	switch k {
	case cbLeader:
		return "BecomeLeader"
	case cbFollower:
		return "BecomeFollower"
	case cbPeerJoined:
		return "PeerJoined"
	case cbPeerLeft:
		return "PeerLeft"
	}
	return "Terminate"
}

// cbEvent is one callback an actor ran.
type cbEvent struct {
	kind    cbKind
	cluster string
	node    gen.Atom
	pid     gen.PID
	term    uint64  // Term() when the callback ran
	leader  gen.PID // HandleBecomeFollower's argument, or the peer of HandlePeer*
	at      time.Time
}

func (e cbEvent) String() string {
	s := fmt.Sprintf("%s %s %s %s term=%d", e.at.Format("15:04:05.000000"), e.cluster, e.node, e.kind, e.term)
	switch e.kind {
	case cbFollower:
		s += " leader=" + string(e.leader.Node)
	case cbPeerJoined, cbPeerLeft:
		s += " peer=" + string(e.leader.Node) + " " + e.leader.String()
	}
	return s
}

// cbRecorder collects the callbacks of every actor of a test.
type cbRecorder struct {
	mu     sync.Mutex
	events []cbEvent
}

func (r *cbRecorder) add(e cbEvent) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *cbRecorder) snapshot() []cbEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// find returns the events that match.
func (r *cbRecorder) find(match func(cbEvent) bool) []cbEvent {
	var found []cbEvent
	for _, e := range r.snapshot() {
		if match(e) {
			found = append(found, e)
		}
	}
	return found
}

// leadersSince returns the BecomeLeader events of cluster at or after since.
func (r *cbRecorder) leadersSince(cluster string, since time.Time) []cbEvent {
	return r.find(func(e cbEvent) bool {
		return e.kind == cbLeader && e.cluster == cluster && e.at.Before(since) == false
	})
}

// firstAfter returns the first event of kind on node (any node if empty)
// at or after since.
func (r *cbRecorder) firstAfter(kind cbKind, cluster string, node gen.Atom, since time.Time) (cbEvent, bool) {
	found := r.find(func(e cbEvent) bool {
		return e.kind == kind && e.cluster == cluster && (node == "" || e.node == node) && e.at.Before(since) == false
	})
	if len(found) == 0 {
		return cbEvent{}, false
	}
	return found[0], true
}

// violations checks the invariants over everything recorded: never two
// leaders in one term of one cluster, and per actor the callbacks alternate
// (a BecomeLeader is followed by a BecomeFollower or the end of the actor,
// never by another BecomeLeader), with strictly growing terms of leadership
// and nothing after Terminate.
func (r *cbRecorder) violations() []string {
	var problems []string
	type key struct {
		cluster string
		term    uint64
	}
	leaders := make(map[key]gen.PID)
	type actorState struct {
		leading    bool
		lastTerm   uint64
		terminated bool
	}
	actors := make(map[gen.PID]*actorState)
	for _, e := range r.snapshot() {
		s := actors[e.pid]
		if s == nil {
			s = &actorState{}
			actors[e.pid] = s
		}
		if s.terminated {
			problems = append(problems, fmt.Sprintf("callback after Terminate: %s", e))
		}
		switch e.kind {
		case cbLeader:
			k := key{e.cluster, e.term}
			if other, ok := leaders[k]; ok && other != e.pid {
				problems = append(problems, fmt.Sprintf("two leaders in term %d of %q: %s and %s", e.term, e.cluster, other.Node, e.node))
			}
			leaders[k] = e.pid
			if s.leading {
				problems = append(problems, fmt.Sprintf("BecomeLeader twice without BecomeFollower between: %s", e))
			}
			if e.term <= s.lastTerm {
				problems = append(problems, fmt.Sprintf("leadership at term %d after leading term %d: %s", e.term, s.lastTerm, e))
			}
			s.leading = true
			s.lastTerm = e.term
		case cbFollower:
			s.leading = false
		case cbTerminate:
			s.terminated = true
		}
	}
	return problems
}

func (r *cbRecorder) dump() string {
	var b strings.Builder
	for _, e := range r.snapshot() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Log capture: a bounded ring of the nodes' log lines, printed when a test
// fails.

type clLogRing struct {
	mu    sync.Mutex
	lines []string
	next  int
	full  bool
}

func newClLogRing(size int) *clLogRing {
	return &clLogRing{lines: make([]string, size)}
}

func (l *clLogRing) Log(m gen.MessageLog) {
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
	line := fmt.Sprintf("%s [%s] %s: %s", m.Time.Format("15:04:05.000000"), m.Level, source, text)
	l.mu.Lock()
	l.lines[l.next] = line
	l.next = (l.next + 1) % len(l.lines)
	if l.next == 0 {
		l.full = true
	}
	l.mu.Unlock()
}

func (l *clLogRing) Terminate() {}

func (l *clLogRing) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ordered []string
	if l.full {
		ordered = append(ordered, l.lines[l.next:]...)
	}
	ordered = append(ordered, l.lines[:l.next]...)
	return strings.Join(ordered, "\n")
}

// ---------------------------------------------------------------------------
// The test actor

// messages the tests send to an actor (local sends, never encoded)
type (
	ctlDiscover struct{}
	// ctlBlock hangs the actor: it sleeps inside HandleMessage.
	ctlBlock struct {
		d       time.Duration
		started chan struct{}
	}
	// ctlStepDown makes the actor call StepDown from its own goroutine.
	ctlStepDown struct{ result chan error }
	// ctlLeave makes the actor call Leave.
	ctlLeave struct{ node gen.Atom }
)

// clActorSpec configures one test actor.
type clActorSpec struct {
	name     gen.Atom
	options  Options
	switches protocolSwitches
	// discover returns the peers to Join on every discovery tick.
	discover      func() []gen.ProcessID
	discoverEvery time.Duration
	// confirm, when set, answers HandleConfirmLeader.
	confirm func() (bool, error)
}

type testActor struct {
	Actor
	spec clActorSpec
	rec  *cbRecorder
}

func (a *testActor) Init(args ...any) (Options, error) {
	// Join from a handler frame, as in the documentation's Basic Usage.
	if err := a.Send(a.PID(), ctlDiscover{}); err != nil {
		return Options{}, err
	}
	return a.spec.options, nil
}

func (a *testActor) HandleMessage(from gen.PID, message any) error {
	switch m := message.(type) {
	case ctlDiscover:
		if a.spec.discover != nil {
			for _, peer := range a.spec.discover() {
				a.Join(peer)
			}
		}
		if _, err := a.SendAfter(a.PID(), ctlDiscover{}, a.spec.discoverEvery); err != nil {
			return err
		}
	case ctlBlock:
		if m.started != nil {
			close(m.started)
		}
		time.Sleep(m.d)
	case ctlStepDown:
		m.result <- a.StepDown()
	case ctlLeave:
		a.Leave(m.node)
	}
	return nil
}

func (a *testActor) record(kind cbKind, leader gen.PID) {
	a.rec.add(cbEvent{
		kind:    kind,
		cluster: a.spec.options.ClusterID,
		node:    a.Node().Name(),
		pid:     a.PID(),
		term:    a.Term(),
		leader:  leader,
		at:      time.Now(),
	})
}

func (a *testActor) HandleConfirmLeader() (bool, error) {
	if a.spec.confirm != nil {
		return a.spec.confirm()
	}
	return true, nil
}

func (a *testActor) HandleBecomeLeader() error {
	a.record(cbLeader, a.PID())
	return nil
}

func (a *testActor) HandleBecomeFollower(leader gen.PID) error {
	a.record(cbFollower, leader)
	return nil
}

func (a *testActor) HandlePeerJoined(peer gen.PID) error {
	a.record(cbPeerJoined, peer)
	return nil
}

func (a *testActor) HandlePeerLeft(peer gen.PID) error {
	a.record(cbPeerLeft, peer)
	return nil
}

func (a *testActor) Terminate(reason error) {
	a.record(cbTerminate, gen.PID{})
}

// ---------------------------------------------------------------------------
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
	stopped bool
	listed  bool // returned by the discovery of the other nodes
	actors  map[gen.Atom]gen.PID
}

type realCluster struct {
	t      *testing.T
	cfg    clConfig
	rec    *cbRecorder
	logs   *clLogRing
	stalls *clStallWatch

	mu    sync.Mutex
	nodes []*clNode
}

func newRealCluster(t *testing.T, cfg clConfig) *realCluster {
	c := &realCluster{
		t:      t,
		cfg:    cfg,
		rec:    &cbRecorder{},
		logs:   newClLogRing(600),
		stalls: startClStallWatch(),
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
	level := gen.LogLevelInfo
	if os.Getenv("LEADER_TEST_DEBUG") != "" {
		level = gen.LogLevelDebug
	}
	name := gen.Atom(fmt.Sprintf("lt%d-%03d@%s", os.Getpid(), clNodeSeq.Add(1), clNodeHost))
	options := gen.NodeOptions{
		ShutdownTimeout: 10 * time.Second,
		Network: gen.NetworkOptions{
			Cookie: clCookie,
			Acceptors: []gen.AcceptorOptions{
				{Host: "127.0.0.1"},
			},
		},
		Log: gen.LogOptions{
			Level:         level,
			DefaultLogger: gen.DefaultLoggerOptions{Disable: true},
			Loggers:       []gen.Logger{{Name: "capture", Logger: c.logs}},
		},
	}
	node, err := ergo.StartNode(name, options)
	require.NoError(c.t, err, "start node %s", name)
	n := &clNode{name: name, node: node, listed: true, actors: make(map[gen.Atom]gen.PID)}

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
		b := &testActor{spec: spec, rec: c.rec}
		b.Actor.switches = spec.switches
		return b
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
func (c *realCluster) spawnAll(idxs []int, options Options, switches protocolSwitches) {
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

// stopNode stops node i gracefully (Stop). The discovery stops listing it
// first: a Join of a node that is already gone would declare a member that
// never answers, which stays in the view until someone calls Leave.
func (c *realCluster) stopNode(i int) {
	n := c.n(i)
	c.setListed(i, false)
	n.node.Stop()
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

// ---------------------------------------------------------------------------
// Stalls of the test process itself

// clStallWatch measures how late a 5 ms ticker runs, which is how long the
// whole test process was not scheduled (CPU starvation on a loaded box, a
// garbage collection pause). Every node of a test lives in this process, so
// a stall longer than a fraction of ElectionTimeoutMin breaks the timing
// assumption of the protocol for all of them at once: heartbeats and acks
// stop, and a leader can rightly lose its quorum. Tests that assert that
// nothing happens treat a disruption during such a stall as inconclusive
// and run the scenario again.
type clStallWatch struct {
	mu     sync.Mutex
	stalls []clStall
	done   chan struct{}
	wg     sync.WaitGroup
}

type clStall struct {
	end time.Time
	gap time.Duration
}

const clStallTick = 5 * time.Millisecond

func startClStallWatch() *clStallWatch {
	w := &clStallWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		ticker := time.NewTicker(clStallTick)
		defer ticker.Stop()
		last := time.Now()
		for {
			select {
			case <-w.done:
				return
			case now := <-ticker.C:
				now = time.Now()
				if gap := now.Sub(last); gap > 4*clStallTick {
					w.mu.Lock()
					w.stalls = append(w.stalls, clStall{end: now, gap: gap})
					w.mu.Unlock()
				}
				last = now
			}
		}
	}()
	return w
}

func (w *clStallWatch) stop() {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
}

// worstSince returns the longest stall that ended at or after since.
func (w *clStallWatch) worstSince(since time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var worst time.Duration
	for _, s := range w.stalls {
		if s.end.Before(since) == false && s.gap > worst {
			worst = s.gap
		}
	}
	return worst
}

// clInconclusive is what a scenario reports when a disruption it was
// meant to rule out happened during a stall of the test process.
type clInconclusive struct{ why string }

// excuse returns the reason a disruption seen now may be blamed on the
// test process having stalled for tolerance or longer since since, or ""
// when it may not.
func (c *realCluster) excuse(since time.Time, tolerance time.Duration) string {
	if worst := c.stalls.worstSince(since); worst >= tolerance {
		return fmt.Sprintf("the test process stalled for %s (tolerance %s)", worst.Round(time.Millisecond), tolerance)
	}
	return ""
}

// disrupted fails the test with message, or abandons the attempt as
// inconclusive when a stall of the test process explains it.
func (c *realCluster) disrupted(since time.Time, tolerance time.Duration, message string) {
	c.t.Helper()
	if why := c.excuse(since, tolerance); why != "" {
		panic(clInconclusive{why: why + ": " + message})
	}
	c.t.Fatalf("%s (worst stall of the test process meanwhile: %s)", message, c.stalls.worstSince(since).Round(time.Millisecond))
}

// clRetry runs a scenario on a fresh cluster, up to three times while an
// attempt turns out inconclusive (see clStallWatch). Each attempt's cluster
// is torn down before the next starts.
func clRetry(t *testing.T, cfg clConfig, scenario func(c *realCluster)) {
	t.Helper()
	const attempts = 3
	for attempt := 1; attempt <= attempts; attempt++ {
		c := newRealCluster(t, cfg)
		var why string
		func() {
			defer func() {
				if r := recover(); r != nil {
					inconclusive, ok := r.(clInconclusive)
					if ok == false {
						panic(r)
					}
					why = inconclusive.why
				}
			}()
			scenario(c)
		}()
		c.teardown()
		if why == "" {
			return
		}
		t.Logf("attempt %d of %d inconclusive, %s", attempt, attempts, why)
	}
	t.Skipf("every attempt was inconclusive: the box is too loaded to evaluate this test")
}

// ---------------------------------------------------------------------------
// Observing the election

// clNodeState is what one actor reports through Inspect.
type clNodeState struct {
	idx        int
	state      string
	term       uint64
	leaderNode gen.Atom
	viewSize   int
	raw        map[string]string
	err        error
}

func (s clNodeState) String() string {
	if s.err != nil {
		return fmt.Sprintf("#%d error %v", s.idx, s.err)
	}
	return fmt.Sprintf("#%d %s term=%d leader=%s view=%d", s.idx, s.state, s.term, s.leaderNode, s.viewSize)
}

var clStateKeys = []string{"ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_size"}

// inspect asks the actor named name on node i for keys.
func (c *realCluster) inspect(i int, name gen.Atom, keys ...string) (map[string]string, error) {
	n := c.n(i)
	return n.node.Inspect(c.pid(i, name), keys...)
}

// stateOf reads the role, term, leader and view of an actor, plus extra keys.
func (c *realCluster) stateOf(i int, name gen.Atom, extra ...string) clNodeState {
	s := clNodeState{idx: i}
	raw, err := c.inspect(i, name, append(slices.Clone(clStateKeys), extra...)...)
	if err != nil {
		s.err = err
		return s
	}
	s.raw = raw
	s.state = raw["ergo:state"]
	s.term, err = strconv.ParseUint(raw["ergo:term"], 10, 64)
	if err != nil {
		s.err = fmt.Errorf("ergo:term %q: %w", raw["ergo:term"], err)
	}
	s.leaderNode = gen.Atom(raw["ergo:leader_node"])
	s.viewSize, err = strconv.Atoi(raw["ergo:view_size"])
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("ergo:view_size %q: %w", raw["ergo:view_size"], err)
	}
	return s
}

func (c *realCluster) states(idxs []int, name gen.Atom, extra ...string) []clNodeState {
	list := make([]clNodeState, 0, len(idxs))
	for _, i := range idxs {
		list = append(list, c.stateOf(i, name, extra...))
	}
	return list
}

func clDescribe(states []clNodeState) string {
	parts := make([]string, 0, len(states))
	for _, s := range states {
		parts = append(parts, s.String())
	}
	return strings.Join(parts, "; ")
}

// agreedLeader reports the leader of idxs when exactly one of them is in
// state leader and every one of them names it at the same term.
func (c *realCluster) agreedLeader(idxs []int, name gen.Atom) (int, uint64, bool, string) {
	states := c.states(idxs, name)
	leader := -1
	for _, s := range states {
		if s.err != nil {
			return -1, 0, false, clDescribe(states)
		}
		if s.state == "leader" {
			if leader != -1 {
				return -1, 0, false, clDescribe(states)
			}
			leader = s.idx
		}
	}
	if leader == -1 {
		return -1, 0, false, clDescribe(states)
	}
	leaderName := c.name(leader)
	var term uint64
	for _, s := range states {
		if s.idx == leader {
			term = s.term
		}
	}
	for _, s := range states {
		if s.leaderNode != leaderName || s.term != term {
			return -1, 0, false, clDescribe(states)
		}
	}
	return leader, term, true, clDescribe(states)
}

// waitLeader polls until idxs agree on one leader and returns it and its
// term.
func (c *realCluster) waitLeader(idxs []int, name gen.Atom, timeout time.Duration) (int, uint64) {
	c.t.Helper()
	var leader int
	var term uint64
	waitFor(c.t, timeout, fmt.Sprintf("nodes %v to agree on one leader", idxs), func() (bool, string) {
		var ok bool
		var desc string
		leader, term, ok, desc = c.agreedLeader(idxs, name)
		return ok, desc
	})
	return leader, term
}

// waitViews polls until every node of idxs reports a view of size.
func (c *realCluster) waitViews(idxs []int, name gen.Atom, size int, timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, fmt.Sprintf("views of size %d on %v", size, idxs), func() (bool, string) {
		states := c.states(idxs, name)
		for _, s := range states {
			if s.err != nil || s.viewSize != size {
				return false, clDescribe(states)
			}
		}
		return true, ""
	})
}

// waitAcquainted waits until every actor of idxs knows the PID of every
// other one: each has answered the others. A declared peer that never
// answered counts in the view but is nobody's ghost (a lost connection
// needs one first), so a test that then takes a node away and expects the
// view to shrink must start from here. Under the stand-in's
// simultaneous-connect switch this is also where a connection that carries
// nothing must have been found and replaced.
func (c *realCluster) waitAcquainted(idxs []int, name gen.Atom, timeout time.Duration) {
	c.t.Helper()
	want := strconv.Itoa(len(idxs) - 1)
	waitFor(c.t, timeout, fmt.Sprintf("every actor of %v to know and monitor the others", idxs), func() (bool, string) {
		states := c.states(idxs, name, "ergo:peers", "ergo:unmonitored")
		for _, s := range states {
			if s.err != nil || s.raw["ergo:peers"] != want || s.raw["ergo:unmonitored"] != "" {
				return false, clDescribe(states)
			}
		}
		return true, ""
	})
}

// waitQuietPeriodsOver waits until no actor of idxs is in the quiet period
// of a fresh start (ergo:quiet_until), so that every one of them may vote.
func (c *realCluster) waitQuietPeriodsOver(idxs []int, name gen.Atom, timeout time.Duration) {
	c.t.Helper()
	waitFor(c.t, timeout, fmt.Sprintf("the quiet periods of %v to end", idxs), func() (bool, string) {
		states := c.states(idxs, name, "ergo:quiet_until")
		for _, s := range states {
			if s.err != nil {
				return false, clDescribe(states)
			}
			until, err := time.Parse(time.RFC3339Nano, s.raw["ergo:quiet_until"])
			if err != nil || time.Now().Before(until) {
				return false, fmt.Sprintf("%s quiet until %q", c.name(s.idx), s.raw["ergo:quiet_until"])
			}
		}
		return true, ""
	})
}

// waitFor polls cond until it holds, failing the test at the deadline with
// the last description cond gave.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, desc := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, desc)
		}
		time.Sleep(clPoll)
	}
}

// clHoldFor polls cond for the whole duration and fails the test the first
// time it does not hold.
func clHoldFor(t testing.TB, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	end := time.Now().Add(d)
	for {
		ok, desc := cond()
		if ok == false {
			t.Fatalf("%s stopped holding: %s", what, desc)
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(clPoll)
	}
}

// others returns idxs without the excluded ones.
func clWithout(idxs []int, excluded ...int) []int {
	var list []int
	for _, i := range idxs {
		if slices.Contains(excluded, i) == false {
			list = append(list, i)
		}
	}
	return list
}

// ---------------------------------------------------------------------------
// Figures

// percentile returns the p-th percentile (0..100) of sorted durations, by
// the nearest-rank method.
func clPercentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

func clSummary(samples []time.Duration) string {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return fmt.Sprintf("n=%d min=%s p50=%s p90=%s p99=%s max=%s",
		len(sorted), sorted[0].Round(10*time.Microsecond), clPercentile(sorted, 50).Round(10*time.Microsecond),
		clPercentile(sorted, 90).Round(10*time.Microsecond), clPercentile(sorted, 99).Round(10*time.Microsecond),
		sorted[len(sorted)-1].Round(10*time.Microsecond))
}
