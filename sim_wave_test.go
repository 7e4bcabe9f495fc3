package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// settledWave starts k elections on three nodes over net, lets them settle
// and go idle, and returns the node that leads the most, about to crash,
// with the elections it leads.
func settledWave(t *testing.T, seed uint64, net simNetwork, k int) (*simulator, *simFleet, gen.Atom, []*simCluster) {
	t.Helper()
	s := newSimTest(t, seed, net)
	s.replay = t.Name()
	f, _ := startSimFleet(s, 3, manyElections(simOptions(), k), actorTuning{})
	if _, ok := f.runUntilConverged(20 * time.Second); ok == false {
		t.Fatalf("seed %d: the elections did not converge\n%s", seed, s.report())
	}
	s.runFor(4 * time.Second)
	victim, _ := f.busiest()
	return s, f, victim, f.ledBy(victim)
}

// TestSimulationAWaveOfFailoversPreVotesOnce: when a node that leads many
// elections crashes, each of its elections should cost the survivors one
// pre-vote round, the first-ranked survivor's. On a network slow enough
// that the first one's pre-vote reaches the other survivor after that
// one's own fast-failover timer (as the queues of a busy node make it in
// a real wave), the later-ranked survivor pre-voted too, only to be
// refused: a wasted round per election, in the milliseconds the winning
// rounds need. In a wave it waits longer (pacing.go). The first failovers
// of a node, before it has seen waveThreshold others, are not in a wave
// yet and may still pre-vote twice.
func TestSimulationAWaveOfFailoversPreVotesOnce(t *testing.T) {
	t.Parallel()
	for _, seed := range scenarioSeeds(t, 4) {
		s, f, victim, led := settledWave(t, seed, simNetwork{minDelay: 6 * time.Millisecond, maxDelay: 9 * time.Millisecond}, 90)
		if len(led) < 3*waveThreshold {
			t.Fatalf("seed %d: %s leads %d elections, too few for a wave", seed, victim, len(led))
		}
		rounds := make(map[*simActor]uint64)
		for _, c := range led {
			for name, b := range c.actors {
				if name != victim {
					rounds[b] = b.state.fastRounds
				}
			}
		}
		s.note("NEMESIS crash %s, which leads %d elections", victim, len(led))
		f.clusters[0].crash(victim)
		cfg := f.clusters[0].cfg()
		s.runFor(cfg.electionTimeoutMin)
		twice, waited := 0, uint64(0)
		for _, c := range led {
			if ledApartFrom(c, victim) == false {
				t.Fatalf("seed %d: election %q has no new leader %s after the crash\n%s", seed, c.options.ClusterID, cfg.electionTimeoutMin, s.report())
			}
			prevoted := 0
			for name, b := range c.actors {
				if name == victim {
					continue
				}
				if b.state.fastRounds > rounds[b] {
					prevoted++
				}
				waited += b.state.waveDelayed
			}
			if prevoted > 1 {
				twice++
			}
		}
		// at most the failovers each survivor node started before it knew
		// it was in a wave
		if twice > 2*waveThreshold {
			t.Fatalf("seed %d: in %d of the %d elections the crash took, both survivors pre-voted (at most %d expected: the failovers before each node saw a wave)\n%s",
				seed, twice, len(led), 2*waveThreshold, s.report())
		}
		if waited == 0 {
			t.Fatalf("seed %d: no fast failover waited for a wave of %d", seed, len(led))
		}
		requireNoViolation(t, s)
	}
}

// TestSimulationACrashWaveIsLedAgainWithinAThirdOfAnElectionTimeout: on a
// fast network, every election a crashed node led has a new leader well
// within an election timeout: the promise to the lost leader (F after its
// last round), one staggered fast pre-vote and its pledged vote. Virtual
// time: the CPU a real wave costs is docs/performance.md's (section 6c).
func TestSimulationACrashWaveIsLedAgainWithinAThirdOfAnElectionTimeout(t *testing.T) {
	t.Parallel()
	for _, seed := range scenarioSeeds(t, 3) {
		s, f, victim, led := settledWave(t, seed, simNetwork{minDelay: 100 * time.Microsecond, maxDelay: 400 * time.Microsecond}, 300)
		cfg := f.clusters[0].cfg()
		bound := cfg.electionTimeoutMin / 3
		s.note("NEMESIS crash %s, which leads %d elections", victim, len(led))
		f.clusters[0].crash(victim)
		crashed := s.now
		for _, c := range led {
			left := crashed.Add(bound).Sub(s.now)
			if _, ok := s.runUntilTrue(max(left, 0), func() bool { return ledApartFrom(c, victim) }); ok == false {
				t.Fatalf("seed %d: election %q has no new leader %s after the crash of %s, which led %d\n%s", seed, c.options.ClusterID, bound, victim, len(led), s.report())
			}
		}
		slowest := s.now.Sub(crashed)
		t.Logf("seed %d: %d elections led again, the last %s after the crash", seed, len(led), slowest)
		requireNoViolation(t, s)
	}
}
