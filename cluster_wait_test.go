package leader

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// Waiting and asserting on the in-process cluster tests: stalls of the test
// process, retries of scenarios a stall made inconclusive, and the views
// and leaders polled through Inspect.

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
// is torn down before the next starts. When every attempt was
// inconclusive the test fails with their reasons: a test that cannot be
// evaluated has not passed.
func clRetry(t *testing.T, cfg clConfig, scenario func(c *realCluster)) {
	t.Helper()
	const attempts = 3
	var reasons []string
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
		reasons = append(reasons, fmt.Sprintf("attempt %d: %s", attempt, why))
	}
	t.Fatalf("every attempt was inconclusive, so nothing was tested (the box is too loaded to evaluate this test):\n%s", strings.Join(reasons, "\n"))
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
