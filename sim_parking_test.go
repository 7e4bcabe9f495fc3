package leader

import (
	"slices"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// Parked timers (parking.go): an idle election whose hub carries its
// heartbeats does not wake for its own timers, and parking never delays
// what the timers are for.

// wakeups returns each actor's count of timers that went off, by node.
func (c *simCluster) wakeups() map[gen.Atom]uint64 {
	counts := make(map[gen.Atom]uint64)
	for node, b := range c.actors {
		counts[node] = b.state.timerWakeups
	}
	return counts
}

// TestSimulationIdleElectionsDoNotWake: four elections on three nodes with
// default timings, settled. Over fifteen seconds, no follower and no leader
// wakes for a timer at all, where without parking a follower wakes at every
// election timeout and a leader at every lease check (several times a
// second), and with parking alone at every chore interval (twenty
// ElectionTimeoutMin) although an idle election has no chores
// (choresPending, keepChoreTimer). The elections keep their leaders all
// along. One election with DisableCoalescing on the same nodes is the
// control: it wakes at every heartbeat interval.
func TestSimulationIdleElectionsDoNotWake(t *testing.T) {
	t.Parallel()
	for _, seed := range scenarioSeeds(t, 5) {
		s := newSimTest(t, seed, lanNetwork())
		s.replay = t.Name()
		elections := manyElections(simOptions(), 5)
		elections[4].DisableCoalescing = true
		f, names := startSimFleet(s, 3, elections, actorTuning{})
		if _, ok := f.runUntilConverged(10 * time.Second); ok == false {
			t.Fatalf("seed %d: the elections did not converge\n%s", seed, s.report())
		}
		// past the one health check after the start (stuckAfter)
		s.runFor(f.clusters[0].actors[names[0]].state.stuckAfter())
		before := f.leadership()
		counts := make([]map[gen.Atom]uint64, len(f.clusters))
		for i, c := range f.clusters {
			counts[i] = c.wakeups()
		}
		const window = 15 * time.Second
		s.runFor(window)
		requireNoViolation(t, s)
		if after := f.leadership(); changed(before, after) != 0 {
			t.Fatalf("seed %d: leadership changed while idle: %v -> %v", seed, before, after)
		}
		cfg := f.clusters[0].cfg()
		const limit = 0
		for i, c := range f.clusters {
			for _, node := range names {
				woke := c.wakeups()[node] - counts[i][node]
				role := "follower"
				if c.actors[node].state.role == roleLeader {
					role = "leader"
				}
				if c.options.DisableCoalescing {
					if woke < uint64(window/cfg.heartbeatInterval)/2 && role == "leader" {
						t.Fatalf("seed %d: the uncoalesced control's leader woke %d times in %s: the count does not measure wake-ups", seed, woke, window)
					}
					continue
				}
				if woke > limit {
					t.Fatalf("seed %d: election %q's %s on %s woke %d times in %s of idle, want %d: it has no chores", seed, c.options.ClusterID, role, node, woke, window, limit)
				}
			}
		}
	}
}

// TestSimulationParkedTimersStillFire: with the timers parked, a leader
// whose followers stop answering (every link of its node black-holed, no
// connection lost) stands down when its lease runs out, before anyone else
// leads (the checkers), and the other two elect a leader within the bound;
// a follower whose leader goes silent campaigns, as without parking.
func TestSimulationParkedTimersStillFire(t *testing.T) {
	t.Parallel()
	for _, seed := range scenarioSeeds(t, 10) {
		s, f, names, victim, led := parkedFleet(t, seed, 3)
		if len(led) == 0 {
			t.Fatalf("seed %d: %s leads nothing", seed, victim)
		}
		c := f.clusters[0]
		s.note("NEMESIS black-hole every link of %s", victim)
		for _, other := range names {
			if other != victim {
				c.blackhole(victim, other)
				c.blackhole(other, victim)
			}
		}
		cfg := c.cfg()
		s.runFor(cfg.electionTimeoutMin + parkHorizon(cfg.heartbeatInterval))
		for _, e := range led {
			if b := e.actors[victim]; b.state.role == roleLeader {
				t.Fatalf("seed %d: election %q: %s still leads %s after its followers went silent\n%s", seed, e.options.ClusterID, victim, cfg.electionTimeoutMin+parkHorizon(cfg.heartbeatInterval), s.report())
			}
		}
		deadline := s.now.Add(10 * cfg.electionTimeoutMax)
		for _, e := range led {
			for s.now.Before(deadline) && ledApartFrom(e, victim) == false {
				s.runFor(10 * time.Millisecond)
			}
			if ledApartFrom(e, victim) == false {
				t.Fatalf("seed %d: election %q: the two others elected nobody within %s of %s going silent\n%s", seed, e.options.ClusterID, 10*cfg.electionTimeoutMax, victim, s.report())
			}
		}
		requireNoViolation(t, s)
		c.heal()
	}
}

// ledApartFrom reports whether the members of c other than node follow one
// leader of theirs.
func ledApartFrom(c *simCluster, node gen.Atom) bool {
	var leader gen.PID
	for name, b := range c.actors {
		if name == node {
			continue
		}
		if b.state.leader == (gen.PID{}) || b.state.leader.Node == node {
			return false
		}
		if leader != (gen.PID{}) && b.state.leader != leader {
			return false
		}
		leader = b.state.leader
	}
	return leader != (gen.PID{})
}

// TestSimulationALostLeaderWakesNoStaleTimer: when a node that leads some
// of the elections crashes, each survivor of those elections wakes for its
// fast failover (and to ask again a voter that refused its pre-vote for
// not having seen the loss yet) and for nothing else until the new leader
// is in. Its
// election timer was parked with the hub, which moved the deadline on with
// every round it answered; taken back at the down, it must be armed for
// that deadline, not for the time it was parked with, long past, which
// fired it at once for nothing: one wasted wake-up per election, in the
// middle of a failover storm. The followers of the elections the crash
// did not touch lose a member only; the probe of that member is a chore,
// and the chore's deadline must count from the step that created it, not
// from when the timer was first armed: that fired every one of them at
// once too (a third of each survivor's actors with 1,000 elections).
func TestSimulationALostLeaderWakesNoStaleTimer(t *testing.T) {
	t.Parallel()
	for _, seed := range scenarioSeeds(t, 5) {
		s, f, _, victim, led := parkedFleet(t, seed, 4)
		wakes := func(b *simActor) uint64 { return b.state.timerWakeups + b.state.dropped["stale_timer"] }
		before := make(map[*simActor]uint64)
		reasked := make(map[*simActor]uint64)
		for _, c := range led {
			for name, b := range c.actors {
				if name != victim {
					before[b], reasked[b] = wakes(b), b.state.fastReasks
				}
			}
		}
		// the followers of elections the crash did not touch lose a
		// member only: they have no timer to wake for
		untouched := make(map[*simActor]uint64)
		for _, c := range f.clusters {
			if slices.Contains(led, c) {
				continue
			}
			for name, b := range c.actors {
				if name != victim && b.state.role == roleFollower {
					untouched[b] = wakes(b)
				}
			}
		}
		s.note("NEMESIS crash %s, which leads %d elections", victim, len(led))
		f.clusters[0].crash(victim)
		cfg := f.clusters[0].cfg()
		// shorter than a heartbeat interval: a new leader's first tick
		// comes one interval after its win
		window := cfg.heartbeatInterval * 3 / 4
		s.runFor(window)
		for b, n := range before {
			if b.state.role == roleLeader {
				continue // a new leader's liveness rounds tick every few milliseconds
			}
			// a voter that had not seen the loss yet refused the fast
			// pre-vote, and the survivor asked again: a wake-up of the
			// failover too (leadership.go, fastReaskDue)
			want := uint64(1)
			if b.state.fastReasks > reasked[b] {
				want++
			}
			if woke := wakes(b) - n; woke > want {
				t.Fatalf("seed %d: a survivor of %q on %s woke %d times for its timers within %s of its leader's crash, want at most %d (the fast failover, and its pre-vote asked again)\n%s",
					seed, b.state.cfg.clusterID, b.state.self.Node, woke, window, want, s.report())
			}
		}
		for b, n := range untouched {
			if woke := wakes(b) - n; woke > 0 {
				t.Fatalf("seed %d: follower of %q on %s, whose leader is alive, woke %d times for its timers within %s of another member's crash, want none\n%s",
					seed, b.state.cfg.clusterID, b.state.self.Node, woke, window, s.report())
			}
			// its probe of the lost member is a chore, due a chore
			// interval from now: the hub can keep the timer
			if b.state.role == roleFollower && b.timers[timerElection].parked == false {
				t.Fatalf("seed %d: follower of %q on %s, whose leader is alive, took its election timer back from the hub after another member's crash (chores pending: %v)\n%s",
					seed, b.state.cfg.clusterID, b.state.self.Node, b.state.choresPending(), s.report())
			}
		}
		s.runFor(cfg.electionTimeoutMin/2 - window)
		for _, c := range led {
			if ledApartFrom(c, victim) == false {
				t.Fatalf("seed %d: election %q has no new leader %s after the crash\n%s", seed, c.options.ClusterID, cfg.electionTimeoutMin/2, s.report())
			}
		}
		requireNoViolation(t, s)
	}
}

// parkedFleet starts k elections on three nodes with default timings, waits
// until they converge and every timer is parked, and returns the node that
// leads the most of them with the elections it leads.
func parkedFleet(t *testing.T, seed uint64, k int) (*simulator, *simFleet, []gen.Atom, gen.Atom, []*simCluster) {
	t.Helper()
	s, f, names := convergedFleet(t, seed, 3, k)
	// long enough for every timer to be parked, and for the time they
	// were first armed to be more than a chore interval (3 s) ago, as in
	// a fleet that has run for a while
	s.runFor(4 * time.Second)
	victim, _ := f.busiest()
	return s, f, names, victim, f.ledBy(victim)
}
