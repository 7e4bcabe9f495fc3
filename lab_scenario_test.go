package leader

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// Helpers for the lab scenarios (lab_partition_test.go,
// lab_failover_test.go): the protocol timings, the callbacks the nodes
// report as events, conditions over the nodes' statuses, and scenarios
// that must see nothing happen.

// labSlack absorbs scheduling delays of a loaded box; it is added to every
// bound derived from the protocol timings.
const labSlack = 750 * time.Millisecond

// labTimings are the protocol timings of a lab scenario, in milliseconds.
type labTimings struct {
	min, max, hb, ghost int
}

var (
	// labSteadyTimings are for the scenarios that assert that nothing
	// happens (no leader change, no term increment) while some nodes are
	// away, so that a quorum hangs on every remaining follower: a longer
	// ElectionTimeoutMin keeps a scheduling stall of a loaded box from
	// looking like a lost quorum. No ghost expires during them.
	labSteadyTimings = labTimings{min: 200, max: 400, hb: 25, ghost: 60000}
	// labFastTimings keep a scenario short.
	labFastTimings = labTimings{min: 100, max: 200, hb: 20, ghost: 1000}
	// labDefaultTimings are the library's defaults (150/300/50/5000).
	labDefaultTimings = labTimings{min: DefaultElectionTimeoutMin, max: DefaultElectionTimeoutMax, hb: DefaultHeartbeatInterval, ghost: DefaultGhostTTL}
)

func (tm labTimings) electionMin() time.Duration { return time.Duration(tm.min) * time.Millisecond }
func (tm labTimings) electionMax() time.Duration { return time.Duration(tm.max) * time.Millisecond }
func (tm labTimings) heartbeat() time.Duration   { return time.Duration(tm.hb) * time.Millisecond }
func (tm labTimings) ghostTTL() time.Duration    { return time.Duration(tm.ghost) * time.Millisecond }

// params are the nodes' parameters for these timings and floor (0: the
// default of 3), with the given flag parameters set (labParamSymmetricLoss).
func (tm labTimings) params(minSize int, flags ...string) map[string]string {
	params := labParams(minSize, tm.min, tm.max, tm.hb, tm.ghost)
	for _, key := range flags {
		params[key] = "1"
	}
	return params
}

// labEvents returns the events of kind ("leader", "follower", ...) on node
// (any node if "") at or after since, in arrival order.
func labEvents(c *lab.Cluster, kind, node string, since time.Time) []lab.Event {
	var out []lab.Event
	for _, e := range c.EventsSince(since) {
		if e.Kind == kind && (node == "" || e.Node == node) {
			out = append(out, e)
		}
	}
	return out
}

// labFirstEvent returns the first event of kind on node at or after since.
func labFirstEvent(c *lab.Cluster, kind, node string, since time.Time) (lab.Event, bool) {
	if found := labEvents(c, kind, node, since); len(found) > 0 {
		return found[0], true
	}
	return lab.Event{}, false
}

// labDescribe lists the latest statuses of idxs.
func labDescribe(c *lab.Cluster, idxs []int) string {
	parts := make([]string, 0, len(idxs))
	for _, i := range idxs {
		parts = append(parts, c.Node(i).Status().String())
	}
	return strings.Join(parts, "; ")
}

// labSteadyLeader is a condition that holds while idxs all report term and
// only leader leads.
func labSteadyLeader(c *lab.Cluster, idxs []int, leader int, term uint64) func() (bool, string) {
	return func() (bool, string) {
		for _, i := range idxs {
			s := c.Node(i).Status()
			if s.Err != "" || s.Term() != term || (s.Role() == "leader") != (i == leader) {
				return false, labDescribe(c, idxs)
			}
		}
		return true, ""
	}
}

// labAwaitViews waits until every node of idxs reports a view of size.
func labAwaitViews(c *lab.Cluster, timeout time.Duration, size int, idxs ...int) {
	c.Await(timeout, fmt.Sprintf("views of %d on %v", size, idxs), func() (bool, string) {
		for _, i := range idxs {
			if s := c.Node(i).Status(); s.Err != "" || s.ViewSize() != size {
				return false, labDescribe(c, idxs)
			}
		}
		return true, ""
	})
}

// labInspect asks node i's actor for Inspect items beyond the status's.
func labInspect(t testing.TB, c *lab.Cluster, i int, items ...string) map[string]string {
	t.Helper()
	out, err := c.Node(i).Do(labOpInspect, items...)
	if err != nil {
		t.Fatalf("inspect %s: %v", c.Node(i).Name, err)
	}
	var raw map[string]string
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("inspect %s: %v: %s", c.Node(i).Name, err, out)
	}
	return raw
}

// labScenario is one attempt at a scenario on a fresh cluster.
type labScenario struct {
	*lab.Cluster
	t *testing.T
	// tolerance is the longest scheduling stall of a node process that
	// the scenario's timings are meant to absorb (ElectionTimeoutMin / 2).
	tolerance time.Duration
	// keeper, when set, is the index plus one of the leader whose lease
	// the scenario's checks assume it keeps (expectLeaseKept).
	keeper int
}

// expectLeaseKept says that the checks that follow assume node i, which
// leads, keeps its lease: what they rule out (someone outranking it, a
// leader change) is what pre-vote and the promises prevent while it does.
// If its lease runs out anyway and no stall of a node process explains
// it, its quorum's acknowledgements came later than the lease allows:
// delay, which these scenarios do not inject but a loaded box does (the
// race detector in five node processes beside other test packages), and
// the attempt is inconclusive rather than failed. A bug that made the
// leader lose its lease every time would still fail every attempt.
// i < 0 ends the assumption.
func (s *labScenario) expectLeaseKept(i int) { s.keeper = i + 1 }

// labInconclusive is what an attempt reports when a disruption it was
// meant to rule out happened while a node process was not scheduled.
type labInconclusive struct{ why string }

// labRetry runs a scenario on a fresh cluster, up to three times while an
// attempt turns out inconclusive: every node process watches its own
// scheduling (lab.Stall), and a node that was not scheduled for longer
// than the timings absorb breaks the protocol's timing assumption, so a
// disruption then proves nothing. Each attempt's cluster is closed before
// the next starts. When every attempt was inconclusive the test fails with
// their reasons: a test that could not be evaluated has not passed.
//
// Only disrupted (a liveness or steadiness check) may call an attempt
// inconclusive. Overlapping leader-only work never is: safety rests on
// bounded clock-rate drift alone (docs/safety.md), which no stall, lost
// reset or late notice breaks.
func labRetry(t *testing.T, cfg lab.Config, tm labTimings, scenario func(s *labScenario)) {
	t.Helper()
	const attempts = 3
	var reasons []string
	for attempt := 1; attempt <= attempts; attempt++ {
		s := &labScenario{Cluster: lab.Start(t, cfg), t: t, tolerance: tm.electionMin() / 2}
		var why string
		func() {
			defer func() {
				if r := recover(); r != nil {
					inconclusive, ok := r.(labInconclusive)
					if ok == false {
						panic(r)
					}
					why = inconclusive.why
				}
			}()
			scenario(s)
		}()
		if why != "" {
			// inconclusive about what the attempt measured, never about
			// safety: its work log is checked all the same
			labRequireNoOverlaps(t, s.Cluster)
		}
		s.Close()
		if why == "" {
			return
		}
		t.Logf("attempt %d of %d inconclusive: %s", attempt, attempts, why)
		reasons = append(reasons, fmt.Sprintf("attempt %d: %s", attempt, why))
	}
	t.Fatalf("every attempt was inconclusive, so nothing was tested (the box is too loaded to evaluate this test):\n%s", strings.Join(reasons, "\n"))
}

// disrupted fails the test with message, or abandons the attempt as
// inconclusive when a node process stalled for tolerance or longer since
// since.
func (s *labScenario) disrupted(since time.Time, message string) {
	s.t.Helper()
	worst, who := s.WorstStall(since)
	if worst >= s.tolerance {
		panic(labInconclusive{why: fmt.Sprintf("%s was not scheduled for %s (tolerance %s): %s", who, labMs(worst), labMs(s.tolerance), message)})
	}
	if s.keeper > 0 {
		if lapsed := s.LogLines(s.keeper-1, since, "its lease ran out"); len(lapsed) > 0 {
			panic(labInconclusive{why: fmt.Sprintf("the leader's lease ran out, so what the check assumes did not hold: %s (%s)", lapsed[0], message)})
		}
	}
	s.Failed(message)
	s.t.Fatalf("%s (worst stall of a node process meanwhile: %s on %s)\n%s", message, labMs(worst), who, s.Describe())
}

// steady polls cond for d; when it stops holding, the scenario is
// disrupted (see disrupted).
func (s *labScenario) steady(since time.Time, d time.Duration, what string, cond func() (bool, string)) {
	s.t.Helper()
	end := time.Now().Add(d)
	for {
		if ok, description := cond(); ok == false {
			s.disrupted(since, fmt.Sprintf("%s stopped holding: %s", what, description))
		}
		if time.Now().After(end) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// noLeaderSince disrupts the scenario if anyone won an election since
// since.
func (s *labScenario) noLeaderSince(since time.Time, what string) {
	s.t.Helper()
	if won := labEvents(s.Cluster, "leader", "", since); len(won) > 0 {
		s.disrupted(since, fmt.Sprintf("%s: %v", what, won))
	}
}

// requireStepDown waits for node i, which led, to report
// HandleBecomeFollower after since, and holds it to the documented bound:
// ElectionTimeoutMin plus one heartbeat, plus the slack of a loaded box.
// what names the situation ("the deaf leader").
func (s *labScenario) requireStepDown(tm labTimings, i int, since time.Time, what string) {
	s.t.Helper()
	name := s.Node(i).Name
	var stepDown lab.Event
	s.Await(labConverge, what+" steps down", func() (bool, string) {
		var ok bool
		stepDown, ok = labFirstEvent(s.Cluster, "follower", name, since)
		return ok, s.Node(i).Status().String()
	})
	latency := stepDown.Time().Sub(since)
	bound := tm.electionMin() + tm.heartbeat() + labSlack
	s.t.Logf("%s stepped down %s after it was cut off (bound %s)", what, labMs(latency), labMs(bound))
	if latency >= bound {
		s.disrupted(since, fmt.Sprintf("%s stepped down %s after it was cut off, later than %s", what, labMs(latency), labMs(bound)))
	}
}
