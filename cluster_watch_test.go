package leader

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/require"
)

// Shared watchers on real nodes (shared_watcher.go): each node watches the
// processes of each other node with one process, whatever the number of
// elections; one that is killed is replaced, and the downs keep coming
// through its successor.
func TestClusterElectionsShareOneWatcherPerNode(t *testing.T) {
	const elections = 12
	// a GhostTTL far beyond the test's deadlines: only a down can take a
	// terminated member out of a view in time
	tm := clusterTimings{min: 100, max: 200, hb: 20, ghost: 600_000}
	c := newRealCluster(t, clConfig{})
	nodes := c.addNodes(3)
	names := spawnElections(c, nodes, elections, tm, actorTuning{})
	for _, name := range names {
		c.waitLeader(nodes, name, clConverge)
	}
	watcherOf := func(i, j int) (gen.PID, map[string]string, error) {
		pid, err := c.n(i).node.ProcessPID(watcherName(c.name(j)))
		if err != nil {
			return pid, nil, err
		}
		info, err := c.n(i).node.Inspect(pid)
		return pid, info, err
	}
	allWatched := func(i, j int) func() (bool, string) {
		return func() (bool, string) {
			_, info, err := watcherOf(i, j)
			if err != nil {
				return false, fmt.Sprintf("node %d has no watcher of node %d: %s", i, j, err)
			}
			want := fmt.Sprint(elections)
			if info["ergo:shared"] != "true" || info["ergo:elections"] != want || info["ergo:watching"] != want {
				return false, fmt.Sprintf("node %d's watcher of node %d: %v", i, j, info)
			}
			for _, name := range names {
				s := c.stateOf(i, name, "ergo:unmonitored")
				if s.err != nil || s.raw["ergo:unmonitored"] != "" {
					return false, fmt.Sprintf("%s on node %d: unmonitored %q", name, i, s.raw["ergo:unmonitored"])
				}
			}
			return true, ""
		}
	}
	for _, i := range nodes {
		for _, j := range nodes {
			if i != j {
				waitFor(t, clConverge, fmt.Sprintf("node %d watches node %d for every election, with one process", i, j), allWatched(i, j))
			}
		}
		// and nothing else watches: no private watcher per election
		pids, err := c.n(i).node.ProcessList()
		require.NoError(t, err)
		var watchers []gen.Atom
		for _, pid := range pids {
			if info, err := c.n(i).node.ProcessInfo(pid); err == nil && info.Behavior == "leader.watcher" {
				watchers = append(watchers, info.Name)
			}
		}
		slices.Sort(watchers)
		var want []gen.Atom
		for _, j := range nodes {
			if j != i {
				want = append(want, watcherName(c.name(j)))
			}
		}
		slices.Sort(want)
		require.Equal(t, want, watchers, "node %d's watchers: one per other node, named", i)
	}

	// Killed, node 0's watcher of node 1 is replaced, and every election
	// monitors its member on node 1 again through the new one.
	old, _, err := watcherOf(0, 1)
	require.NoError(t, err)
	require.NoError(t, c.n(0).node.Kill(old))
	waitFor(t, clConverge, "a new watcher of node 1 on node 0, serving every election", func() (bool, string) {
		if pid, _, err := watcherOf(0, 1); err != nil || pid == old {
			return false, fmt.Sprintf("still %s (%v)", pid, err)
		}
		return allWatched(0, 1)()
	})

	// A member on node 1 terminates: node 0 learns it through the new
	// watcher (GhostTTL would take ten minutes).
	victim := names[0]
	killed := c.pid(1, victim)
	require.NoError(t, c.n(1).node.Kill(killed))
	waitFor(t, clConverge, "node 0 drops the killed member of "+string(victim), func() (bool, string) {
		s := c.stateOf(0, victim, "ergo:peers_list")
		if s.err != nil {
			return false, s.err.Error()
		}
		peers := s.raw["ergo:peers_list"]
		return strings.Contains(peers, killed.String()) == false, "peers " + peers
	})
}
