package leader

import (
	"fmt"
	"math"
	"net"
	"os"
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

// Helpers for the cluster tests: real nodes on 127.0.0.1 talking over TCP,
// every ordered pair of nodes through its own proxy, and a leader actor on
// each node that records its callbacks. Only the framework's public API is
// used, so the same tests run on the real framework.

const (
	// clCookie is what the nodes use on the proxied routes and what
	// their acceptors accept.
	clCookie = "leader-cluster-test"
	// clFallbackCookie is the node-wide cookie, used for any dial that does
	// not go through a static route. The acceptors do not accept it, so a
	// node that cannot reach a peer through its proxy cannot sneak around a
	// cut through the registrar either (a runtime may fall back to it).
	clFallbackCookie = "leader-cluster-no-bypass"

	clActorName = gen.Atom("election")

	// clNodeHost is the host part of the test nodes' names. The nodes listen
	// on 127.0.0.1 and reach each other only through static routes to their
	// proxies, so the name's host is never dialed. It matters only to a
	// runtime that falls back to the registrar when a static route fails (a
	// cut): the built-in registrar looks the name up over UDP at the name's
	// host, any process on the box may serve it (a busy one, or one going
	// away), and such a lookup can take hundreds of milliseconds. With an
	// IPv6 host the stand-in's IPv4-only lookup fails at once, so a cut link
	// fails as fast as a refused connection.
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
	// unregistered skips leader.NetworkTypes() on the nodes.
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

	mu      sync.Mutex
	nodes   []*clNode
	proxies map[[2]int]*tcpProxy // [from, to]: the path from node `from` to node `to`
}

func newRealCluster(t *testing.T, cfg clConfig) *realCluster {
	c := &realCluster{
		t:       t,
		cfg:     cfg,
		rec:     &cbRecorder{},
		logs:    newClLogRing(600),
		stalls:  startClStallWatch(),
		proxies: make(map[[2]int]*tcpProxy),
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

// teardown stops every node and closes every proxy; it may run twice.
func (c *realCluster) teardown() {
	c.mu.Lock()
	var nodes []*clNode
	for _, n := range c.nodes {
		if n.stopped == false {
			n.stopped = true
			nodes = append(nodes, n)
		}
	}
	proxies := make([]*tcpProxy, 0, len(c.proxies))
	for _, p := range c.proxies {
		proxies = append(proxies, p)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.node.StopForce()
		}()
	}
	wg.Wait()
	for _, p := range proxies {
		p.Close()
	}
}

// addNode starts a node, connects it to the proxy mesh and lists it in the
// discovery of every actor. It spawns nothing.
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
			Cookie: clFallbackCookie,
			Acceptors: []gen.AcceptorOptions{
				{Host: "127.0.0.1", Cookie: clCookie},
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

	// Register the protocol before the node connects to anyone.
	if c.cfg.unregistered == false {
		require.NoError(c.t, node.Network().RegisterTypes(NetworkTypes()))
		if errs := ErrorTypes(); len(errs) > 0 {
			require.NoError(c.t, node.Network().RegisterErrors(errs))
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
		c.link(n, o)
		c.link(o, n)
	}
	return n.idx
}

// link creates the proxy on the path from -> to and the static route on
// from that uses it.
func (c *realCluster) link(from, to *clNode) {
	c.t.Helper()
	p, err := startProxy(fmt.Sprintf("%d->%d", from.idx, to.idx), to.addr)
	require.NoError(c.t, err)
	c.mu.Lock()
	c.proxies[[2]int{from.idx, to.idx}] = p
	c.mu.Unlock()
	route := gen.NetworkRoute{
		Route:  gen.Route{Host: "127.0.0.1", Port: p.Port()},
		Cookie: clCookie,
	}
	require.NoError(c.t, from.node.Network().AddRoute(string(to.name), route, 1))
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

// index returns the index of the node named name, -1 if none.
func (c *realCluster) index(name gen.Atom) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.name == name {
			return n.idx
		}
	}
	return -1
}

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

// stopNode stops node i, gracefully (Stop) or abruptly (StopForce). The
// discovery stops listing it first: a Join of a node that is already gone
// would declare a member that never answers, which stays in the view until
// someone calls Leave.
// stopNode stops node i: gracefully (Stop), or as a crash. A crash is what
// peers see when a node's machine or OS process dies: every connection to
// it is lost (the proxies cut and close every link), and only then is the
// node torn down with StopForce (which alone would be a different event:
// the framework kills the processes first, and peers see reason kill).
func (c *realCluster) stopNode(i int, graceful bool) {
	n := c.n(i)
	c.setListed(i, false)
	if graceful {
		n.node.Stop()
	} else {
		for pair, p := range c.allProxies() {
			if pair[0] == i || pair[1] == i {
				p.Cut()
			}
		}
		n.node.StopForce()
	}
	c.mu.Lock()
	n.stopped = true
	c.mu.Unlock()
}

// forceStop stops node i with StopForce alone: its processes are killed
// before its connections drop, so peers see a real termination (kill).
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

// steady polls cond for d. When it stops holding, the test fails, unless
// the test process stalled for tolerance or more since since: then the
// attempt is inconclusive and steady panics with clInconclusive, which
// clRetry catches.
func (c *realCluster) steady(since time.Time, tolerance, d time.Duration, what string, cond func() (bool, string)) {
	c.t.Helper()
	end := time.Now().Add(d)
	for {
		ok, desc := cond()
		if ok == false {
			c.disrupted(since, tolerance, fmt.Sprintf("%s stopped holding: %s", what, desc))
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(clPoll)
	}
}

// disrupted fails the test with message, or abandons the attempt as
// inconclusive when a stall of the test process explains it.
// requireStepDown waits for the leader on node i of the cluster named
// cluster to report HandleBecomeFollower after since, and holds it to the
// documented bound: ElectionTimeoutMin plus one heartbeat (plus CI slack).
// what names the situation in messages ("the deaf leader").
func (c *realCluster) requireStepDown(tm clusterTimings, cluster string, i int, since time.Time, tolerance time.Duration, what string) {
	c.t.Helper()
	var stepDown cbEvent
	waitFor(c.t, clConverge, what+" to step down", func() (bool, string) {
		var ok bool
		stepDown, ok = c.rec.firstAfter(cbFollower, cluster, c.name(i), since)
		return ok, c.stateOf(i, clActorName).String()
	})
	latency := stepDown.at.Sub(since)
	bound := tm.electionMin() + tm.heartbeat() + clSlack
	c.t.Logf("%s stepped down %s after it was cut off (bound %s)", what, latency.Round(time.Millisecond), bound)
	if latency >= bound {
		c.disrupted(since, tolerance, fmt.Sprintf("%s stepped down %s after it was cut off, later than %s", what, latency, bound))
	}
}

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
// Network faults

func (c *realCluster) proxy(from, to int) *tcpProxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.proxies[[2]int{from, to}]
	if p == nil {
		c.t.Fatalf("no proxy %d->%d", from, to)
	}
	return p
}

func (c *realCluster) allProxies() map[[2]int]*tcpProxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	copied := make(map[[2]int]*tcpProxy, len(c.proxies))
	for k, v := range c.proxies {
		copied[k] = v
	}
	return copied
}

// partition cuts every link between nodes of different groups. A node in
// no group is alone.
func (c *realCluster) partition(groups ...[]int) {
	group := make(map[int]int)
	for g, members := range groups {
		for _, i := range members {
			group[i] = g
		}
	}
	groupOf := func(i int) int {
		if g, ok := group[i]; ok {
			return g
		}
		return -1 - i
	}
	for pair, p := range c.allProxies() {
		if groupOf(pair[0]) != groupOf(pair[1]) {
			p.Cut()
		}
	}
}

// healAll restores every link.
func (c *realCluster) healAll() {
	for _, p := range c.allProxies() {
		p.Heal()
	}
}

// cutPair cuts both paths between i and j; healPair restores them.
func (c *realCluster) cutPair(i, j int) {
	c.proxy(i, j).Cut()
	c.proxy(j, i).Cut()
}

func (c *realCluster) healPair(i, j int) {
	c.proxy(i, j).Heal()
	c.proxy(j, i).Heal()
}

// blackhole puts node i behind a firewall that drops its traffic after the
// TCP connect: its connections close, and every new one, to it or from it,
// is accepted by the proxy and never answered.
func (c *realCluster) blackhole(i int) {
	for pair, p := range c.allProxies() {
		if pair[0] == i || pair[1] == i {
			p.Blackhole()
		}
	}
}

// dropToward makes every link to node i half-open: what i sends is
// delivered, what is sent to i is lost. A pair's connection goes through
// whichever proxy the dialing side used, so both paths are set.
func (c *realCluster) dropToward(i int) {
	for pair, p := range c.allProxies() {
		switch {
		case pair[0] == i:
			p.DropDirection(proxyToSource)
		case pair[1] == i:
			p.DropDirection(proxyToTarget)
		}
	}
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
