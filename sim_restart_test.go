package leader

import (
	"testing"
	"time"
)

// A rolling restart of three nodes at the defaults: a follower restarts,
// and the leader stops gracefully right after the restarted actor follows
// it, inside its quiet period. The survivors elect: the stopped leader
// keeps its seat for the floor, also when its down comes after its lost
// connection, and the candidates count that seat in the view size they
// tell their voters. Breaks when either is lost (the two survivors stayed
// unclustered, or refused each other's pre-votes as "below the floor",
// in most seeds).
func TestSimulationALeaderStoppedRightAfterARestartIsSucceeded(t *testing.T) {
	t.Parallel()
	for _, seed := range scenarioSeeds(t, 20) {
		s := newSimTest(t, seed, lanNetwork())
		c, names := startSimCluster(s, 3, Options{ClusterID: "sim"}, protocolSwitches{})
		if _, ok := c.runUntilConverged(10 * time.Second); ok == false {
			t.Fatalf("no convergence")
		}
		leader := c.leaders()[0].PID().Node
		var follower = names[0]
		if follower == leader {
			follower = names[1]
		}
		c.stop(follower)
		s.runFor(50 * time.Millisecond)
		c.start(follower)
		s.runUntilTrue(2*time.Second, func() bool {
			b := c.actors[follower]
			return b != nil && len(c.leaders()) == 1 && b.Leader() == c.leaders()[0].PID()
		})
		c.stop(leader)
		_, got := s.runUntilTrue(3*time.Second, func() bool { l := c.leaders(); return len(l) == 1 && l[0].PID().Node != leader })
		requireNoViolation(t, s)
		if got == false {
			for _, n := range c.liveNames() {
				e := c.actors[n].state
				t.Logf("%s: role %s term %d floorKnown %v floorTerm %d floorViewSize %d restarted %v floorTerms %v seats %v view %d dropped %v promisedUntil %v now %v", n, e.role, e.term, e.floorKnown, e.floorTerm, e.floorViewSize(), e.restarted, e.floorTerms, e.seats, e.viewSize(), e.dropped, e.promisedUntil.Sub(s.start), s.now.Sub(s.start))
			}
			t.Fatalf("seed %d: no leader within 3s after the leader stopped right after %s restarted\n%s", seed, follower, s.report())
		}
	}
}
