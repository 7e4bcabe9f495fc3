package leader

import (
	"slices"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// The hub's tick: every liveness interval it pings each node its leaders'
// rounds go to, sends the records that must go (vouch.go) and fires the
// parked timers that are due (parking.go), passing by the slots whose
// timers only wait on the pings, and not even reading the slots with
// nothing due (quietwheel.go).

// armTick schedules the next tick one liveness interval from now, under a
// new generation, so that a tick left over from an earlier arming is
// recognised and dropped. A hub with no joined actor (interval 0) stops
// ticking until one joins.
func (h *hub) armTick() {
	d := h.interval()
	if d <= 0 {
		h.ticking = false
		return
	}
	h.tickGen++
	h.nextTick = h.clock().Add(d)
	if _, err := h.process.SendAfter(h.process.PID(), hubTick{Generation: h.tickGen}, d); err != nil {
		h.ticking = false
	}
}

// tick opens a round for every leader that allows it and sends each other
// node the rounds of all of them in one message.
//
// A leader in the middle of a step has withdrawn its permission to open
// rounds (coalesce.go), but is still served for its step grace (busy,
// openRounds): an actor doing its own work is often in a step when the
// tick comes.
//
// Each tick is a ping to every node the leaders' rounds go to (pings.go),
// and carries the records of the leaders that need one (vouch.go). A tick
// after an answer changed a node's epoch is full: the followers there must
// acknowledge a round again before the pings count for them.
func (h *hub) tick() {
	now := h.clock()
	h.noteLateness(now.Sub(h.nextTick))
	h.armTick()
	defer func() { h.tickLongest = max(h.tickLongest, h.clock().Sub(now)) }()
	if h.raise {
		// the pings of this tick carry the new epoch, and its records
		// anchor every leader still leading to it (vouch.go)
		h.raise = false
		h.leadEpoch++
		h.raises++
		h.resync = true
	}
	full := h.resync || now.Before(h.nextFull) == false
	if full {
		// half a tick early: ticks come a little late, and a full tick
		// must not slip to the one after
		h.nextFull = now.Add(h.beatEvery() - h.interval()/2)
	}
	refresh := full && now.Before(h.nextRefresh) == false
	if refresh {
		h.nextRefresh = now.Add(recordRefresh(h.beatEvery()) - h.interval()/2)
	}
	h.openRounds(h.order, true, full, refresh)
	h.forgetGonePeers()
}

// noteLateness records how late a tick came. A tick later than an interval
// means that the hub's process waited for the CPU (or was stalled): every
// election's rounds and acknowledgements on this node came that much late,
// which is how leases run out on a node that is too busy. The board
// tells the node's campaign admission, which backs off (pacing.go).
func (h *hub) noteLateness(late time.Duration) {
	if late > h.interval() {
		h.lateTicks++
		h.board.noteLate(h.clock())
	}
	h.lateMax = max(h.lateMax, late)
}

// beatEvery is how often every leader's round carries a record: the
// shortest HeartbeatInterval of the slots.
func (h *hub) beatEvery() time.Duration {
	h.interval()
	return h.shortBeat
}

// forgetGonePeers drops, at most every boardSweepEvery, what the hub knows
// of other nodes' hubs that have not been heard for boardRetention: their
// routes and liveness. Node names come and go (a new pod name per deploy);
// a node heard again starts afresh (its hub names its elections again,
// routes.go).
func (h *hub) forgetGonePeers() {
	now := h.clock()
	if now.Sub(h.sweptAt) < boardSweepEvery && now.Sub(h.sweptAt) >= 0 {
		return
	}
	h.sweptAt = now
	for node, p := range h.peers {
		if now.Sub(p.heardAt) > boardRetention {
			delete(h.peers, node)
			delete(h.routes, node)
			delete(h.lastEpoch, node)
			delete(h.pingPeers, node)
			delete(h.peerUp, node)
			delete(h.pingRTT, node)
			delete(h.answers, node)
			delete(h.batchSize, node)
			delete(h.namedLeaders, node)
			delete(h.namesHeard, node)
			h.board.forget(node)
		}
	}
}

// quietBlock is how many quietUntil cells the hub allocates at once.
const quietBlock = 512

// quietCell returns a fresh quietUntil cell next to the previous one's.
// The cells of slots that left are not reused: a slot's actor may still
// clear its cell after the hub dropped it.
func (h *hub) quietCell() *quietCell {
	if len(h.quietFree) == 0 {
		h.quietFree = make([]quietCell, quietBlock)
	}
	cell := &h.quietFree[0]
	h.quietFree = h.quietFree[1:]
	return cell
}

// openRounds looks at the slots that are due (all of them when ticking is
// false), opens the rounds whose records must go (vouch.go), sends each
// node its message (a ping, with those records and the answer it owes)
// and, when ticking, fires the parked timers that are due.
func (h *hub) openRounds(slots []*slot, ticking, full, refresh bool) {
	now := h.clock()
	resync := h.resync && ticking
	h.resync = h.resync && ticking == false
	ttl := h.peerTTL()
	// Every leader is looked at when the records go to all (a resync or
	// the refresh) and when a node's hub was found alive or gone since the
	// last full tick (where the rounds are carried changes: reach);
	// otherwise a leader only when its parked lease timer comes near, its
	// step's grace ends, it shared something new, or it waits for an ack
	// (quiet below). A tick that looks at every leader also forgets the
	// nodes no leader's rounds go to any more: a node whose last leader
	// there stood down stops pinging at once (its pings would keep the
	// promises of that leader's followers, pings.go).
	everyLeader := resync || refresh || (full && ticking && h.peersChanged(now, ttl))
	if everyLeader && ticking {
		clear(h.pingPeers)
	}
	batches := make(tickBatches, 0, len(h.batchSize))
	var wake []gen.PID
	var due []parkedWake
	horizon := parkHorizon(h.interval())
	if ticking {
		h.board.vouchEpochs(h.vouchSeen)
		h.board.answersSeen(h.answerSeen)
	}
	var oldLeads *leaseDue
	// A tick that looks at every leader reads every cell: h.order, whose
	// quiet times are h.orderQuiet. The wheel and the ping waiters are
	// read first at every tick, and at such a tick what they return is
	// dropped, since the reading of every cell visits it too (a follower
	// let go has its quiet time cleared), while a wake after that read is
	// kept for the next tick. The other ticks read only the cells the
	// wheel and the lists have due (quietwheel.go, pingwaiters.go).
	walk := ticking == false || everyLeader
	if ticking {
		h.dueCells = h.wheel.due(now, h.dueCells)
		h.dueCells = h.releaseWaiters(now, horizon, h.dueCells)
	}
	count := len(slots)
	if walk == false {
		count = len(h.dueCells)
	}
	for i := range count {
		var s *slot
		var cell *quietCell
		switch {
		case walk == false:
			cell = h.dueCells[i]
			s = cell.slot
		case ticking:
			s, cell = slots[i], h.orderQuiet[i]
		default:
			s = slots[i]
		}
		if ticking == false && h.slots[s.actor] != s {
			continue // it terminated since the tick
		}
		if ticking {
			quiet := cell.until.Load()
			if everyLeader == false && now.UnixNano() < quiet {
				if walk == false {
					h.wheel.file(cell, quiet) // taken from the wheel: filed again, never lost
				}
				continue // nothing due yet (slot.quietUntil)
			}
			if quiet != 0 && h.passFollower(cell, quiet, now, horizon) {
				continue // a follower with nothing due
			}
			if quiet != 0 && everyLeader == false && h.passLeader(cell, quiet, now, horizon) {
				continue // a leader with nothing due
			}
		}
		s.mu.Lock()
		if ticking {
			h.visits++
			// what the slot waited on since the last visit: set again
			// below for a follower or a leader with nothing else to do
			oldLeads = cell.leads
			cell.waits, cell.leads = vouchedDue{}, nil
			h.unwait(cell)
			due = s.dueParked(now, horizon, due)
		}
		// A leader in the middle of a step keeps its rounds going for a
		// while (leaderStepGrace): the acting lease needs a round every
		// liveness interval, and a step that does the leader's work (a
		// database write) may take longer than the lease. Rounds opened
		// for a leader that stands down in that step only make its
		// followers keep a promise to it a little longer, which costs no
		// safety: the actor counts the acks only while it still leads the
		// term it shared (importShared). A leader hung for longer gets no
		// rounds, and its followers elect another.
		if s.inStep == false {
			s.stepSeen = time.Time{}
		} else if s.stepSeen.IsZero() {
			s.stepSeen = now
		}
		busy := s.inStep && s.leading && now.Sub(s.stepSeen) < s.stepGrace
		// The pings vouch for a leader only while it may still lead the
		// term its record went with: not once a step ended without the
		// lead, nor once a step outlasted its grace (vouch.go).
		if s.vouched && ((s.lead == false && busy == false) || s.leadTerm != s.vouchedTerm) {
			s.vouched, s.pingsUntil = false, now
			h.raise = true
		}
		if s.lead == false && busy == false {
			if ticking {
				h.setQuiet(cell, s.quietFor(horizon))
				cell.waits = s.vouchedDueNow(h.vouchSeen)
			}
			s.mu.Unlock()
			continue
		}
		if full || s.needBeat || ticking == false {
			lost, again := h.reach(s, now, ttl, &batches)
			if lost {
				wake = append(wake, s.actor)
			}
			s.fullTicks = again || s.everyBeat
			if s.needBeat || resync || refresh || s.fullTicks || ticking == false {
				h.record(s, now, &batches)
			}
		}
		if ticking {
			// looked at again when its parked lease timer comes near, when
			// its step's grace ends, or at the next full tick if it needs
			// a record then
			quiet := s.quietFor(horizon)
			if busy {
				quiet = min(quiet, s.stepSeen.Add(s.stepGrace).UnixNano())
			}
			if s.fullTicks {
				quiet = min(quiet, h.nextFull.UnixNano())
			}
			h.setQuiet(cell, quiet)
			if s.fullTicks == false {
				cell.leads = s.leaseDueNow(oldLeads)
			}
		}
		s.mu.Unlock()
	}
	if ticking {
		for node := range h.pingPeers {
			batches.of(h, node, now, ttl) // a ping, with rounds or without
		}
	}
	if ticking {
		for node := range h.answers {
			batches.of(h, node, now, ttl) // an answer, with a ping or without
		}
	}
	slices.SortFunc(batches, func(a, b nodeBatch) int { return strings.Compare(string(a.node), string(b.node)) })
	seq := h.pings.next(now)
	for _, b := range batches {
		// by name: a restarted node's hub is a new process
		h.batchSize[b.node] = max(h.batchSize[b.node]/2, len(b.beats))
		m := msgBeats{Beats: b.beats}
		if h.pingPeers[b.node] || len(b.beats) > 0 {
			m.Ping, m.LeadEpoch = seq, h.leadEpoch
			m.Fresh = uint64(h.rttOf(b.node).sending(seq, h.pingFresh(b.node)) / time.Microsecond)
		}
		if a := h.answers[b.node]; a != nil {
			delete(h.answers, b.node)
			m.Answer, m.Held, m.AckEpoch, m.Acks, m.Unserved, m.Unknown = a.ping, a.held(now), a.ackEpoch, a.acks, a.unserved, a.unknown
			m.Epoch, m.Busy = h.answerEpoch(b.node, a.to) // last: it names the followers of leaders there in a step
		}
		h.sendConnected(b.node, gen.ProcessID{Name: hubName, Node: b.node}, m)
	}
	for _, actor := range wake {
		h.process.Send(actor, hubCarryLost{})
	}
	h.fire(due)
}

// passFollower reports whether a tick may pass a follower's slot by
// without visiting it: its election timer waits on its leader's pings
// (quietCell.waits, which only a follower's visit sets, read only while
// its quiet time is not 0), and is not near by its quiet time, or by the
// newest of those pings the board has. In the second case the follower
// goes on its leader's node's list of ping waiters (pingwaiters.go),
// which lets it go at the first tick at which it would not be passed by
// here: never later than a visit would have found (vouchedDue), so the
// timer fires when it did. The swap fails, and the slot is visited at the
// next tick, when its actor set its quiet time to 0 meanwhile. The ticks
// that look at every leader (everyLeader) pass followers by too: they
// have nothing for them, and a follower on a list looks quiet to them.
func (h *hub) passFollower(cell *quietCell, quiet int64, now time.Time, horizon time.Duration) bool {
	w := &cell.waits
	if w.peer == nil {
		return false
	}
	if now.UnixNano() < quiet {
		return true
	}
	seen, ok := h.vouchSeen[w.peer]
	if ok == false || seen.epoch != w.epoch || seen.last.Add(w.slack).Add(-horizon).After(now) == false {
		return false
	}
	return h.wait(cell, quiet, *w)
}

// moveQuiet sets cell's quiet time from quiet to next, if next is ahead of
// now and the actor did not set it meanwhile (to 0), and counts the pass.
func (h *hub) moveQuiet(cell *quietCell, quiet int64, next, now time.Time) bool {
	if next.After(now) == false || cell.until.CompareAndSwap(quiet, next.UnixNano()) == false {
		return false
	}
	h.wheel.file(cell, next.UnixNano())
	h.passed++
	return true
}

// setQuiet gives a visited slot's cell its quiet time, and files it in
// the wheel under it; s.mu is held.
func (h *hub) setQuiet(cell *quietCell, until int64) {
	cell.until.Store(until)
	h.wheel.file(cell, until)
}

// passLeader is passFollower for a leader with nothing to do but wait on
// its parked lease timer (quietCell.leads): it moves the leader's quiet
// time on to where the answered pings of its follower nodes, as the board
// had them when the tick began, put the timer, less the horizon, when that
// is ahead. Never later than a visit would have found (leaseDue), so the
// timer fires when it did. Not at a tick that looks at every leader: those
// have records to send and reach to check.
func (h *hub) passLeader(cell *quietCell, quiet int64, now time.Time, horizon time.Duration) bool {
	w := cell.leads
	if w == nil {
		return false
	}
	var buffer [8]time.Time
	sent := buffer[:0]
	for _, l := range w.links {
		if a, ok := h.answerSeen[answerKey{node: l.node, epoch: l.epoch}]; ok && a.index >= l.mark {
			sent = append(sent, a.sent)
		}
	}
	at, ok := latestReachedBy(sent, w.need)
	if ok == false {
		return false
	}
	return h.moveQuiet(cell, quiet, at.Add(w.lease).Add(-horizon), now)
}

// peersChanged reports whether a node the leaders' rounds may go to
// changed between carried and not (its hub answered within ttl, or the
// framework has no connection to it: reach) since the last call.
func (h *hub) peersChanged(now time.Time, ttl time.Duration) bool {
	changed := false
	for node := range h.pingPeers {
		p, known := h.peers[node]
		_, err := h.process.Node().Network().Node(node)
		up := (known && now.Sub(p.heardAt) < ttl) || err != nil
		if was, seen := h.peerUp[node]; seen == false || was != up {
			changed = true
		}
		h.peerUp[node] = up
	}
	return changed
}

// reach updates which follower nodes a leading slot's rounds reach, and
// notes those nodes as pinged this tick; s.mu is held. It reports whether a
// node stopped being carried, or was not carried at the first decision for
// it (the leader must be woken to send there itself), and whether the
// leader's record must go again although nothing changed (vouch.go): a
// follower node whose hub is alive has not acknowledged a round of the
// term through the hubs under its current epoch (its actor answered the
// record itself, being in a step or not knowing the leader yet, and the
// answered pings count for a follower only after such an ack), or its hub
// said lately that no actor there joined it for this election (only a
// record's answer tells when one has).
func (h *hub) reach(s *slot, now time.Time, ttl time.Duration, batches *tickBatches) (lost, again bool) {
	changed := false
	for i := range s.links {
		l := &s.links[i]
		b := batches.of(h, l.node, now, ttl)
		h.pingPeers[l.node] = true
		// A node the framework has no connection to counts as carried: the
		// leader's own heartbeats would not reach it either, and they are
		// no way back to it (its election's probes and its followers' own
		// sends are). Waking every leader with a follower on a crashed
		// node to send there itself, every liveness interval, was the
		// largest share of a survivor's work in a crash under thousands
		// of elections, which then queued the hubs' rounds past the
		// holding lease.
		carried := (b.peerAlive || b.disconnected) && now.Sub(l.unserved) >= ttl
		again = again || now.Sub(l.unserved) < ttl
		if b.peerAlive && (l.ack == 0 || l.epochSet == false || l.epoch != h.lastEpoch[l.node]) {
			again = true // its node's pings do not count for it now
		}
		// A node the hub stops carrying, or decides at its first look not
		// to carry: the leader sends there itself from now on, and a new
		// leader waits on this decision after announcing itself
		// (election.sendHeartbeats).
		if carried == false && (l.decided == false || l.carried) {
			lost = true
		}
		if l.decided == false || l.carried != carried {
			changed = true
		}
		l.carried, l.decided = carried, true
	}
	if changed {
		s.carriedVersion++
	}
	return lost, again
}

// record opens the next round of a leading slot and queues its record to
// each follower node in batches; s.mu is held. The pings of the hub's
// lead epoch vouch for it from then on (vouch.go).
func (h *hub) record(s *slot, now time.Time, batches *tickBatches) {
	s.round++
	s.needBeat = false
	s.vouched, s.vouchedTerm, s.pingsUntil = true, s.leadTerm, time.Time{}
	h.records++
	stamp := roundStamp{round: s.round, at: now, fresh: s.fresh}
	s.rounds = appendRecent(s.rounds, stamp)
	s.stamps = appendRecent(s.stamps, stamp)
	for i := range s.links {
		l := &s.links[i]
		b := batches.of(h, l.node, now, 0)
		// the ClusterID goes along until that node's hub has shown it
		// knows the key (routes.go)
		named := l.namedBy == b.peer && b.peer != (gen.PID{})
		b.appendRecord(h, s, named)
	}
}

// nodeBatch is the msgBeats a tick builds for one node.
type nodeBatch struct {
	node      gen.Atom
	peer      gen.PID // the node's hub, as last heard
	peerAlive bool    // the node's hub answered within peerTTL
	// the framework had no connection to the node at the tick
	disconnected bool
	beats        []byte
}

// tickBatches are a tick's msgBeats, one per node: a short list, searched
// in order (a handful of nodes; a map would hash the node's name for
// every round of every leader).
type tickBatches []nodeBatch

// of returns node's batch, adding it if it is new.
func (t *tickBatches) of(h *hub, node gen.Atom, now time.Time, ttl time.Duration) *nodeBatch {
	for i := range *t {
		if (*t)[i].node == node {
			return &(*t)[i]
		}
	}
	peer, known := h.peers[node]
	_, err := h.process.Node().Network().Node(node)
	*t = append(*t, nodeBatch{node: node, peer: peer.pid, peerAlive: known && now.Sub(peer.heardAt) < ttl, disconnected: err != nil})
	return &(*t)[len(*t)-1]
}

// appendRecord adds a leader's record to the batch. The buffer is made at
// the first record, not before: most ticks carry pings alone, and a buffer
// made for every node at every tick was most of what an idle hub
// allocated. It starts at the size of that node's recent batches
// (batchSize halves at every batch and is never below the last one), not
// the largest ever: after a node crash, or a refresh that carried every
// leader's record, a tick with a handful of records made a buffer for
// thousands of them, the largest share of what a survivor allocated in
// the seconds after a crash of thousands of elections, and so of its
// collector's work.
func (b *nodeBatch) appendRecord(h *hub, s *slot, named bool) {
	if b.beats == nil {
		size := h.batchSize[b.node]
		b.beats = make([]byte, 0, size+size/8)
	}
	b.beats = appendBeat(b.beats, s.key, s.cluster, named == false, s.leadTerm, s.actor.ID, s.round, uint64(s.fresh/time.Microsecond))
}

// recentStamps is how many of its newest rounds a slot keeps: a lease
// needs the send time of the newest round a quorum acknowledged, and an
// acknowledgement more than a few rounds old proves a lease long over.
const recentStamps = 16

// appendRecent appends a round's stamp, keeping the recentStamps newest.
// It moves the old ones down rather than reslicing, so that a slot's list
// is allocated once, not every recentStamps rounds.
func appendRecent(list []roundStamp, r roundStamp) []roundStamp {
	if len(list) >= recentStamps {
		n := copy(list, list[len(list)-recentStamps+1:])
		list = list[:n]
	}
	return append(list, r)
}
