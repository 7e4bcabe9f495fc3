package leader

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
)

// Coalesced liveness: the election side.
//
// Many elections often share the same few nodes (one election per shard,
// tenant or queue). Their heartbeats and acknowledgements, one message per
// follower per interval each, would cost in proportion to the number of
// elections. Instead, every node runs one liveness hub (hub.go) that carries
// the heartbeat rounds of all the elections it hosts to each other node in
// one message per interval, and brings the acknowledgements back the same
// way. Votes, pre-votes, handovers and membership stay per election: they
// are rare, and they are where the election's decisions are made.
//
// What the hub may do for an actor is granted by the actor and held in the
// actor's slot, a small table the two share (they are goroutines of one OS
// process, hence the mutex):
//
//   - A follower grants "acknowledge the rounds of leader L at term T for
//     me" exactly when its own rules would acknowledge them with a round
//     that counts toward L's lease (follower of L at T, no pre-vote of its
//     own, no promise to another leader). The hub then answers L's rounds
//     on its behalf and notes when it did.
//   - A leader grants "open heartbeat rounds of term T for me, to these
//     followers". The hub opens one round per interval for it, notes each
//     round's send time, and records the acknowledgements that come back.
//
// The election never holds the slot: the actor takes every permission back
// at the start of each step it runs, under the slot's lock, and hands the
// election what the hub recorded as an input (Actor.hubView, settleShared):
// an acknowledgement the hub sent for it becomes the same promise as one it
// sent itself (lease.go), dated when the hub sent it; the rounds the hub
// opened and the acks they got feed the lease as the actor's own do. Only
// at the end of the step does it grant again what its state then allows:
// shareState returns the grant, and the actor installs it
// (Actor.shareWithHub). So the hub never speaks for an actor that is deciding
// something, and every decision sees everything the hub did for it: the
// lease argument holds unchanged, with the hub's sends counted as the
// actor's. A follower whose leader is alive is not woken by its leader's
// rounds, and not even by its own election timer, which it parks with the
// hub (parking.go); nor is a leader woken for the lease checks the hub's
// rounds keep passing.
//
// When there is no hub (it failed, or coalescing is disabled), or the other
// node has none, the actor sends and answers per election, as it would
// alone.

// slot is what one actor and its node's hub share.
//
// The fields the hub reads for every round it receives (the lock, follow,
// followTerm, beatAt) come first, next to each other: with a thousand
// elections on a node, each of those visits is a cache miss per line.
type slot struct {
	mu sync.Mutex

	// granted by the actor (shareState), withdrawn by settleShared
	follow     gen.PID // acknowledge this leader's rounds for the actor; zero: do not; its node name interned (atoms.go)
	followTerm uint64
	beatAt     time.Time // recorded by the hub: when it last acknowledged follow's round for the actor
	freshEnd   time.Time // recorded by the hub: the latest end of an acknowledged round's F

	// written once at join
	cluster     string
	actor       gen.PID
	interval    time.Duration // the actor's liveness interval (timing.go)
	stepGrace   time.Duration // the actor's leaderStepGrace (timing.go)
	peerSilence time.Duration // the actor's hubPeerSilence (timing.go)
	beatEvery   time.Duration // the actor's HeartbeatInterval (pings.go)
	// everyBeat: a record every beatEvery, vouched for or not. With
	// AssumeSymmetricConnectionLoss the lease counts acknowledged rounds
	// only, no pings (vouch.go)
	everyBeat bool
	freshCap  time.Duration // the longest F a ping may ask of the actor (timing.go, maxFresh)
	board     *pingBoard    // the node's ping board (pings.go)
	losses    *lossBoard    // the actor's loss board (watcher.go), for owed downs (pacing.go)
	key       uint64        // the hub's number for it (routes.go); only the hub reads and writes it

	lead     bool // granted by the actor: open rounds for the actor
	leadTerm uint64
	fresh    time.Duration // granted by the actor: the F of the rounds the hub opens (election.roundFresh)
	// leading is lead as the actor last shared it, which the start of a
	// step does not withdraw; inStep is true from the start of a step to
	// its end. Together they tell the hub that a leader is only busy
	// (hub_tick.go, openRounds), not gone.
	leading, inStep bool
	// mayLead is leading, readable without mu: the hub passes a slot
	// whose last step ended without the lead by without taking its lock
	// when an answer names it (hub.resendNamed)
	mayLead   atomic.Bool
	stepSeen  time.Time            // when the hub first found the actor in its current step
	followers map[gen.Atom]gen.PID // where the rounds go: the members whose process is known
	round     uint64               // the newest round number of leadTerm, the actor's or the hub's

	// recorded by the hub, read by the actor
	rounds []roundStamp // rounds of leadTerm the hub opened
	// links are the hub's record of each of followers, in node order: the
	// acks, whether the rounds reach it. A slice, not maps by node name: the
	// hub visits every leader's links at every tick and every ack, and a
	// map keyed by a node name hashes that name at every visit.
	links []followerLink
	// bumped by the hub when an ack or a carried mark changes, so that the
	// actor copies them only then
	acksVersion, carriedVersion uint64

	// the hub's own record of the rounds it opened (rounds is the actor's
	// copy, taken at every step), for the leases of parked timers
	stamps []roundStamp
	// timers the actor parked with the hub (parking.go), by parkKinds
	parked [len(parkKinds)]parkedTimer
	// the follow permission as the actor last granted it, and the node of
	// its leader while a step withdrew it (pings.go: unbound)
	boundTo     gen.PID
	boundTerm   uint64
	unboundFrom gen.Atom
	unboundKey  stepKey // how the answers given during the step name it (pings.go)
	// the key the leader's hub gave the record the hub last acknowledged
	// for the actor, and the leader and term it was for: the election's
	// name in that hub's answers while it is in a step
	followKey       stepKey
	followKeyLeader gen.PID
	followKeyTerm   uint64
	// needBeat asks the hub for a record of this leader's round at its
	// next tick: a new term, a new follower, a new hub, the first round
	// after leading began (vouch.go), or a follower named as having left
	// (hub.resendNamed, when it last did: namedResend)
	needBeat    bool
	namedResend time.Time
	// vouched: the hub sent a record of this leader's term vouchedTerm
	// and vouches for it in its pings until it raises its lead epoch
	// (vouch.go); only the hub writes them
	vouched     bool
	vouchedTerm uint64
	// pingsUntil, when set, is when the hub stopped vouching for this
	// leader: pings sent after it do not count for its leases (pongOf)
	pingsUntil time.Time
	// fullTicks: the hub looks at this leader at every full tick (its
	// record goes at each: hub.reach)
	fullTicks bool
	// the newest record of a leader that reached this follower (vouch.go)
	anchor anchor
	// pongs is the buffer settle reports the answered pings that count
	// for this leader in (pings.go)
	pongs []linkPong

	// the node's failover wave (pacing.go), set by the hub when it adds
	// the slot
	wave *failoverWave

	// quietUntil (Unix nanoseconds of the hub's clock; 0: visit) lets the
	// hub's tick pass a slot by without taking its lock: a follower whose
	// parked timers are not due before then (hub.tick). The hub sets it
	// after a visit that found nothing to do; the actor clears it whenever
	// it shares or parks anything new (share, park: visitSoon, which tells
	// the hub's wheel, quietwheel.go), since only that can
	// bring a due time earlier: what the hub records itself (beats) only
	// moves them later. It points into a block of cells the hub keeps in
	// the order of its slots (hub.quietCell, hub.orderQuiet), so that a
	// tick reads the quiet followers' times from adjacent memory instead
	// of visiting each slot; until the hub adds the slot it is nil (the
	// hub's first tick after the add visits it). The pointer changes
	// under mu.
	quietUntil *quietCell
}

// quietCell is a slot's quiet time, in a block of adjacent cells the hub
// keeps in the order of its slots, with what a follower's parked election
// timer waits on until the hub's next visit of it (waits: its leader's
// pings, vouchedDue), or a leader's lease timer (leads: its followers'
// answers to this hub's pings, leaseDue). The hub's goroutine alone reads
// and writes waits and leads, at its visits and ticks; they are read only
// while until is not 0, and everything that could change what the timers
// wait on sets until to 0 (the actor's share, park and step; a new anchor;
// a follower named again), so a stale one is never read.
type quietCell struct {
	until atomic.Int64
	waits vouchedDue
	leads *leaseDue // a leader's, likewise (passLeader)
	// the hub's wheel (quietwheel.go), which a cleared quiet time must
	// reach, and the slot the cell is for; set before the slot gets it
	wheel *quietWheel
	slot  *slot
	gone  bool   // the slot left the hub; the hub's goroutine
	read  uint64 // the wheel's last read that returned it; likewise
	// the ping waiters' list the follower is on, and its entry there
	// (pingwaiters.go); likewise
	waiting *pingWaiters
	waitSeq uint64
}

// visitSoon has the hub visit the slot at its next tick; s.mu is held.
// Only the first clearing since the hub's last visit tells the wheel:
// until that visit the cell is on its way there already.
func (s *slot) visitSoon() {
	cell := s.quietUntil
	if cell != nil && cell.until.Swap(0) != 0 && cell.wheel != nil {
		cell.wheel.wake(cell)
	}
}

// followerLink is the hub's record of one follower node of a leader.
type followerLink struct {
	node     gen.Atom
	pid      gen.PID
	ack      uint64    // newest round of leadTerm it acknowledged through the hubs; 0: none
	ackAt    time.Time // when that ack came
	ackSent  time.Time // when the hub sent round ack (zero: no longer among the stamps)
	carried  bool      // its node's hub gets the rounds
	decided  bool      // carried was decided at a round
	unserved time.Time // when its node's hub last said no actor there joined it for this election
	namedBy  gen.PID   // the hub of its node that showed it knows this slot's key (routes.go)
	// the epoch and index of the answer that carried its newest ack: later
	// answers with the same epoch count as its acks (pings.go)
	epoch, mark uint64
	epochSet    bool
}

// linkPong is an answered ping that counts for a leader as the ack of the
// follower pid on node: sent then, with F fresh (pings.go).
type linkPong struct {
	node  gen.Atom
	pid   gen.PID
	sent  time.Time
	fresh time.Duration
}

// link returns the link to node, nil if node is not a follower; s.mu is
// held.
func (s *slot) link(node gen.Atom) *followerLink {
	for i := range s.links {
		if s.links[i].node == node {
			return &s.links[i]
		}
	}
	return nil
}

// relink makes the links follow the followers the actor granted, keeping
// what the hub recorded of a node whose process is the same; s.mu is held.
// A follower's acks count only for the process that gave them: a node's
// new process starts with none.
func (s *slot) relink() {
	same := len(s.links) == len(s.followers)
	for i := 0; same && i < len(s.links); i++ {
		same = s.followers[s.links[i].node] == s.links[i].pid
	}
	if same {
		return
	}
	old := s.links
	s.links = make([]followerLink, 0, len(s.followers))
	for node, pid := range s.followers {
		l := followerLink{node: intern(node), pid: internPID(pid)}
		for _, o := range old {
			if o.node == node && o.pid == pid {
				l = o
			}
		}
		s.links = append(s.links, l)
	}
	slices.SortFunc(s.links, func(a, b followerLink) int { return strings.Compare(string(a.node), string(b.node)) })
	s.acksVersion++
	s.carriedVersion++
	s.needBeat = true
}

// sharedView is what the election state reads from its slot at the start
// of a step.
type sharedView struct {
	beatAt   time.Time
	freshEnd time.Time
	pongEnd  time.Time  // the end of the pings answered until the step withdrew the follow permission (pings.go)
	pongs    []linkPong // answered pings that count as followers' acks (valid until the next settle)
	// the latest moment the hub of the followed leader vouched for it
	// (vouch.go): liveness only, never a promise
	vouchedAt time.Time
	rounds    []roundStamp
	acks      map[gen.Atom]uint64 // nil when unchanged
	ackAt     map[gen.Atom]time.Time
	carried   map[gen.Atom]bool // nil when unchanged

	acksVersion, carriedVersion uint64
}

// settle withdraws every permission and returns what the hub recorded,
// handing its new rounds over to the election. The maps are
// copied only when the hub changed them since the versions the caller has
// (most steps of most actors change nothing).
func (s *slot) settle(acksSeen, carriedSeen uint64) sharedView {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pongEnd time.Time
	if s.follow != (gen.PID{}) && s.board != nil && s.unboundFrom == "" {
		s.unboundFrom, s.unboundKey = s.follow.Node, stepKey{}
		if s.followKeyLeader == s.follow && s.followKeyTerm == s.followTerm {
			s.unboundKey = s.followKey
		}
		pongEnd = s.board.unbind(s.unboundFrom, s.unboundKey)
	}
	vouched := s.vouchedAt() // before the follow permission goes
	if s.leading {
		s.visitSoon() // the hub's next tick looks at a leader in a step (vouch.go)
	}
	s.follow, s.followTerm = gen.PID{}, 0
	s.lead, s.inStep = false, true
	for i := range s.parked {
		s.parked[i].active = false
	}
	s.pongs = s.answeredPings(s.pongs[:0])
	v := s.view(acksSeen, carriedSeen, s.rounds, s.pongs)
	v.pongEnd, v.vouchedAt = pongEnd, vouched
	s.rounds = nil
	return v
}

// peek returns what the hub recorded for a leader's lease without changing
// anything: IsLeader asks it between steps. The rounds and answered pings
// are copies (the hub reuses its own lists).
func (s *slot) peek(acksSeen uint64) sharedView {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.view(acksSeen, s.carriedVersion, slices.Clone(s.rounds), s.answeredPings(nil))
}

// view is what the hub recorded, with rounds and pongs as given; s.mu is
// held.
func (s *slot) view(acksSeen, carriedSeen uint64, rounds []roundStamp, pongs []linkPong) sharedView {
	v := sharedView{beatAt: s.beatAt, freshEnd: s.freshEnd, rounds: rounds, pongs: pongs, acksVersion: s.acksVersion, carriedVersion: s.carriedVersion}
	if s.acksVersion != acksSeen {
		v.acks = make(map[gen.Atom]uint64, len(s.links))
		v.ackAt = make(map[gen.Atom]time.Time, len(s.links))
		for _, l := range s.links {
			if l.ack > 0 {
				v.acks[l.node], v.ackAt[l.node] = l.ack, l.ackAt
			}
		}
	}
	if s.carriedVersion != carriedSeen {
		v.carried = make(map[gen.Atom]bool, len(s.links))
		for _, l := range s.links {
			if l.decided {
				v.carried[l.node] = l.carried
			}
		}
	}
	return v
}

// answeredPings appends to list the answered pings that count as the
// followers' acks of this leader's term (pings.go): the newest answer from
// a follower's node, when it came no earlier than the answer that carried
// the follower's newest ack and with the same epoch. s.mu is held.
func (s *slot) answeredPings(list []linkPong) []linkPong {
	if s.board == nil || s.leadTerm == 0 {
		return list
	}
	for i := range s.links {
		l := &s.links[i]
		if p, ok := s.pongOf(l); ok {
			list = append(list, linkPong{node: l.node, pid: l.pid, sent: p.sent, fresh: p.fresh})
		}
	}
	return list
}

// pongOf returns the newest answer from l's node that counts as l's ack
// of this leader's term: it came no earlier than the answer that carried
// l's newest ack, with the same epoch (pings.go), though answers of newer
// epochs may have come since, and it does not name this leader (its
// follower there was in a step). s.mu is held.
func (s *slot) pongOf(l *followerLink) (pongSeen, bool) {
	if s.board == nil || s.leadTerm == 0 || l.epochSet == false || l.ack == 0 {
		return pongSeen{}, false
	}
	p, ok := s.board.answerOf(l.node, l.epoch, s.key)
	// A ping vouches for every leader of its hub at once; one the hub
	// stopped vouching for (it hung in a step, or stood down) is not
	// supported by the pings sent after that, or a leader stuck in a long
	// callback would hold its role through it while its followers wait
	// for their timers (vouch.go).
	if ok == false || p.index < l.mark || (s.pingsUntil.IsZero() == false && p.sent.After(s.pingsUntil)) {
		return pongSeen{}, false
	}
	return p, true
}

// grant is what an actor allows its hub until its next step.
type grant struct {
	follow     gen.PID
	followTerm uint64
	lead       bool
	leadTerm   uint64
	fresh      time.Duration
	followers  map[gen.Atom]gen.PID
	round      uint64
}

// share installs the actor's grant.
func (s *slot) share(g grant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	follow := internPID(g.follow)
	if follow != s.follow {
		s.freshEnd = time.Time{}
	}
	if s.unboundFrom != "" {
		// the end of a step that withdrew a follow permission: the answers
		// to pings count for it again only if it granted the same one
		same := follow == s.boundTo && g.followTerm == s.boundTerm && follow != (gen.PID{})
		s.board.rebind(s.unboundFrom, s.unboundKey, s.actor.ID, same == false)
		s.unboundFrom, s.unboundKey = "", stepKey{}
	}
	s.follow, s.followTerm = follow, g.followTerm
	s.boundTo, s.boundTerm = follow, g.followTerm
	s.fresh = g.fresh
	newTerm := g.leadTerm != s.leadTerm
	if newTerm {
		// a new term: rounds and acks of the old one mean nothing now
		s.rounds, s.stamps = nil, nil
		for i := range s.links {
			l := &s.links[i]
			l.ack, l.ackAt, l.ackSent = 0, time.Time{}, time.Time{}
			l.epoch, l.mark, l.epochSet = 0, 0, false
		}
		s.leadTerm, s.round = g.leadTerm, 0
		s.acksVersion++
	}
	if g.lead && (s.leading == false || newTerm || s.vouched == false) {
		// a new leader, a new term, or one whose hub stopped vouching for
		// it (a step outlasted its grace: vouch.go)
		s.needBeat = true
	}
	gained := g.lead && s.leading == false
	s.lead, s.leading, s.inStep = g.lead, g.lead, false
	s.mayLead.Store(g.lead)
	if gained && s.board != nil {
		s.board.leadsGained.Add(1) // after mayLead: the hub that sees it sees mayLead (resendNamed)
	}
	s.stepSeen = time.Time{} // the step ended: the next one has a grace of its own
	s.visitSoon()
	s.followers = g.followers
	s.relink()
	s.round = max(s.round, g.round)
}

// settleShared is the start of every step: the hub's permissions are taken
// back, and what it did under them becomes part of the state. It is the
// only way the hub's records enter the election; IsLeader reads them
// without taking them in (peekWanted, Actor.hubPeek).
func (e *election) settleShared(v sharedView) {
	if e.coalesced == false {
		return
	}
	if v.carried != nil {
		e.carried, e.carriedSeen = v.carried, v.carriedVersion
	}
	if v.acks != nil {
		e.acksSeen = v.acksVersion
	}
	// A follower in a step: the pings answered for its leader's node until
	// now, which its leader may count as its acks (pings.go).
	if v.pongEnd.IsZero() == false && e.grantedFollow != (gen.PID{}) && e.cfg.assumeSymmetricLoss == false {
		if v.pongEnd.After(e.pongPromise) {
			e.pongPromise = v.pongEnd
		}
		e.pongPromiseTo = e.grantedFollow
	}
	// A follower: the hub acknowledged its leader's rounds for it.
	if e.grantedFollow != (gen.PID{}) && v.beatAt.After(e.lastHeartbeatIn) {
		leader := e.grantedFollow
		if m, ok := e.members[leader.Node]; ok && m.pid == leader && e.leader == leader {
			if v.beatAt.After(m.lastHeard) {
				m.lastHeard = v.beatAt
			}
			e.lastHeartbeatIn = v.beatAt
			// the promise of an acknowledgement, from when the hub sent it
			e.promiseAt(leader, true, v.beatAt)
			e.extendFresh(leader, v.freshEnd)
			if deadline := v.beatAt.Add(e.randomTimeout()); deadline.After(e.electionDeadline) {
				e.electionDeadline = deadline // the armed timer finds it and re-arms
			}
		}
	}
	// A follower: its leader's hub vouched for the leader in its pings
	// since (vouch.go). Liveness only: the deadline and when the leader
	// was last heard move on, no promise does.
	if e.grantedFollow != (gen.PID{}) && v.vouchedAt.IsZero() == false {
		leader := e.grantedFollow
		if m, ok := e.members[leader.Node]; ok && m.pid == leader && e.leader == leader {
			if v.vouchedAt.After(m.lastHeard) {
				m.lastHeard = v.vouchedAt
			}
			if deadline := v.vouchedAt.Add(e.randomTimeout()); deadline.After(e.electionDeadline) {
				e.electionDeadline = deadline
			}
		}
	}
	// A leader: the rounds the hub opened, and the acks they got.
	u := e.leadShare(v)
	for _, r := range u.rounds {
		e.round = r.round
		e.keepRecentRounds()
		e.roundSent = append(e.roundSent, r)
		e.lastHeartbeatOut = r.at
	}
	for _, a := range u.acks {
		m := a.member
		e.roundTrip(m, a.round, a.at)
		m.ackRound = a.round
		if a.at.After(m.lastAck) {
			m.lastAck = a.at
		}
		if a.at.After(m.lastHeard) {
			m.lastHeard = a.at
		}
		m.ackTerm = e.term
		m.awaitingSince = time.Time{}
	}
	for _, p := range u.pongs {
		p.member.pongSent, p.member.pongFresh = p.sent, p.fresh
		// its node's hub answered while it was bound to this leader: it
		// was heard then (a handover's successor must have been, and
		// records no longer come every interval: vouch.go)
		if p.sent.After(p.member.lastHeard) {
			p.member.lastHeard = p.sent
		}
	}
	if len(u.acks) > 0 || len(u.pongs) > 0 {
		e.renewLease()
	}
}

// leadShare is what a leader's hub recorded that its election has not
// taken in yet: the rounds it opened since, and for members the newer
// acknowledged round and answered ping that count for the leader's term.
// Both a step (importShared) and IsLeader (Actor.hubPeek) read the hub
// through it, so that they cannot disagree on what counts.
type leadShare struct {
	rounds []roundStamp
	acks   []sharedAck
	pongs  []sharedPong
}

// sharedAck is a member's round acknowledged through the hubs.
type sharedAck struct {
	member *member
	round  uint64
	at     time.Time
}

// sharedPong is an answered ping that counts as a member's ack (pings.go).
type sharedPong struct {
	member *member
	sent   time.Time
	fresh  time.Duration
}

// leadShare reads v for the leader of the current term, changing nothing:
// empty unless this node leads the term it last granted the hub.
func (e *election) leadShare(v sharedView) leadShare {
	var u leadShare
	if e.grantedLead == 0 || e.grantedLead != e.term || e.role != roleLeader {
		return u
	}
	top := e.round
	for _, r := range v.rounds {
		if r.round > top {
			u.rounds = append(u.rounds, r)
			top = r.round
		}
	}
	for node, n := range v.acks {
		m, ok := e.members[node]
		if ok == false || m.pid == (gen.PID{}) || n <= m.ackRound || n > top {
			continue
		}
		u.acks = append(u.acks, sharedAck{member: m, round: n, at: v.ackAt[node]})
	}
	if e.cfg.assumeSymmetricLoss == false {
		for _, p := range v.pongs {
			if m, ok := e.members[p.node]; ok && m.pid == p.pid && p.sent.After(m.pongSent) {
				u.pongs = append(u.pongs, sharedPong{member: m, sent: p.sent, fresh: p.fresh})
			}
		}
	}
	return u
}

// peekWanted reports whether a query between steps must look at what the
// hub holds now (it records this node's leadership), and from which
// version of its acks on (slot.peek).
func (e *election) peekWanted() (acksSeen uint64, ok bool) {
	if e.coalesced == false || e.grantedLead == 0 || e.grantedLead != e.term || e.role != roleLeader {
		return 0, false
	}
	return e.acksSeen, true
}

// evidence is what a member's support of the leader rests on: its newest
// acknowledged round and its node's newest answered ping that counts for
// it, with what the hub recorded since the last step (u, if any) on top.
func (e *election) evidence(m *member, u *leadShare) (ackRound uint64, pongSent time.Time, pongFresh time.Duration) {
	ackRound, pongSent, pongFresh = m.ackRound, m.pongSent, m.pongFresh
	if u == nil {
		return
	}
	for _, a := range u.acks {
		if a.member == m {
			ackRound = a.round
		}
	}
	for _, p := range u.pongs {
		if p.member == m {
			pongSent, pongFresh = p.sent, p.fresh
		}
	}
	return
}

// stampIn returns the stamp of round n of the current term, among the
// rounds the election took in and, if u, those the hub opened since.
func (e *election) stampIn(n uint64, u *leadShare) (roundStamp, bool) {
	if s, ok := e.stampOf(n); ok {
		return s, true
	}
	if u != nil {
		for _, s := range u.rounds {
			if s.round == n {
				return s, true
			}
		}
	}
	return roundStamp{}, false
}

// shareState is the end of every step: what the hub may do for this actor
// again, as far as its state now allows; false without a hub. The actor
// installs it in the slot (shareWithHub).
func (e *election) shareState() (grant, bool) {
	if e.coalesced == false {
		return grant{}, false
	}
	var g grant
	if e.mayDelegateAcks() {
		g.follow, g.followTerm = e.leader, e.term
	}
	if e.role == roleLeader && e.unpublished == false {
		g.lead, g.leadTerm, g.round, g.fresh = true, e.term, e.round, e.roundFresh()
		g.followers = e.followersToShare()
	}
	e.grantedFollow, e.grantedLead = g.follow, g.leadTerm
	return g, true
}

// followersToShare returns the members whose process is known, as a map
// the hub may keep: the one shared last when nothing changed (it is never
// modified once shared), a new one otherwise.
func (e *election) followersToShare() map[gen.Atom]gen.PID {
	known := 0
	same := e.sharedFollowers != nil
	for _, m := range e.members {
		if m.pid == (gen.PID{}) {
			continue
		}
		known++
		if same && e.sharedFollowers[m.node] != m.pid {
			same = false
		}
	}
	if same && known == len(e.sharedFollowers) {
		return e.sharedFollowers
	}
	followers := make(map[gen.Atom]gen.PID, known)
	for _, m := range e.members {
		if m.pid != (gen.PID{}) {
			followers[m.node] = m.pid
		}
	}
	e.sharedFollowers = followers
	return followers
}

// mayDelegateAcks reports whether this node's rules would acknowledge its
// leader's next round with a round that counts (handleHeartbeat,
// acknowledge): a follower of a known, reachable leader of its own term,
// running no pre-vote, promised to no other leader.
func (e *election) mayDelegateAcks() bool {
	if e.role != roleFollower || e.leader == (gen.PID{}) || e.leader == e.self || e.preVoting {
		return false
	}
	m, ok := e.members[e.leader.Node]
	if ok == false || m.pid != e.leader {
		return false
	}
	if (e.promisedAck && e.promisedTo != e.leader && e.now.Before(e.promisedUntil)) || e.pongPromised(e.leader) {
		return false
	}
	return e.pledgeBinds(e.term) == false
}

// carriedTo reports whether the hub carries this leader's rounds to m's
// node, so the leader does not send its own heartbeats there.
func (e *election) carriedTo(m *member) bool {
	return e.coalesced && e.carried[m.node]
}
