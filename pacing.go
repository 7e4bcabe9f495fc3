package leader

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

// Node-wide pacing: what the elections of one node share so that many of
// them do not crowd each other out. A node with thousands of elections
// (one per shard) meets three crowds, and has four rules for them here:
//
//   - at a cold start, thousands of campaigns at once: campaigns take
//     turns, at most campaignsInFlight per node (campaign admission);
//   - at a node crash, hundreds of fast failovers at once: a survivor
//     ranked after the first waits longer in such a wave (failover waves);
//   - in the same wave, the followers whose down the shared watcher has
//     not handed over yet wait for it rather than campaign on their
//     election timers (owed downs);
//   - at the same crash, a third of the survivors' elections are leaders
//     that lost a follower they can spare: that loss is handed to them late
//     (spare losses).
//
// None of the four decides anything safety rests on: each only delays a
// campaign, a pre-vote or a down that may wait (docs/safety.md). Every
// pacing duration is derived in timing.go with the others.

// Campaign admission: the elections of one node take turns to campaign.
//
// A campaign costs a round of pre-votes and a round of votes, with their
// answers, on top of whatever the node already carries. Thousands of
// elections started at once on a few nodes (one per shard, at boot) would
// all campaign within one election timeout: more messages than two cores
// deliver in that time, so every answer came after its campaign had timed
// out, every campaign was retried, the few elections that did win lost
// their leases because the hubs' rounds queued behind the campaigns, and the
// nodes never settled (3,000 elections on 3 nodes led nothing in 3
// minutes). With a bounded number of campaigns in flight per node, each one
// gets its answers within a round trip, and the elections that wait are
// followers that answer the others' campaigns, which costs little.
//
// The rules, per node:
//
//   - at most campaignsInFlight elections hold a turn. An election takes one
//     when its election timer fires and it would campaign; without one it
//     joins the queue and campaigns when its turn comes (campaignTurn);
//   - a turn lasts one attempt: an election that is still campaigning when
//     its timer fires again goes to the back of the queue if anyone waits,
//     so elections that cannot win (a node cut off from the majority of
//     their members) do not keep out those that can;
//   - a turn ends when the election stops campaigning (it won, or it
//     follows a leader), at the end of the step that made it so, and the
//     next in the queue is given the turn;
//   - a turn expires after turnHold, so an election that terminated without
//     giving its turn back (a killed process) keeps nobody waiting for long,
//     and the first elections of the queue look at the gate again after
//     turnHold whether or not their turn message came (those further back
//     less often, lookAgainAfter);
//   - while the node is overloaded, at most campaignsWhenLate elections hold
//     a turn: the node's liveness hub ticked more than an interval late
//     within the last turnHold (the board's noteLate). A late tick means the
//     node's goroutines wait for the CPU; past the holding lease the node's
//     leaders stand down, their elections campaign again, and the campaigns
//     keep the CPU saturated. With 10,000 elections on three node processes
//     of two cores the hubs ticked up to 1.6 s late from the first seconds
//     and the start never settled; backing off, every election was led
//     within 41 to 136 s, though the idle minute after did not always hold
//     (docs/coalescing.md). Waiting only delays a campaign, as every rule
//     of the gate does.
//
// The campaigns an election timeout starts take turns, and so does a
// leader's reclaim of the next term after its lease ran out (leadership.go):
// a stall of the node ends the leases of every election it leads at once,
// and those reclaims, let through together, churned. A fast failover
// (the leader's down was observed: one campaign per election, ordered across
// the survivors by rank, leadership.go) and a handover (TimeoutNow) start at
// once: they are what a failover's latency is made of, and they are bounded
// by the elections a node led, not by every election of the node. Waiting
// only delays a campaign, which the protocol allows at any time: no rule of
// the election depends on when a campaign starts.
//
// One election alone on a node never waits. The gate is per node of an OS
// process (the gen.Node), shared by every election on it whatever its
// ClusterID, and is dropped when nobody holds or waits for a turn.

// campaignsWhenLate is how many elections of an overloaded node may
// campaign at once on election timeouts (the gate's rules above).
const campaignsWhenLate = 2

// campaignsInFlight is how many elections of one node may campaign at once
// on election timeouts. With 8, a cold start of 3,000 elections on 3 nodes
// of a 2-core machine is led within seconds, and a crash wave keeps the
// cores' queue short enough that the nodes' hubs still hear each other
// within the holding lease (with 32, a 3,000-election crash on node
// processes made the survivors' own leaders stand down in 5 of 8 runs,
// with 8, and 8 paced downs in flight, in none of 8: docs/performance.md).
const campaignsInFlight = 8

// campaignTurn tells an election that waited for a turn that it has one
// (local only, never encoded).
type campaignTurn struct{}

// turn is an election's turn to campaign.
type turn struct {
	until    time.Time
	reserved bool // given to a waiter, which has not taken it up yet
}

// waiter is a place in a gate's queue.
type waiter struct {
	pid    gen.PID
	ticket uint64
}

// campaignGate hands out the turns of one node.
type campaignGate struct {
	mu      sync.Mutex
	node    gen.Node
	holders map[gen.PID]turn
	// the waiters in order, each with its ticket; an entry whose ticket is
	// no longer its waiter's (it left, or queued again) is skipped, so that
	// neither joining nor leaving the queue scans it
	queue   []waiter
	tickets map[gen.PID]uint64
	issued  uint64
	limit   int  // turns; tests set their own (campaignTurnsTuner)
	dropped bool // forgotten while idle: whoever got it asks again
	// the node's ping board, whose late ticks make the gate back off
	board *pingBoard
}

var campaignGates = struct {
	sync.Mutex
	byNode map[gen.Node]*campaignGate
}{byNode: make(map[gen.Node]*campaignGate)}

// lockGate returns node's gate, created if need be, with its lock held,
// handing out limit turns.
func lockGate(node gen.Node, limit int) *campaignGate {
	for {
		campaignGates.Lock()
		g, ok := campaignGates.byNode[node]
		if ok == false {
			g = &campaignGate{node: node, holders: make(map[gen.PID]turn), tickets: make(map[gen.PID]uint64), board: boardOf(node)}
			campaignGates.byNode[node] = g
		}
		campaignGates.Unlock()
		g.mu.Lock()
		if g.dropped == false {
			g.limit = limit
			return g
		}
		g.mu.Unlock()
	}
}

// acquireTurn gives pid a turn on node if one is free, or if pid was given
// one while it waited; otherwise pid waits in the queue. wake are the
// waiters given a turn meanwhile (expired turns freed theirs), to be told.
func acquireTurn(node gen.Node, limit int, pid gen.PID, now time.Time, hold time.Duration) (ok bool, wake []gen.PID) {
	g := lockGate(node, limit)
	defer g.mu.Unlock()
	return g.acquire(pid, now, hold)
}

// releaseTurn ends pid's turn on node, or its wait, and gives the freed
// turn on.
func releaseTurn(node gen.Node, limit int, pid gen.PID, now time.Time, hold time.Duration) (wake []gen.PID) {
	g := lockGate(node, limit)
	defer g.mu.Unlock()
	return g.release(pid, now, hold)
}

func (g *campaignGate) acquire(pid gen.PID, now time.Time, hold time.Duration) (ok bool, wake []gen.PID) {
	wake = g.expire(now, hold, wake)
	if t, holds := g.holders[pid]; holds {
		if t.reserved || len(g.tickets) == 0 {
			g.holders[pid] = turn{until: now.Add(hold)}
			return true, wake
		}
		// a second attempt while others wait: to the back of the queue
		delete(g.holders, pid)
		wake = g.handOn(now, hold, wake)
	}
	if len(g.holders) < g.turns(now, hold) && len(g.tickets) == 0 {
		g.holders[pid] = turn{until: now.Add(hold)}
		return true, wake
	}
	if _, waiting := g.tickets[pid]; waiting == false {
		g.issued++
		g.tickets[pid] = g.issued
		g.queue = append(g.queue, waiter{pid: pid, ticket: g.issued})
	}
	return false, g.handOn(now, hold, wake)
}

func (g *campaignGate) release(pid gen.PID, now time.Time, hold time.Duration) (wake []gen.PID) {
	delete(g.holders, pid)
	delete(g.tickets, pid)
	wake = g.handOn(now, hold, g.expire(now, hold, nil))
	g.dropIfIdle()
	return wake
}

// ahead is how many places of the queue come before pid's, 0 when it does
// not wait; g.mu is held. The queue is in ticket order, so a binary search
// finds the place; places left meanwhile still count.
func (g *campaignGate) ahead(pid gen.PID) int {
	ticket, waiting := g.tickets[pid]
	if waiting == false {
		return 0
	}
	at, _ := slices.BinarySearchFunc(g.queue, ticket, func(w waiter, t uint64) int { return cmp.Compare(w.ticket, t) })
	return at
}

// expire ends the turns that outlived their hold; g.mu is held.
func (g *campaignGate) expire(now time.Time, hold time.Duration, wake []gen.PID) []gen.PID {
	for pid, t := range g.holders {
		if now.After(t.until) {
			delete(g.holders, pid)
		}
	}
	return g.handOn(now, hold, wake)
}

// handOn gives free turns to the waiters, first come first served; g.mu
// is held.
func (g *campaignGate) handOn(now time.Time, hold time.Duration, wake []gen.PID) []gen.PID {
	limit := g.turns(now, hold)
	for len(g.holders) < limit && len(g.queue) > 0 {
		next := g.queue[0]
		g.queue = g.queue[1:]
		if ticket, ok := g.tickets[next.pid]; ok == false || ticket != next.ticket {
			continue // it left the queue, or this is an older place of it
		}
		delete(g.tickets, next.pid)
		g.holders[next.pid] = turn{until: now.Add(hold), reserved: true}
		wake = append(wake, next.pid)
	}
	if len(g.tickets) == 0 {
		g.queue = nil // only left places remain: let them go
	}
	return wake
}

// turns is how many turns the gate hands out now: its limit, or at most
// campaignsWhenLate while the node's hub ticked late within hold; g.mu is
// held.
func (g *campaignGate) turns(now time.Time, hold time.Duration) int {
	if g.board != nil && g.board.lateWithin(now, hold) {
		return min(g.limit, campaignsWhenLate)
	}
	return g.limit
}

// dropIfIdle forgets a gate nobody holds or waits for, so that nodes that
// stopped leave nothing behind; g.mu is held.
func (g *campaignGate) dropIfIdle() {
	if len(g.holders) > 0 || len(g.tickets) > 0 {
		return
	}
	g.dropped = true
	campaignGates.Lock()
	if campaignGates.byNode[g.node] == g {
		delete(campaignGates.byNode, g.node)
	}
	campaignGates.Unlock()
}

// forgetGate drops node's gate; whoever still holds it asks again.
func forgetGate(node gen.Node) {
	campaignGates.Lock()
	g := campaignGates.byNode[node]
	delete(campaignGates.byNode, node)
	campaignGates.Unlock()
	if g != nil {
		g.mu.Lock()
		g.dropped = true
		g.mu.Unlock()
	}
}

// turnGate is an election's view of its node's campaign gate. The actor
// gives it nodeTurns; the election's unit tests give it none (no gate) or
// a gate of their own.
type turnGate interface {
	acquire(pid gen.PID, now time.Time, hold time.Duration) (ok bool, wake []gen.PID)
	release(pid gen.PID, now time.Time, hold time.Duration) (wake []gen.PID)
	// ahead is how many places of the queue come before pid's (0 when it
	// does not wait): an upper bound, places left meanwhile included
	ahead(pid gen.PID) int
}

// nodeTurns is the gate of one node of this OS process, handing out limit
// turns.
type nodeTurns struct {
	node  gen.Node
	limit int
}

func (n nodeTurns) acquire(pid gen.PID, now time.Time, hold time.Duration) (bool, []gen.PID) {
	return acquireTurn(n.node, n.limit, pid, now, hold)
}

func (n nodeTurns) release(pid gen.PID, now time.Time, hold time.Duration) []gen.PID {
	return releaseTurn(n.node, n.limit, pid, now, hold)
}

func (n nodeTurns) ahead(pid gen.PID) int {
	g := lockGate(n.node, n.limit)
	defer g.mu.Unlock()
	return g.ahead(pid)
}

// turnsOf is the gate of node handing out limit turns, or
// campaignsInFlight if limit is 0.
func turnsOf(node gen.Node, limit int) nodeTurns {
	if limit <= 0 {
		limit = campaignsInFlight
	}
	return nodeTurns{node: node, limit: limit}
}

// takeTurn asks for a turn to campaign after an election timeout. Without
// one the election waits: its turn message, or, should that never come, its
// election timer a turnHold later, whichever is first.
func (e *election) takeTurn() bool {
	if e.turns == nil {
		return true
	}
	ok, wake := e.turns.acquire(e.self, e.now, turnHold(e.cfg))
	e.out.turnWakes = append(e.out.turnWakes, wake...)
	e.holdsTurn, e.awaitsTurn = ok, ok == false
	if ok {
		return true
	}
	e.campaignsQueued++
	e.electionDeadline = e.now.Add(lookAgainAfter(e.cfg, e.turns.ahead(e.self)) + e.randomTimeout())
	e.armElectionTimer(e.electionDeadline)
	return false
}

// lookAgainAfter is how long an election that waits for a turn, with
// ahead places of the queue before its own, sleeps before it looks at the
// gate again should its turn message never come: a turnHold for the
// first campaignsInFlight waiters, and one more for each campaignsInFlight
// places further back, up to maxTurnLooks turnHolds.
//
// The look is a fallback. A waiter's turn comes by message, given by the
// election that ends a turn or by anyone who finds a turn expired when
// they ask; only when every holder died and nobody asks does somebody
// have to look, and the first waiters do that within a turnHold. At a cold
// start of 10,000 elections per node thousands wait at once, and each look
// is a step of the waiter's actor: every waiter looking every turnHold
// kept the nodes' cores busy with looks at a queue that had not moved.
func lookAgainAfter(cfg config, ahead int) time.Duration {
	return turnHold(cfg) * time.Duration(1+min(ahead/campaignsInFlight, maxTurnLooks-1))
}

// maxTurnLooks bounds the waits of lookAgainAfter, in turnHolds: 8, about
// 5 s at the defaults.
const maxTurnLooks = 8

// turnCame handles campaignTurn: the election campaigns now if it still
// has no leader and is not campaigning already; otherwise it gives the
// turn on at the end of this step (endTurn).
func (e *election) turnCame(now time.Time) {
	e.now = now
	if e.awaitsTurn == false || e.turns == nil {
		return
	}
	e.awaitsTurn = false
	if e.role != roleFollower && e.role != roleCandidate || e.leader != (gen.PID{}) || e.preVoting {
		e.holdsTurn = true // the turn given to it, which endTurn gives on
		return
	}
	if e.takeTurn() == false {
		return
	}
	if e.role == roleCandidate {
		e.votes = nil // its last vote round is over, as at an election timeout
	}
	e.campaign()
}

// endTurn gives the election's turn back once it no longer campaigns: it
// won, it follows a leader, or its campaign did not start. The actor calls
// it whenever a step changed the state.
func (e *election) endTurn() {
	if e.turns == nil || e.holdsTurn == false || e.preVoting || e.role == roleCandidate {
		return
	}
	e.holdsTurn = false
	e.out.turnWakes = append(e.out.turnWakes, e.turns.release(e.self, e.now, turnHold(e.cfg))...)
}

// leaveGate gives up the election's turn and its place in the queue, when
// its actor terminates.
func (e *election) leaveGate(now time.Time) []gen.PID {
	if e.turns == nil || (e.holdsTurn == false && e.awaitsTurn == false) {
		return nil
	}
	e.holdsTurn, e.awaitsTurn = false, false
	return e.turns.release(e.self, now, turnHold(e.cfg))
}

// Failover waves: when a node crashes, every election it led fails over at
// once on the survivors, a few hundred of them with a thousand elections on
// three nodes. Each of them ranks its survivors (fastFailoverDelay): the
// first pre-votes a step after its down, the second a step later, and the
// second defers as soon as the first one's pre-vote reaches it
// (deferToRanked). In a wave, the survivors' processes queue behind the
// wave's hundreds of downs, so the first one's pre-vote reaches the second
// one tens of milliseconds after it was sent, long after the second one's
// own timer fired: both pre-vote, the first refuses the second
// (fast_failover_rank), and every election of the wave pays for a pre-vote
// round that cannot win, three steps and two messages, in the very
// milliseconds the wave's winning rounds wait for the same two cores. So a
// survivor ranked after the first one waits longer when its node is in a
// wave: long enough, at the default timings, for the first one's pre-vote
// to come. Waiting longer only delays a pre-vote, which is always allowed;
// the first-ranked survivor's wait does not change.

// waveThreshold is how many other fast failovers of the same node must have
// started within waveWindow for an election to count itself in a wave. One
// election, or a handful sharing a node, fail over as before.
const waveThreshold = 8

// failoverWave counts the fast failovers the elections of one node start:
// the node's hub keeps one, and every election that joined the hub shares
// it through its slot.
type failoverWave struct {
	mu    sync.Mutex
	start time.Time // when the current wave's first failover started
	count int       // failovers started since start
}

// join records a fast failover starting at now and returns how many others
// started within window before it; 0 for no wave (an election without a
// hub).
func (w *failoverWave) join(now time.Time, window time.Duration) int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count == 0 || now.Before(w.start) || now.Sub(w.start) > window {
		w.start, w.count = now, 0
	}
	others := w.count
	w.count++
	return others
}

// waveOf is the wave of the slot's node, which its hub set when the slot
// joined; nil before.
func (s *slot) waveOf() *failoverWave {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wave
}

// Owed downs: a follower waits for its leader's down rather than campaign.
//
// The shared watcher hands a crash's downs over a few dozen at a time
// (downsInFlightMax), so at 10,000 elections on three node processes the
// last of a survivor's 3,500 failing-over followers gets its down more than
// half a second after the first. Their election timeouts, counted from the
// leader's last vouching ping, fire from 150 ms on: most of the wave's
// followers campaigned on their own timers instead, through the campaign
// gate, unranked, both survivors at once, without pledges. Each election
// then cost the survivors two pre-vote rounds and a vote round or more
// (split votes), and the wave took the survivors 1.2 to 4.7 s of CPU each
// and was led again at p99 1.5 to 2.8 s (0.5 to 0.85 s with the rule below,
// docs/performance.md); in some runs the survivors' own leaders lost their
// leases as their hubs heard each other late.
//
// So when a follower's election timer fires while the framework reports no
// connection to its leader's node, and the leader's process is monitored,
// the down of that monitor is owed: the framework sends one for every
// monitor of a connection that ended. The follower then does not campaign
// on its timer; it waits for the down, which starts the ranked fast
// failover (leaderLost), and re-arms its timer as the backstop. A fast
// failover already under way is left to its own timer for the same reason.
// The wait has a bound (owedDownWait), counted from the first timeout that
// found the connection gone, after which the timeout campaigns as before:
// a down that never comes costs a failover that much, never more. Waiting
// only delays a campaign, which the protocol allows at any time.
//
// Why not take the owed down at once, as a pre-vote does
// (Actor.noticeLeaderConnectionGone)? A pre-vote is one question; the
// timers are the whole wave at once. Taken at the timeouts, every failover
// of the wave started within a few tens of milliseconds, unpaced: the
// survivors' first term changed a second after the kill, and 2,190 of 3,585
// failovers split their votes (docs/performance.md).

// A follower whose election timer is parked with its node's hub does not
// even wake for the wait: the shared watcher marks the actor's loss board
// the moment it gets a lost connection, before it paces the down out, and
// the hub holds a parked election timer while the board shows the loss of
// the leader's node after the hub last heard that leader, up to the same
// bound counted from the loss (slot.owedDownUntil). At 10,000 elections
// each survivor otherwise woke 3,000 to 4,800 followers for nothing in the
// first 450 ms of the wave, a fifth of its steps there. When the hub does
// wake it, at the bound, the election counts its wait from the loss too,
// and campaigns.

// leaderMonitored reports whether this follower's leader is a member whose
// process it monitors: a lost connection to its node then owes a down.
func (e *election) leaderMonitored() bool {
	if e.role != roleFollower || e.leader == (gen.PID{}) {
		return false
	}
	m, ok := e.members[e.leader.Node]
	return ok && m.pid == e.leader && m.watchAskedAt.IsZero()
}

// owedDownHold is how long the hub may hold this follower's parked
// election timer after a lost connection to its leader's node: the owed
// down's bound, or 0 when no down would be owed.
func (e *election) owedDownHold() time.Duration {
	if e.leaderMonitored() == false {
		return 0
	}
	return owedDownWait(e.cfg)
}

// leaderDownOwed records that the framework reports no connection to the
// node of the leader this follower follows, whose down is then owed if
// its process is monitored. lostAt, when the loss board knows it, is when
// the connection was lost: a loss after the leader was last heard starts
// the wait then, not now (the hub held the timer since). A leader heard
// since the last record starts a new wait.
func (e *election) leaderDownOwed(now, lostAt time.Time) {
	if e.leaderMonitored() == false {
		return // not monitored: no down is owed for it
	}
	m := e.members[e.leader.Node]
	if e.owedDownFrom == e.leader && m.lastHeard.After(e.owedDownSince) == false {
		return
	}
	since := now
	if lostAt.After(m.lastHeard) && lostAt.Before(now) {
		since = lostAt
	}
	e.owedDownFrom, e.owedDownSince = e.leader, since
}

// owedDownUntil is until when the hub holds a follower's parked election
// timer for its leader's owed down: wait after the loss of the leader's
// node on the actor's loss board, when that loss came after heard (the
// hub's newest evidence of the leader); zero when no down is owed. s.mu
// is held.
func (s *slot) owedDownUntil(wait time.Duration, heard time.Time) time.Time {
	if wait <= 0 || s.follow == (gen.PID{}) {
		return time.Time{}
	}
	lost, ok := s.losses.at(s.follow.Node)
	if ok == false || lost.Before(heard) {
		return time.Time{}
	}
	return lost.Add(wait)
}

// awaitingOwedDown reports whether the election timer should wait for the
// leader's owed down rather than campaign (leaderDownOwed).
func (e *election) awaitingOwedDown() bool {
	return e.leader != (gen.PID{}) && e.owedDownFrom == e.leader && e.now.Sub(e.owedDownSince) < owedDownWait(e.cfg)
}

// Spare losses: a leader's lost followers can wait too.
//
// When a node crashes under many elections, each survivor's elections get
// a down for their member there at once. Those whose leader died fail over
// (they may not wait); the followers of a living leader get theirs late
// (downHints). The third kind is a survivor's own leaders: a third of the
// elections, each losing one follower. A leader that still reaches a quorum
// without that follower does nothing with its loss that cannot wait: it
// keeps its lease (acknowledgements from the others renew it), and the
// probes of the lost member start lazyDownPause after the loss anyway.
// Handled at once, those downs were half of the survivor's steps in the
// milliseconds of the failover: a third of a wave's CPU, which the
// failing-over elections waited for (docs/performance.md, section 6b).
//
// So a shared watcher hands a leader a lost connection lazyDownPause late
// when the leader can spare the member: it reaches a quorum without it and
// without every member whose loss it was already handed late (spare counts
// what the actor's view showed at its last step, deferred what it has not
// handled since). Nothing that safety rests on waits:
//   - IsLeader and LeaseExpiry read the loss board, which the watcher marks
//     at once: acknowledgements over the lost connection stop counting the
//     moment the watcher gets the down, as before.
//   - A down the leader cannot spare comes at once, and the actor handles
//     every loss it was handed late before it (takeDeferred), so a leader
//     that loses its quorum in several steps stands down on the step that
//     breaks it, as if each down had come at once.
//   - Peers, HasPeer and the successor of a handover skip members whose
//     node the framework reports as not connected, so the member the
//     leader has not heard about yet is neither listed nor chosen.
//
// A private watcher (coalescing disabled, or a shared watcher that could
// not be started) hands every down at once, as before.

// spareMembers is how many members this node, as a published leader, can
// lose and still reach a quorum; 0 in any other role.
func (e *election) spareMembers() int {
	if e.role != roleLeader || e.unpublished || e.quorum() <= 1 {
		return 0
	}
	return max(e.reachable()-e.quorum(), 0)
}

// setSpare records the actor's spareMembers after a step.
func (h *downHints) setSpare(spare int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.spare = spare
}

// deferLeaderLoss reports whether a shared watcher may hand down, a lost
// connection, to a leader late, and then counts it as handed late.
func (h *downHints) deferLeaderLoss(down peerDown) bool {
	if h == nil || errors.Is(down.Reason, gen.ErrNoConnection) == false {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d, ok := h.deferred[down.PID.Node]; ok && d.PID == down.PID {
		return true
	}
	if h.following || h.spare-len(h.deferred) < 1 {
		return false
	}
	if h.deferred == nil {
		h.deferred = make(map[gen.Atom]peerDown)
	}
	h.deferred[down.PID.Node] = down
	return true
}

// stillDeferred reports whether the loss of pid is still to be handed over
// late: the actor has not taken it early (takeDeferred).
func (h *downHints) stillDeferred(pid gen.PID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	d, ok := h.deferred[pid.Node]
	return ok && d.PID == pid
}

// lossHandled is called by the actor for a down handed over late: if it was
// a leader's loss, the member it spared is now lost in its view, and the
// spare shrinks with it in one step, so the watcher never sees the loss
// counted neither as deferred nor in the spare.
func (h *downHints) lossHandled(pid gen.PID) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d, ok := h.deferred[pid.Node]; ok && d.PID == pid {
		delete(h.deferred, pid.Node)
		h.spare = max(h.spare-1, 0)
		return true
	}
	return false
}

// takeDeferred returns the losses still to be handed over late and forgets
// them; the actor handles them now, and the spare shrinks by as many.
func (h *downHints) takeDeferred() []peerDown {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.deferred) == 0 {
		return nil
	}
	list := make([]peerDown, 0, len(h.deferred))
	for _, d := range h.deferred {
		list = append(list, d)
	}
	h.spare = max(h.spare-len(list), 0)
	clear(h.deferred)
	return list
}

// postponeLeaderLoss queues a leader's loss that its hints deferred
// (deferLeaderLoss), to be handed over with the other late downs unless
// the actor takes it first.
func (w *watcher) postponeLeaderLoss(actor gen.PID, down peerDown, hints *downHints) {
	w.late = append(w.late, lateDown{to: actor, down: down, due: w.clock().Add(hints.pause), leaderLoss: hints})
	if w.lateArmed == false {
		w.armLate(hints.pause)
	}
}

// takeLeaderLosses has a leader handle the losses handed to it late before
// a down that comes at once: that one may break its quorum only together
// with them.
func (a *Actor) takeLeaderLosses(now time.Time) {
	if a.state.role != roleLeader {
		return
	}
	for _, d := range a.hints.takeDeferred() {
		a.hinted.spare = -1 // the hints changed under the actor: tell them again
		if a.state.downAt(now, d.At, d.PID, d.Reason) {
			a.state.backdateLoss(d.PID.Node, d.Since)
		}
	}
}
