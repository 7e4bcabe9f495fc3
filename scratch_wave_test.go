package leader

import (
	"slices"
	"testing"
	"time"
)

func TestScratchWaveTimes(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		s := newSimTest(t, seed, simNetwork{minDelay: 100 * time.Microsecond, maxDelay: 400 * time.Microsecond})
		f, _ := startSimFleet(s, 3, manyElections(simOptions(), 300), actorTuning{})
		if _, ok := f.runUntilConverged(20 * time.Second); ok == false {
			t.Fatalf("no converge")
		}
		s.runFor(4 * time.Second)
		victim, _ := f.busiest()
		led := f.ledBy(victim)
		f.clusters[0].crash(victim)
		start := s.now
		done := map[*simCluster]time.Duration{}
		for len(done) < len(led) && s.now.Sub(start) < time.Second {
			s.runFor(time.Millisecond)
			for _, c := range led {
				if _, ok := done[c]; !ok && ledApartFrom(c, victim) {
					done[c] = s.now.Sub(start)
				}
			}
		}
		var ds []time.Duration
		for _, d := range done {
			ds = append(ds, d)
		}
		slices.Sort(ds)
		t.Logf("seed %d: %d led, %d re-led; p50 %s p90 %s max %s", seed, len(led), len(ds), ds[len(ds)/2], ds[len(ds)*9/10], ds[len(ds)-1])
	}
}
