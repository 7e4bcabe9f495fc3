package leader

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// A single election state driven directly: one event in, then assertions on
// the state and on the effects it asked for.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// node turns a short test name ("b") into a node name ("b@test"); names
// that already are node names are kept.
func node(name string) gen.Atom {
	if strings.Contains(name, "@") {
		return gen.Atom(name)
	}
	return gen.Atom(name + "@test")
}

func pid(name string) gen.PID {
	return gen.PID{Node: node(name), ID: 1000, Creation: 1}
}

func procID(name string) gen.ProcessID {
	return gen.ProcessID{Name: "leader", Node: node(name)}
}

type stateHarness struct {
	t   *testing.T
	e   *election
	now time.Time
	log *testLog
}

// testLog keeps the warnings and errors the state logs.
type testLog struct {
	gen.Log
	warnings []string
}

func (l *testLog) Level() gen.LogLevel              { return gen.LogLevelDebug }
func (l *testLog) Debug(format string, args ...any) {}
func (l *testLog) Info(format string, args ...any)  {}
func (l *testLog) Warning(format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}
func (l *testLog) Error(format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf(format, args...))
}

// newStateHarness builds node "a" with the given options (ClusterID "c" and
// the test timings 150/300/50 unless set) and bootstrap peers.
func newStateHarness(t *testing.T, options Options, peers ...string) *stateHarness {
	t.Helper()
	if options.ClusterID == "" {
		options.ClusterID = "c"
	}
	for _, p := range peers {
		options.Bootstrap = append(options.Bootstrap, procID(p))
	}
	cfg, _, err := options.resolve()
	if err != nil {
		t.Fatal(err)
	}
	h := &stateHarness{t: t, now: t0, log: &testLog{}}
	h.e = newElection(cfg, pid("a"), "leader", rand.New(rand.NewPCG(1, 2)), h.log)
	h.e.start(h.now)
	// an actor that has been up for long: past its quiet period (lease.go);
	// freshStart tests the quiet period itself
	h.e.startedAt = t0.Add(-time.Hour)
	settleFloor(h.e)
	h.e.takeEffects()
	return h
}

// freshStart makes the harness's actor one that started just now.
// settleFloor is an actor that has heard every member's term long ago.
func settleFloor(e *election) { e.floorKnown, e.floorNeed = true, maxToldViewSize }

func (h *stateHarness) freshStart() { h.e.startedAt, h.e.floorKnown = h.now, false }

func (h *stateHarness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *stateHarness) recv(from string, message any) effects {
	h.e.receive(h.now, pid(from), message)
	return h.e.takeEffects()
}

// fire delivers the currently armed timer of kind, as if it expired now.
func (h *stateHarness) fire(kind timerKind) effects {
	h.t.Helper()
	if h.e.timers[kind].armed == false {
		h.t.Fatalf("timer %d is not armed", kind)
	}
	if due := h.e.timers[kind].due; due.After(h.now) {
		h.now = due // a timer does not fire before it is due
	}
	h.e.timer(h.now, kind, h.e.timers[kind].generation)
	return h.e.takeEffects()
}

// expireElection moves time past the election deadline and fires the timer.
func (h *stateHarness) expireElection() effects {
	h.now = h.e.electionDeadline.Add(time.Millisecond)
	return h.fire(timerElection)
}

// becomeLeader runs a full campaign with grants from the given peers.
func (h *stateHarness) becomeLeader(grants ...string) {
	h.t.Helper()
	h.expireElection()
	for _, p := range grants {
		h.recv(p, msgPreVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	}
	for _, p := range grants {
		h.recv(p, msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	}
	if h.e.confirming == false {
		h.t.Fatalf("not confirming after grants from %v: role %s term %d", grants, h.e.role, h.e.term)
	}
	h.e.confirmResult(h.now, true, nil)
	h.e.published(h.now)
	h.e.takeEffects()
	if h.e.role != roleLeader {
		h.t.Fatalf("role %s, want leader", h.e.role)
	}
}

// sentTo returns the messages of a type sent to a node.
func sentTo[M any](out effects, to string) []M {
	var list []M
	for _, o := range out.sends {
		if o.node != node(to) {
			continue
		}
		if m, ok := o.message.(M); ok {
			list = append(list, m)
		}
	}
	return list
}

// actorTuning is what a test may set on the actors it starts beyond their
// Options: how many elections of a node campaign at once (campaignTurnsTuner;
// 0 for the default), so that a handful of elections already take turns.
type actorTuning struct {
	campaignTurns int
}
