package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// stats are the counters and timings operators chart, as this node sees
// them (inspect keys ergo:leader_changes, ergo:elections_*, ergo:leaderless_*
// and ergo:failover_gap_last). They are observations, not protocol state: no
// rule reads them.
type stats struct {
	electionsStarted uint64 // vote rounds this node opened as a candidate
	electionsWon     uint64 // rounds that made it leader (HandleBecomeLeader accepted)
	leaderChanges    uint64 // times it recognised a leader other than the one before (the first one included)

	known     gen.PID   // the leader recognised at the last observation
	previous  gen.PID   // the last leader recognised before known, zero if none yet
	contactAt time.Time // last contact with known: its heartbeat, or now if this node leads

	leaderlessSince time.Time     // start of the current period without a leader; zero while one is known
	leaderlessLast  time.Duration // length of the last completed period without a leader
	leaderlessTotal time.Duration // completed periods without a leader, summed
	// failoverGap is the last failover as this node saw it: from the step
	// at which it stopped recognising its leader to the step at which it
	// recognised the next (0 when it moved from one to the other
	// directly). A node's own first leader is no failover.
	failoverGap time.Duration
	lostAt      time.Time // when this node last stopped recognising a leader; zero once it has the next
}

// observeLeader updates the leadership statistics; the actor calls it after
// every step, so a change is seen at the step that made it.
func (e *election) observeLeader(now time.Time) {
	st := &e.stats
	current := e.leader
	if current == st.known {
		if current == e.self {
			st.contactAt = now
		} else if current != (gen.PID{}) && e.lastHeartbeatIn.After(st.contactAt) {
			st.contactAt = e.lastHeartbeatIn
		}
		return
	}
	if st.known != (gen.PID{}) {
		st.previous = st.known
		if current == (gen.PID{}) {
			st.lostAt = now
		} else {
			st.failoverGap, st.lostAt = 0, time.Time{} // straight from one leader to the next
		}
	}
	st.known = current
	if current == (gen.PID{}) {
		st.leaderlessSince = now
		e.armHealthCheck()
		return
	}
	if st.leaderlessSince.IsZero() == false {
		gap := now.Sub(st.leaderlessSince)
		st.leaderlessLast = gap
		st.leaderlessTotal += gap
		st.leaderlessSince = time.Time{}
	}
	st.contactAt = now
	if st.lostAt.IsZero() == false {
		st.failoverGap, st.lostAt = now.Sub(st.lostAt), time.Time{}
	}
	if st.previous == current {
		return // the same leader, heard again after a gap
	}
	st.leaderChanges++
}

// electionsLost counts the vote rounds this node opened that did not make
// it leader: refused, superseded by a higher term or a newer round, or
// withheld by HandleConfirmLeader. The round in progress is neither.
func (e *election) electionsLost() uint64 {
	lost := e.stats.electionsStarted - e.stats.electionsWon
	if e.role == roleCandidate && lost > 0 {
		lost--
	}
	return lost
}

// leaderlessFor is the current period without a leader, zero while one is
// recognised.
func (e *election) leaderlessFor() time.Duration {
	if e.stats.leaderlessSince.IsZero() {
		return 0
	}
	return e.now.Sub(e.stats.leaderlessSince)
}
