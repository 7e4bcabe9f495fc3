package leader

import (
	"math/rand/v2"
	"slices"
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

// maxTermAhead bounds how far one message may push this node's term. Terms
// grow by one per election, so a genuine peer is never billions of terms
// ahead; a message that is is garbage or an attack, and adopting it would
// bring the term counter closer to its end. The bound is relative, not a cap:
// a cap would let one message at the cap wedge the cluster (nobody could
// campaign for cap+1), whereas any term a node holds can always be followed
// by term+1. Reaching the end of uint64 takes 2^32 accepted messages, each
// at the bound.
const maxTermAhead = 1 << 32

// farTermWindow is how close to each other the far terms of a quorum must
// be to be believed: members of one cluster are a few elections apart.
const farTermWindow = 1 << 16

// farTerm is a term beyond the bound that a member sent, and when.
type farTerm struct {
	term uint64
	at   time.Time
}

// termTooFar reports whether term is beyond what a peer may push us to.
func (e *election) termTooFar(term uint64) bool {
	return term > e.term && term-e.term > maxTermAhead
}

// corroborated reports whether a term beyond the bound must be believed
// after all, and adopts it: when a quorum of the view's other members each
// sent, within GhostTTL, a term that far ahead, and those terms lie within
// farTermWindow of each other, the cluster really is there (a node that was
// away while the others adopted a term at the bound and then held more
// elections), and a node that refused them forever would never rejoin.
// Garbage terms are neither a quorum nor close together. The term adopted
// is the lowest of the quorum's, so no member can push it alone.
func (e *election) corroborated(from gen.PID, term uint64) bool {
	if _, member := e.members[from.Node]; member == false {
		return false
	}
	if e.farTerms == nil {
		e.farTerms = make(map[gen.Atom]farTerm)
	}
	e.farTerms[from.Node] = farTerm{term: term, at: e.now}
	var terms []uint64
	for node, t := range e.farTerms {
		_, member := e.members[node]
		if member && e.termTooFar(t.term) && e.now.Sub(t.at) < e.cfg.ghostTTL {
			terms = append(terms, t.term)
		} else if member == false || e.now.Sub(t.at) >= e.cfg.ghostTTL {
			delete(e.farTerms, node) // bounded by the view
		}
	}
	need := e.quorum()
	slices.Sort(terms)
	lowest, found := uint64(0), false
	for i := 0; i+need <= len(terms); i++ {
		if terms[i+need-1]-terms[i] <= farTermWindow {
			lowest, found = terms[i], true
			break
		}
	}
	if found == false {
		return false
	}
	e.logf(levelWarning, "term %d -> %d: %d members report terms more than %d ahead of this node's, which no single peer may push it by; the cluster moved on while this node was away", e.term, lowest, len(terms), uint64(maxTermAhead))
	e.adoptTerm(lowest)
	e.farTerms = nil
	e.farTermsBelieved++
	return true
}

// effects are what one step of the state machine asks the actor to do. The
// state never performs I/O itself; that is what lets the simulator run the
// same rules under virtual time.
type effects struct {
	sends   []outbound
	timers  []timerRequest
	monitor []gen.PID
	reset   []gen.Atom // nodes whose connection carries nothing (silence.go)
	// nodes of members silent for half the silence bound: the actor notes
	// how much the connection has carried so far (silence.go)
	sampleInbound []gen.Atom
	// nodes of members whose monitor is still unconfirmed: the actor checks
	// that the framework is still connected to them (watchOverdue)
	checkConnected []gen.Atom
	// Hellos to the nodes of members that left the view, to send only
	// over an existing connection (gone.go)
	probeGone []outbound
	joined    []gen.PID
	left      []gen.PID
	// elections of this node given a turn to campaign, to be told
	// (pacing.go)
	turnWakes []gen.PID
}

func (o *effects) empty() bool {
	return len(o.sends)+len(o.timers)+len(o.monitor)+len(o.reset)+len(o.sampleInbound)+len(o.checkConnected)+len(o.probeGone)+len(o.joined)+len(o.left)+len(o.turnWakes) == 0
}

// outbound is one message to send; node names the member it is for, so the
// result of the send can be recorded against it.
type outbound struct {
	node    gen.Atom
	to      any
	message any
}

// election is the whole election state of one actor and the rules that
// change it. Every entry point takes the current time; none blocks, reads a
// clock or sends anything. What must happen as a result is appended to out.
type election struct {
	cfg      config
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
	startedAt     time.Time // when this actor started: see quietPeriod
	incarnation   uint64    // random per start (msgHello.Incarnation)
	stats         stats     // what operators chart (stats.go)

	// coalesced liveness (coalesce.go). The election never holds the slot
	// it shares with the hub: the actor reads the slot into a sharedView at
	// the start of each step and installs the grant shareState returns at
	// its end (hubView, shareWithHub), so the hub's records enter only as
	// inputs.
	coalesced       bool          // a hub carries this election's liveness
	wave            *failoverWave // the node's fast failovers, counted by its hub (pacing.go); nil without one
	hubPID          gen.PID
	carried         map[gen.Atom]bool // nodes the hub carries this leader's rounds to
	grantedFollow   gen.PID           // what the last shareState allowed the hub
	acksSeen        uint64            // versions of the slot's maps last copied
	sharedFollowers map[gen.Atom]gen.PID
	carriedSeen     uint64
	grantedLead     uint64
	floorTerms      map[gen.Atom]uint64 // the newest term heard from each member (lease.go)
	floorKnown      bool
	toldViews       map[gen.Atom]int // the view size each member last told (lease.go)
	floorNeed       int              // members heard when the floor settled
	restarted       bool             // a peer knew an earlier process of this actor
	floorTerm       uint64           // no grant for a term at or below this one

	votes       map[gen.Atom]bool // grants in the current election, self included
	voteReplies int               // replies received in the current election
	roundCloses time.Time         // vote replies processed after this are not counted
	preVoting   bool
	preVoteFast bool // the pre-vote in progress is a fast failover's (leadership.go)
	preVotes    map[gen.Atom]bool
	// the fast failover's pre-vote: when it went out, and the voters that
	// refused it for the lost leader's sake, to ask again (fastReask)
	fastAskedAt time.Time
	fastReask   map[gen.Atom]bool
	fastReasks  uint64 // pre-votes asked again, for Inspect
	confirming  bool   // won; HandleConfirmLeader pending

	// pledged votes (pledge.go)
	pledge           pledgeState       // voter: its vote for a term it has not reached
	pledges          map[gen.Atom]bool // candidate: votes pledged in this pre-vote round; nil when it asks none
	pledgeAskedTerm  uint64            // candidate: the term of pledgeAskedAt
	pledgeAskedAt    time.Time         // candidate: when the term's first pre-vote asking for pledges went out
	pledgedElection  bool              // the current election began from a pre-vote that asked for pledges
	pledgesGiven     uint64
	pledgedElections uint64 // elections that began with pledged votes counted
	unpublished      bool   // confirmed; HandleBecomeLeader pending

	lastHeartbeatIn  time.Time
	lastHeartbeatOut time.Time
	electionDeadline time.Time

	// campaign admission (pacing.go): the node's gate, nil for none;
	// whether this election holds a turn, or waits for one. The gate and
	// the wave are the node-wide counters of pacing.go, consulted as the
	// clock is: what they answer changes when an election campaigns, never
	// what it may grant or how long it may lead.
	turns                 turnGate
	holdsTurn, awaitsTurn bool
	campaignsQueued       uint64 // election timeouts that waited for a turn
	electionFireAt        time.Time
	notBefore             time.Time // no campaign before this: confirm backoff, or after a handover
	outgoing              bool      // handed over on its way out: grants nothing (departure.go)
	lostLeader            gen.PID   // the leader whose down this node observed
	// signLost is a leader lost to a sign (a lost connection), not proof,
	// at term signTerm, while this node has not looked for another leader
	// since: the callbacks still name it (recognisedLeader)
	signLost gen.PID
	signTerm uint64
	timers   [numTimers]timerState

	// the lease (lease.go)
	promisedTo    gen.PID   // voter: the leader or candidate it promised its support
	promisedUntil time.Time // voter: no grants to anyone else before this
	promisedAt    time.Time // voter: its last acknowledgement or grant to promisedTo
	// voter: after a sign of loss the promise lasts at least until this
	// (extendFresh)
	promisedFreshEnd time.Time
	// pongPromise is the end of the pings answered for the node of the
	// leader this actor followed through the hub, until a step withdrew
	// that permission; the promise to pongPromiseTo lasts at least that
	// long, whatever ends the other (pings.go)
	pongPromise   time.Time
	pongPromiseTo gen.PID
	promisedAck   bool         // the promise is for an acknowledged round, not a vote
	round         uint64       // leader: current heartbeat round of the term (1 = the vote requests)
	roundSent     []roundStamp // leader: send times of the recent rounds
	leaseUntil    time.Time    // leader: leadership is exclusive until this instant
	holdUntil     time.Time    // leader: stand down at this instant unless renewed
	grewAt        time.Time    // the view last grew: older rounds make no lease (viewGrew)

	denials       int
	confirmDenied uint64
	lastDeniedAt  time.Time

	members   map[gen.Atom]*member
	departed  map[gen.Atom]departedMember // last process of nodes that left the view
	seats     map[gen.Atom]time.Time      // members that stopped gracefully, kept for the floor until then (seats.go)
	gone      map[gen.Atom]*member        // nodes of members that left the view, watched for GhostTTL (gone.go)
	withdrawn map[gen.Atom]time.Time
	dead      map[gen.PID]time.Time // processes reported terminated, and when
	// the incarnations of the dead processes, where known (reincarnated)
	deadIncarnations map[gen.PID]uint64

	farTerms             map[gen.Atom]farTerm // terms beyond the bound, per member (corroborated)
	farTermsBelieved     uint64               // far terms adopted because a quorum sent them
	dropped              map[string]uint64
	warned               map[string]time.Time   // rate limit of repeated warnings (log.go)
	otherClusterAnswered map[gen.Atom]time.Time // rate limit of answers to another ClusterID (silence.go)
	connectionsKept      uint64                 // silent members whose connection carried, for Inspect (silence.go)
	longestStep          time.Duration          // measured by the actor: its worst stall
	timerWakeups         uint64                 // timers that went off (parking.go keeps idle elections from them)
	preVoteRounds        uint64
	fastRounds           uint64
	reclaims             uint64 // pre-votes asked at once after this node's lease ran out (reclaim)
	deferredFailovers    uint64 // fast failovers given up for a survivor ranked earlier
	waveDelayed          uint64 // fast failovers that waited longer, in a wave of them (pacing.go)
	// the leader whose down the framework owes this follower, and since
	// when (owed downs, pacing.go)
	owedDownFrom  gen.PID
	owedDownSince time.Time
	owedDownWaits uint64 // election timeouts that waited for an owed down
	stallGraces   uint64 // election timeouts that came too late to trust (stalledPastDeadline)
	// the leader's lastHeard when the last stall grace was given: one
	// grace per silence
	graceHeard   time.Time
	handovers    uint64
	lastHandover string

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
		departed:  make(map[gen.Atom]departedMember),
		withdrawn: make(map[gen.Atom]time.Time),
		dead:      make(map[gen.PID]time.Time),
		dropped:   make(map[string]uint64),
	}
}

// start declares the bootstrap peers and arms the first election timer.
func (e *election) start(now time.Time) {
	e.now = now
	e.startedAt = now
	for e.incarnation == 0 {
		e.incarnation = e.rng.Uint64()
	}
	e.stats.leaderlessSince = now
	e.role = roleUnclustered
	for _, peer := range e.cfg.bootstrap {
		e.join(peer)
	}
	e.viewChanged()
	e.armHealthCheck()
	e.armGhostTimer() // the term floor is settled when the quiet period ends
}

// viewGrew handles a member added to the view. Acknowledgements gathered
// before it came from a quorum of the smaller view; when two views merge,
// the leaders of both (two clusters until now, as the spec allows) each
// hold such acks, and a member of both may already have moved on to the
// other's term. So only rounds sent from now on count toward the lease
// (lease.go), and a leader sends one at once to win it back within a round
// trip; until then it keeps its role but IsLeader is false.
func (e *election) viewGrew() {
	e.grewAt = e.now
	e.viewChanged()
	if e.role == roleLeader && e.unpublished == false {
		e.sendHeartbeats()
	}
}

// viewChanged re-applies the floor after the view grew or shrank: below
// MinClusterSize there is no leader and no campaign, including for a leader
// whose view just shrank.
func (e *election) viewChanged() {
	e.recheckFloor()
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
	// A grown view needs a larger quorum: the lease must be recomputed at
	// once, or a leader that was one over a part of the view would go on
	// acting over the whole of it next to the whole's own leader.
	e.renewLease()
	e.checkLease(e.now)
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
		e.warnEvery("cluster_mismatch "+string(from.Node), mismatchWarnEvery,
			"dropped a protocol message from node %s (%s) for ClusterID %q; this actor's ClusterID is %q. If that node is meant to take part in this election, one of the two ClusterIDs is misspelt. Until they match its messages are dropped here (ergo:dropped_by_reason cluster_mismatch) and nothing else changes: if it was Joined or bootstrapped it still counts toward the view, and so toward the quorum, without ever voting; fix the ClusterID, or Leave it (warned once per peer)",
			from.Node, from, h.cluster, e.cfg.clusterID)
		if m, ok := e.members[from.Node]; ok {
			// alive and reachable: it merely ignores this election, which
			// is no reason to reset the connection (silence.go)
			m.otherCluster, m.awaitingSince = true, time.Time{}
		}
		e.answerOtherCluster(from, message)
		return true
	case from.Node == e.self.Node:
		// The view is keyed by node; a second actor of the same cluster on
		// this node would be counted as this node.
		e.drop("same_node")
		return true
	case e.termTooFar(h.term) && e.corroborated(from, h.term) == false:
		e.drop("absurd_term")
		return true
	case e.isWithdrawn(from.Node):
		e.drop("withdrawn")
		return true
	case e.isDead(from) && e.reincarnated(from, message) == false:
		e.drop("dead_sender")
		return true
	}
	if tn, ok := message.(msgTimeoutNow); ok && tn.Term != e.term {
		// only this node's leader of this term can hand over: a TimeoutNow
		// of another term is stale or forged, and must not move the term
		e.drop("unexpected_timeout_now")
		return true
	}
	if hb, ok := message.(msgHeartbeat); ok && hb.Leader != from {
		// malformed: a leader only ever speaks for itself
		e.drop("leader_mismatch")
		return true
	}

	if e.staleIncarnation(from) {
		e.drop("stale_incarnation")
		return true
	}

	watched := e.members[from.Node] != nil && e.members[from.Node].pid == from
	m := e.heard(from, nameOf(message))
	// a greeting first: whether this is a restart decides how many
	// members' terms settle the floor that the term below feeds
	switch msg := message.(type) {
	case msgHello:
		e.greetedBy(m, from, watched, msg.Incarnation, msg.Knew != 0 && msg.Knew != e.incarnation)
	case msgHelloReply:
		e.greetedBy(m, from, watched, msg.Incarnation, msg.Restarted)
	}
	e.toldViewSize(m.node, viewSizeOf(message))
	if _, request := message.(msgVote); request && h.term > 0 {
		// a candidate's term is the one it asks for, not one it held
		e.learnFloor(m.node, h.term-1)
	} else {
		e.learnFloor(m.node, h.term)
	}
	if h.term > e.term {
		if e.refusesHigherTerm(from, message) {
			return true
		}
		e.adoptTerm(h.term)
	}
	switch msg := message.(type) {
	case msgHello:
		e.reply(m, msgHelloReply{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, Restarted: m.predecessor, ViewSize: e.viewSize(), Incarnation: e.incarnation})
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
				e.acknowledged(m, msg.Round)
			}
		}
	case msgTimeoutNow:
		e.handleTimeoutNow(m, msg)
	}
	return true
}

// refusesHigherTerm drops a pre-vote or vote request of a higher term that
// this node may not grant because it still supports a leader: adopting the
// term would depose that leader for a candidate that cannot win anyway
// (the leader's lease rests on this refusal; see lease.go).
func (e *election) refusesHigherTerm(from gen.PID, message any) bool {
	handover := false
	switch msg := message.(type) {
	case msgVote:
		handover = msg.Handover
	case msgPreVote:
	default:
		return false
	}
	why, supported := e.grantRefusal(handover, from)
	if why == "" || why == "quiet_period" || why == "outgoing" {
		// a fresh node adopts the term, and so does an outgoing leader
		// (the new term tells it that its successor campaigns); they only
		// may not grant
		return false
	}
	e.drop(why)
	// answered, at this node's term (which the requester ignores as stale),
	// so that the requester sees a live connection (silence.go)
	m := e.members[from.Node]
	if _, vote := message.(msgVote); vote {
		e.reply(m, msgVoteReply{ClusterID: e.cfg.clusterID, Term: e.term})
	} else {
		e.reply(m, msgPreVoteReply{ClusterID: e.cfg.clusterID, Term: e.term, Leader: supported})
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

// viewSizeOf is the view size a message tells, 0 for none.
func viewSizeOf(message any) int {
	switch m := message.(type) {
	case msgHello:
		return m.ViewSize
	case msgHelloReply:
		return m.ViewSize
	case msgPreVote:
		return m.ViewSize
	case msgVote:
		return m.ViewSize
	}
	return 0
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
	e.pledgedVote(term)
	e.votes, e.voteReplies = nil, 0
	e.preVoting, e.confirming = false, false
	e.pledges, e.pledgedElection = nil, false
	e.leader = gen.PID{}
	e.newTermRounds()
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
	e.leaseUntil = time.Time{}
	e.cancelTimer(timerHeartbeat)
	e.cancelTimer(timerLease)
	e.resetElectionDeadline()
}

// newTermRounds forgets the heartbeat rounds and acknowledgements of the
// previous term: they are no evidence for this one.
func (e *election) newTermRounds() {
	e.round, e.roundSent, e.leaseUntil, e.holdUntil = 0, nil, time.Time{}, time.Time{}
	for _, m := range e.members {
		m.ackRound, m.pongSent = 0, time.Time{}
	}
}

// granted counts the grants in set that come from this node or from a
// current member: a grant from a node that left the view since it voted
// belongs to a view that no longer exists, and counting it against the
// smaller view's quorum could elect a second leader of the term.
func (e *election) granted(set map[gen.Atom]bool) int {
	n := 0
	for node := range set {
		if _, member := e.members[node]; member || node == e.self.Node {
			n++
		}
	}
	return n
}

func (e *election) handlePreVote(m *member, req msgPreVote) {
	reply := msgPreVoteReply{ClusterID: e.cfg.clusterID, Term: e.term}
	why, supported := e.grantRefusal(false, m.pid)
	if why == "" && e.termBelowFloor(req.Term+1) {
		why = "term_floor"
	}
	switch {
	case req.Term < e.term:
		e.drop("stale_term")
	case why != "":
		// a live leader never agrees that someone else could win, a node
		// that promised its support keeps the promise, and a fresh node
		// may have promised in its previous life (lease.go)
		e.drop(why)
		reply.Leader = supported
	case req.ViewSize+req.Seats < e.cfg.minClusterSize:
		// the candidate could not be eligible under the floor
	case e.hearsLeader() && m.pid != e.leader:
		// leader stickiness: no help from a follower that still hears
		// its leader (hearsLeader), for anyone but that leader, whose
		// lease ran out and who asks to lead the next term (reclaim)
		e.drop("leader_heard")
		reply.Leader = e.leader
	case e.failingOverFast() && e.rankedBefore(e.self.Node, m.node):
		// both lost the leader; the requester is ranked after this node
		// and defers to it (fastFailoverDelay, deferToRanked)
		e.drop("fast_failover_rank")
	default:
		reply.Granted = true
		if e.failingOverFast() && e.rankedBefore(m.node, e.self.Node) {
			e.deferToRanked(m)
		}
		reply.Pledged = e.offerPledge(m, req)
	}
	e.reply(m, reply)
}

// hearsLeader reports whether this node follows a leader it heard within
// ElectionTimeoutMin: a heartbeat, a round the hubs carried, or a ping of
// the leader's hub vouching for it (vouch.go). Its promise may have ended
// sooner: with nothing new to acknowledge, an idle follower's promise is
// the pings its node answered, F long (pings.go), and a ping or two late
// under load ends it while the leader leads on. A node cut off for a while
// and back (the rejoin pre-vote exists for) then found such a follower
// ready to grant, won a term and unseated a leader nobody had lost. This
// refuses more and grants nothing, so it costs no safety; a leader really
// gone is no longer heard ElectionTimeoutMin later, no later than the
// followers' own election timeouts. It holds for fast failovers too: a
// follower whose link to the leader flaps sees the leader's down and asks
// pledged pre-votes, which followers whose promises ran out the same way
// granted. A crash costs a fast failover nothing: a follower that saw the
// leader's down no longer follows it (leaderLost), and the candidate asks
// again every failoverStep one that has not seen it yet
// (fastPreVoteRefused).
func (e *election) hearsLeader() bool {
	if e.role != roleFollower || e.leader == (gen.PID{}) {
		return false
	}
	m, ok := e.members[e.leader.Node]
	return ok && m.pid == e.leader && e.now.Sub(m.lastHeard) < leaderHeardWithin(e.cfg)
}

func (e *election) handlePreVoteReply(m *member, reply msgPreVoteReply) {
	if reply.Pledged != 0 && e.takePledge(m, reply) {
		return
	}
	if e.staleReply(header{term: reply.Term}) {
		return
	}
	if e.preVoting == false || e.role == roleLeader {
		e.drop("unexpected_reply")
		return
	}
	if reply.Granted == false {
		e.introduceTo(reply.Leader)
		e.fastPreVoteRefused(m, reply)
		return
	}
	e.preVotes[m.node] = true
	if e.granted(e.preVotes) >= e.quorum() {
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
	e.out.sends = append(e.out.sends, outbound{node: leader.Node, to: leader, message: e.helloTo(leader.Node)})
}

func (e *election) handleVote(m *member, req msgVote) {
	if req.Term < e.term {
		e.drop("stale_term")
		e.reply(m, msgVoteReply{ClusterID: e.cfg.clusterID, Term: e.term})
		return
	}
	why, _ := e.grantRefusal(req.Handover, m.pid)
	if why == "" && e.termBelowFloor(req.Term) {
		why = "term_floor"
	}
	free := e.votedFor == (gen.PID{}) || e.votedFor == m.pid
	granted := why == "" && free && e.role != roleLeader && req.ViewSize+req.Seats >= e.cfg.minClusterSize
	if why != "" {
		e.drop(why)
	}
	if granted {
		e.votedFor = m.pid
		e.promise(m.pid, false)
		if req.Handover {
			// exempt from the promise to the leader that handed over, the
			// pings' part included: it stood down before it asked, and
			// the new leader's rounds must count at once
			e.pongPromise, e.pongPromiseTo = time.Time{}, gen.PID{}
		}
		e.resetElectionDeadline()
	}
	e.reply(m, msgVoteReply{ClusterID: e.cfg.clusterID, Term: e.term, Granted: granted})
}

func (e *election) handleVoteReply(m *member, reply msgVoteReply) {
	if e.staleReply(header{term: reply.Term}) {
		return
	}
	if e.role == roleLeader && reply.Term == e.term && reply.Granted && e.now.Before(e.roundCloses) {
		// A grant that came after the win is as good an acknowledgement
		// of round 1 as those that made it. Counted, it keeps a voter that
		// leaves the view right after the election (its process stops) from
		// taking the lease's quorum along and unseating the new leader.
		m.lastAck = e.now
		m.ackTerm = e.term
		e.acknowledged(m, 1)
		return
	}
	if e.role != roleCandidate || e.confirming || reply.Term != e.term || e.votes == nil {
		e.drop("unexpected_reply")
		return
	}
	if e.now.Before(e.roundCloses) == false {
		// The round is over: a grant counted now could be one a restarted
		// voter gave a second time (quietPeriod bounds rounds by this).
		e.drop("late_grant")
		return
	}
	e.voteReplies++
	if reply.Granted == false {
		return
	}
	e.votes[m.node] = true
	m.lastAck = e.now
	m.ackTerm = e.term
	e.acknowledged(m, 1)
	if e.granted(e.votes) >= e.quorum() {
		e.win()
	}
}

func (e *election) handleHeartbeat(m *member, hb msgHeartbeat) {
	ack := msgHeartbeatAck{ClusterID: e.cfg.clusterID, Term: e.term, Round: hb.Round}
	if hb.Term < e.term {
		// answered, so that the stale leader learns the real term and
		// stands down; round 0, because rounds are numbered per term and
		// this one was of an older term than the ack says
		e.drop("stale_term")
		ack.Round = 0
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
		// Below the floor this node may not have a leader, but it is
		// reachable; the ack counts toward the leader's lease, so it comes
		// with the same promise as a follower's.
		ack = e.acknowledge(m.pid, ack)
		e.freshAck(m.pid, ack, hb)
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
	if e.now.Sub(e.lastHeartbeatIn) >= e.cfg.heartbeatInterval {
		// a follower with a live leader has no timer of its own: its
		// connections to other followers are checked here (silence.go)
		e.findSilentConnections()
	}
	e.lastHeartbeatIn = e.now
	ack = e.acknowledge(m.pid, ack)
	e.freshAck(m.pid, ack, hb)
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
	e.releasePromise(m.pid)
	e.startElection("handover")
}

// campaign starts a pre-vote (or, with pre-vote off, an election). A
// pre-vote changes no term, so a node that cannot win, such as one on the
// minority side of a partition, never inflates the term and never deposes a
// healthy leader when the partition heals.
func (e *election) campaign() { e.campaignWith(false) }

// campaigning reports whether a pre-vote or vote round of this node's is
// open: a failover still under way.
func (e *election) campaigning() bool { return e.preVoting || e.role == roleCandidate }

// campaignWith is campaign; fast marks the pre-vote of a fast failover,
// which asks the voters for their votes with their grants (pledge.go).
func (e *election) campaignWith(fast bool) {
	if e.role == roleLeader || e.role == roleUnclustered || e.waitQuietPeriod() {
		return
	}
	e.preVoting, e.preVoteFast = true, fast
	e.signLost = gen.PID{} // looking for another leader: the callbacks say so
	e.preVotes = map[gen.Atom]bool{e.self.Node: true}
	e.pledges = nil
	if fast {
		e.askPledges()
	}
	e.preVoteRounds++
	e.resetElectionDeadline()
	if e.granted(e.preVotes) >= e.quorum() {
		e.startElection("pre-vote won")
		return
	}
	e.fastAskedAt, e.fastReask = time.Time{}, nil
	if fast {
		e.fastAskedAt = e.now
	}
	req := e.preVoteRequest()
	for _, m := range e.sortedMembers() {
		e.send(m, req)
	}
}

// preVoteRequest is the request of the pre-vote in progress.
func (e *election) preVoteRequest() msgPreVote {
	return msgPreVote{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, ViewSize: e.viewSize(), Seats: e.keptSeats(), Pledge: e.pledges != nil}
}

// startElection increments the term, votes for itself and asks everyone
// declared for a vote.
func (e *election) startElection(why string) {
	if e.role == roleLeader || e.role == roleUnclustered || e.waitQuietPeriod() {
		return
	}
	next, ok := e.nextTerm()
	if ok == false {
		e.logf(levelError, "cannot campaign: the term counter is at its end (%d)", e.term)
		return
	}
	// votes pledged with this pre-vote's grants are votes of the next term
	pledged := e.preVoting && e.pledges != nil && next == e.term+1 && e.pledgeOpen()
	asked, pledges := e.pledgeAskedAt, e.pledges
	e.preVoting, e.pledges, e.pledgedElection = false, nil, false
	e.term = next
	e.stats.electionsStarted++
	e.termChangedAt = e.now
	e.votedFor = e.self
	e.votes = map[gen.Atom]bool{e.self.Node: true}
	e.voteReplies = 0
	e.roundCloses = e.now.Add(voteRound(e.cfg)) // a bound on every round makes quietPeriod enough
	e.role = roleCandidate
	e.leader = gen.PID{}
	e.newTermRounds()
	e.openRound(1) // the vote requests: grants start the lease (lease.go)
	if pledged {
		e.countPledges(asked, pledges)
	}
	e.cancelTimer(timerFast)
	e.logf(levelDebug, "campaigning for term %d (%s); view %d, quorum %d", e.term, why, e.viewSize(), e.quorum())
	e.resetElectionDeadline()
	if e.granted(e.votes) >= e.quorum() {
		e.renewLease()
		e.win()
		return
	}
	req := msgVote{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, ViewSize: e.viewSize(), Seats: e.keptSeats(), Handover: why == "handover"}
	for _, m := range e.sortedMembers() {
		if e.votes[m.node] == false { // a pledge is this term's vote already
			e.send(m, req)
		}
	}
}

// waitQuietPeriod postpones a campaign of a freshly started actor to the
// end of its quiet period: its own vote is a grant like any other, and its
// previous incarnation may have given it to someone else in that term.
func (e *election) waitQuietPeriod() bool {
	if e.now.Before(e.promisedUntil) && e.promisedTo != e.self {
		// its own vote is a grant too: it keeps its promise to the leader
		// it acknowledged or the candidate it voted for (lease.go)
		e.electionDeadline = e.promisedUntil.Add(time.Duration(e.rng.Int64N(int64(timeoutSpread(e.cfg)) + 1)))
		e.armElectionTimer(e.electionDeadline)
		return true
	}
	if e.pongPromised(e.self) {
		// the pings answered while it followed its leader through the hub
		// bind its own vote as well (pings.go)
		e.electionDeadline = e.pongPromise
		e.armElectionTimer(e.electionDeadline)
		return true
	}
	if e.inQuietPeriod() == false {
		return false
	}
	// jittered like any election timeout, so that nodes started together
	// do not all campaign the instant their quiet periods end, and later by
	// a whole spread for each member ranked before this node in the
	// failover order (startRank): at a cold start the member ranked first
	// campaigns first, even when its node started a little after the
	// others, so the nodes of many elections started together each lead
	// about an equal share of them, not the node that happened to start
	// first (a node crash then re-elects a third of them, not half)
	spread := timeoutSpread(e.cfg)
	from := e.startedAt.Add(e.quietPeriod() + time.Duration(e.startRank())*spread)
	if e.now.Before(from) == false {
		// the time is up but the term floor is unknown: ask the members
		// not heard from yet, and look again after an election timeout
		from = e.now.Add(floorAskEvery(e.cfg))
		for _, m := range e.sortedMembers() {
			if _, heard := e.floorTerms[m.node]; heard == false && e.now.Before(m.nextProbe) == false {
				e.probe(m)
			}
		}
	}
	e.electionDeadline = from.Add(time.Duration(e.rng.Int64N(int64(spread) + 1)))
	e.armElectionTimer(e.electionDeadline)
	return true
}

// win records a won election. Leadership is not published until the actor
// has consulted HandleConfirmLeader and reported back with confirmResult.
func (e *election) win() {
	e.confirming = true
}

// send addresses a member by PID, or by name when its PID is unknown. The
// actor only sends by name over an existing connection; otherwise its
// dialer connects first (dialer.go). After a failed attempt the member is
// not addressed by name again for one maximum election timeout, then two:
// a gone member is not dialed on every round, and a healed one is reached
// again within a couple of election timeouts.
func (e *election) send(m *member, message any) {
	to := m.address(e.selfName)
	_, byName := to.(gen.ProcessID)
	if byName && e.now.Before(m.nameBackoffUntil) {
		return
	}
	e.out.sends = append(e.out.sends, outbound{node: m.node, to: to, message: message})
	e.awaitAnswer(m)
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
