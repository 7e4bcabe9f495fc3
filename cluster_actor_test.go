package leader

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

// The leader actor of the in-process cluster tests, and the recorder of
// its callbacks (cluster_helpers_test.go starts the nodes).

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
	lines []clWarning
	next  int
	full  bool
}

func newClLogRing(size int) *clLogRing {
	return &clLogRing{lines: make([]clWarning, size)}
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
	l.lines[l.next] = clWarning{at: m.Time, line: line}
	l.next = (l.next + 1) % len(l.lines)
	if l.next == 0 {
		l.full = true
	}
	l.mu.Unlock()
}

func (l *clLogRing) Terminate() {}

func (l *clLogRing) String() string {
	return strings.Join(l.since(time.Time{}), "\n")
}

// since returns the lines still in the ring that were logged at or after t.
func (l *clLogRing) since(t time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ordered []clWarning
	if l.full {
		ordered = append(ordered, l.lines[l.next:]...)
	}
	ordered = append(ordered, l.lines[:l.next]...)
	var lines []string
	for _, w := range ordered {
		if w.at.Before(t) == false {
			lines = append(lines, w.line)
		}
	}
	return lines
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
	ctlStepDown   struct{ result chan error }
	ctlStepDownTo struct {
		node   gen.Atom
		result chan error
	}
	ctlProbe struct{ result chan *Probe }
	// ctlLeave makes the actor call Leave.
	ctlLeave struct{ node gen.Atom }
)

// clActorSpec configures one test actor.
type clActorSpec struct {
	name     gen.Atom
	options  Options
	switches actorTuning
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

// campaignTurns implements campaignTurnsTuner.
func (a *testActor) campaignTurns() int { return a.spec.switches.campaignTurns }

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
	case ctlStepDownTo:
		m.result <- a.StepDownTo(m.node)
	case ctlProbe:
		m.result <- a.Probe()
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
