package leader

import (
	"fmt"
	"slices"
	"time"

	"ergo.services/ergo/gen"
)

// The leader lease.
//
// Leadership is not a role that lasts until someone says otherwise: it is a
// lease that the leader renews with every heartbeat round a quorum
// acknowledges, and IsLeader reports false the instant it runs out.
//
// How long the lease lasts. Heartbeat rounds are numbered within a term and
// every acknowledgement echoes the round it answers; the vote requests that
// won the term count as round 1. The lease runs from the send time of the
// newest round that a quorum of the view (this node included) acknowledged,
// for ElectionTimeoutMin less a margin for clock-rate drift (leaseDriftMargin).
// Acks stamped with their round mean that acks queued while the leader was
// stalled prove only what their round proves: nothing newer.
//
// Why no other node can lead while it holds. A member that acknowledged a
// round, or granted a vote, promises (election.promise) not to grant a
// pre-vote or a vote to anyone for ElectionTimeoutMin of its own clock after
// it did so, and it answers the round only after it was sent. A new leader
// needs grants from a quorum of the same view, and every such quorum shares a
// member with the quorum that acknowledged the lease's round. That member
// grants nothing before the round's send time plus ElectionTimeoutMin on its
// clock, which is later than the lease's end on the leader's clock as long as
// the two clocks' rates differ by less than the margin. Three exceptions are
// handled explicitly:
//
//   - A restarted node forgot its promises (there is no persistence), so a
//     freshly started actor grants nothing for a quiet period longer than
//     any promise or vote round of its previous incarnation could still be
//     open (election.quietPeriod).
//   - A handover election (the leader sent TimeoutNow) is granted during the
//     promise: the leader stood down before it sent TimeoutNow.
//   - Fast failover: a follower that observes its leader's down grants at
//     once, without waiting for the promise to run out. A real termination
//     means the leader's process is gone. A lost connection is seen by both
//     ends of it, and a leader that loses the connections to so many members
//     that the ones it still reaches cannot form a quorum ends its lease at
//     that moment (election.down). The survivors wait at least one
//     fast-failover step (ElectionTimeoutMin/30, 5 ms at the defaults)
//     before they even pre-vote, so this is safe when the two ends detect a
//     connection loss within that skew of each other: the second assumption,
//     next to the clock-rate bound. A black-holed link that neither end
//     detects produces no down, and the survivors wait for the promise.
//
// The actor checks the lease before it handles every message and when the
// lease timer fires, so a stalled leader stands down (HandleBecomeFollower)
// before the first message it handles after the lease ran out, and IsLeader
// is false from that instant whatever runs.

// leaseDriftMargin is the fraction of ElectionTimeoutMin the lease gives up
// to clock-rate drift: the lease is safe while no node's clock runs more
// than 2.5% faster or slower than real time (a 5% difference between two
// nodes). Quartz clocks drift by parts per million; the margin is for
// virtual machines whose clocks are slewed hard.
const leaseDriftMargin = 20 // ElectionTimeoutMin / 20 = 5%

// roundStamp is when the leader sent one heartbeat round.
type roundStamp struct {
	round uint64
	at    time.Time
}

// leaseDuration is how long one acknowledged round keeps the lease.
func (e *election) leaseDuration() time.Duration {
	return e.cfg.electionTimeoutMin - e.cfg.electionTimeoutMin/leaseDriftMargin
}

// quietPeriod is how long a freshly started actor grants no vote and no
// pre-vote, and does not campaign (its own vote is a grant too). Its
// previous incarnation, if any, may have granted a vote or promised a leader
// its support just before it stopped. A promise lasts ElectionTimeoutMin; a
// vote round is counted for at most ElectionTimeoutMin after the candidate
// opened it (election.roundCloses), and the grant came after that. Waiting
// ElectionTimeoutMin plus the drift margin from the start therefore
// outlasts both, on any clock within the drift bound.
func (e *election) quietPeriod() time.Duration {
	return e.cfg.electionTimeoutMin + e.cfg.electionTimeoutMin/leaseDriftMargin
}

// inQuietPeriod reports whether this actor is too fresh to grant anything:
// within its quiet period, or before it knows its term floor.
func (e *election) inQuietPeriod() bool {
	return e.now.Before(e.startedAt.Add(e.quietPeriod())) || e.floorReady() == false
}

// The term floor. A restarted actor has forgotten the terms it voted in,
// and the quiet period only outlasts rounds that were still open. A term
// its previous life helped to win long ago could be won a second time by
// a candidate that never heard of it, with votes of nodes that never heard
// of it either and this node's fresh vote. So a fresh actor grants nothing
// until it has heard the terms of a quorum of its view's other members (any
// protocol message carries its sender's term; the Hellos of its start
// bring them in milliseconds), and never grants a term at or below the
// highest of them: any earlier winning quorum shares a member with the
// members it heard, and that member's term is at least the term it won.
// Until then it is in its quiet period. A view whose other members are
// too few to be a quorum (a view of one) needs none.
//
// That strict floor is for restarts, which the peers recognise (they knew
// an earlier process of the node: msgHelloReply.Restarted). On a first start
// nothing was won before, and a floor from a quorum counting this node (one
// member fewer) keeps a majority able to elect while the rest of a new
// cluster is still starting.

// learnFloor records term, heard from node, while the floor is unknown.
func (e *election) learnFloor(node gen.Atom, term uint64) {
	if e.floorKnown {
		return
	}
	if e.floorTerms == nil {
		e.floorTerms = make(map[gen.Atom]uint64)
	}
	e.floorTerms[node] = max(e.floorTerms[node], term)
	e.floorReady()
}

// floorReady reports whether the floor is known, settling it when enough
// members have been heard.
func (e *election) floorReady() bool {
	if e.floorKnown {
		return true
	}
	if e.now.Before(e.startedAt.Add(e.quietPeriod())) {
		// settled no earlier than the quiet period's end, so that the
		// Hello replies saying whether this is a restart are in
		return false
	}
	need := e.quorum() - 1
	if e.restarted {
		need = e.quorum()
	}
	need = min(need, len(e.members))
	heard := 0
	var floor uint64
	for node, term := range e.floorTerms {
		if _, member := e.members[node]; member {
			heard++
			floor = max(floor, term)
		}
	}
	if heard < need {
		return false
	}
	e.floorKnown, e.floorTerm, e.floorTerms = true, floor, nil
	if floor > e.term {
		e.adoptTerm(floor)
	}
	return true
}

// belowFloor reports whether term is one a fresh actor may not grant.
func (e *election) termBelowFloor(term uint64) bool {
	return e.floorKnown && term <= e.floorTerm
}

// promise records that this node acknowledged a leader's round or granted a
// candidate its vote: it helps nobody else win before ElectionTimeoutMin has
// passed. to is the process it promised, so that observing that process's
// down (fast failover) releases exactly this promise.
func (e *election) promise(to gen.PID, ack bool) {
	e.promisedTo, e.promisedAck = to, ack
	e.promisedUntil = e.now.Add(e.cfg.electionTimeoutMin)
}

// acknowledge turns ack into an acknowledgement that counts toward leader's
// lease, and promises leader this node's support, unless this node still
// keeps a promise to another leader whose round it acknowledged: then the
// ack says only that the heartbeat arrived (round 0 counts for nothing);
// so it does while a pledged vote for a later term binds it (pledgeBinds).
// Two leaders of views that just merged must not both count one member's
// acks, and a member that acknowledged one of them helps nobody else for
// ElectionTimeoutMin.
func (e *election) acknowledge(leader gen.PID, ack msgHeartbeatAck) msgHeartbeatAck {
	if (e.promisedAck && e.promisedTo != leader && e.now.Before(e.promisedUntil)) || e.pledgeBinds(ack.Term) {
		e.drop("ack_withheld")
		ack.Round = 0
		return ack
	}
	// A vote promised to a candidate is no obstacle: the leader of a term at
	// least the vote's won with a quorum that respected that promise.
	e.promise(leader, true)
	return ack
}

// releasePromise ends the promise made to pid, whose down this node saw.
func (e *election) releasePromise(pid gen.PID) {
	if e.promisedTo == pid {
		e.promisedTo = gen.PID{}
		e.promisedUntil = time.Time{}
	}
}

// grantRefusal says why this node may not grant a pre-vote or a vote to
// requester now, and which leader it still supports; "" means it may. A
// handover request is exempt from the promise (the leader stood down before
// asking), not from the quiet period; so is the process it promised.
func (e *election) grantRefusal(handover bool, requester gen.PID) (string, gen.PID) {
	switch {
	case e.outgoing:
		// its process ends in a moment: a grant from it would leave the
		// view with it and take the new leader's quorum along
		return "outgoing", gen.PID{}
	case e.inQuietPeriod():
		return "quiet_period", gen.PID{}
	case handover:
		return "", gen.PID{}
	case e.role == roleLeader:
		// before the promisee's exemption: a leader's promisedTo may name
		// the candidate it voted for in an earlier term, whose campaign
		// must not unseat a live leader
		return "leader_lease", e.self
	case requester == e.promisedTo && requester != (gen.PID{}):
		return "", gen.PID{}
	case e.now.Before(e.promisedUntil):
		return "promised", e.promisedTo
	}
	return "", gen.PID{}
}

// openRound starts heartbeat round n of the current term, sent now.
func (e *election) openRound(n uint64) {
	e.round = n
	e.keepRecentRounds()
	e.roundSent = append(e.roundSent, roundStamp{round: n, at: e.now})
}

// keepRecentRounds forgets the rounds sent longer than a lease ago: they
// cannot make one.
func (e *election) keepRecentRounds() {
	keep := e.roundSent[:0]
	for _, s := range e.roundSent {
		if e.now.Sub(s.at) < e.leaseDuration() {
			keep = append(keep, s)
		}
	}
	e.roundSent = keep
}

// sentAt returns when round n of the current term was sent.
func (e *election) sentAt(n uint64) (time.Time, bool) {
	for _, s := range e.roundSent {
		if s.round == n {
			return s.at, true
		}
	}
	return time.Time{}, false
}

// acknowledged records that m answered round n of the current term.
func (e *election) acknowledged(m *member, n uint64) {
	if n == 0 || n > e.round || n <= m.ackRound {
		return
	}
	m.ackRound = n
	e.renewLease()
}

// renewLease recomputes the lease from the rounds the members acknowledged.
// Two figures come out. leaseUntil, which IsLeader reads, counts only
// members whose connection is up: a member whose connection dropped may
// already be helping to elect someone else (fast failover). holdUntil
// counts every acknowledgement and says when the leader must stand down if
// no newer round is acknowledged: between the two, the leader keeps its
// role but does not act, waiting for the members it still reaches to
// acknowledge a newer round.
func (e *election) renewLease() {
	e.leaseUntil, e.holdUntil = time.Time{}, time.Time{}
	if e.role != roleLeader && e.role != roleCandidate {
		return
	}
	need := e.quorum() - 1
	if need <= 0 {
		// a view of one: nobody else can lead it
		e.leaseUntil = e.now.Add(e.leaseDuration())
		e.holdUntil = e.leaseUntil
		return
	}
	e.leaseUntil = e.leaseWhere(func(m *member) bool { return m.pid != (gen.PID{}) }, e.grewAt)
	e.holdUntil = e.leaseWhere(func(*member) bool { return true }, time.Time{})
}

// leaseWhere returns the end of the lease that the acknowledgements of the
// members for which counts reports true give, or the zero time when they
// are not a quorum.
// Only rounds sent at or after since count: the lease itself counts from
// the moment the view last grew (viewGrew); the time to stand down counts
// every round.
func (e *election) leaseWhere(counts func(*member) bool, since time.Time) time.Time {
	need := e.quorum() - 1
	var rounds []uint64
	for _, m := range e.members {
		if m.ackRound == 0 || counts(m) == false {
			continue
		}
		if sent, ok := e.sentAt(m.ackRound); ok == false || sent.Before(since) {
			continue
		}
		rounds = append(rounds, m.ackRound)
	}
	if need <= 0 || len(rounds) < need {
		return time.Time{}
	}
	slices.Sort(rounds)
	sent, ok := e.sentAt(rounds[len(rounds)-need])
	if ok == false {
		return time.Time{}
	}
	return sent.Add(e.leaseDuration())
}

// reachable counts this node plus the members whose connection is up.
func (e *election) reachable() int {
	n := 1
	for _, m := range e.members {
		if m.pid != (gen.PID{}) {
			n++
		}
	}
	return n
}

// leading reports whether this node holds leadership at now: it is the
// leader and its lease has not run out. With the reference quorum rule (a
// test switch) the role alone decides, as in the documented protocol.
func (e *election) leading(now time.Time) bool {
	return e.leadingWhere(now, nil)
}

// leadingWhere is leading with the connections as the framework reports
// them at this instant (connected), not as far as this node has processed
// their downs: a leader busy in a long callback, or stalled, has not yet
// handled the downs that the other ends of its lost connections already
// act on (fast failover), but what it asks IsLeader must already see them.
func (e *election) leadingWhere(now time.Time, connected func(*member) bool) bool {
	if e.role != roleLeader {
		return false
	}
	if e.switches.noResponseQuorum || e.quorum() <= 1 {
		return true
	}
	if now.Before(e.leaseUntil) == false || connected == nil {
		return now.Before(e.leaseUntil)
	}
	return now.Before(e.leaseWhere(func(m *member) bool { return m.pid != (gen.PID{}) && connected(m) }, e.grewAt))
}

// checkLease stands the leader down once its lease has run out, or once
// the members it is still connected to cannot form a quorum (the other ends
// of those connections may fail over fast), and keeps the lease timer armed
// for the moment the lease will run out.
func (e *election) checkLease(now time.Time) {
	e.now = now
	if e.role != roleLeader || e.switches.noResponseQuorum || e.quorum() <= 1 {
		return
	}
	if reachable := e.reachable(); reachable < e.quorum() {
		e.stepDown(fmt.Sprintf("it lost the connections to its peers: it reaches %d of view %d, quorum %d, so its lease ends now (the others may already be electing a successor)", reachable, e.viewSize(), e.quorum()))
		return
	}
	if e.now.Before(e.holdUntil) {
		if e.timers[timerLease].armed == false {
			e.armTimer(timerLease, e.holdUntil.Sub(e.now))
		}
		return
	}
	why := fmt.Sprintf("its lease ran out: no heartbeat round sent within the last %s was acknowledged by a quorum (view %d, quorum %d); if this node was not stalled, check the network to its peers",
		e.leaseDuration(), e.viewSize(), e.quorum())
	if e.holdUntil.IsZero() == false {
		why = fmt.Sprintf("its lease ran out %s ago: the newest heartbeat round a quorum acknowledged was sent more than %s ago (view %d, quorum %d); if this node was not stalled, check the network to its peers",
			e.now.Sub(e.holdUntil).Round(time.Millisecond), e.leaseDuration(), e.viewSize(), e.quorum())
	}
	e.stepDown(why)
}
