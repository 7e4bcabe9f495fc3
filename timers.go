package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// Timers of the election state. The state never holds a real timer: it
// asks the actor to arm one (an effect) and recognises the message it
// delivers by kind and generation.

type timerKind int

const (
	timerElection  timerKind = iota // follower/candidate: campaign when it expires
	timerHeartbeat                  // leader: check quorum, send heartbeats
	timerFast                       // follower that saw its leader's down: pre-vote early
	timerGhost                      // drop members unreachable for GhostTTL
	timerLease                      // leader: the lease runs out (lease.go)
	timerHealth                     // warn about a node stuck without a leader (health.go)
	numTimers
)

// timerRequest arms (after >= 0) or cancels (after < 0) a timer. Timers are
// generation-stamped: a timer message whose generation is not the current one
// was superseded and is dropped.
type timerRequest struct {
	kind       timerKind
	after      time.Duration
	generation uint64
}

// timerFired is the message a timer delivers to the actor itself.
type timerFired struct {
	Kind       timerKind
	Generation uint64
}

type timerState struct {
	armed      bool
	generation uint64
	due        time.Time // when it was armed to fire (the state's clock)
}

// timer handles a timer message. Superseded timers are dropped and counted.
func (e *election) timer(now time.Time, kind timerKind, generation uint64) {
	e.now = now
	if kind < 0 || kind >= numTimers {
		e.drop("stale_timer")
		return
	}
	t := &e.timers[kind]
	if t.armed == false || t.generation != generation {
		e.drop("stale_timer")
		return
	}
	t.armed = false
	e.timerWakeups++
	switch kind {
	case timerElection:
		e.electionTimeout()
	case timerHeartbeat:
		e.heartbeatTick()
	case timerFast:
		if e.fastReaskDue() == false {
			e.fastPreVote()
		}
	case timerGhost:
		e.sweepGhosts()
	case timerLease:
		e.checkLease(now)
	case timerHealth:
		e.healthCheck()
	}
}

func (e *election) electionTimeout() {
	if e.role != roleFollower && e.role != roleCandidate {
		return
	}
	if e.now.Before(e.electionDeadline) {
		// the leader was heard in the meantime; a follower whose hub
		// answers for it wakes only here, so its chores run here too
		e.findSilentConnections()
		e.armElectionTimer(e.electionDeadline)
		return
	}
	if e.fastFailoverPending() {
		// the fast failover's pre-vote goes at its own timer, ranked; this
		// timer stays its backstop. One that went out already and was not
		// answered is what this timer campaigns again for.
		e.findSilentConnections()
		e.resetElectionDeadline()
		return
	}
	if e.awaitingOwedDown() {
		// the down that starts the fast failover is on its way (pacing.go):
		// one wake at the end of the wait, not one per election timeout,
		// each a step of the actor in the very wave the downs pace
		e.findSilentConnections()
		e.owedDownWaits++
		e.electionDeadline = e.owedDownSince.Add(owedDownWait(e.cfg))
		e.armElectionTimer(e.electionDeadline)
		return
	}
	if e.stalledPastDeadline() {
		// the leader's silence is this node's own: one more election
		// timeout, counted from now, for its rounds or its reclaim
		e.findSilentConnections()
		e.stallGraces++
		e.graceHeard = e.members[e.leader.Node].lastHeard
		e.resetElectionDeadline()
		return
	}
	if e.role == roleCandidate {
		// this term's vote round is over; grants still in flight are late
		e.votes = nil
	}
	e.findSilentConnections()
	if e.leader != (gen.PID{}) {
		e.logf(levelInfo, "no heartbeat from leader %s for %s; looking for a new leader", e.leader, e.now.Sub(e.lastHeartbeatIn).Round(time.Millisecond))
		e.leader = gen.PID{}
	}
	if e.role != roleUnclustered && e.takeTurn() == false {
		return
	}
	e.campaign()
}

// stalledPastDeadline reports whether this follower's election timeout came
// so late that the silence it times out on is most likely this node's own:
// its process did not run (the node was stalled, every node with it in a
// host's hiccup, or starved of CPU by a crash's wave) for at least
// stallLateness past the deadline, and no grace was given for the same
// silence yet. Such a follower keeps its leader for one more election
// timeout, counted from now, instead of campaigning at once: a leader that
// was stalled with it runs again, and either sends its rounds or, its lease
// having run out meanwhile, asks to lead the next term (reclaim), which
// the follower grants and pledges because it still follows it. Campaigning
// at once raced that reclaim: after a stall of every node, every
// election's followers campaigned together with its leader, terms were
// split, and leadership landed on whichever node resumed first. The grace
// delays a campaign once per silence, which the protocol allows at any
// time; a leader that is gone for good costs an election timeout more, and
// a leader whose down came fails over fast as before (leaderLost).
func (e *election) stalledPastDeadline() bool {
	if e.role != roleFollower || e.leader == (gen.PID{}) {
		return false
	}
	m, ok := e.members[e.leader.Node]
	if ok == false || m.pid != e.leader || m.lastHeard.Equal(e.graceHeard) {
		return false
	}
	if e.owedDownFrom == e.leader && m.lastHeard.After(e.owedDownSince) == false {
		// the connection to the leader's node was lost: the silence is
		// the leader's, and the hub held this timer for its down on
		// purpose (awaitingOwedDown)
		return false
	}
	return e.now.Sub(e.electionDeadline) >= stallLateness(e.cfg)
}

// randomTimeout draws an election timeout from [min, max].
func (e *election) randomTimeout() time.Duration {
	return e.cfg.electionTimeoutMin + time.Duration(e.rng.Int64N(int64(timeoutSpread(e.cfg))+1))
}

// resetElectionDeadline restarts the wait before campaigning. The timer is
// only re-armed when it would fire too late; when it fires early, it re-arms
// for the rest, so a follower does not create a timer per heartbeat.
func (e *election) resetElectionDeadline() {
	deadline := e.now.Add(e.randomTimeout())
	if e.stats.leaderChanges == 0 {
		deadline = deadline.Add(time.Duration(e.startRank()) * timeoutSpread(e.cfg))
	}
	if deadline.Before(e.notBefore) {
		deadline = e.notBefore
	}
	e.electionDeadline = deadline
	if e.timers[timerElection].armed == false || e.electionFireAt.After(deadline) {
		e.armElectionTimer(deadline)
	}
}

func (e *election) armElectionTimer(at time.Time) {
	e.electionFireAt = at
	e.armTimer(timerElection, max(at.Sub(e.now), 0))
}

func (e *election) armTimer(kind timerKind, after time.Duration) {
	t := &e.timers[kind]
	t.generation++
	t.armed = true
	t.due = e.now.Add(after)
	e.out.timers = append(e.out.timers, timerRequest{kind: kind, after: after, generation: t.generation})
}

func (e *election) cancelTimer(kind timerKind) {
	if kind == timerFast {
		e.fastReask = nil // nobody to ask again either (fastPreVoteRefused)
	}
	t := &e.timers[kind]
	if t.armed == false {
		return
	}
	t.armed = false
	t.generation++
	e.out.timers = append(e.out.timers, timerRequest{kind: kind, after: -1, generation: t.generation})
}
