package leader

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/require"
)

// Memory stays bounded as nodes come and go: nothing the package keeps for
// the whole OS process, and nothing an election keeps, grows with the node
// names or node instances it has met. Breaks when a table keyed by node
// (the connection board, the campaign gates, the interned names, an
// election's departed, floor or far-term maps, the hub's peers) is never
// pruned.

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestMemoryStaysBoundedAsNodeNamesComeAndGo churns 1,000 node names (200
// with -short or -race) through a five-node cluster: each round a node crashes, its
// name leaves discovery and a node with a new name starts. The survivors'
// views and tables stay the size of the cluster, and once the simulation is
// dropped the live heap comes back under a bound.
func TestMemoryStaysBoundedAsNodeNamesComeAndGo(t *testing.T) {
	rounds := 1000
	if testing.Short() || raceDetector {
		rounds = 200
	}
	base := liveHeap()
	func() {
		s := newSimTest(t, 1, lanNetwork())
		options := simOptions()
		options.GhostTTL = 300
		c, _ := startSimCluster(s, 5, options, actorTuning{})
		if _, ok := c.runUntilConverged(10 * time.Second); ok == false {
			t.Fatalf("no convergence\n%s", s.report())
		}
		for i := 0; i < rounds; i++ {
			live := c.liveNames()
			old := live[i%len(live)]
			c.crash(old)
			c.retire(old)
			c.start(c.newName())
			for _, name := range c.liveNames() {
				c.command(name, 0, simDiscover{names: append([]gen.Atom(nil), c.registry...)})
			}
			s.runFor(60 * time.Millisecond)
		}
		s.runFor(c.cfg().ghostTTL + time.Second)
		requireNoViolation(t, s)
		defer s.close()
		for _, name := range c.liveNames() {
			e := c.actors[name].state
			sizes := map[string]int{"members": len(e.members), "floor terms": len(e.floorTerms), "far terms": len(e.farTerms),
				"departed": len(e.departed), "dead": len(e.dead), "withdrawn": len(e.withdrawn), "gone": len(e.gone), "warned": len(e.warned)}
			for what, n := range sizes {
				limit := 16
				if what == "departed" {
					limit = maxDeparted
				}
				if n > limit {
					t.Errorf("%s after %d names came and went: %d %s, want at most %d", name, rounds, n, what, limit)
				}
			}
		}
		campaignGates.Lock()
		gates := len(campaignGates.byNode)
		campaignGates.Unlock()
		if gates > 5 {
			t.Errorf("%d campaign gates after %d node instances came and went, want at most one per live node", gates, rounds)
		}
	}()
	grew := int64(liveHeap()) - int64(base)
	t.Logf("%d node names: the live heap grew by %d KiB once the simulation was dropped", rounds, grew/1024)
	if bound := int64(8 << 20); grew > bound {
		t.Fatalf("the live heap grew by %d KiB over %d node names, more than %d KiB: something keeps what the nodes left behind", grew/1024, rounds, bound/1024)
	}
}

// TestMemoryStaysBoundedOverManySimulatorSeeds runs 5,000 short seeds (500
// with -short, 1,000 with -race; LEADER_SIM_SEEDS sets it) in one process: three nodes
// settle, the leader crashes, the survivors elect. What one seed leaves
// behind must not add up.
func TestMemoryStaysBoundedOverManySimulatorSeeds(t *testing.T) {
	seeds := seedCount(t, 5000)
	if raceDetector && os.Getenv("LEADER_SIM_SEEDS") == "" {
		seeds = 1000
	}
	base := liveHeap()
	var mid int64
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		// not newSimTest: its cleanup, a few hundred bytes a seed, is the
		// test framework's to keep
		s := newSimulator(seed, lanNetwork())
		c, _ := startSimCluster(s, 3, simOptions(), actorTuning{})
		if _, ok := c.runUntilConverged(10 * time.Second); ok == false {
			t.Fatalf("seed %d: no convergence\n%s", seed, s.report())
		}
		c.crash(c.leaders()[0].PID().Node)
		s.runFor(500 * time.Millisecond)
		requireNoViolation(t, s)
		s.close()
		if int(seed) == seeds/2 {
			mid = int64(liveHeap()) - int64(base)
		}
	}
	grew := int64(liveHeap()) - int64(base)
	perSeed := grew / int64(seeds)
	t.Logf("%d seeds: the live heap grew by %d KiB (%d KiB at half way), %d bytes per seed", seeds, grew/1024, mid/1024, perSeed)
	if bound := int64(1 << 20); grew > bound {
		t.Fatalf("the live heap grew by %s over %d seeds (%d bytes per seed), more than %d KiB: seeds leave state behind", fmt.Sprintf("%d KiB", grew/1024), seeds, perSeed, bound/1024)
	}
}

// nodeTablesHold names the package-level tables that still hold an entry of
// node.
func nodeTablesHold(node gen.Node) []string {
	var held []string
	nodeActors.Lock()
	if _, ok := nodeActors.count[node]; ok {
		held = append(held, "election actors")
	}
	nodeActors.Unlock()
	campaignGates.Lock()
	if _, ok := campaignGates.byNode[node]; ok {
		held = append(held, "campaign gates")
	}
	campaignGates.Unlock()
	b := &connectionResets
	b.mu.Lock()
	defer b.mu.Unlock()
	for key := range b.inbound {
		if key.node == node {
			held = append(held, "connection samples")
			break
		}
	}
	for _, m := range []map[connectionKey]time.Time{b.reset, b.redialAt} {
		for key := range m {
			if key.node == node {
				held = append(held, "connection resets")
				break
			}
		}
	}
	if _, ok := b.starvedAt[node]; ok {
		held = append(held, "starvation marks")
	}
	return held
}

// TestClusterAStoppedNodeLeavesNothingBehind: on real nodes, once a node has
// stopped, the package keeps nothing of it (its last election actor's end
// releases it, nodestate.go).
func TestClusterAStoppedNodeLeavesNothingBehind(t *testing.T) {
	c := newRealCluster(t, clConfig{})
	idxs := c.addNodes(3)
	c.spawnAll(idxs, clusterFastTimings.options("forget", 0), actorTuning{})
	c.waitLeader(idxs, clActorName, clConverge)
	gone := c.n(idxs[0]).node
	require.NotEmpty(t, nodeTablesHold(gone), "a running node is counted")
	c.stopNode(idxs[0])
	deadline := time.Now().Add(clConverge)
	for {
		held := nodeTablesHold(gone)
		if len(held) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after its node stopped: the package still holds %v", clConverge, held)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
