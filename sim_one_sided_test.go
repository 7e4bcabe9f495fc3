package leader

import (
	"fmt"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// One-sided connection loss: the leader is cut off from every follower, and
// the followers' frameworks report the loss within the network's delay, but
// the leader's own end reports it lag late, or never (a reset that reached
// one end only, a lost RST, a stalled process). Safety may not depend on
// when either end notices; see docs/safety.md.

// neverNotices is a notice lag longer than any scenario runs.
const neverNotices = time.Hour

// oneSidedLags are the leader's notice lags the scenarios try.
var oneSidedLags = []time.Duration{0, 5 * time.Millisecond, 7 * time.Millisecond, 8 * time.Millisecond,
	10 * time.Millisecond, 15 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond, neverNotices}

// cutLeaderOneSided settles five nodes, then cuts the leader from all the
// others while its own framework notices lag late, and runs until the
// majority has a leader of its own (or a second). It returns the time from
// the cut to the majority's leader, zero when none came.
func cutLeaderOneSided(t *testing.T, seed uint64, options Options, network simNetwork, lag time.Duration) (*simulator, time.Duration) {
	t.Helper()
	s := newSimTest(t, seed, network)
	c, _ := startSimCluster(s, 5, options, actorTuning{})
	if _, ok := c.runUntilConverged(10 * time.Second); ok == false {
		t.Fatalf("seed %d: no convergence\n%s", seed, s.report())
	}
	old := c.leaders()[0]
	cutOff := old.PID().Node
	s.noticeLag[cutOff] = lag
	s.note("NEMESIS cut %s from every follower; it notices %s late", cutOff, lag)
	for _, name := range c.liveNames() {
		if name != cutOff {
			c.cut(cutOff, name)
		}
	}
	var survivors []*simActor
	for _, name := range c.liveNames() {
		if name != cutOff {
			survivors = append(survivors, c.actors[name])
		}
	}
	took, ok := s.runUntilTrue(time.Second, func() bool {
		for _, b := range survivors {
			if b.state != nil && b.state.role == roleLeader && b.IsLeader() {
				return true
			}
		}
		return false
	})
	s.runFor(300 * time.Millisecond) // past the old leader's holding lease
	if ok == false {
		took = 0
	}
	return s, took
}

// TestSimulationALeaderThatNoticesItsCutLateNeverOverlaps: at every notice
// lag, never included, on a LAN and on a fast network, no two nodes act as
// leader at once (the checker looks after every event), and the majority
// elects a successor within tens of milliseconds. Breaks when IsLeader
// outlives the promise of F (timing.go), or a survivor ends its promise at
// the down.
func TestSimulationALeaderThatNoticesItsCutLateNeverOverlaps(t *testing.T) {
	t.Parallel()
	networks := map[string]simNetwork{"lan": lanNetwork(), "fast": {minDelay: 50 * time.Microsecond, maxDelay: 300 * time.Microsecond}}
	for _, netName := range []string{"lan", "fast"} {
		for _, lag := range oneSidedLags {
			var worst time.Duration
			for _, seed := range scenarioSeeds(t, 20) {
				s, took := cutLeaderOneSided(t, seed, simOptions(), networks[netName], lag)
				requireNoViolation(t, s)
				if took == 0 {
					t.Fatalf("seed %d (%s, lag %s): the majority elected no leader within a second\n%s", seed, netName, lag, s.report())
				}
				worst = max(worst, took)
				s.close() // now, not at the test's end: 10,000 seeds of 18 settings must fit in memory
			}
			bound := 2 * freshness(mustResolve(t, simOptions())) // F, a stagger and the round trips
			if worst > bound+10*time.Millisecond {
				t.Errorf("%s, lag %s: the majority took up to %s to elect, more than %s", netName, lag, worst, bound+10*time.Millisecond)
			}
			t.Logf("%s, leader notices %s late: successor within %s at worst", netName, lag, worst)
		}
	}
}

// TestSimulationSymmetricLossOptInOverlapsWhenTheLeaderNeverNotices is the
// checker's own test, and the reason AssumeSymmetricConnectionLoss is off
// by default: with it, a leader that never notices its cut goes on acting
// next to its successor, and the checker must see it.
func TestSimulationSymmetricLossOptInOverlapsWhenTheLeaderNeverNotices(t *testing.T) {
	t.Parallel()
	options := simOptions()
	options.AssumeSymmetricConnectionLoss = true
	overlapped := 0
	seeds := scenarioSeeds(t, 20)
	for _, seed := range seeds {
		s, _ := cutLeaderOneSided(t, seed, options, lanNetwork(), neverNotices)
		if len(s.failures) > 0 {
			overlapped++
		}
	}
	if overlapped == 0 {
		t.Fatalf("no seed of %d showed two acting leaders with AssumeSymmetricConnectionLoss and a leader that never notices its cut: the checker or the scenario lost its teeth", len(seeds))
	}
	t.Logf("AssumeSymmetricConnectionLoss: two acting leaders in %d of %d seeds", overlapped, len(seeds))
}

func mustResolve(t *testing.T, o Options) config {
	t.Helper()
	cfg, _, err := o.resolve()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

var _ = fmt.Sprintf
var _ gen.Atom
