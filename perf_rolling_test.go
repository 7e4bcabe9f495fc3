package leader

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The rolling-restart measurement of docs/performance.md (section 2b): it
// waits for each restarted actor's term floor through the cluster tests'
// hooks, so it lives here. A measurement, not a test: it runs only when asked to and
// asserts nothing about time.
//
//	LEADER_PERF=1 go test -run TestPerfRollingRestart -v .
//	LEADER_PERF=1 LEADER_PERF_DOC=docs/performance.md go test -run TestPerfRollingRestart -v .
//
// LEADER_PERF_RUNS sets the rolling restarts per mode (default 5), and
// LEADER_PERF_DOC the report whose "rolling" section is replaced.

// TestPerfRollingRestart restarts every node of a three-node cluster at the
// defaults in turn (clRollingRestart: node Stop, a new node under the same
// name, its actor spawned at once) and measures how long the survivors of each step had no agreed leader.
func TestPerfRollingRestart(t *testing.T) {
	if os.Getenv("LEADER_PERF") == "" {
		t.Skip("a measurement: set LEADER_PERF=1 to run it")
	}
	runs := perfEnvInt(t, "LEADER_PERF_RUNS", 5)
	modes := []perfRollingMode{
		{name: "kept seats (default)"},
	}
	load := perfLoadAvg()
	began := time.Now()
	// The modes alternate, so that both see the same load.
	for run := range runs {
		for m := range modes {
			mode := &modes[m]
			t.Run(fmt.Sprintf("run=%d/%s", run, mode.name), func(t *testing.T) {
				c := newRealCluster(t, clConfig{})
				all := clStartRolling(c, mode.switches)
				steps := clRollingRestart(c, all, mode.switches, false)
				var total, own, down time.Duration
				below := 0
				for _, s := range steps {
					t.Logf("%s", s)
					total += s.leaderless
					own += s.ownLeaderless
					down = max(down, s.down)
					if len(s.unclustered) > 0 || len(s.floorWarnings) > 0 {
						below++
					}
				}
				mode.leaderless = append(mode.leaderless, total)
				mode.own = append(mode.own, own)
				mode.down = append(mode.down, down)
				mode.belowFloor += below
				mode.steps += len(steps)
				c.teardown()
			})
		}
	}
	for _, m := range modes {
		t.Logf("%s: leaderless per rolling restart %s", m.name, clSummary(m.leaderless))
	}
	table := perfRollingTable(modes, runs, load, time.Since(began))
	t.Logf("\n%s", table)
	if path := os.Getenv("LEADER_PERF_DOC"); path != "" {
		if err := perfReplaceSection(path, "rolling", table); err != nil {
			t.Fatal(err)
		}
	}
}

type perfRollingMode struct {
	name       string
	switches   actorTuning
	leaderless []time.Duration // per rolling restart, polled, summed over its steps
	own        []time.Duration // per rolling restart, ergo:leaderless_total, summed over its steps
	down       []time.Duration // per rolling restart, the longest time a node was down (Stop to spawn)
	belowFloor int             // steps in which a survivor fell below the floor
	steps      int
}

// perfRollingTable renders the modes for the report.
func perfRollingTable(modes []perfRollingMode, runs int, load string, took time.Duration) string {
	var b strings.Builder
	b.WriteString("## 2b. Rolling restart, three nodes at the defaults\n\n")
	b.WriteString("Measured by a test of package leader, which can wait for a restarted actor's term floor. Three nodes in one process on the stand-in, default options (ElectionTimeoutMin 150 ms, ElectionTimeoutMax 300 ms, HeartbeatInterval 50 ms, GhostTTL 5 s, MinClusterSize 3), each actor joining the static list of the three every 500 ms as a discovery loop would. One rolling restart stops each node in turn with node `Stop` (graceful: its actor terminates with `shutdown`, a leader hands over on the way out), starts a new node under the same name at once (in a later wall-clock second than the old node's start, so that no PID is reused: a node is down for up to a second), spawns its actor, and waits until the restarted actor follows the leader and every actor has settled its term floor (through a test hook: a restarted actor settles it lazily, and a leader stopped before it did can leave the survivors unable to elect, a known problem described at `TestClusterRollingRestartKeepsLeader`) before the next step. Each rolling restart runs on a fresh cluster.\n\n")
	b.WriteString("**Leaderless time** of one rolling restart is the sum over its three steps of the time the step's two survivors had no agreed leader: from the first poll that found no survivor in role leader holding its lease (`IsLeader` true) with both survivors naming it at one term, to the next poll that found one. The survivors are polled through Inspect every 2 ms or so, from the start of the node's Stop until the restarted actor follows the leader; a stopped leader counts as no leader from the moment its Stop begins. \"Own leaderless\" is the survivors' own account, the growth of `ergo:leaderless_total` (the time a node recognised no leader), the larger of the two survivors' per step, summed. \"Steps below the floor\" counts the steps in which a survivor was seen unclustered or a leader logged that it stepped down below MinClusterSize.\n\n")
	b.WriteString("| mode | rolling restarts | leaderless p50 ms | leaderless max ms | own leaderless p50 ms | own leaderless max ms | steps below the floor | longest node down p50 ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	p := func(samples []time.Duration, q float64) time.Duration {
		sorted := slices.Clone(samples)
		slices.Sort(sorted)
		return clPercentile(sorted, q)
	}
	for _, m := range modes {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %d/%d | %s |\n",
			m.name, len(m.leaderless), perfMS(p(m.leaderless, 50)), perfMS(p(m.leaderless, 100)),
			perfMS(p(m.own, 50)), perfMS(p(m.own, 100)), m.belowFloor, m.steps, perfMS(p(m.down, 50)))
	}
	if len(modes) == 2 {
		ratio := func(q float64) string {
			on, off := p(modes[0].leaderless, q), p(modes[1].leaderless, q)
			if on <= 0 {
				return "unbounded (kept seats: 0)"
			}
			return fmt.Sprintf("%.0f×", float64(off)/float64(on))
		}
		fmt.Fprintf(&b, "\nLeaderless time without kept seats over with them: p50 %s, max %s.\n", ratio(50), ratio(100))
	}
	fmt.Fprintf(&b, "\n_Measured %s with `LEADER_PERF=1 LEADER_PERF_RUNS=%d go test -run TestPerfRollingRestart -v .`; took %s; 1-min load average %s at the start, %s at the end._",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runs, took.Round(time.Second), load, perfLoadAvg())
	return b.String()
}
