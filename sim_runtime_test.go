package leader

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

// The deterministic simulator runs the library's own Actor for N nodes in
// one goroutine under virtual time. Each actor gets a simProcess as its
// gen.Process: sends go through a simulated network, SendAfter schedules a
// virtual timer, monitors receive downs, and every random choice, including
// the actors' election jitter, comes from the seed.

// simEvent is one scheduled step. Events at the same instant run in the
// order they were scheduled, so a seed always replays the same way.
type simEvent struct {
	at   time.Time
	seq  uint64
	what string
	fn   func()
}

type eventHeap []*simEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// linkMode is the state of one direction between two nodes.
type linkMode int

const (
	linkUp        linkMode = iota
	linkCut                // no connection can exist: sends fail, connections drop
	linkBlackhole          // the connection stays up but bytes in this direction vanish
)

type simNetwork struct {
	minDelay, maxDelay time.Duration
	dropRate, dupRate  float64
	// stragglers: now and then a link holds a message up for much longer
	// (a retransmission, a GC pause on the way), up to stragglerMax; over
	// one connection everything behind it waits too. stragglerRate is the
	// chance per stragglerSpacing of a link's time, not per message: a TCP
	// stall comes with time and loss, and a protocol that sends more often
	// must not see more of them
	stragglerRate float64
	stragglerMax  time.Duration
	reorder       bool // false: per-link FIFO, as over one TCP connection
}

// worstDelay is the longest a message may travel.
func (n simNetwork) worstDelay() time.Duration {
	if n.stragglerRate > 0 {
		return n.maxDelay + n.stragglerMax
	}
	return n.maxDelay
}

type simulator struct {
	seed    uint64
	rng     *rand.Rand
	start   time.Time
	now     time.Time
	events  eventHeap
	seq     uint64
	stopped bool

	net   simNetwork
	links map[[2]gen.Atom]linkMode // directed
	conns map[[2]gen.Atom]uint64   // undirected, sorted pair -> connection epoch (0 = none)
	// deadNext marks pairs whose next connection carries nothing either
	// way while both ends report it up (crossDials); deadEpochs are those
	// connections
	deadNext   map[[2]gen.Atom]bool
	deadEpochs map[uint64]bool
	// noticeLag is how much later than the network's delay a node's
	// framework reports a lost connection (a node whose reader waits its
	// turn on busy cores); until it does, unnoticed[{node, peer}], the
	// node still reports the connection up
	noticeLag map[gen.Atom]time.Duration
	unnoticed map[[2]gen.Atom]time.Time
	// downLag is how much later a node's election actors get the downs
	// of a lost connection from its watchers, which got them at once, while
	// the node already reports the connection gone: the late end of a
	// crash's thousands of downs, which a shared watcher hands over a few
	// dozen at a time
	downLag  map[gen.Atom]time.Duration
	epochs   uint64
	lastSend map[[2]gen.Atom]time.Time // FIFO delivery per directed link
	// the previous message's time per directed link (stragglerChance)
	lastStraggle map[[2]gen.Atom]time.Time
	// messages that arrived over each directed link, per connection epoch:
	// RemoteNodeInfo.MessagesIn of the receiving end
	arrived map[simArrivalKey]uint64
	// heard holds which node incarnations a node incarnation received
	// messages from: the ground truth of who could have told whom of an
	// earlier incarnation (checker.vouched)
	heard map[simHeardKey]struct{}

	nodes map[gen.Atom]*simNode
	// nodesMu guards nodes and their alive flags against readers outside
	// the simulation's goroutine: the package's connection board sweeps
	// every node of the OS process it knows (simGenNode.IsAlive), those of
	// a simulation running beside this one included. The simulation itself
	// writes under it and reads without it.
	nodesMu   sync.RWMutex
	monitors  map[gen.PID]map[gen.PID]bool  // target -> watchers
	nodeMons  map[gen.PID]map[gen.Atom]bool // watcher -> the nodes whose connection it monitors
	creations int64

	trace    []string
	tracing  bool // keep the trace; off by default for speed, a failing seed replays with it on
	verbose  bool
	failures []string
	check    *checker                                // the first election's invariants
	checks   []*checker                              // every election's, check among them
	replay   string                                  // the test that replays a seed
	setting  string                                  // the environment it replays under, beyond the seed
	observe  func(from gen.PID, to any, message any) // sees every send, when set
	// a broken voter on the wire: every vote reply says granted, whatever
	// its sender decided (the invariants' self-test)
	forgeGrants bool
	logs        bool
	warnings    []string // every warning and error logged, for tests to assert on
}

type simNode struct {
	name     gen.Atom
	creation int64
	alive    bool
	procs    map[uint64]*simProcess
	names    map[gen.Atom]*simProcess
	nextID   uint64
}

func newSimulator(seed uint64, network simNetwork) *simulator {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &simulator{
		seed:       seed,
		rng:        rand.New(rand.NewPCG(seed, 0x5eed)),
		start:      start,
		now:        start,
		net:        network,
		links:      make(map[[2]gen.Atom]linkMode),
		conns:      make(map[[2]gen.Atom]uint64),
		lastSend:   make(map[[2]gen.Atom]time.Time),
		deadNext:   make(map[[2]gen.Atom]bool),
		noticeLag:  make(map[gen.Atom]time.Duration),
		downLag:    make(map[gen.Atom]time.Duration),
		unnoticed:  make(map[[2]gen.Atom]time.Time),
		deadEpochs: make(map[uint64]bool),
		arrived:    make(map[simArrivalKey]uint64),
		heard:      make(map[simHeardKey]struct{}),
		nodes:      make(map[gen.Atom]*simNode),
		monitors:   make(map[gen.PID]map[gen.PID]bool),
		nodeMons:   make(map[gen.PID]map[gen.Atom]bool),
	}
	s.check = s.addChecker()
	s.replay = "TestSimulationRandomSeeds"
	return s
}

// addChecker adds the checker of one more election.
func (s *simulator) addChecker() *checker {
	c := newChecker(s)
	s.checks = append(s.checks, c)
	return c
}

func (s *simulator) elapsed() time.Duration { return s.now.Sub(s.start) }

func (s *simulator) at(when time.Time, what string, fn func()) {
	s.seq++
	heap.Push(&s.events, &simEvent{at: when, seq: s.seq, what: what, fn: fn})
}

func (s *simulator) after(d time.Duration, what string, fn func()) {
	s.at(s.now.Add(d), what, fn)
}

// runUntil processes events up to the virtual time limit, checking the
// invariants after each one. It stops early at the first violation.
func (s *simulator) runUntil(limit time.Time) {
	for s.events.Len() > 0 && len(s.failures) == 0 {
		next := s.events[0]
		if next.at.After(limit) {
			break
		}
		heap.Pop(&s.events)
		s.now = next.at
		if next.what != "" {
			s.note("%s", next.what)
		}
		next.fn()
		for _, c := range s.checks {
			c.afterEvent()
		}
	}
	if s.now.Before(limit) {
		s.now = limit
	}
}

func (s *simulator) runFor(d time.Duration) { s.runUntil(s.now.Add(d)) }

// note appends a line to the trace kept for failure reports.
func (s *simulator) note(format string, args ...any) {
	if s.tracing == false {
		return
	}
	line := fmt.Sprintf("%9.3fms ", float64(s.elapsed().Microseconds())/1000) + fmt.Sprintf(format, args...)
	if s.verbose {
		fmt.Println(line)
	}
	s.trace = append(s.trace, line)
	if len(s.trace) > 400 {
		s.trace = s.trace[len(s.trace)-300:]
	}
}

func (s *simulator) fail(format string, args ...any) {
	msg := fmt.Sprintf("t=%s: ", s.elapsed()) + fmt.Sprintf(format, args...)
	s.note("VIOLATION %s", msg)
	s.failures = append(s.failures, msg)
}

// report describes the failures with the trace of the last events. Runs
// without tracing say how to replay the seed with it.
func (s *simulator) report() string {
	if s.tracing == false {
		return fmt.Sprintf("seed %d: %s\nreplay with the trace: %sLEADER_SIM_SEED=%d LEADER_SIM_VERBOSE=1 go test -run '^%s$' -v .",
			s.seed, strings.Join(s.failures, "; "), s.setting, s.seed, s.replay)
	}
	last := s.trace
	if n := 80 + len(s.failures); len(last) > n {
		last = last[len(last)-n:]
	}
	return fmt.Sprintf("seed %d: %s\nreplay: %sLEADER_SIM_SEED=%d LEADER_SIM_VERBOSE=1 go test -run '^%s$' .\nlast events:\n%s",
		s.seed, strings.Join(s.failures, "; "), s.setting, s.seed, s.replay, strings.Join(last, "\n"))
}

// --- nodes and connections ---

func (s *simulator) addNode(name gen.Atom) *simNode {
	s.creations++
	n := &simNode{name: name, creation: s.creations, alive: true, procs: make(map[uint64]*simProcess), names: make(map[gen.Atom]*simProcess), nextID: 1000}
	s.nodesMu.Lock()
	s.nodes[name] = n
	s.nodesMu.Unlock()
	return n
}

func pairKey(a, b gen.Atom) [2]gen.Atom {
	if a > b {
		a, b = b, a
	}
	return [2]gen.Atom{a, b}
}

func (s *simulator) link(from, to gen.Atom) linkMode { return s.links[[2]gen.Atom{from, to}] }

// canConnect: a TCP connection needs both directions to carry the handshake.
func (s *simulator) canConnect(a, b gen.Atom) bool {
	na, nb := s.nodes[a], s.nodes[b]
	return na != nil && nb != nil && na.alive && nb.alive && s.link(a, b) != linkCut && s.link(b, a) != linkCut
}

// connect returns the epoch of the connection between a and b, dialing one
// when needed (as the framework does on a send), or 0 when it cannot.
func (s *simulator) connect(a, b gen.Atom) uint64 {
	key := pairKey(a, b)
	if epoch := s.conns[key]; epoch != 0 {
		return epoch
	}
	if s.canConnect(a, b) == false {
		return 0
	}
	delete(s.unnoticed, [2]gen.Atom{a, b})
	delete(s.unnoticed, [2]gen.Atom{b, a})
	s.epochs++
	s.conns[key] = s.epochs
	if s.deadNext[key] {
		delete(s.deadNext, key)
		s.deadEpochs[s.epochs] = true
		s.note("connection %s <-> %s carries nothing (crossed dials)", a, b)
	}
	return s.epochs
}

// disconnect drops the connection between a and b: every monitor across it
// gets a down with ErrNoConnection, as the framework reports any loss.
func (s *simulator) disconnect(a, b gen.Atom) {
	key := pairKey(a, b)
	if s.conns[key] == 0 {
		return
	}
	delete(s.conns, key)
	// what the old connection still carried is lost with it (the sends
	// check the epoch); a new connection does not wait behind it
	delete(s.lastSend, [2]gen.Atom{a, b})
	delete(s.lastSend, [2]gen.Atom{b, a})
	s.note("connection %s <-> %s dropped", a, b)
	for _, end := range [][2]gen.Atom{{a, b}, {b, a}} {
		if lag := s.noticeLag[end[0]]; lag > 0 {
			s.unnoticed[end] = s.now.Add(lag)
		}
	}
	for _, watcher := range sortedPIDs(s.nodeMons) {
		for _, pair := range [][2]gen.Atom{{a, b}, {b, a}} {
			if watcher.Node == pair[0] && s.nodeMons[watcher][pair[1]] {
				delete(s.nodeMons[watcher], pair[1])
				peer := pair[1]
				s.after(s.delay()+s.noticeLag[watcher.Node], "", func() {
					if p := s.process(watcher); p != nil {
						p.push(p.mailbox.System, gen.MailboxMessageTypeRegular, simCorePID(s.nodes[watcher.Node]), gen.MessageDownNode{Name: peer})
					}
				})
			}
		}
	}
	for _, target := range sortedPIDs(s.monitors) {
		watchers := s.monitors[target]
		for _, watcher := range sortedPIDs(watchers) {
			if (target.Node == a && watcher.Node == b) || (target.Node == b && watcher.Node == a) {
				delete(watchers, watcher)
				s.deliverDown(watcher, target, gen.ErrNoConnection, s.delay()+s.noticeLag[watcher.Node])
			}
		}
	}
}

func (s *simulator) delay() time.Duration {
	lo, hi := s.net.minDelay, s.net.maxDelay
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(s.rng.Int64N(int64(hi-lo)))
}

// process finds a live process by PID or registered name.
func (s *simulator) process(to any) *simProcess {
	switch t := to.(type) {
	case gen.PID:
		n := s.nodes[t.Node]
		if n == nil || n.alive == false || n.creation != t.Creation {
			return nil
		}
		return n.procs[t.ID]
	case gen.ProcessID:
		n := s.nodes[t.Node]
		if n == nil || n.alive == false {
			return nil
		}
		return n.names[t.Name]
	}
	return nil
}

func targetNode(to any) gen.Atom {
	switch t := to.(type) {
	case gen.PID:
		return t.Node
	case gen.ProcessID:
		return t.Node
	}
	return ""
}

// send routes a message like the framework: local delivery skips the
// network; a remote send connects on demand and fails with ErrNoRoute when
// it cannot; an accepted send may still be lost, duplicated or delayed.
func (s *simulator) send(from gen.PID, to any, message any) error {
	dst := targetNode(to)
	if dst == "" {
		return gen.ErrUnsupported
	}
	if s.observe != nil {
		s.observe(from, to, message)
	}
	if reply, ok := message.(msgVoteReply); ok && s.forgeGrants && reply.Granted == false {
		reply.Granted = true
		message = reply
	}
	desc := ""
	if s.tracing {
		desc = fmt.Sprintf("%s -> %v: %s", from.Node, dst, describe(message))
	}
	if dst == from.Node {
		if s.process(to) == nil {
			return gen.ErrProcessUnknown // as the framework reports a local send
		}
		lag := time.Duration(0)
		if down, ok := message.(peerDown); ok && errors.Is(down.Reason, gen.ErrNoConnection) {
			lag = s.downLag[dst]
		}
		s.after(lag, "", func() {
			if p := s.process(to); p != nil {
				s.note("deliver %s", desc)
				p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, from, message)
			}
		})
		return nil
	}
	epoch := s.connect(from.Node, dst)
	if epoch == 0 {
		return gen.ErrNoRoute
	}
	if pid, ok := to.(gen.PID); ok && pid.Creation != s.nodes[dst].creation {
		return gen.ErrProcessIncarnation
	}
	if s.link(from.Node, dst) == linkBlackhole || s.deadEpochs[epoch] {
		s.note("blackholed %s", desc)
		return nil
	}
	if s.rng.Float64() < s.net.dropRate {
		s.note("lost %s", desc)
		return nil
	}
	copies := 1
	if s.rng.Float64() < s.net.dupRate {
		copies = 2
	}
	key0 := [2]gen.Atom{from.Node, dst}
	for i := 0; i < copies; i++ {
		at := s.now.Add(s.delay())
		if s.net.stragglerRate > 0 && s.rng.Float64() < s.stragglerChance(key0) {
			at = at.Add(time.Duration(s.rng.Int64N(int64(s.net.stragglerMax))))
		}
		key := [2]gen.Atom{from.Node, dst}
		if s.net.reorder == false {
			if last := s.lastSend[key]; at.Before(last) {
				at = last
			}
			s.lastSend[key] = at
		}
		s.at(at, "", func() {
			if s.conns[pairKey(from.Node, dst)] != epoch {
				return // the connection it travelled on is gone
			}
			s.arrived[simArrivalKey{from: from.Node, to: dst, epoch: epoch}]++
			if n := s.nodes[dst]; n != nil {
				s.heard[simHeardKey{node: dst, creation: n.creation, from: from.Node, fromCreation: from.Creation}] = struct{}{}
			}
			if p := s.process(to); p != nil {
				s.note("deliver %s", desc)
				p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, from, message)
			}
		})
	}
	return nil
}

// simHeardKey is one node incarnation having received a message from
// another (simulator.heard).
type simHeardKey struct {
	node         gen.Atom
	creation     int64
	from         gen.Atom
	fromCreation int64
}

// stragglerSpacing is the stretch of a link's time that stragglerRate is
// the chance of a straggler in.
const stragglerSpacing = 50 * time.Millisecond

// stragglerChance is the chance that a message sent now over the directed
// link is a straggler: stragglerRate for every stragglerSpacing since the
// link's previous message, at most once per message.
func (s *simulator) stragglerChance(link [2]gen.Atom) float64 {
	if s.lastStraggle == nil {
		s.lastStraggle = make(map[[2]gen.Atom]time.Time)
	}
	last, seen := s.lastStraggle[link]
	s.lastStraggle[link] = s.now
	if seen == false {
		return s.net.stragglerRate
	}
	share := min(float64(s.now.Sub(last))/float64(stragglerSpacing), 1)
	return 1 - math.Pow(1-s.net.stragglerRate, share)
}

// monitor registers watcher's monitor of target, connecting on demand.
func (s *simulator) monitor(watcher gen.PID, target gen.PID) error {
	if target.Node != watcher.Node && s.connect(watcher.Node, target.Node) == 0 {
		return gen.ErrNoRoute
	}
	// as the framework answers: a PID of an earlier start of its node is
	// refused by the connection, a missing process by the node
	if n := s.nodes[target.Node]; n != nil && n.creation != target.Creation {
		return gen.ErrProcessIncarnation
	}
	if s.process(target) == nil {
		return gen.ErrProcessUnknown
	}
	if s.monitors[target] == nil {
		s.monitors[target] = make(map[gen.PID]bool)
	}
	s.monitors[target][watcher] = true
	return nil
}

func (s *simulator) demonitor(watcher gen.PID, target gen.PID) {
	delete(s.monitors[target], watcher)
}

// deliverDown delivers a MessageDownPID to watcher after delay, as the
// framework does: into the System queue, from the terminated process, or
// from the watcher's node's core process for a lost connection.
func (s *simulator) deliverDown(watcher gen.PID, target gen.PID, reason error, after time.Duration) {
	from := target
	if errors.Is(reason, gen.ErrNoConnection) {
		from = simCorePID(s.nodes[watcher.Node])
	}
	s.after(after, "", func() {
		if p := s.process(watcher); p != nil {
			s.note("down %s at %s: %s", target.Node, watcher.Node, reason)
			p.push(p.mailbox.System, gen.MailboxMessageTypeRegular, from, gen.MessageDownPID{PID: target, Reason: reason})
		}
	})
}

// simCorePID is a simulated node's core process, the sender of the
// framework's notifications.
func simCorePID(n *simNode) gen.PID {
	if n == nil {
		return gen.PID{}
	}
	return gen.PID{Node: n.name, ID: 1, Creation: n.creation}
}

// terminated notifies every watcher of a process that ended with reason.
// Watchers across a live connection learn the real reason.
func (s *simulator) terminated(pid gen.PID, reason error) {
	for _, watcher := range sortedPIDs(s.monitors[pid]) {
		if watcher.Node == pid.Node || s.conns[pairKey(watcher.Node, pid.Node)] != 0 {
			s.deliverDown(watcher, pid, reason, s.delay())
		}
	}
	delete(s.monitors, pid)
}

// crash kills a node abruptly: its processes vanish without running any
// code, and every connection to it drops.
func (s *simulator) crash(name gen.Atom) {
	n := s.nodes[name]
	if n == nil || n.alive == false {
		return
	}
	s.note("CRASH %s", name)
	for _, p := range n.procs {
		p.state = gen.ProcessStateTerminated
		if c := p.checker(); c != nil {
			c.terminated(p)
		}
	}
	others := make([]gen.Atom, 0, len(s.nodes))
	for other := range s.nodes {
		others = append(others, other)
	}
	slices.Sort(others)
	for _, other := range others {
		if other != name {
			s.disconnect(name, other)
		}
	}
	s.nodesMu.Lock()
	n.alive = false
	s.nodesMu.Unlock()
	n.procs = map[uint64]*simProcess{}
	n.names = map[gen.Atom]*simProcess{}
	// the killed OS process takes what the package kept for its node
	forgetNode(simGenNode{name: name, sim: s})
}

// close ends the simulation as the end of every node's OS process would:
// what the package keeps per node goes.
func (s *simulator) close() {
	for name := range s.nodes {
		forgetNode(simGenNode{name: name, sim: s})
	}
}

// sortedPIDs returns a map's PID keys in a fixed order: map iteration is
// random, and a seed must replay identically.
func sortedPIDs[V any](m map[gen.PID]V) []gen.PID {
	keys := make([]gen.PID, 0, len(m))
	for pid := range m {
		keys = append(keys, pid)
	}
	slices.SortFunc(keys, func(a, b gen.PID) int {
		if a.Node != b.Node {
			return strings.Compare(string(a.Node), string(b.Node))
		}
		if a.Creation != b.Creation {
			return int(a.Creation - b.Creation)
		}
		return int(a.ID) - int(b.ID)
	})
	return keys
}

func describe(message any) string {
	switch m := message.(type) {
	case msgHeartbeat:
		return fmt.Sprintf("Heartbeat{%s t%d}", m.ClusterID, m.Term)
	case msgHeartbeatAck:
		return fmt.Sprintf("HeartbeatAck{%s t%d}", m.ClusterID, m.Term)
	case msgVote:
		return fmt.Sprintf("Vote{%s t%d}", m.ClusterID, m.Term)
	case msgVoteReply:
		return fmt.Sprintf("VoteReply{%s t%d %v}", m.ClusterID, m.Term, m.Granted)
	case msgPreVote:
		return fmt.Sprintf("PreVote{%s t%d}", m.ClusterID, m.Term)
	case msgPreVoteReply:
		return fmt.Sprintf("PreVoteReply{%s t%d %v}", m.ClusterID, m.Term, m.Granted)
	case msgHello:
		return fmt.Sprintf("Hello{%s t%d}", m.ClusterID, m.Term)
	case msgHelloReply:
		return fmt.Sprintf("HelloReply{%s t%d}", m.ClusterID, m.Term)
	case msgTimeoutNow:
		return fmt.Sprintf("TimeoutNow{%s t%d}", m.ClusterID, m.Term)
	case msgBeats:
		beats, _ := unpackBeats(m)
		return fmt.Sprintf("Beats{%d}", len(beats))
	case msgBeatAcks:
		acks, _ := unpackAcks(m)
		return fmt.Sprintf("BeatAcks{%d}", len(acks))
	}
	return fmt.Sprintf("%T", message)
}

// simArrivalKey names one direction of one connection.
type simArrivalKey struct {
	from, to gen.Atom
	epoch    uint64
}
