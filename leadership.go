package leader

import (
	"fmt"
	"time"

	"ergo.services/ergo/gen"
)

// Holding and handing over leadership: confirmation, publication, the
// heartbeat tick with its quorum check, stepping down, and the follower's
// side of a lost leader.

// confirmResult applies HandleConfirmLeader's answer. A denial stands the
// candidate down and re-campaigns only after a backoff that doubles with each
// consecutive denial, since the authority will likely say no again soon.
func (e *election) confirmResult(now time.Time, allowed bool, err error) {
	e.now = now
	if e.confirming == false || e.role != roleCandidate {
		return
	}
	e.confirming = false
	if allowed && err == nil {
		e.role = roleLeader
		e.leader = e.self
		e.renewLease()
		// a pre-vote round the candidate opened while its vote replies were
		// still in flight is over: late grants must not start an election
		e.preVoting = false
		e.denials = 0
		e.unpublished = true
		e.cancelTimer(timerElection)
		e.cancelTimer(timerFast)
		return
	}
	e.denials++
	e.confirmDenied++
	e.lastDeniedAt = now
	backoff := e.randomTimeout() << min(e.denials-1, 6)
	e.notBefore = now.Add(backoff)
	why := "it returned false"
	if err != nil {
		why = "it returned an error: " + err.Error()
	}
	e.logf(levelWarning, "won term %d but HandleConfirmLeader withheld leadership (%s; denial %d in a row); campaigning again in %s", e.term, why, e.denials, backoff.Round(time.Millisecond))
	e.becomeFollower()
}

// published is called once HandleBecomeLeader has accepted leadership:
// only now do heartbeats announce it.
func (e *election) published(now time.Time) {
	e.now = now
	if e.role != roleLeader || e.unpublished == false {
		return
	}
	e.unpublished = false
	e.stats.electionsWon++
	e.logf(levelInfo, "leader at term %d; view %d, quorum %d", e.term, e.viewSize(), e.quorum())
	e.sendHeartbeats()
}

// rollback undoes leadership that HandleBecomeLeader refused.
func (e *election) rollback(now time.Time) {
	e.now = now
	if e.role == roleLeader {
		e.becomeFollower()
	}
}

// heartbeatTick sends the next heartbeat round. Whether this node may go on
// leading is the lease's business (lease.go), which a late tick cannot
// extend: a tick only ever opens a new round, and only a quorum's acks of
// that round renew the lease.
func (e *election) heartbeatTick() {
	if e.role == roleFollower {
		e.followerChore()
		return
	}
	if e.role != roleLeader || e.unpublished {
		return
	}
	e.checkLease(e.now)
	if e.role != roleLeader {
		return
	}
	e.findSilentConnections()
	e.sendHeartbeats()
}

// sendHeartbeats goes to members that have answered (their PID is known);
// a declared peer that never replied is probed by name instead, now and then.
//
// Members whose node the liveness hub carries this leader's rounds to get
// them from the hub (coalesce.go). While the hub carries all of them, or
// has yet to decide on some, the leader's own tick only keeps up its
// chores (probes of declared peers that never answered, silent
// connections), every choreInterval; the hub wakes it when a node stops
// being carried or is found not carried, and its lease timer when it must.
func (e *election) sendHeartbeats() {
	// round 2, the first after the votes, announces the leadership to
	// everyone directly, before the hub takes over
	announce := e.round < 2
	var direct []*member
	for _, m := range e.sortedMembers() {
		switch {
		case m.pid != (gen.PID{}) && (announce || e.carriedTo(m) == false):
			direct = append(direct, m)
		case m.pid == (gen.PID{}) && e.now.Before(m.nextProbe) == false:
			e.probe(m)
		}
	}
	next := livenessInterval(e.cfg)
	// The hub decides at its next visit of this leader whether it carries
	// the rounds to each node it has not decided on yet, and wakes the
	// leader where it does not (hub.reach); only a node it decided not to
	// carry gets the leader's own rounds. Until then the leader's liveness
	// timer would only wake it to read the decision: one activation of
	// every new leader, about a tenth of the survivors' steps in a node
	// crash under a thousand elections (docs/performance.md, Analysis).
	hubCarries := e.coalesced
	if len(direct) > 0 || e.coalesced == false {
		e.openRound(e.round + 1)
		hb := msgHeartbeat{ClusterID: e.cfg.clusterID, Term: e.term, Leader: e.self, Round: e.round, Fresh: int64(e.roundSent[len(e.roundSent)-1].fresh)}
		for _, m := range direct {
			e.send(m, hb)
			if carried, decided := e.carried[m.node]; decided && carried == false {
				hubCarries = false
			}
		}
		e.lastHeartbeatOut = e.now
	}
	if hubCarries {
		next = e.choreInterval()
		if e.leaderChoresPending() == false {
			// nothing for a chore to do; keepChoreTimer arms it again
			// once there is
			e.cancelTimer(timerHeartbeat)
			return
		}
	}
	e.armTimer(timerHeartbeat, next)
}

// leaderChoresPending reports whether a leader whose rounds the hub
// carries has anything for its chore tick to do: the chores of every role
// (choresPending), or a member whose process it does not know, which it
// probes (sendHeartbeats).
func (e *election) leaderChoresPending() bool {
	if e.choresPending() {
		return true
	}
	for _, m := range e.members {
		if m.pid == (gen.PID{}) {
			return true
		}
	}
	return false
}

// keepChoreTimer runs at the end of every step: a leader whose hub
// carries all its rounds, and which had no chores, has no heartbeat timer
// (sendHeartbeats); if the step gave it one, the timer is armed for a
// chore interval. Without it, a thousand idle leaders on three nodes woke
// about 200 times a second between them for nothing; everything else that
// needs them (a node no longer carried, the hub gone, the lease) wakes
// them without it.
//
// A follower that has joined a hub gets the same timer while it has a
// chore (followerChore). Without a hub it looks for silent connections at
// every heartbeat of its leader (handleHeartbeat); with one it handles no
// heartbeats, and nothing else would look.
func (e *election) keepChoreTimer() {
	if e.timers[timerHeartbeat].armed {
		return
	}
	switch {
	case e.role == roleLeader && e.unpublished == false:
		if e.leaderChoresPending() {
			e.armTimer(timerHeartbeat, e.choreInterval())
		}
	case e.role == roleFollower && e.coalesced:
		if e.choresPending() {
			e.armTimer(timerHeartbeat, e.choreInterval())
		}
	}
}

// followerChore is the chore tick of a follower that has joined a hub
// (keepChoreTimer): it resets the connection of a member that has answered
// nothing for silenceBound, and checks the monitors that were never
// confirmed.
//
// Why. On a framework with the simultaneous-connect bug (the v320 branch),
// two followers that say Hello to each other at the same moment can end up
// with a connection each that carries nothing either way, while both
// report the other node as connected. Their leader's heartbeats reach them
// over other connections, so nothing else tells them: they never learned
// each other's processes (peers 1 of 2 on each, for as long as a real
// framework run was watched), and when the leader's node died they could
// not elect one of themselves until a campaign found the silence. The
// chore resets such a connection about a chore interval after the first
// unanswered request: a chore that asks for a sample of the connection's
// inbound count (the evidence a reset needs, resetConnection) comes back
// half a silence bound later to reset, instead of a chore interval later.
// On the v320 branch, 7 of 10 three-node clusters had such a pair; with
// this chore each got acquainted within 7 s. A follower's parked election
// timer used to carry a chore deadline instead, but run from there alone
// the chore left 5 of 10 such starts unacquainted after 15 s: every step
// parked the timer again with a deadline a chore interval from that step,
// and a follower that took a step more often than that for anything else
// (one every 100 ms in the traces) never reached it. Hence a timer of the
// follower's own, armed once and not moved by the steps between.
func (e *election) followerChore() {
	if e.role != roleFollower {
		return
	}
	sampled := len(e.out.sampleInbound)
	e.findSilentConnections()
	if len(e.out.sampleInbound) > sampled {
		e.armTimer(timerHeartbeat, e.silenceBound()/2)
	}
}

// heartbeatNow makes a leader send its next round at once: the hub no
// longer carries it to some node, or there is no hub any more.
func (e *election) heartbeatNow() {
	if e.role == roleLeader && e.unpublished == false {
		e.armTimer(timerHeartbeat, 0)
	}
}

// stepDown relinquishes leadership without being told to.
func (e *election) stepDown(why string) {
	if e.role != roleLeader {
		return
	}
	e.logf(levelWarning, "stepping down at term %d: %s", e.term, why)
	e.becomeFollower()
}

// leaderLost reacts to a sign that the leader pid is gone, which this
// node's framework reported at reported (at most now): a down for its PID.
// proof says the down carries a real termination (any reason but a lost
// connection): its process acts no more, and the promise to it ends now. A
// lost connection is only a sign (promiseAfterLoss): the promise then ends
// F after the last acknowledgement, when the old leader's acting lease has
// run out whatever its end of the connection reports. Instead of sitting
// out a full election timeout the follower pre-votes as soon as its
// promise ends, staggered by rank (fastFailoverDelay). The pre-vote only
// succeeds if a quorum lost the leader too, so one follower whose own link
// flapped cannot disrupt a healthy leader.
func (e *election) leaderLost(pid gen.PID, reported time.Time, proof bool) {
	e.leader = gen.PID{}
	e.lostLeader = pid
	e.signLost, e.signTerm = gen.PID{}, e.term
	if proof == false {
		e.signLost = pid
	}
	if proof {
		e.releasePromise(pid)
	} else {
		e.promiseAfterLoss(pid)
	}
	if e.role != roleFollower {
		return
	}
	if e.electionDeadline.After(e.now) == false {
		// The election timer is the fast failover's backstop. A down that
		// came after the leader's election timeout ran out (a wave's later
		// elections, whose downs the shared watcher paced, their timers held
		// by the hub for them: pacing.go) would have it fire at once, a step
		// that only finds the failover pending; it counts from now instead.
		e.resetElectionDeadline()
		e.armElectionTimer(e.electionDeadline)
	}
	others := e.wave.join(e.now, waveWindow(e.cfg))
	delay := e.fastFailoverDelay(others >= waveThreshold)
	start := reported
	if e.cfg.assumeSymmetricLoss == false && e.promisedTo == pid && e.promisedUntil.After(start) {
		// the stagger counts from the end of the promise: the survivors'
		// promises end within a round trip of each other
		start = e.promisedUntil
	}
	if e.pongPromiseTo == pid && e.pongPromise.After(start) {
		start = e.pongPromise // the pings its node answered (pings.go)
	}
	delay = max(start.Add(delay).Sub(e.now), 0)
	if delay == 0 {
		// The step ran out while the down waited for the actor (a wave's
		// later elections): pre-vote in this step. A timer of no delay
		// would cost a framework timer and another activation of the
		// actor, each election of the wave, in the milliseconds the
		// wave's rounds wait for the same cores.
		e.cancelTimer(timerFast)
		e.fastPreVote()
		return
	}
	e.armTimer(timerFast, delay)
}

// leaderWithdrawn fails over from a leader whose node the user withdrew
// (Leave): discovery stopped listing it, most often because its pod or
// host went away, and its down, when it comes, no longer matches a member
// and is dropped: a discovery quicker than the framework must not cost the
// followers an election timeout. A Leave is a sign, never a proof: it can name a live node,
// which is not told and goes on leading until its acting lease runs out.
// So it counts as a lost connection (leaderLost without proof): the promise
// ends F after the last acknowledgement, when that lease has run out.
//
// With AssumeSymmetricConnectionLoss a lost connection releases the
// promise at once, because both ends see the loss; a Leave drops nothing
// the old leader sees, so there the follower keeps its whole promise and
// campaigns at its election timeout, as before.
func (e *election) leaderWithdrawn(pid gen.PID) {
	if e.cfg.assumeSymmetricLoss {
		return
	}
	e.leaderLost(pid, e.now, false)
}

// fastPreVote starts the fast failover's pre-vote (leaderLost), unless the
// follower has a leader again, is in a round already, or is in its quiet
// period.
func (e *election) fastPreVote() {
	if e.role == roleFollower && e.leader == (gen.PID{}) && e.preVoting == false && e.now.Before(e.notBefore) == false {
		e.fastRounds++
		e.campaignWith(true)
		e.preVoteFast = e.preVoting
	}
}

// reclaim asks to lead the next term as soon as this node's lease ran out:
// a pre-vote asking for pledges, as a fast failover's does (fastPreVote). A
// lease runs out while its followers still follow this node when their
// acknowledgements came late (a node crash's wave on two busy survivors,
// the new leaders among them) or when every node was stalled at once (all
// of them paused, a host's hiccup). Without it the election waited for an
// election timeout while the followers kept refusing pre-votes for the
// leader they still heard, then campaigned on whoever's timer fired first:
// a few hundred milliseconds to seconds without a leader, split votes in a
// crash's wave, and after a stall of every node, leadership landing on
// whichever node resumed first. A follower that still follows this node
// grants the pre-vote and pledges its vote of the next term to it
// (handlePreVote, offerPledge), so the election is led again within one
// round trip of the reclaim's turn (below), by the same node. It changes no
// safety rule: the pre-vote moves no term, a pledge is a vote and binds as
// one, and the new lease counts from the pre-vote's send time (pledge.go).
// A follower that moved to another leader refuses, as it refuses any
// pre-vote, and this node then campaigns at its election timeout as before.
//
// Two limits keep reclaims from feeding the load that ends leases. A
// reclaim takes a turn at the node's campaign gate like any campaign
// (pacing.go): after a stall of a node leading thousands of elections they
// would otherwise all start at once, and one that finds no turn queues and
// campaigns when its turn comes. And a term this node won less than
// ElectionTimeoutMax ago is not reclaimed: its lease lapsed as soon as it
// was won, so the node is too busy to hold one, and reclaiming it again
// only churned callbacks (measured at 3,000 elections: twice the leader
// changes of a stall without either limit).
func (e *election) reclaim() {
	if e.role != roleFollower || e.leader != (gen.PID{}) || e.preVoting || e.now.Before(e.notBefore) {
		return
	}
	if e.now.Sub(e.termChangedAt) < e.cfg.electionTimeoutMax {
		return
	}
	if e.takeTurn() == false {
		return // queued: it campaigns when its turn comes (turnCame)
	}
	e.reclaims++
	e.campaignWith(true)
	e.preVoteFast = e.preVoting
}

// fastFailoverDelay staggers the survivors' pre-votes by their rank among the
// reachable members, in the election's failover order (rankedBefore), so
// that one candidate usually
// starts clearly first: a split vote here would push failover back to a full
// election timeout. The step is failoverStep (5 ms at the defaults): several
// pre-vote and vote round trips on a local network, so the next-ranked node
// sees the first one's vote request before its own timer fires. A random
// jitter of up to a quarter step separates nodes whose views disagree on the
// ranking. The delay counts from the end of the survivor's promise to the
// lost leader (leaderLost), or from when its framework reported the down.
//
// With AssumeSymmetricConnectionLoss the first survivor also waits a whole
// step from the report: that is the margin its safety rests on (a leader
// cut off from the majority ends its lease when its own end of the
// connections reports the loss, and the survivors must not elect anyone
// before).
//
// In a wave (many elections of this node failing over at once, pacing.go) a
// survivor ranked after the first waits waveExtra more, so that the first
// one's pre-vote reaches it before its own pre-vote goes out.
func (e *election) fastFailoverDelay(inWave bool) time.Duration {
	step := failoverStep(e.cfg)
	rank := 0
	for _, m := range e.members {
		if m.pid != (gen.PID{}) && e.rankedBefore(m.node, e.self.Node) {
			rank++
		}
	}
	delay := time.Duration(rank)*step + time.Duration(e.rng.Int64N(int64(step/4)+1))
	if e.cfg.assumeSymmetricLoss {
		delay += step + time.Duration(e.rng.Int64N(int64(step/4)+1))
	}
	if inWave && rank > 0 {
		e.waveDelayed++
		delay += waveExtra(e.cfg, rank)
	}
	return delay
}

// rankedBefore reports whether node a comes before node b in this
// election's failover order: the order of a hash of the ClusterID and the
// node's name, then of the names. Every member computes the same order
// from names alone, whatever its view. It differs from election to
// election, so that when a node leading many of them crashes, its
// elections go to every survivor in about equal shares rather than all to
// the survivor whose name sorts first: both the failover's work and the
// leadership that follows are spread over the survivors.
func (e *election) rankedBefore(a, b gen.Atom) bool {
	ka, kb := failoverKey(e.cfg.clusterID, a), failoverKey(e.cfg.clusterID, b)
	if ka != kb {
		return ka < kb
	}
	return a < b
}

// startRank is this node's place in the failover order among every member
// of its view, known or not yet heard from: how many whole spreads of the
// election timeout a fresh actor waits after its quiet period before it
// campaigns (waitQuietPeriod).
func (e *election) startRank() int {
	rank := 0
	for _, m := range e.members {
		if e.rankedBefore(m.node, e.self.Node) {
			rank++
		}
	}
	return rank
}

// failoverKey is the FNV-1a hash of clusterID, a zero byte and node,
// written out because hash/fnv would allocate on every comparison of a
// pre-vote's path.
func failoverKey(clusterID string, node gen.Atom) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(clusterID); i++ {
		h = (h ^ uint64(clusterID[i])) * prime
	}
	h *= prime // the separator, a zero byte
	for i := 0; i < len(node); i++ {
		h = (h ^ uint64(node[i])) * prime
	}
	return h
}

// failingOverFast reports whether this follower saw its leader's down and
// is about to pre-vote early, or is doing so (leaderLost).
func (e *election) failingOverFast() bool {
	if e.role != roleFollower || e.leader != (gen.PID{}) {
		return false
	}
	return e.fastFailoverPending() || (e.preVoting && e.preVoteFast)
}

// fastFailoverPending reports whether this follower's fast pre-vote waits
// for its timer (leaderLost): it has not gone out yet.
func (e *election) fastFailoverPending() bool {
	// a timer armed to ask a refusing voter again (fastReask) is not a
	// fast failover any more: the survivors ranked after this one may go
	return e.role == roleFollower && e.leader == (gen.PID{}) && e.timers[timerFast].armed && len(e.fastReask) == 0
}

// deferToRanked gives up this node's fast failover for a survivor ranked
// before it that asked for a pre-vote. The staggered delays alone do not
// keep two survivors apart when the node is busy (many elections losing
// their leaders at once: a node crash): both pre-votes would succeed, both
// would campaign for the same term and split its votes, and the failover
// would wait a full election timeout. So the pre-vote of a survivor ranked
// earlier wins over this node's own, and this node refuses the pre-votes
// of survivors ranked after it while it fails over (handlePreVote). Only
// liveness is at stake: pre-votes grant nothing, and a survivor that
// deferred campaigns at its election timeout if the other one fails.
func (e *election) deferToRanked(m *member) {
	e.cancelTimer(timerFast)
	e.preVoting, e.preVoteFast, e.preVotes, e.pledges = false, false, nil, nil
	e.deferredFailovers++
	e.resetElectionDeadline()
}

// fastPreVoteRefused ends the fast failover of a survivor whose early
// pre-vote a voter refused. The voter has most likely not handled the
// leader's down yet (it still keeps its promise to the leader), which
// under load takes longer than the first survivor's head start. The round
// stays open, as any pre-vote does, but the survivor stops refusing the
// pre-votes of the survivors ranked after it (deferToRanked): one of them,
// a step later, may find every voter ready, where waiting for this round
// would take an election timeout.
//
// A voter that refused for the lost leader's sake (it names that leader)
// is asked again a step later, and again, for as long as a survivor ranked
// after this one waits in a wave before its own pre-vote (waveExtra): in a
// node crash under many elections one survivor's framework reports the
// lost connection 10 to 20 ms after the other's, and without a second
// question the elections whose first pre-vote came too early waited for
// the next survivor's, 50 ms and more later. Asking again changes nothing
// a pre-vote does not: the round, its pledges (counted from the first
// question, pledgeOpen) and the first lease round's date stay those of the
// first request.
func (e *election) fastPreVoteRefused(m *member, reply msgPreVoteReply) {
	e.preVoteFast = false
	// fastAskedAt is set for a fast failover's round only, and stays set
	// through its second questions
	if e.fastAskedAt.IsZero() || reply.Leader == (gen.PID{}) || reply.Leader != e.lostLeader {
		return
	}
	if e.now.Sub(e.fastAskedAt) >= waveExtra(e.cfg, 1) {
		return
	}
	if e.fastReask == nil {
		e.fastReask = make(map[gen.Atom]bool)
	}
	e.fastReask[m.node] = true
	if e.timers[timerFast].armed == false {
		e.armTimer(timerFast, failoverStep(e.cfg))
	}
}

// fastReaskDue asks the voters in fastReask again, while the pre-vote
// they refused is still open and within its time (fastPreVoteRefused);
// false when there is nothing to ask.
func (e *election) fastReaskDue() bool {
	if len(e.fastReask) == 0 {
		return false
	}
	reask := e.fastReask
	e.fastReask = nil
	if e.preVoting == false || e.role != roleFollower {
		return false // the round is over; the timer is a fast failover's, if anything
	}
	if e.now.Sub(e.fastAskedAt) >= waveExtra(e.cfg, 1) {
		return true
	}
	req := e.preVoteRequest()
	for _, m := range e.sortedMembers() {
		if reask[m.node] && e.preVotes[m.node] == false && m.pid != (gen.PID{}) {
			e.fastReasks++
			e.send(m, req)
		}
	}
	return true
}

// successorRefusal says why member m cannot take leadership over now, ""
// when it can: it must be reachable, have acknowledged a round of this term
// and have been heard within ElectionTimeoutMin, or its campaign would not
// win before the others' promises to this leader run out.
func (e *election) successorRefusal(m *member, connected func(gen.Atom) bool) string {
	switch {
	case m.pid == (gen.PID{}) || (connected != nil && connected(m.node) == false):
		return "it is not connected"
	case m.ackTerm != e.term:
		return fmt.Sprintf("it has not acknowledged a round of term %d", e.term)
	case e.now.Sub(m.lastHeard) >= leaderHeardWithin(e.cfg):
		return fmt.Sprintf("it was last heard %s ago, more than ElectionTimeoutMin", e.now.Sub(m.lastHeard).Round(time.Millisecond))
	}
	return ""
}

// mayBeQuiet reports whether m's process may still be in its quiet period,
// as far as this node can tell (it first heard that process less than a
// quiet period ago): such a successor could not campaign until it ends.
func (e *election) mayBeQuiet(m *member) bool {
	return m.processSeen.IsZero() == false && e.now.Sub(m.processSeen) < e.quietPeriod()
}

// handover steps down on purpose and, when a reachable, up-to-date follower
// exists, tells it to campaign at once. The leader stands down before the
// follower's election starts, and that election is for a higher term, so two
// nodes never lead the same term. It returns the chosen successor's node.
// connected, when not nil, is whether the framework has a connection to a
// node now: a member whose loss the leader has not handled yet
// (pacing.go) is not chosen.
func (e *election) handover(now time.Time, why string, connected func(gen.Atom) bool) gen.Atom {
	return e.handoverTo(now, why, connected, "")
}

// handoverTo is handover to the member on node to, or, when to is empty,
// to the up-to-date member heard most recently. The caller has checked
// that to can succeed (successorRefusal).
func (e *election) handoverTo(now time.Time, why string, connected func(gen.Atom) bool, to gen.Atom) gen.Atom {
	e.now = now
	if e.role != roleLeader {
		return ""
	}
	// the up-to-date member heard most recently, preferring one whose
	// process is surely past its quiet period (a restarted node's could
	// not campaign until then)
	var target *member
	for _, m := range e.sortedMembers() {
		if e.successorRefusal(m, connected) != "" || (to != "" && m.node != to) {
			continue
		}
		switch {
		case target == nil:
			target = m
		case e.mayBeQuiet(target) != e.mayBeQuiet(m):
			if e.mayBeQuiet(target) {
				target = m
			}
		case m.lastHeard.After(target.lastHeard):
			target = m
		}
	}
	// a handover is planned: the operator needs to know, not to act
	if e.role == roleLeader {
		e.logf(levelInfo, "handing leadership over at term %d: %s", e.term, why)
		e.becomeFollower()
	}
	// do not campaign against the successor
	e.notBefore = e.now.Add(handoverHold(e.cfg))
	e.resetElectionDeadline()
	if target == nil {
		return ""
	}
	e.handovers++
	e.lastHandover = fmt.Sprintf("%s at %s", target.node, e.now.UTC().Format(time.RFC3339Nano))
	e.send(target, msgTimeoutNow{ClusterID: e.cfg.clusterID, Term: e.term})
	return target.node
}
