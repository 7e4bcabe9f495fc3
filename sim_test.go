package leader

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
	"weak"

	"ergo.services/ergo/gen"
)

// simOptions are the documented default timings; virtual time makes them
// free, and testing the defaults is testing what users run.
func simOptions() Options {
	return Options{ClusterID: "sim", MinClusterSize: 3, ElectionTimeoutMin: 150, ElectionTimeoutMax: 300, HeartbeatInterval: 50, GhostTTL: 1000}
}

func lanNetwork() simNetwork {
	return simNetwork{minDelay: 200 * time.Microsecond, maxDelay: 2 * time.Millisecond}
}

// livenessBound is how long after the last fault heals the cluster must have
// converged. Ghost members of crashed nodes may hold quorum up for GhostTTL;
// after that, every reachable member is re-contacted within one
// ElectionTimeoutMax (pre-votes and probes go out by name), and a round of
// pre-vote plus vote completes within one randomised timeout unless votes
// split; ten maximum timeouts leave room for several split rounds.
func livenessBound(cfg config) time.Duration {
	return cfg.ghostTTL + 10*cfg.electionTimeoutMax
}

func newSimTest(t testing.TB, seed uint64, network simNetwork) *simulator {
	s := newSimulator(seed, network)
	// at the end of the test, what the package keeps for the simulation's
	// nodes goes; a weak pointer, so that the cleanup itself keeps no
	// simulation of a test that runs thousands alive
	w := weak.Make(s)
	t.Cleanup(func() {
		if s := w.Value(); s != nil {
			s.close()
		}
	})
	if os.Getenv("LEADER_SIM_VERBOSE") != "" {
		s.verbose, s.logs, s.tracing = true, true, true
	}
	return s
}

func requireNoViolation(t testing.TB, s *simulator) {
	t.Helper()
	if len(s.failures) > 0 {
		t.Fatal(s.report())
	}
}

func startSimCluster(s *simulator, n int, options Options, switches actorTuning) (*simCluster, []gen.Atom) {
	f, names := startSimFleet(s, n, []Options{options}, switches)
	return f.clusters[0], names
}

// startSimFleet starts n nodes that run one election per options.
func startSimFleet(s *simulator, n int, elections []Options, switches actorTuning) (*simFleet, []gen.Atom) {
	f := newSimFleet(s, elections, switches)
	c := f.clusters[0]
	var names []gen.Atom
	for i := 0; i < n; i++ {
		names = append(names, c.newName())
	}
	f.list(names)
	for _, name := range names {
		c.start(name)
	}
	return f, names
}

// TestSimulationColdStart: five nodes elect one leader that all follow.
func TestSimulationColdStart(t *testing.T) {
	t.Parallel()
	s := newSimTest(t, 1, lanNetwork())
	c, _ := startSimCluster(s, 5, simOptions(), actorTuning{})
	took, ok := c.runUntilConverged(10 * time.Second)
	requireNoViolation(t, s)
	if ok == false {
		t.Fatalf("no convergence\n%s", s.report())
	}
	t.Logf("converged after %s at term %d", took, c.leaders()[0].Term())
}

// TestSimulationPartitionWalkthrough replays the spec's walkthrough: five
// nodes, the leader on the majority side keeps leading; the minority elects
// nobody and, with pre-vote, does not even raise its term; on heal nothing
// changes. Then the leader ends up on the minority side and steps down.
func TestSimulationPartitionWalkthrough(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 50; seed++ {
		s := newSimTest(t, seed, lanNetwork())
		options := simOptions()
		options.GhostTTL = 600_000 // a converged view: nothing expires during the test
		c, names := startSimCluster(s, 5, options, actorTuning{})
		s.check.fullView = 5
		if _, ok := c.runUntilConverged(10 * time.Second); ok == false {
			t.Fatalf("no convergence\n%s", s.report())
		}
		leader := c.leaders()[0]
		term := leader.Term()
		majority := []gen.Atom{leader.PID().Node}
		var minority []gen.Atom
		for _, name := range names {
			if name == leader.PID().Node {
				continue
			}
			if len(majority) < 3 {
				majority = append(majority, name)
			} else {
				minority = append(minority, name)
			}
		}
		c.partition(majority, minority)
		s.runFor(10 * 300 * time.Millisecond)
		requireNoViolation(t, s)
		if leader.IsLeader() == false || leader.Term() != term {
			t.Fatalf("seed %d: the majority's leader lost leadership or its term moved (%d -> %d)\n%s", seed, term, leader.Term(), s.report())
		}
		for _, name := range minority {
			if b := c.actors[name]; b.IsLeader() || b.Term() != term {
				t.Fatalf("seed %d: minority node %s: leader=%v term %d (want no leader, term %d)\n%s", seed, name, b.IsLeader(), b.Term(), term, s.report())
			}
		}
		c.heal()
		if _, ok := c.runUntilConverged(livenessBound(c.cfg())); ok == false {
			t.Fatalf("seed %d: no convergence after heal\n%s", seed, s.report())
		}
		if c.leaders()[0] != leader || leader.Term() != term {
			t.Fatalf("seed %d: the heal disrupted the leader\n%s", seed, s.report())
		}

		// the leader on the minority side
		minority = []gen.Atom{leader.PID().Node, majority[1]}
		majority = slices.DeleteFunc(slices.Clone(names), func(n gen.Atom) bool { return slices.Contains(minority, n) })
		c.partition(majority, minority)
		cut := s.now
		for leader.IsLeader() && s.now.Sub(cut) < time.Second {
			s.runFor(time.Millisecond)
		}
		requireNoViolation(t, s)
		if leader.IsLeader() {
			t.Fatalf("seed %d: the cut-off leader did not step down\n%s", seed, s.report())
		}
		s.runFor(5 * 300 * time.Millisecond)
		requireNoViolation(t, s)
		if l := c.leaders(); len(l) != 1 || slices.Contains(majority, l[0].PID().Node) == false {
			t.Fatalf("seed %d: the majority did not elect exactly one leader\n%s", seed, s.report())
		}
		c.heal()
		if _, ok := c.runUntilConverged(livenessBound(c.cfg())); ok == false {
			t.Fatalf("seed %d: no convergence after the second heal\n%s", seed, s.report())
		}
		requireNoViolation(t, s)
		for _, name := range names {
			if size := c.actors[name].state.viewSize(); size != 5 {
				t.Fatalf("seed %d: %s has view %d after heal, want 5", seed, name, size)
			}
		}
	}
}

// Every simulator test (TestSimulation*, TestNemesis*) calls t.Parallel:
// it runs under virtual time, so it can share the cores with another one,
// and go test starts parallel tests only after every other test of the
// package has finished, so the cluster and lab tests, which measure real
// time, never share the machine with them. The memory tests stay
// sequential: they read the heap.

// seedCount reads how many random seeds to run; CI runs the default.
func seedCount(t *testing.T, fallback int) int {
	if v := os.Getenv("LEADER_SIM_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("LEADER_SIM_SEEDS=%q: %s", v, err)
		}
		return n
	}
	if testing.Short() {
		return fallback / 10
	}
	if raceDetector {
		// about ten times slower: an eighth of the seeds, with the same
		// checks, looking for data races; ./test.sh then runs every
		// simulator test again without the race detector at the full
		// count. LEADER_SIM_SEEDS sets any count.
		return max(fallback/8, 1)
	}
	return fallback
}

// TestSimulationRandomSeeds runs random fault schedules and checks every
// invariant after every event, then liveness after the last fault heals.
// LEADER_SIM_SEED replays one seed; LEADER_SIM_SEEDS sets how many run.
func TestSimulationRandomSeeds(t *testing.T) {
	t.Parallel()
	randomSeeds(t, 2000, func(seed uint64, trace bool) scenarioResult {
		return runRandomScenario(t, seed, actorTuning{}, trace)
	})
}

// randomSeeds runs a test of random scenarios: the seed LEADER_SIM_SEED
// names, with the trace, or seeds 1..seedCount on every core; the lowest
// failing seed runs again with the trace on, for a readable report.
func randomSeeds(t *testing.T, fallback int, run func(seed uint64, trace bool) scenarioResult) {
	if v := os.Getenv("LEADER_SIM_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		requireNoViolation(t, run(seed, true).sim)
		return
	}
	n := seedCount(t, fallback)
	begin := time.Now()
	stats, failed := runSeeds(n, run)
	if failed != 0 {
		t.Fatal(run(failed, true).sim.report())
	}
	elapsed := time.Since(begin)
	t.Logf("%d seeds in %s: %s; %.0f simulated leader elections per second", n, elapsed.Round(time.Millisecond), stats,
		float64(stats.elections)/elapsed.Seconds())
}

// runSeeds runs seeds 1..n on every core, each simulation on its own, and
// returns the statistics and the lowest failing seed (0 if none failed).
func runSeeds(n int, run func(seed uint64, trace bool) scenarioResult) (*scenarioStats, uint64) {
	stats := newScenarioStats()
	var mu sync.Mutex
	var failed uint64
	next := make(chan uint64)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seed := range next {
				result := run(seed, false)
				mu.Lock()
				if len(result.sim.failures) > 0 && (failed == 0 || seed < failed) {
					failed = seed
				}
				stats.add(result)
				mu.Unlock()
			}
		}()
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		mu.Lock()
		stop := failed != 0
		mu.Unlock()
		if stop {
			break
		}
		next <- seed
	}
	close(next)
	wg.Wait()
	return stats, failed
}

// TestSimulationConnectivityPartitions checks invariant 5: with a converged
// view and only connectivity faults, no side without a majority of the
// full view ever elects a leader.
func TestSimulationConnectivityPartitions(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= uint64(seedCount(t, 500)); seed++ {
		result := runScenario(t, seed, actorTuning{}, false, true)
		if len(result.sim.failures) > 0 {
			t.Fatal(runScenario(t, seed, actorTuning{}, true, true).sim.report())
		}
	}
}

type scenarioResult struct {
	sim        *simulator
	healToLead time.Duration
	elections  int
}

type scenarioStats struct {
	heal      []time.Duration
	elections int
	virtual   time.Duration
}

func newScenarioStats() *scenarioStats { return &scenarioStats{} }

func (st *scenarioStats) add(r scenarioResult) {
	st.heal = append(st.heal, r.healToLead)
	st.elections += r.elections
	st.virtual += r.sim.elapsed()
}

func (st *scenarioStats) String() string {
	slices.Sort(st.heal)
	pct := func(p float64) time.Duration {
		if len(st.heal) == 0 {
			return 0
		}
		return st.heal[min(len(st.heal)-1, int(p*float64(len(st.heal))))]
	}
	return fmt.Sprintf("%d leaderships, %s virtual; time to one leader after heal p50 %s p99 %s max %s",
		st.elections, st.virtual.Round(time.Second), pct(0.5), pct(0.99), pct(1))
}

// runRandomScenario builds a fault schedule from the seed: a cluster of 3, 5
// or 7 nodes on a network with random delays, loss, duplication and
// reordering, then partitions, asymmetric links, crashes, restarts under the
// same or a new name, graceful stops, discovery churn, step-downs, confirm
// denials and the nemesis kinds (sim_nemesis_faults_test.go: stalls with
// cuts, voters restarted mid-election, forged downs, absurd terms); then
// everything heals and the cluster must converge.
func runRandomScenario(t testing.TB, seed uint64, switches actorTuning, trace bool) scenarioResult {
	return runScenario(t, seed, switches, trace, false)
}

// runScenario is runRandomScenario; with connectivityOnly the faults are
// only partitions, heals and step-downs over a view that cannot shrink
// (GhostTTL beyond the run), which is where invariant 5 applies.
func runScenario(t testing.TB, seed uint64, switches actorTuning, trace, connectivityOnly bool) scenarioResult {
	mode := scenarioOne
	if connectivityOnly {
		mode = scenarioConnectivity
	}
	return runFleetScenario(t, seed, switches, trace, mode)
}

// scenarioMode is what a random scenario runs.
type scenarioMode int

const (
	scenarioOne          scenarioMode = iota // one election, every fault kind
	scenarioConnectivity                     // one election, connectivity faults over a view that cannot shrink
	scenarioMany                             // several elections over the same nodes (sim_many_test.go)
)

// randomNetwork draws the network of a random scenario: delays, loss,
// duplication, reordering, and sometimes stragglers.
func randomNetwork(r *rand.Rand) simNetwork {
	n := simNetwork{
		minDelay: time.Duration(50+r.IntN(500)) * time.Microsecond,
		maxDelay: time.Duration(1+r.IntN(15)) * time.Millisecond,
		dropRate: []float64{0, 0, 0.01, 0.05}[r.IntN(4)],
		dupRate:  []float64{0, 0, 0.02}[r.IntN(3)],
		reorder:  r.IntN(2) == 0,
	}
	if r.IntN(4) == 0 {
		n.stragglerRate = []float64{0.01, 0.05}[r.IntN(2)]
		n.stragglerMax = 600 * time.Millisecond
	}
	return n
}

func runFleetScenario(t testing.TB, seed uint64, switches actorTuning, trace bool, mode scenarioMode) scenarioResult {
	return runForgedScenario(t, seed, switches, trace, mode, false)
}

// runForgedScenario is runFleetScenario; with forgeGrants every vote reply
// says granted on the wire (simulator.forgeGrants), a broken voter that the
// invariants must catch.
func runForgedScenario(t testing.TB, seed uint64, switches actorTuning, trace bool, mode scenarioMode, forgeGrants bool) scenarioResult {
	s := newSimTest(t, seed, simNetwork{})
	s.forgeGrants = forgeGrants
	s.tracing = s.tracing || trace
	r := s.rng
	s.net = randomNetwork(r)
	size := []int{3, 5, 5, 7}[r.IntN(4)]
	if mode == scenarioMany {
		size = 3 + r.IntN(5)
	}
	options := simOptions()
	// the ClusterID decides the failover order, and with it who campaigns
	// first at a cold start (rankedBefore): a few of them, by seed (a
	// fleet's elections each have their own, manyElections)
	if mode != scenarioMany {
		options.ClusterID = fmt.Sprintf("sim%d", seed%5)
	}
	if r.IntN(3) == 0 {
		options.MinClusterSize = size/2 + 1
	}
	if mode == scenarioConnectivity {
		options.GhostTTL = 3_600_000
		s.check.fullView = size
	}
	elections := []Options{options}
	if mode == scenarioMany {
		// half the fleets take turns to campaign one or two at a time per
		// node (pacing.go), so that waiting for a turn meets every
		// fault; drawn apart from the scenario's own draws
		if turns := rand.New(rand.NewPCG(seed, 0x7475726e)); turns.IntN(2) == 0 {
			switches.campaignTurns = 1 + turns.IntN(2)
			s.note("TURNS %d campaigns in flight per node", switches.campaignTurns)
		}
		elections = manyOptions(r, options)
		s.replay = "TestSimulationManyClusters"
		s.net.stragglerRate = min(s.net.stragglerRate, manyStragglerRate(t, s))
	}
	s.note("SCENARIO %d nodes, %d elections, network %+v", size, len(elections), s.net)
	f := newSimFleet(s, elections, switches)
	c := f.clusters[0]
	var names []gen.Atom
	for i := 0; i < size; i++ {
		names = append(names, c.newName())
	}
	f.list(names)
	for _, name := range names {
		s.after(time.Duration(r.IntN(200))*time.Millisecond, "", func() { c.start(name) })
	}

	// every node runs the spec's discovery loop: Join what is listed, on a
	// timer, because a one-shot lookup (or one lost Hello) can leave a node
	// that nobody knows about
	var rediscover func()
	rediscover = func() {
		c.discover(200 * time.Millisecond)
		s.after(time.Second, "", rediscover)
	}
	s.after(time.Second, "", rediscover)

	horizon := 3 * time.Second
	faults := 2 + r.IntN(8)
	for i := 0; i < faults; i++ {
		at := time.Duration(300+r.IntN(2300)) * time.Millisecond
		var kind int
		switch mode {
		case scenarioOne:
			kind = r.IntN(numFaultKinds)
		case scenarioConnectivity:
			kind = []int{0, 1, 3, 7}[r.IntN(4)]
		case scenarioMany:
			kind = r.IntN(numFleetFaultKinds)
		}
		s.at(s.start.Add(at), "", func() { f.fault(kind) })
	}
	s.runUntil(s.start.Add(horizon))

	// the last fault heals: links, crashed nodes, denials
	c.heal()
	for _, e := range f.clusters {
		e.denyRate = 0
	}
	for _, name := range slices.Clone(c.registry) {
		if c.actors[name] == nil {
			c.start(name)
		}
	}
	c.discover(0)
	bound := f.livenessBound()
	took, ok := f.runUntilConverged(bound)
	if ok == false && len(s.failures) == 0 {
		for _, e := range f.clusters {
			if e.converged() == false {
				e.check.fail("liveness: no single leader followed by all within %s after the last heal (leaders %d)", bound, len(e.leaders()))
			}
		}
	}
	elected := 0
	for _, check := range s.checks {
		elected += check.leaderChanges
	}
	// the scenario is over: what the package keeps per node goes now, not
	// at the test's end, since its tables are keyed by the simulation's
	// nodes and would keep every seed's simulation alive until then (0.8 MB
	// a seed; the report and the failures stay readable)
	s.close()
	return scenarioResult{sim: s, healToLead: took, elections: elected}
}

// randomFault applies one fault of the given kind to a random target.
func randomFault(c *simCluster, kind int) {
	s := c.sim
	r := s.rng
	live := c.liveNames()
	pick := func() gen.Atom {
		if len(live) == 0 {
			return ""
		}
		return live[r.IntN(len(live))]
	}
	switch kind {
	case 0, 1: // partition into two random groups
		var a, b []gen.Atom
		for _, name := range c.registry {
			if r.IntN(2) == 0 {
				a = append(a, name)
			} else {
				b = append(b, name)
			}
		}
		c.partition(a, b)
	case 2: // asymmetric link
		from, to := pick(), pick()
		if from != to && from != "" {
			c.blackhole(from, to)
		}
	case 3:
		c.heal()
	case 4: // crash
		if name := pick(); name != "" {
			c.crash(name)
		}
	case 5: // restart a crashed node, under its old name or as a new pod
		for _, name := range c.registry {
			if c.actors[name] != nil {
				continue
			}
			if r.IntN(2) == 0 {
				c.start(name)
			} else {
				c.retire(name)
				c.start(c.newName())
			}
			c.discover(50 * time.Millisecond)
			break
		}
	case 6: // graceful stop
		if name := pick(); name != "" {
			c.stop(name)
		}
	case 7: // step down the leader
		for _, b := range c.leaders() {
			c.command(b.PID().Node, 0, simStepDown{})
		}
	case 8: // an external authority that denies for a while
		c.denyRate = 0.5
		s.after(time.Duration(r.IntN(1000))*time.Millisecond, "", func() { c.denyRate = 0 })
	case 9: // a pod replaced under a new name, discovery lagging behind
		if name := pick(); name != "" {
			c.stop(name)
			c.retire(name)
			s.after(time.Duration(r.IntN(100))*time.Millisecond, "", func() {
				c.start(c.newName())
				c.discover(100 * time.Millisecond)
			})
		}
	default: // stalls, restarts mid-election, forged downs, absurd terms
		nemesisFault(c, kind)
	}
}
