package leader

import (
	"fmt"
	"math/rand/v2"
	"time"

	"ergo.services/ergo/gen"
)

// role is one of the four documented states.
type role int

const (
	roleUnclustered role = iota // the view is below MinClusterSize: no leader, no campaign
	roleFollower                // accepting a leader, or waiting to campaign
	roleCandidate               // campaigning for a term
	roleLeader                  // holding leadership
)

func (r role) String() string {
	switch r {
	case roleFollower:
		return "follower"
	case roleCandidate:
		return "candidate"
	case roleLeader:
		return "leader"
	}
	return "unclustered"
}

// maxTerm bounds the terms a peer may make us adopt. Terms grow by one per
// election, so no real cluster gets near 2^48 (one election every
// millisecond for nine thousand years); a bigger term is garbage or an
// attack, and adopting it could wedge the term counter at its maximum.
const maxTerm = 1 << 48

// protocolSwitches turn off the mechanisms we add beyond the documented
// protocol. They exist for tests, which show each mechanism's effect by
// comparing a run with it and a run without it.
type protocolSwitches struct {
	noPreVote        bool // campaign with real votes at once, as the reference does
	noResponseQuorum bool // an accepted send counts as contact, as the reference does
	noHandover       bool // a leader that stops on purpose just goes away
	noFastFailover   bool // a leader's down waits for the normal election timeout
	doubleVote       bool // BROKEN ON PURPOSE: grant every vote request (simulator self-test)
}

// effects are what one step of the state machine asks the actor to do. The
// state never performs I/O itself; that is what lets the simulator run the
// same rules under virtual time.
type effects struct {
	sends     []outbound
	timers    []timerRequest
	monitor   []gen.PID
	demonitor []gen.PID
	joined    []gen.PID
	left      []gen.PID
}

func (o *effects) empty() bool {
	return len(o.sends)+len(o.timers)+len(o.monitor)+len(o.demonitor)+len(o.joined)+len(o.left) == 0
}

// outbound is one message to send; node names the member it is for, so the
// result of the send can be recorded against it.
type outbound struct {
	node    gen.Atom
	to      any
	message any
}

type timerKind int

const (
	timerElection  timerKind = iota // follower/candidate: campaign when it expires
	timerHeartbeat                  // leader: check quorum, send heartbeats
	timerFast                       // follower that saw its leader's down: pre-vote early
	timerGhost                      // drop members unreachable for GhostTTL
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
}

// election is the whole election state of one actor and the rules that
// change it. Every entry point takes the current time; none blocks, reads a
// clock or sends anything. What must happen as a result is appended to out.
type election struct {
	cfg      config
	switches protocolSwitches
	self     gen.PID
	selfName gen.Atom
	now      time.Time
	rng      *rand.Rand
	log      gen.Log

	role          role
	term          uint64
	votedFor      gen.PID
	leader        gen.PID
	termChangedAt time.Time

	votes       map[gen.Atom]bool // grants in the current election, self included
	voteReplies int               // replies received in the current election
	preVoting   bool
	preVotes    map[gen.Atom]bool
	confirming  bool // won; HandleConfirmLeader pending
	unpublished bool // confirmed; HandleBecomeLeader pending

	lastHeartbeatIn  time.Time
	lastHeartbeatOut time.Time
	electionDeadline time.Time
	electionFireAt   time.Time
	notBefore        time.Time // no campaign before this: confirm backoff, or after a handover
	lostLeader       gen.PID   // the leader whose down this node observed
	timers           [numTimers]timerState

	denials       int
	confirmDenied uint64
	lastDeniedAt  time.Time

	members   map[gen.Atom]*member
	withdrawn map[gen.Atom]time.Time
	dead      map[gen.PID]time.Time // processes reported terminated, and when

	dropped       map[string]uint64
	preVoteRounds uint64
	fastRounds    uint64
	handovers     uint64
	lastHandover  string

	out effects
}

func newElection(cfg config, self gen.PID, name gen.Atom, rng *rand.Rand, log gen.Log) *election {
	return &election{
		cfg:       cfg,
		self:      self,
		selfName:  name,
		rng:       rng,
		log:       log,
		members:   make(map[gen.Atom]*member),
		withdrawn: make(map[gen.Atom]time.Time),
		dead:      make(map[gen.PID]time.Time),
		dropped:   make(map[string]uint64),
	}
}

// start declares the bootstrap peers and arms the first election timer.
func (e *election) start(now time.Time) {
	e.now = now
	e.role = roleUnclustered
	for _, peer := range e.cfg.bootstrap {
		e.join(peer)
	}
	e.viewChanged()
}

// viewChanged re-applies the floor after the view grew or shrank: below
// MinClusterSize there is no leader and no campaign, including for a leader
// whose view just shrank.
func (e *election) viewChanged() {
	if e.belowFloor() {
		if e.role == roleUnclustered {
			return
		}
		if e.role == roleLeader {
			e.logf(levelWarning, "stepping down at term %d: the view shrank to %d, below MinClusterSize %d; no leader until peers return or are joined", e.term, e.viewSize(), e.cfg.minClusterSize)
		}
		e.role = roleUnclustered
		e.leader = gen.PID{}
		e.preVoting, e.confirming, e.unpublished = false, false, false
		e.cancelTimer(timerElection)
		e.cancelTimer(timerHeartbeat)
		e.cancelTimer(timerFast)
		return
	}
	if e.role == roleUnclustered {
		e.role = roleFollower
		e.resetElectionDeadline()
	}
}

// receive handles a message from another actor. It reports false when the
// message is not part of the protocol.
func (e *election) receive(now time.Time, from gen.PID, message any) bool {
	h, ok := headerOf(message)
	if ok == false {
		return false
	}
	e.now = now
	switch {
	case h.cluster != e.cfg.clusterID:
		e.drop("cluster_mismatch")
		return true
	case from.Node == e.self.Node:
		// The view is keyed by node; a second actor of the same cluster on
		// this node would be counted as this node.
		e.drop("same_node")
		return true
	case h.term > maxTerm:
		e.drop("absurd_term")
		return true
	case e.isWithdrawn(from.Node):
		e.drop("withdrawn")
		return true
	case e.isDead(from):
		e.drop("dead_sender")
		return true
	}
	if hb, ok := message.(msgHeartbeat); ok && hb.Leader != from {
		// malformed: a leader only ever speaks for itself
		e.drop("leader_mismatch")
		return true
	}

	m := e.heard(from, nameOf(message))
	if h.term > e.term {
		e.adoptTerm(h.term)
	}
	switch msg := message.(type) {
	case msgHello:
		e.reply(m, msgHelloReply{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName})
	case msgHelloReply:
		e.staleReply(h)
	case msgPreVote:
		e.handlePreVote(m, msg)
	case msgPreVoteReply:
		e.handlePreVoteReply(m, msg)
	case msgVote:
		e.handleVote(m, msg)
	case msgVoteReply:
		e.handleVoteReply(m, msg)
	case msgHeartbeat:
		e.handleHeartbeat(m, msg)
	case msgHeartbeatAck:
		if e.staleReply(h) == false {
			m.ackTerm = h.term
			if e.role == roleLeader {
				m.lastAck = e.now
			}
		}
	case msgTimeoutNow:
		e.handleTimeoutNow(m, msg)
	}
	return true
}

// staleReply counts a reply from an older term, which carries nothing.
func (e *election) staleReply(h header) bool {
	if h.term < e.term {
		e.drop("stale_term")
		return true
	}
	return false
}

func nameOf(message any) gen.Atom {
	switch m := message.(type) {
	case msgHello:
		return m.Name
	case msgHelloReply:
		return m.Name
	case msgPreVote:
		return m.Name
	case msgVote:
		return m.Name
	}
	return ""
}

// adoptTerm moves to a higher term: a higher term always wins, and whatever
// this node was doing in the old term ends.
func (e *election) adoptTerm(term uint64) {
	e.logf(levelDebug, "term %d -> %d (seen from a peer)", e.term, term)
	e.term = term
	e.termChangedAt = e.now
	e.votedFor = gen.PID{}
	e.votes, e.voteReplies = nil, 0
	e.preVoting, e.confirming = false, false
	e.leader = gen.PID{}
	if e.role == roleLeader || e.role == roleCandidate {
		e.becomeFollower()
	}
}

// becomeFollower leaves leadership or candidacy for the follower role with
// no known leader.
func (e *election) becomeFollower() {
	if e.role == roleUnclustered {
		return
	}
	e.role = roleFollower
	e.leader = gen.PID{}
	e.unpublished, e.confirming = false, false
	e.cancelTimer(timerHeartbeat)
	e.resetElectionDeadline()
}

func (e *election) handlePreVote(m *member, req msgPreVote) {
	reply := msgPreVoteReply{ClusterID: e.cfg.clusterID, Term: e.term}
	switch {
	case req.Term < e.term:
		e.drop("stale_term")
	case e.role == roleLeader:
		// a live leader never agrees that someone else could win
		reply.Leader = e.self
	case e.leaderAlive():
		// the lease: this node still hears a leader
		reply.Leader = e.leader
	case req.ViewSize < e.cfg.minClusterSize:
		// the candidate could not be eligible under the floor
	default:
		reply.Granted = true
	}
	e.reply(m, reply)
}

// leaderAlive reports whether this node heard its leader within the minimum
// election timeout. A leader whose down this node saw is not alive.
func (e *election) leaderAlive() bool {
	return e.leader != (gen.PID{}) && e.now.Sub(e.lastHeartbeatIn) < e.cfg.electionTimeoutMin
}

func (e *election) handlePreVoteReply(m *member, reply msgPreVoteReply) {
	if e.staleReply(header{term: reply.Term}) {
		return
	}
	if e.preVoting == false || e.role == roleLeader {
		e.drop("unexpected_reply")
		return
	}
	if reply.Granted == false {
		e.introduceTo(reply.Leader)
		return
	}
	e.preVotes[m.node] = true
	if len(e.preVotes) >= e.quorum() {
		e.startElection("pre-vote won")
	}
}

// introduceTo says Hello to a leader that a voter named but that this node
// does not reach: the leader's view may have dropped this node (GhostTTL)
// while they were apart, and then it would never send heartbeats here.
// Membership spreads through the protocol: the Hello makes this node a
// member on the leader, whose heartbeats then bring it back.
func (e *election) introduceTo(leader gen.PID) {
	if leader == (gen.PID{}) || leader.Node == e.self.Node || e.isWithdrawn(leader.Node) {
		return
	}
	if m, ok := e.members[leader.Node]; ok && m.pid == leader {
		return
	}
	e.out.sends = append(e.out.sends, outbound{node: leader.Node, to: leader, message: msgHello{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName}})
}

func (e *election) handleVote(m *member, req msgVote) {
	if req.Term < e.term {
		e.drop("stale_term")
		e.reply(m, msgVoteReply{ClusterID: e.cfg.clusterID, Term: e.term})
		return
	}
	free := e.votedFor == (gen.PID{}) || e.votedFor == m.pid
	granted := free && e.role != roleLeader && req.ViewSize >= e.cfg.minClusterSize
	if e.switches.doubleVote {
		granted = true
	}
	if granted {
		e.votedFor = m.pid
		e.resetElectionDeadline()
	}
	e.reply(m, msgVoteReply{ClusterID: e.cfg.clusterID, Term: e.term, Granted: granted})
}

func (e *election) handleVoteReply(m *member, reply msgVoteReply) {
	if e.staleReply(header{term: reply.Term}) {
		return
	}
	if e.role != roleCandidate || e.confirming || reply.Term != e.term {
		e.drop("unexpected_reply")
		return
	}
	e.voteReplies++
	if reply.Granted == false {
		return
	}
	e.votes[m.node] = true
	m.lastAck = e.now
	m.ackTerm = e.term
	if len(e.votes) >= e.quorum() {
		e.win()
	}
}

func (e *election) handleHeartbeat(m *member, hb msgHeartbeat) {
	ack := msgHeartbeatAck{ClusterID: e.cfg.clusterID, Term: e.term}
	if hb.Term < e.term {
		// answered, so that the stale leader learns the real term and stands down
		e.drop("stale_term")
		e.reply(m, ack)
		return
	}
	switch e.role {
	case roleLeader:
		// Two leaders in one term would be a broken election; refuse it loudly.
		e.drop("conflicting_leader")
		e.logf(levelError, "heartbeat from %s claims term %d, which this node leads; ignored", m.pid, hb.Term)
		return
	case roleUnclustered:
		// below the floor this node may not have a leader, but it is reachable
		e.reply(m, ack)
		return
	case roleCandidate:
		e.becomeFollower()
	case roleFollower:
		if e.leader != (gen.PID{}) && e.leader != m.pid {
			e.drop("conflicting_leader")
			return
		}
	}
	e.leader = m.pid
	e.lostLeader = gen.PID{}
	e.lastHeartbeatIn = e.now
	e.preVoting = false
	e.cancelTimer(timerFast)
	e.resetElectionDeadline()
	e.reply(m, ack)
}

func (e *election) handleTimeoutNow(m *member, msg msgTimeoutNow) {
	fromLeader := m.pid == e.leader || m.pid == e.lostLeader
	if msg.Term != e.term || e.role != roleFollower || fromLeader == false {
		e.drop("unexpected_timeout_now")
		return
	}
	e.logf(levelInfo, "leader %s handed leadership over at term %d; campaigning now", m.pid, e.term)
	e.startElection("handover")
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
	switch kind {
	case timerElection:
		e.electionTimeout()
	case timerHeartbeat:
		e.heartbeatTick()
	case timerFast:
		if e.role == roleFollower && e.leader == (gen.PID{}) && e.preVoting == false && e.now.Before(e.notBefore) == false {
			e.fastRounds++
			e.campaign()
		}
	case timerGhost:
		e.sweepGhosts()
	}
}

func (e *election) electionTimeout() {
	if e.role != roleFollower && e.role != roleCandidate {
		return
	}
	if e.now.Before(e.electionDeadline) {
		e.armElectionTimer(e.electionDeadline)
		return
	}
	if e.leader != (gen.PID{}) {
		e.logf(levelInfo, "no heartbeat from leader %s for %s; looking for a new leader", e.leader, e.now.Sub(e.lastHeartbeatIn).Round(time.Millisecond))
		e.leader = gen.PID{}
	}
	e.campaign()
}

// campaign starts a pre-vote (or, with pre-vote off, an election). A
// pre-vote changes no term, so a node that cannot win, such as one on the
// minority side of a partition, never inflates the term and never deposes a
// healthy leader when the partition heals.
func (e *election) campaign() {
	if e.role == roleLeader || e.role == roleUnclustered {
		return
	}
	if e.switches.noPreVote {
		e.startElection("election timeout")
		return
	}
	e.preVoting = true
	e.preVotes = map[gen.Atom]bool{e.self.Node: true}
	e.preVoteRounds++
	e.resetElectionDeadline()
	if len(e.preVotes) >= e.quorum() {
		e.startElection("pre-vote won")
		return
	}
	req := msgPreVote{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, ViewSize: e.viewSize()}
	for _, m := range e.sortedMembers() {
		e.send(m, req)
	}
}

// startElection increments the term, votes for itself and asks everyone
// declared for a vote.
func (e *election) startElection(why string) {
	if e.role == roleLeader || e.role == roleUnclustered {
		return
	}
	e.preVoting = false
	e.term++
	e.termChangedAt = e.now
	e.votedFor = e.self
	e.votes = map[gen.Atom]bool{e.self.Node: true}
	e.voteReplies = 0
	e.role = roleCandidate
	e.leader = gen.PID{}
	e.cancelTimer(timerFast)
	e.logf(levelDebug, "campaigning for term %d (%s); view %d, quorum %d", e.term, why, e.viewSize(), e.quorum())
	e.resetElectionDeadline()
	if len(e.votes) >= e.quorum() {
		e.win()
		return
	}
	req := msgVote{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, ViewSize: e.viewSize()}
	for _, m := range e.sortedMembers() {
		e.send(m, req)
	}
}

// win records a won election. Leadership is not published until the actor
// has consulted HandleConfirmLeader and reported back with confirmResult.
func (e *election) win() {
	e.confirming = true
}

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

func (e *election) heartbeatTick() {
	if e.role != roleLeader || e.unpublished {
		return
	}
	if reached := e.reachedMembers(); reached < e.quorum() {
		e.stepDown(fmt.Sprintf("no evidence of reaching a quorum within %s: reached %d of view %d, quorum %d", e.cfg.electionTimeoutMin, reached, e.viewSize(), e.quorum()))
		return
	}
	e.sendHeartbeats()
}

// reachedMembers counts this node plus the members it has evidence of
// reaching within the minimum election timeout. The evidence is the
// member's acknowledgement of this leadership: a heartbeat ack or a vote
// granted for this term. An accepted send proves nothing about the way back
// (a half-open link), and a member that sends anything else (a pre-vote,
// say) is evidently not hearing us. With response quorum off, the
// documented reference rule applies: an accepted send or any inbound
// protocol message.
func (e *election) reachedMembers() int {
	reached := 1
	for _, m := range e.members {
		evidence := m.lastAck
		if e.switches.noResponseQuorum {
			evidence = m.lastHeard
			if m.lastSentOK.After(evidence) {
				evidence = m.lastSentOK
			}
		}
		if evidence.IsZero() == false && e.now.Sub(evidence) < e.cfg.electionTimeoutMin {
			reached++
		}
	}
	return reached
}

// sendHeartbeats goes to members that have answered (their PID is known);
// a declared peer that never replied is probed by name instead, now and then.
func (e *election) sendHeartbeats() {
	hb := msgHeartbeat{ClusterID: e.cfg.clusterID, Term: e.term, Leader: e.self}
	for _, m := range e.sortedMembers() {
		switch {
		case m.pid != (gen.PID{}):
			e.send(m, hb)
		case e.now.Before(m.nextProbe) == false:
			e.probe(m)
		}
	}
	e.lastHeartbeatOut = e.now
	e.armTimer(timerHeartbeat, e.cfg.heartbeatInterval)
}

// stepDown relinquishes leadership without being told to.
func (e *election) stepDown(why string) {
	if e.role != roleLeader {
		return
	}
	e.logf(levelWarning, "stepping down at term %d: %s", e.term, why)
	e.becomeFollower()
}

// leaderLost reacts to a down for the leader's PID. The framework reports a
// lost connection within a millisecond, so instead of sitting out a full
// election timeout the follower pre-votes after a short staggered delay. The
// pre-vote only succeeds if a quorum lost the leader too, so one follower
// whose own link flapped cannot disrupt a healthy leader.
func (e *election) leaderLost(pid gen.PID) {
	e.leader = gen.PID{}
	e.lostLeader = pid
	if e.role != roleFollower || e.switches.noFastFailover {
		return
	}
	e.armTimer(timerFast, e.fastFailoverDelay())
}

// fastFailoverDelay staggers the survivors' pre-votes by their rank among the
// reachable members, ordered by node name, so that one candidate usually
// starts clearly first: a split vote here would push failover back to a full
// election timeout. The step is ElectionTimeoutMin/30 (5 ms at the defaults,
// at least 1 ms): several pre-vote and vote round trips on a local network,
// so the next-ranked node sees the first one's vote request before its own
// timer fires. Half a step of base delay lets every survivor process its own
// down first (they arrive within a millisecond of each other), and a random
// half step of jitter separates nodes whose views disagree on the ranking.
func (e *election) fastFailoverDelay() time.Duration {
	step := max(e.cfg.electionTimeoutMin/30, time.Millisecond)
	rank := 0
	for _, m := range e.members {
		if m.pid != (gen.PID{}) && m.node < e.self.Node {
			rank++
		}
	}
	return step/2 + time.Duration(rank)*step + time.Duration(e.rng.Int64N(int64(step/2)+1))
}

// handover steps down on purpose and, when a reachable, up-to-date follower
// exists, tells it to campaign at once. The leader stands down before the
// follower's election starts, and that election is for a higher term, so two
// nodes never lead the same term. It returns the chosen successor's node.
func (e *election) handover(now time.Time, why string) gen.Atom {
	e.now = now
	if e.role != roleLeader {
		return ""
	}
	var target *member
	for _, m := range e.sortedMembers() {
		if m.pid == (gen.PID{}) || m.ackTerm != e.term || e.now.Sub(m.lastHeard) >= e.cfg.electionTimeoutMin {
			continue
		}
		if target == nil || m.lastHeard.After(target.lastHeard) {
			target = m
		}
	}
	e.stepDown(why)
	// do not campaign against the successor
	e.notBefore = e.now.Add(e.cfg.electionTimeoutMax)
	e.resetElectionDeadline()
	if target == nil || e.switches.noHandover {
		return ""
	}
	e.handovers++
	e.lastHandover = fmt.Sprintf("%s at %s", target.node, e.now.UTC().Format(time.RFC3339Nano))
	e.send(target, msgTimeoutNow{ClusterID: e.cfg.clusterID, Term: e.term})
	return target.node
}

// randomTimeout draws an election timeout from [min, max].
func (e *election) randomTimeout() time.Duration {
	lo, hi := e.cfg.electionTimeoutMin, e.cfg.electionTimeoutMax
	return lo + time.Duration(e.rng.Int64N(int64(hi-lo)+1))
}

// resetElectionDeadline restarts the wait before campaigning. The timer is
// only re-armed when it would fire too late; when it fires early, it re-arms
// for the rest, so a follower does not create a timer per heartbeat.
func (e *election) resetElectionDeadline() {
	deadline := e.now.Add(e.randomTimeout())
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
	e.out.timers = append(e.out.timers, timerRequest{kind: kind, after: after, generation: t.generation})
}

func (e *election) cancelTimer(kind timerKind) {
	t := &e.timers[kind]
	if t.armed == false {
		return
	}
	t.armed = false
	t.generation++
	e.out.timers = append(e.out.timers, timerRequest{kind: kind, after: -1, generation: t.generation})
}

// send addresses a member by PID, or by name when its PID is unknown. A send
// by name makes the framework connect synchronously, on this actor's
// goroutine; to a host that does not answer at all that blocks until the
// dial or handshake times out. So after a failed send by name the member is
// not addressed by name again for a backoff that doubles up to four
// maximum election timeouts: an unreachable member costs at most one
// blocked dial per backoff, and a healed one is reached again soon.
func (e *election) send(m *member, message any) {
	to := m.address(e.selfName)
	_, byName := to.(gen.ProcessID)
	if byName && e.now.Before(m.nameBackoffUntil) {
		return
	}
	e.out.sends = append(e.out.sends, outbound{node: m.node, to: to, message: message})
}

// reply answers the PID a request came from.
func (e *election) reply(m *member, message any) {
	e.out.sends = append(e.out.sends, outbound{node: m.node, to: m.pid, message: message})
}

func (e *election) drop(reason string) {
	e.dropped[reason]++
}

// takeEffects hands the pending effects to the caller.
func (e *election) takeEffects() effects {
	out := e.out
	e.out = effects{}
	return out
}
