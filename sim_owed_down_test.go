package leader

import (
	"testing"
	"time"
)

// The downs of a crash come late (pacing.go, owed downs).
//
// A shared watcher hands a crash's downs over a few dozen at a time, so
// under thousands of elections the last followers of the dead node's
// leaders get theirs after their election timeouts, while their node
// already reports the connection gone. The simulator models the late end of
// such a wave with downLag: the survivors' downs come that much after the
// connection's end, which the survivors report at once.

// TestSimulationFollowersWaitForDownsHandedLate: three nodes, six to nine
// elections (every other seed without the liveness hub), the node leading
// a third of them crashes, and both survivors' elections get their downs
// two election timeouts late. Each follower of a dead leader waits for its
// down instead of campaigning (with the hub, the hub holds its parked
// timer and it does not even wake), then fails over fast: every election is led again at the next term (no
// split vote) within the lag and a few failover steps, the survivors
// open no pre-vote round but the fast failovers' ranked ones, and no other
// election's leader moves.
func TestSimulationFollowersWaitForDownsHandedLate(t *testing.T) {
	t.Parallel()
	var waits, heldWaits uint64
	for _, seed := range scenarioSeeds(t, 30) {
		k := 6 + int(seed%4)
		s := newSimTest(t, seed, lanNetwork())
		s.replay = t.Name()
		options := simOptions()
		// every other seed without the hub: the election timers are then
		// the framework's, not parked with the hub
		options.DisableCoalescing = seed%2 == 1
		f, names := startSimFleet(s, 3, manyElections(options, k), actorTuning{})
		if _, ok := f.runUntilConverged(10 * time.Second); ok == false {
			t.Fatalf("seed %d: the %d elections did not all converge\n%s", seed, k, s.report())
		}
		victim, led := steeredVictim(t, seed, f, k)
		cfg := f.clusters[0].cfg()
		lag := 2 * cfg.electionTimeoutMax
		type counts struct{ rounds, fast, waits uint64 }
		before := map[*simActor]counts{}
		terms := map[*simCluster]uint64{}
		for _, c := range led {
			terms[c] = c.leaders()[0].Term()
			for name, b := range c.actors {
				if name != victim {
					before[b] = counts{b.state.preVoteRounds, b.state.fastRounds, b.state.owedDownWaits}
				}
			}
		}
		for _, name := range names {
			if name != victim {
				s.downLag[name] = lag
			}
		}
		leadership := f.leadership()
		s.note("NEMESIS crash %s, which leads %d of %d elections; the survivors get its downs %s late", victim, len(led), k, lag)
		f.clusters[0].crash(victim)

		gaps := f.leaderGaps(lag + cfg.electionTimeoutMax) // within GhostTTL: the view keeps the dead node
		requireNoViolation(t, s)
		bound := lag + s.net.maxDelay + 5*failoverStep(cfg) + waveExtra(cfg, 2) + livenessInterval(cfg)
		after := f.leadership()
		for i, c := range f.clusters {
			if _, ours := terms[c]; ours == false {
				if leadership[i] != after[i] {
					t.Fatalf("seed %d: election %q changed leader (%s -> %s) when %s crashed\n%s",
						seed, c.options.ClusterID, leadership[i], after[i], victim, s.report())
				}
				continue
			}
			l := c.leaders()
			if gaps[i] > bound || len(l) != 1 || c.converged() == false {
				t.Fatalf("seed %d: election %q was without a leader followed by all for %s after %s crashed, its downs %s late (bound %s)\n%s",
					seed, c.options.ClusterID, gaps[i], victim, lag, bound, s.report())
			}
			if got, was := l[0].Term(), terms[c]; got != was+1 {
				t.Fatalf("seed %d: election %q was led again at term %d, not %d: the votes split\n%s",
					seed, c.options.ClusterID, got, was+1, s.report())
			}
			for name, b := range c.actors {
				if name == victim {
					continue
				}
				was := before[b]
				rounds, fast := b.state.preVoteRounds-was.rounds, b.state.fastRounds-was.fast
				if rounds != fast {
					t.Fatalf("seed %d: election %q: %s opened %d pre-vote rounds, %d of them a fast failover's: it campaigned on its election timer\n%s",
						seed, c.options.ClusterID, name, rounds, fast, s.report())
				}
				if options.DisableCoalescing {
					waits += b.state.owedDownWaits - was.waits
				} else {
					heldWaits += b.state.owedDownWaits - was.waits
				}
			}
		}
	}
	if waits == 0 {
		t.Fatalf("no election timeout waited for an owed down in any seed without the hub: the scenario no longer reaches the rule it is for")
	}
	if heldWaits*4 > waits {
		t.Fatalf("with the hub, %d election timeouts woke to wait for an owed down (%d without it): the hub does not hold the parked timers of followers whose down is owed", heldWaits, waits)
	}
	t.Logf("election timeouts that waited for an owed down: %d without the hub, %d with it", waits, heldWaits)
}
