package leader

import (
	"fmt"
	"slices"
	"time"

	"ergo.services/ergo/gen"
)

// The leader lease (docs/safety.md has the whole argument, rule by rule).
//
// Leadership is not a role that lasts until someone says otherwise: it is
// held on two leases that the leader renews with every heartbeat round a
// quorum acknowledges. Rounds are numbered within a term and every
// acknowledgement echoes the round it answers; the vote requests that won
// the term count as round 1. Both leases run from the send time of the
// newest round that a quorum of the view (this node included) acknowledged,
// so acks queued while the leader was stalled prove only what their round
// proves: nothing newer.
//
//   - The acting lease (IsLeader) lasts that round's F (freshness, or
//     longer when round trips are long: roundFresh) less a margin for
//     clock-rate drift. IsLeader reports false the instant it runs out.
//   - The holding lease keeps the role (no HandleBecomeFollower) for
//     ElectionTimeoutMin less the margin, so that a leader whose rounds
//     were late for a moment acts again when they are acknowledged,
//     without an election. Safety does not rest on it.
//
// Why no other node can act while the acting lease holds. A member that
// acknowledged a round, or granted a vote, promises (election.promise) not
// to grant a pre-vote or a vote to anyone else for ElectionTimeoutMin of its
// own clock, and it answers a round only after the round was sent. A sign
// that the leader may be gone (its down, its pings gone quiet) shortens the
// promise, but never below F after the member's newest acknowledgement
// (promiseAfterLoss), whatever the sign and whether the leader's end saw it
// too. A new leader needs grants from a quorum of the same view, and every
// such quorum shares a member with the quorum that acknowledged the lease's
// round. That member grants nothing before the round's send time plus F on
// its clock, which is later than the acting lease's end on the leader's
// clock as long as the two clocks' rates differ by less than the margin:
// the one assumption. Two cases are handled explicitly:
//
//   - A restarted node forgot its promises (there is no persistence), so a
//     freshly started actor grants nothing for a quiet period longer than
//     any promise or vote round of its previous incarnation could still be
//     open (election.quietPeriod), nor before it knows its term floor.
//   - A handover election (the leader sent TimeoutNow) is granted during the
//     promise: the leader stood down before it sent TimeoutNow.
//
// Options.AssumeSymmetricConnectionLoss ends a promise at the leader's down
// instead, and lets the leader act for its whole holding lease, counting
// only the members it is connected to: safe only when both ends of a
// dropped connection notice it within a fast-failover step of each other,
// which is why it is off by default.
//
// The actor checks the lease before it handles every message and when the
// lease timer fires, so a stalled leader reports IsLeader false from the
// instant its acting lease ran out, whatever runs, and stands down
// (HandleBecomeFollower) before the first message it handles after its
// holding lease ran out.

// roundStamp is when the leader sent one heartbeat round.
type roundStamp struct {
	round uint64
	at    time.Time
	fresh time.Duration // the round's F: its acknowledgements let the leader act for F less the drift margin
}

// leaseDuration is how long one acknowledged round keeps the leader in its
// role (holdingLease, timing.go).
func (e *election) leaseDuration() time.Duration { return holdingLease(e.cfg) }

// quietPeriod is how long a freshly started actor grants nothing (timing.go).
func (e *election) quietPeriod() time.Duration { return quietPeriod(e.cfg) }

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
// an earlier process of the node: msgHelloReply.Restarted, msgHello.Knew).
// A member's term counts toward settling the floor only once the member
// has greeted this process (a Hello or a Hello reply, which carries its
// word on that): a restarted actor that its peers reached first, by their
// pre-votes or probes, must not settle the lenient floor of a first start
// before the peers that knew its earlier process could say so. On a first start
// nothing was won before, and a floor from a quorum counting this node (one
// member fewer) keeps a majority able to elect while the rest of a new
// cluster is still starting.
//
// The quorum is that of the largest view this actor knows of: its own,
// MinClusterSize, and the view sizes its peers' Hellos, replies and
// requests carry (floorViewSize). A restarted actor whose discovery has so far
// found one peer must not take its floor from that peer alone: the rest of
// the view may have won terms that peer never heard of. When the largest
// view grows past what the floor was settled for, the floor opens again
// (the actor grants nothing) until enough members have been heard.

// maxToldViewSize bounds a view size a peer tells: larger is no view.
const maxToldViewSize = 1 << 16

// learnFloor records term, heard from node.
func (e *election) learnFloor(node gen.Atom, term uint64) {
	if e.floorTerms == nil {
		e.floorTerms = make(map[gen.Atom]uint64)
	}
	if term > e.floorTerms[node] || e.floorKnown == false {
		e.floorTerms[node] = max(e.floorTerms[node], term)
	}
	e.floorReady()
}

// toldViewSize records the size of the view member node told, which may be
// larger than this actor's while its discovery is still finding the
// members. Only the members' latest sizes count (floorViewSize),
// so a view that shrank for real does not keep a fresh actor waiting for
// members that are gone.
func (e *election) toldViewSize(node gen.Atom, n int) {
	if n <= 0 || n > maxToldViewSize {
		return
	}
	if e.toldViews == nil {
		e.toldViews = make(map[gen.Atom]int)
	}
	if e.toldViews[node] == n {
		return
	}
	e.toldViews[node] = n
	e.recheckFloor()
}

// floorViewSize is the largest view this actor knows of: its own,
// MinClusterSize, and the latest size each current member told.
func (e *election) floorViewSize() int {
	size := max(e.viewSize(), e.cfg.minClusterSize)
	for node, n := range e.toldViews {
		if _, member := e.members[node]; member {
			size = max(size, n)
		} else {
			delete(e.toldViews, node) // bounded by the view
		}
	}
	return size
}

// recheckFloor opens the floor again when it needs more members heard than
// it was settled with: the largest known view grew, or the peers said this
// is a restart.
func (e *election) recheckFloor() {
	if e.floorKnown && e.floorHeardNeed() > e.floorNeed {
		e.floorKnown = false
		e.logf(levelInfo, "the term floor needs the terms of %d members now (largest view known %d); this node grants no vote until it has heard them", e.floorHeardNeed(), e.floorViewSize())
		if e.floorReady() == false {
			// ask: a follower whose leader's rounds come through the hub
			// hears nobody's term otherwise
			for _, m := range e.sortedMembers() {
				if m.pid != (gen.PID{}) {
					e.send(m, e.helloTo(m.node))
				}
			}
			e.armGhostTimer() // and again until it settles (askFloor)
		}
	}
}

// floorHeardNeed is how many other members' terms settle the floor.
//
// A restart: the term this node may have voted for was won by a quorum of
// the view that included this node, so by quorum-1 of the other size-1
// members; any size-quorum+1 of the others include one of them, and that
// is a quorum of the others, ⌈size/2⌉. (size/2+1 would be one more for an
// even view, and more than there are others in a view of two, where a
// restarted member could never grant again.) A first start voted for
// nothing, so the floor only keeps it from granting terms already used:
// ⌊size/2⌋ is enough.
func (e *election) floorHeardNeed() int {
	size := e.floorViewSize()
	if e.restarted {
		return (size + 1) / 2
	}
	return size / 2
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
	need := e.floorHeardNeed()
	heard := 0
	floor := e.floorTerm
	for node, term := range e.floorTerms {
		m, member := e.members[node]
		_, seated := e.seats[node] // stopped gracefully: its last term counts as any member's
		switch {
		case member && m.greeted == false:
			floor = max(floor, term) // a bound all the same, but no word on a restart yet
		case member || seated:
			heard++
			floor = max(floor, term)
		default:
			delete(e.floorTerms, node) // bounded by the view
		}
	}
	if heard < need {
		return false
	}
	e.floorKnown, e.floorTerm, e.floorNeed = true, floor, need
	if floor > e.term {
		e.adoptTerm(floor)
	}
	return true
}

// askFloor settles the term floor once the quiet period is over, or asks
// the members not heard from yet for their terms (a Hello's reply carries
// it), no more often than their probe spacing.
func (e *election) askFloor() {
	if e.floorKnown || e.now.Before(e.startedAt.Add(e.quietPeriod())) || e.floorReady() {
		return
	}
	for _, m := range e.sortedMembers() {
		if m.greeted == false && e.now.Before(m.nextProbe) == false {
			e.probe(m)
		}
	}
}

// greetedBy records m's Hello or Hello reply: its process's incarnation,
// and its word on whether it knew an earlier process of this node
// (restart), which makes this node's term floor the strict one. watched
// says the PID was already m's before this message, and so is monitored
// since an earlier process may have had it (heardIncarnation).
func (e *election) greetedBy(m *member, from gen.PID, watched bool, incarnation uint64, restart bool) {
	e.heardIncarnation(m, from, watched, incarnation)
	m.greeted = true
	if restart && e.restarted == false {
		e.restarted = true
		e.logf(levelInfo, "peer %s knew an earlier process of this node: this is a restart, so the term floor needs the terms of a quorum of the other members", m.node)
		e.recheckFloor()
	}
}

// belowFloor reports whether term is one a fresh actor may not grant.
func (e *election) termBelowFloor(term uint64) bool {
	return e.floorKnown && term <= e.floorTerm
}

// promise records that this node acknowledged a leader's round or granted a
// candidate its vote: it helps nobody else win before promiseLength has
// passed, or F after its last acknowledgement once it saw a sign that the
// leader is gone (promiseAfterLoss). to is the process it promised.
func (e *election) promise(to gen.PID, ack bool) {
	e.promiseAt(to, ack, e.now)
}

// promiseAt is promise made at an earlier instant, at: the hub's
// acknowledgement in this actor's name (coalesce.go). A promise to the
// same process is only ever extended by it.
func (e *election) promiseAt(to gen.PID, ack bool, at time.Time) {
	same := to == e.promisedTo && ack == e.promisedAck
	if same && at.Before(e.promisedAt) {
		return
	}
	if same == false {
		e.promisedFreshEnd = time.Time{}
	}
	e.promisedTo, e.promisedAck, e.promisedAt = to, ack, at
	e.promisedUntil = at.Add(promiseLength(e.cfg))
	e.extendFresh(to, at.Add(freshness(e.cfg)))
}

// extendFresh records that the promise to to lasts at least until end even
// after a sign of loss: its leader's round said its F was longer than this
// node's own (adaptive freshness, roundFresh). It never reaches past the
// full promise.
func (e *election) extendFresh(to gen.PID, end time.Time) {
	if to != e.promisedTo || to == (gen.PID{}) {
		return
	}
	end = minTime(end, e.promisedAt.Add(promiseLength(e.cfg)))
	if end.After(e.promisedFreshEnd) {
		e.promisedFreshEnd = end
	}
}

// freshAck extends the promise of an acknowledgement of round hb by the
// round's F (extendFresh); a withheld acknowledgement promises nothing.
func (e *election) freshAck(leader gen.PID, ack msgHeartbeatAck, hb msgHeartbeat) {
	if ack.Round != 0 && hb.Fresh > 0 {
		e.extendFresh(leader, e.now.Add(time.Duration(hb.Fresh)))
	}
}

// minTime is the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
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
	if (e.promisedAck && e.promisedTo != leader && e.now.Before(e.promisedUntil)) || e.pongPromised(leader) || e.pledgeBinds(ack.Term) {
		e.drop("ack_withheld")
		ack.Round = 0
		return ack
	}
	// A vote promised to a candidate is no obstacle: the leader of a term at
	// least the vote's won with a quorum that respected that promise.
	e.promise(leader, true)
	return ack
}

// releasePromise ends the promise made to pid: its process terminated (a
// down with a reason other than a lost connection is proof that it acts no
// more), or it handed leadership over (TimeoutNow, sent after it stood
// down).
func (e *election) releasePromise(pid gen.PID) {
	if e.promisedTo == pid {
		e.promisedTo = gen.PID{}
		e.promisedUntil = time.Time{}
	}
	if e.pongPromiseTo == pid {
		e.pongPromiseTo, e.pongPromise = gen.PID{}, time.Time{}
	}
}

// pongPromised reports whether the pings answered for this node while it
// followed a leader other than pid through the hub still bind it
// (pings.go).
func (e *election) pongPromised(pid gen.PID) bool {
	return e.pongPromiseTo != pid && e.now.Before(e.pongPromise)
}

// promiseAfterLoss shortens the promise made to pid, whose connection this
// node saw drop (or some other sign that pid may be gone), to F after the
// last acknowledgement or grant, or to the later end a round with a longer
// F asked for (extendFresh). A sign is not proof: pid may be alive and
// still reach a quorum, its end of the connection may report nothing, and
// the report may come late or never. It needs none of that to be safe:
// pid acts (IsLeader) only while a quorum acknowledged a round it sent
// within F less the drift margin, and every acknowledgement it counts was
// made at or after the round was sent, so this promise, running F past the
// newest of them, outlasts it on any clock within the drift bound.
//
// With AssumeSymmetricConnectionLoss the promise ends at once: safe only
// when both ends of a dropped connection notice it within a fast-failover
// step of each other.
func (e *election) promiseAfterLoss(pid gen.PID) {
	if e.promisedTo != pid {
		return
	}
	if e.cfg.assumeSymmetricLoss {
		e.releasePromise(pid)
		return
	}
	end := e.promisedAt.Add(freshness(e.cfg))
	if e.promisedFreshEnd.After(end) {
		end = e.promisedFreshEnd // a round asked for a longer F
	}
	if end.Before(e.promisedUntil) {
		e.promisedUntil = end
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
	case e.pongPromised(requester):
		return "promised", e.pongPromiseTo
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
	fresh := freshness(e.cfg)
	if n > 1 {
		// round 1 is the vote requests, whose voters know only their own F
		fresh = e.roundFresh()
	}
	e.roundSent = append(e.roundSent, roundStamp{round: n, at: e.now, fresh: fresh})
}

// roundFresh is the F a leader gives the rounds it opens now. It is
// freshness (timing.go), or longer when the round trips to the members it
// needs for a quorum are long: a round must be acknowledged well within its
// F, or the leader could never act. Each round carries its F to the
// followers (msgHeartbeat.Fresh, the hubs' beats), and a follower that
// acknowledged it keeps its promise at least that long after a sign of
// loss (extendFresh), so any F is safe; a longer one only makes failover
// slower. It is at most half of ElectionTimeoutMin.
func (e *election) roundFresh() time.Duration {
	base := freshness(e.cfg)
	need := e.quorum() - 1
	if need <= 0 || e.cfg.assumeSymmetricLoss {
		return base
	}
	var rtts []time.Duration
	for _, m := range e.members {
		if m.rtt > 0 {
			rtts = append(rtts, m.rtt)
		}
	}
	if len(rtts) < need {
		return base
	}
	slices.Sort(rtts)
	want := 2*rtts[need-1] + 2*livenessInterval(e.cfg)
	return min(max(base, want), maxFresh(e.cfg))
}

// roundTrip records how long member m took to acknowledge round n, which
// roundFresh reads.
func (e *election) roundTrip(m *member, n uint64, at time.Time) {
	if sent, ok := e.sentAt(n); ok && at.After(sent) {
		m.rtt = at.Sub(sent)
	}
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
	s, ok := e.stampOf(n)
	return s.at, ok
}

// acknowledged records that m answered round n of the current term.
func (e *election) acknowledged(m *member, n uint64) {
	if n == 0 || n > e.round || n <= m.ackRound {
		return
	}
	e.roundTrip(m, n, e.now)
	m.ackRound = n
	e.renewLease()
}

// renewLease recomputes the lease from the rounds the members acknowledged.
// Two figures come out of the newest round a quorum of the view
// acknowledged (this node included), both counted from its send time.
// leaseUntil, which IsLeader reads, adds the acting lease: F less the drift
// margin, inside the promise every acknowledging member keeps at least
// (timing.go). holdUntil adds the holding lease and says when the leader
// must stand down if no newer round is acknowledged: between the two, the
// leader keeps its role but does not act, waiting for a newer round to be
// acknowledged (or, through a hub, a newer ping answered: holdingEvidence).
// Only rounds sent since the view last grew make leaseUntil (viewGrew).
//
// With AssumeSymmetricConnectionLoss, leaseUntil counts only members whose
// connection is up and lasts the holding lease: a member whose connection
// dropped may already be helping to elect someone else.
func (e *election) renewLease() {
	e.leaseUntil, e.holdUntil = time.Time{}, time.Time{}
	if e.role != roleLeader && e.role != roleCandidate {
		return
	}
	if e.quorum() <= 1 {
		// a view of one: nobody else can lead it
		e.holdUntil = e.now.Add(holdingLease(e.cfg))
		e.leaseUntil = e.holdUntil
		return
	}
	e.leaseUntil = e.leaseWhere(e.leaseCounts, e.grewAt, nil)
	if at, ok := e.holdingEvidence(); ok {
		e.holdUntil = at.Add(holdingLease(e.cfg))
	}
}

// holdingEvidence is what the holding lease counts from: the need-th
// latest of the members' newest evidence of support, each the send time
// of its newest acknowledged round or of the newest answered ping that
// counts as its ack (pings.go), whichever is later. The pings count
// because a hub sends a leader's round only when it says something new
// (vouch.go): between those, the answered pings are how a quorum shows it
// still follows, as the spec's "any inbound protocol message within one
// election timeout" asks. The hub's parked lease timer counts the same
// (slot.hubLease).
func (e *election) holdingEvidence() (time.Time, bool) {
	var buffer [8]time.Time
	times := buffer[:0]
	for _, m := range e.members {
		var at time.Time
		if m.ackRound != 0 {
			if s, ok := e.stampOf(m.ackRound); ok {
				at = s.at
			}
		}
		if m.pongSent.After(at) {
			at = m.pongSent
		}
		if at.IsZero() == false {
			times = append(times, at)
		}
	}
	return latestReachedBy(times, e.quorum()-1)
}

// leaseCounts reports whether m's acknowledgements count toward the acting
// lease: every member's, except that with AssumeSymmetricConnectionLoss only
// those of members whose connection is up.
func (e *election) leaseCounts(m *member) bool {
	return e.cfg.assumeSymmetricLoss == false || m.pid != (gen.PID{})
}

// quorumRound returns the send time of the newest round that a quorum of
// the view acknowledged, counting this node and the members for which
// counts reports true; ok is false when they are not a quorum. Only rounds
// sent at or after since count. u, if not nil, adds what the hub recorded
// since the last step (leadShare).
func (e *election) quorumRound(counts func(*member) bool, since time.Time, u *leadShare) (sent roundStamp, ok bool) {
	need := e.quorum() - 1
	var rounds []uint64
	for _, m := range e.members {
		ackRound, _, _ := e.evidence(m, u)
		if ackRound == 0 || counts(m) == false {
			continue
		}
		if s, ok := e.stampIn(ackRound, u); ok == false || s.at.Before(since) {
			continue
		}
		rounds = append(rounds, ackRound)
	}
	if need <= 0 || len(rounds) < need {
		return roundStamp{}, false
	}
	slices.Sort(rounds)
	return e.stampIn(rounds[len(rounds)-need], u)
}

// stampOf returns the stamp of round n of the current term.
func (e *election) stampOf(n uint64) (roundStamp, bool) {
	for _, s := range e.roundSent {
		if s.round == n {
			return s, true
		}
	}
	return roundStamp{}, false
}

// leaseWhere is the end of the acting lease that the acknowledgements of
// the members for which counts reports true give, or the zero time when
// they are not a quorum. u, if not nil, adds what the hub recorded since
// the last step.
func (e *election) leaseWhere(counts func(*member) bool, since time.Time, u *leadShare) time.Time {
	if e.cfg.assumeSymmetricLoss {
		sent, ok := e.quorumRound(counts, since, u)
		if ok == false {
			return time.Time{}
		}
		return sent.at.Add(actingLease(e.cfg))
	}
	// Each member's newest evidence gives the end of the promise it keeps
	// (on its clock, less the drift margin): its acknowledged round, or an
	// answered ping of its node that counts for it (pings.go). The lease
	// ends with the need-th latest of them.
	need := e.quorum() - 1
	if need <= 0 {
		return time.Time{}
	}
	var buffer [8]time.Time
	ends := buffer[:0]
	for _, m := range e.members {
		if counts(m) == false {
			continue
		}
		ackRound, pongSent, pongFresh := e.evidence(m, u)
		var end time.Time
		if ackRound != 0 {
			if s, ok := e.stampIn(ackRound, u); ok && s.at.Before(since) == false {
				end = s.at.Add(actingFor(e.cfg, s.fresh))
			}
		}
		if pongSent.IsZero() == false && pongSent.Before(since) == false {
			if t := pongSent.Add(actingFor(e.cfg, pongFresh)); t.After(end) {
				end = t
			}
		}
		if end.IsZero() == false {
			ends = append(ends, end)
		}
	}
	end, _ := latestReachedBy(ends, need)
	return end
}

// latestReachedBy returns the latest instant that at least need of times
// reach (the need-th latest of them): the end of what a quorum's evidence
// proves, each piece of evidence proving until its own time. ok is false
// when there are fewer than need, or need is not positive. It sorts times
// in place. The election's acting lease (leaseWhere) and the hub's view of
// it (slot.hubLease) both end here, so that they cannot disagree on how a
// quorum is counted.
func latestReachedBy(times []time.Time, need int) (time.Time, bool) {
	if need <= 0 || len(times) < need {
		return time.Time{}, false
	}
	slices.SortFunc(times, func(a, b time.Time) int { return b.Compare(a) })
	return times[need-1], true
}

// actingFor is how long evidence with F fresh lets a leader act: F less the
// drift margin (the base F when the evidence carries none).
func actingFor(cfg config, fresh time.Duration) time.Duration {
	if fresh == 0 {
		return actingLease(cfg)
	}
	return lessDrift(fresh)
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
	return e.leadingWhere(now, nil, nil)
}

// leadingWhere is leading with the connections as the framework reports
// them at this instant (connected), which only AssumeSymmetricConnectionLoss
// consults: there a leader busy in a long callback, or stalled, has not yet
// handled the downs that the other ends of its lost connections already act
// on, but what it asks IsLeader must already see them. By default the lease
// alone decides, whatever the connections. u, if not nil, adds what the
// hub recorded since the last step: a lease renewed through the hub counts
// at once. It changes nothing.
func (e *election) leadingWhere(now time.Time, connected func(*member) bool, u *leadShare) bool {
	if e.role != roleLeader {
		return false
	}
	if e.quorum() <= 1 {
		return true
	}
	return now.Before(e.actingUntil(connected, u))
}

// actingUntil is the end of the acting lease as of the last step, with u
// on top if not nil, and with AssumeSymmetricConnectionLoss only over the
// members connected reports as connected (if not nil). It is what the
// next step's renewLease would make of the same records: the same quorum
// count over the same evidence (leaseWhere). It changes nothing.
func (e *election) actingUntil(connected func(*member) bool, u *leadShare) time.Time {
	lease := e.leaseUntil
	if u != nil && (len(u.acks) > 0 || len(u.pongs) > 0) {
		lease = e.leaseWhere(e.leaseCounts, e.grewAt, u)
	}
	if connected == nil || e.cfg.assumeSymmetricLoss == false {
		return lease
	}
	return e.leaseWhere(func(m *member) bool { return m.pid != (gen.PID{}) && connected(m) }, e.grewAt, u)
}

// checkLease stands the leader down once its lease has run out, or once
// the members it is still connected to cannot form a quorum (the other ends
// of those connections may fail over fast), and keeps the lease timer armed
// for the moment the lease will run out.
func (e *election) checkLease(now time.Time) {
	e.now = now
	if e.role != roleLeader || e.quorum() <= 1 {
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
	e.reclaim()
}
