package leader

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// The liveness hub: one process per node, registered as hubName, that
// carries the heartbeat rounds of every election on the node to each other
// node in one message per interval (msgBeats), and answers the rounds it
// receives for the node's followers in one message (msgBeatAcks). What it
// may do for each actor is in the actor's slot (coalesce.go).
//
// Life cycle. The first election actor on a node starts the hub
// (Node().SpawnRegister); later ones find it by name. Each actor joins it
// with its slot and monitors it; the hub monitors the actors and drops the
// slot of one that terminates. While any actor is joined it ticks once per
// interval, and it sends only for the actors that lead; it ends when none
// has been joined for helperLinger (linger.go). If it fails,
// every actor sees its down, goes back to sending and answering per
// election, and joins a new hub (started by the first to try) a moment
// later: no permission outlives the hub, so nothing unsafe can follow.
// It shows in the process list under hubName.
//
// The other node's hub. A hub sends its beats for a node to that node's hub
// by name (a restarted node's hub is a new process). A node's rounds count as
// carried (leaders stop sending their own heartbeats there) while its hub
// has answered within peerTTL; when it stops, leaders are woken to send
// per election again.

// hubName is the registered name of a node's liveness hub.
const hubName gen.Atom = "leader_liveness"

// peerTTL is how long another node's hub may stay silent before its node
// is no longer carried: the longest hubPeerSilence of the joined actors.
func (h *hub) peerTTL() time.Duration {
	h.interval()
	return h.longestSilence
}

// maxBeatsPerMessage bounds what the hub accepts in one message: a peer
// cannot make it loop for long on garbage.
const maxBeatsPerMessage = 1 << 20

// Messages between an actor and its hub (local only, never encoded).
type (
	hubJoin struct{ Slot *slot }
	// hubJoined confirms a hubJoin; its sender is the hub.
	hubJoined struct{}
	// hubBeat hands the actor a round the hub could not answer for it.
	hubBeat struct {
		ClusterID string
		Term      uint64
		Leader    gen.PID
		Round     uint64
	}
	// hubCarryLost tells a leader that a node no longer gets its rounds
	// from the hub: it must send its own heartbeats there.
	hubCarryLost struct{}
	hubTick      struct{ Generation uint64 }
)

// hubPeer is another node's hub as this one knows it.
type hubPeer struct {
	pid     gen.PID
	heardAt time.Time
}

// hub is the liveness hub process.
type hub struct {
	process gen.Process
	clock   func() time.Time
	wave    failoverWave // the node's fast failovers (pacing.go)
	slots   map[gen.PID]*slot
	order   []*slot // the slots, by actor: deterministic sends, and no map lookup per slot per tick
	// orderQuiet[i] is order[i]'s quietUntil, in quietBlock-sized blocks
	// of adjacent cells (quietCell)
	orderQuiet []*quietCell
	quietFree  []quietCell // the rest of the newest block
	// vouchSeen is the board's vouching of every node as a tick began,
	// and answerSeen its answers to this hub's pings (passFollower,
	// passLeader)
	vouchSeen  map[*pingPeer]vouchSeen
	answerSeen map[answerKey]answerSeen
	byCluster  map[string][]*slot
	// keys (routes.go): byKey finds a slot by the key this hub gave it,
	// routes another hub's keys by the node they come from
	byKey        map[uint64]*slot
	slotsVersion uint64 // bumped at every join and leave: routes resolve again
	routes       map[gen.Atom]*peerRoutes
	peers        map[gen.Atom]hubPeer
	ticking      bool
	tickGen      uint64
	nextTick     time.Time
	// the shortest interval of the slots, recomputed after a join or leave
	shortest       time.Duration
	longestSilence time.Duration // the longest peerSilence of the slots
	sweptAt        time.Time     // the last forgetGonePeers
	intervalKnown  bool
	// batchSize is the size of the largest msgBeats sent to each node: a
	// tick's buffer of records to that node starts that large
	batchSize map[gen.Atom]int
	malformed uint64 // messages from other hubs whose records did not all parse
	// how the hub keeps up (inspect): ticks that came more than one
	// interval after they were due, the latest any came, and the longest
	// one tick's own work took
	lateTicks   uint64
	lateMax     time.Duration
	tickLongest time.Duration
	// slots the ticks visited (took the lock of), and those they passed
	// by instead (passFollower, passLeader)
	visits, passed uint64

	// pings (pings.go)
	board     *pingBoard
	pings     pingLog
	pingPeers map[gen.Atom]bool // the nodes the leaders' rounds go to, as of the last full tick
	pingRTT   map[gen.Atom]*pingRTT
	answers   map[gen.Atom]*pendingAnswer // answers for the next tick's messages
	freshCap  time.Duration               // the shortest freshCap of the slots
	nextFull  time.Time                   // when the next tick carries every leader's round
	resync    bool                        // the next tick carries every leader's round: a node's epoch changed
	lastEpoch map[gen.Atom]uint64         // each node's epoch in its last answer
	shortBeat time.Duration               // the shortest beatEvery of the slots

	linger linger // ends the hub when no election has joined it for a while (linger.go)

	// vouching (vouch.go)
	leadEpoch   uint64    // carried in every ping
	raise       bool      // a vouched leader may have stopped leading: raise at the next tick
	raises      uint64    // lead epochs raised (inspect)
	records     uint64    // leaders' records sent (inspect)
	nextRefresh time.Time // when the next full tick carries every leader's record anyway
	// each node of pingPeers as the last full tick found it: carried
	// (alive or not connected) or not (peersChanged)
	peerUp map[gen.Atom]bool
}

func factoryHub() gen.ProcessBehavior { return &hub{} }

func (h *hub) ProcessInit(process gen.Process, args ...any) error {
	h.process = process
	h.clock = time.Now
	// the board outlives no node, and no hub outlives its board
	retainNode(process.Node())
	h.board = boardOf(process.Node())
	for _, arg := range args {
		if clock, ok := arg.(func() time.Time); ok {
			h.clock = clock
		}
	}
	h.init()
	h.linger.idle(process, h.clock())
	return nil
}

// init makes the hub's tables.
func (h *hub) init() {
	h.slots = make(map[gen.PID]*slot)
	h.byCluster = make(map[string][]*slot)
	h.byKey = make(map[uint64]*slot)
	h.routes = make(map[gen.Atom]*peerRoutes)
	h.peers = make(map[gen.Atom]hubPeer)
	h.batchSize = make(map[gen.Atom]int)
	h.pingPeers = make(map[gen.Atom]bool)
	h.pingRTT = make(map[gen.Atom]*pingRTT)
	h.answers = make(map[gen.Atom]*pendingAnswer)
	// numbered from a random start: an answer sent by name to this node's
	// earlier hub must not match a ping of this one
	h.pings.seq = rand.Uint64() >> 2
	// likewise: a follower anchored to this node's earlier hub must not
	// find its epoch here (vouch.go)
	h.leadEpoch = rand.Uint64()>>2 | 1 // 0 is a hub that vouches for nothing
	h.lastEpoch = make(map[gen.Atom]uint64)
	h.peerUp = make(map[gen.Atom]bool)
	h.vouchSeen = make(map[*pingPeer]vouchSeen)
	h.answerSeen = make(map[answerKey]answerSeen)
	if h.board == nil {
		h.board = &pingBoard{peers: make(map[gen.Atom]*pingPeer)} // a hub of its own (tests)
	}
}

func (h *hub) ProcessKind() gen.ProcessKind { return gen.ProcessKindCustom }

func (h *hub) ProcessTerminate(reason error) { releaseNode(h.process.Node()) }

// ProcessRun serves joins, ticks and the other hubs' messages.
func (h *hub) ProcessRun() error {
	return serveHelper(h.process, func(m *gen.MailboxMessage, system bool) error {
		self := h.process.Node().Name()
		switch message := m.Message.(type) {
		case lingerCheck:
			if m.From == h.process.PID() && h.linger.expired(h.process, h.clock()) {
				return gen.TerminateReasonNormal
			}
		case hubJoin:
			if m.From.Node == self && message.Slot != nil && message.Slot.actor == m.From {
				h.join(message.Slot)
			}
		case hubTick:
			if m.From == h.process.PID() && message.Generation == h.tickGen {
				h.tick()
			}
		case gen.MessageDownPID:
			if system && m.From == message.PID {
				h.leave(message.PID)
			}
		case msgBeats, msgBeatAcks:
			if m.From.Node != self && m.From.Node != "" {
				h.fromPeer(m.From, message)
			}
		}
		return nil
	})
}

// fromPeer handles another node's hub's message, and then ticks if the
// tick is overdue by half an interval or more.
//
// Why. The tick comes by a timer, and the Go runtime runs timers late
// while the process's collector marks (golang/go#45632): with a heap of a
// few hundred megabytes on two cores, a mark phase of several hundred
// milliseconds ran this hub's tick more than a holding lease late while
// it went on answering the other hubs' pings, which arrive over the
// network and are served. Its leaders then had no answered ping within
// their holding lease, and 3,000 of them stood down at once (10,000
// elections on 3 node processes; Linux perf over the collapse showed the
// node in the collector's mark from the moment the leases stopped being
// renewed). The other nodes' pings come every interval, so a tick they
// bring in is at most an interval late. The late timer's own message is
// then of an older generation and ignored.
func (h *hub) fromPeer(from gen.PID, message any) {
	switch message := message.(type) {
	case msgBeats:
		h.beats(from, message)
	case msgBeatAcks:
		h.acks(from, message)
	}
	if h.ticking && h.clock().Sub(h.nextTick) >= h.interval()/2 {
		h.tick()
	}
}

// join adds an actor's slot.
func (h *hub) join(s *slot) {
	if _, ok := h.slots[s.actor]; ok == false {
		if err := h.process.Monitor(s.actor); err != nil {
			return // it is gone already
		}
		h.add(s)
	}
	h.process.Send(s.actor, hubJoined{})
	if h.ticking == false {
		h.ticking = true
		h.armTick()
	}
}

// add records a joined actor's slot and gives it its key.
func (h *hub) add(s *slot) {
	h.slots[s.actor] = s
	h.linger.busy()
	cell := h.quietCell()
	s.mu.Lock()
	s.wave = &h.wave
	s.quietUntil = cell // 0: the first tick visits it
	// this hub has vouched for nothing yet: a leader's first round here
	// goes as a record (vouch.go)
	s.needBeat, s.vouched = true, false
	s.mu.Unlock()
	h.intervalKnown = false
	// in order by actor, inserted rather than sorted: ten thousand joins
	// must not sort ten thousand slots each
	at, _ := slices.BinarySearchFunc(h.order, s, func(a, b *slot) int { return comparePID(a.actor, b.actor) })
	h.order = slices.Insert(h.order, at, s)
	h.orderQuiet = slices.Insert(h.orderQuiet, at, cell)
	h.byCluster[s.cluster] = append(h.byCluster[s.cluster], s)
	key := h.board.newKey()
	s.mu.Lock()
	s.key = key
	for i := range s.links {
		// answers recorded before name this slot by its old key: none
		// counts until an acknowledgement comes through this hub
		s.links[i].epochSet = false
	}
	s.mu.Unlock()
	h.byKey[key] = s
	h.slotsVersion++
}

// leave drops the slot of an actor that terminated.
func (h *hub) leave(actor gen.PID) {
	s, ok := h.slots[actor]
	if ok == false {
		return
	}
	delete(h.slots, actor)
	delete(h.byKey, s.key)
	s.mu.Lock()
	if s.vouched {
		h.raise = true // its followers must stop being vouched for (vouch.go)
	}
	s.mu.Unlock()
	h.slotsVersion++
	h.intervalKnown = false
	if at := slices.Index(h.order, s); at >= 0 {
		h.order = slices.Delete(h.order, at, at+1)
		h.orderQuiet = slices.Delete(h.orderQuiet, at, at+1)
	}
	list := slices.DeleteFunc(h.byCluster[s.cluster], func(x *slot) bool { return x == s })
	if len(list) == 0 {
		delete(h.byCluster, s.cluster)
	} else {
		h.byCluster[s.cluster] = list
	}
	if len(h.slots) == 0 {
		h.linger.idle(h.process, h.clock())
	}
}

// interval is the shortest liveness interval of the joined actors.
func (h *hub) interval() time.Duration {
	if h.intervalKnown == false {
		h.shortest, h.longestSilence, h.shortBeat, h.freshCap = 0, 0, 0, 0
		for _, s := range h.slots {
			if h.freshCap == 0 || s.freshCap < h.freshCap {
				h.freshCap = s.freshCap
			}
			h.longestSilence = max(h.longestSilence, s.peerSilence)
			if h.shortBeat == 0 || s.beatEvery < h.shortBeat {
				h.shortBeat = s.beatEvery
			}
			if h.shortest == 0 || s.interval < h.shortest {
				h.shortest = s.interval
			}
		}
		h.intervalKnown = true
	}
	return h.shortest
}

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
	// a tick passes h.order, whose quiet times are h.orderQuiet
	for i, s := range slots {
		if ticking == false && h.slots[s.actor] != s {
			continue // it terminated since the tick
		}
		if ticking {
			cell := h.orderQuiet[i]
			quiet := cell.until.Load()
			if everyLeader == false && now.UnixNano() < quiet {
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
			oldLeads = h.orderQuiet[i].leads
			h.orderQuiet[i].waits, h.orderQuiet[i].leads = vouchedDue{}, nil
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
				s.quiet().Store(s.quietFor(horizon))
				h.orderQuiet[i].waits = s.vouchedDueNow(h.vouchSeen)
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
			s.quiet().Store(quiet)
			if s.fullTicks == false {
				h.orderQuiet[i].leads = s.leaseDueNow(oldLeads)
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
		h.batchSize[b.node] = max(h.batchSize[b.node], len(b.beats))
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
// newest of those pings the board has. In the second case the quiet time
// moves on to slack after that ping, less the horizon: never later than a
// visit would have found (vouchedDue), so the timer fires when it did.
// The swap fails, and the slot is visited at the next tick, when its
// actor set its quiet time to 0 meanwhile. The ticks that look at every
// leader (everyLeader) pass followers by too: they have nothing for them.
func (h *hub) passFollower(cell *quietCell, quiet int64, now time.Time, horizon time.Duration) bool {
	w := &cell.waits
	if w.peer == nil {
		return false
	}
	if now.UnixNano() < quiet {
		return true
	}
	seen, ok := h.vouchSeen[w.peer]
	if ok == false || seen.epoch != w.epoch {
		return false
	}
	return h.moveQuiet(cell, quiet, seen.last.Add(w.slack).Add(-horizon), now)
}

// moveQuiet sets cell's quiet time from quiet to next, if next is ahead of
// now and the actor did not set it meanwhile (to 0), and counts the pass.
func (h *hub) moveQuiet(cell *quietCell, quiet int64, next, now time.Time) bool {
	if next.After(now) == false || cell.until.CompareAndSwap(quiet, next.UnixNano()) == false {
		return false
	}
	h.passed++
	return true
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
// node stopped being carried (the leader must be woken to send there
// itself), and whether the leader's record must go again although nothing
// changed (vouch.go): a follower node whose hub is alive has not
// acknowledged a round of the term through the hubs under its current
// epoch (its actor answered the record itself, being in a step or not
// knowing the leader yet, and the answered pings count for a follower
// only after such an ack), or its hub said lately that no actor there
// joined it for this election (only a record's answer tells when one
// has).
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
		if l.decided && l.carried && carried == false {
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
// the first record, sized from the largest batch to that node so far: most
// ticks carry pings alone, and a buffer made for every node at every tick
// was most of what an idle hub allocated.
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

// heard notes that the hub of from's node is alive.
func (h *hub) heard(from gen.PID) {
	h.peers[from.Node] = hubPeer{pid: from, heardAt: h.clock()}
}

// beats answers another node's rounds for the followers here that allow
// it, and hands the others to their actors.
func (h *hub) beats(from gen.PID, message msgBeats) {
	if message.Answer != 0 {
		h.acks(from, msgBeatAcks{Ping: message.Answer, Held: message.Held, Epoch: message.Epoch, AckEpoch: message.AckEpoch,
			Acks: message.Acks, Unserved: message.Unserved, Unknown: message.Unknown, Busy: message.Busy})
	}
	if message.Ping == 0 && len(message.Beats) == 0 {
		return // an answer alone
	}
	h.heard(from)
	now := h.clock()
	peer := intern(from.Node) // compared with every follower's leader
	// the ping's promise, before any of it is read, and the epoch the
	// acknowledgements below are made under (pings.go)
	h.board.pinged(peer, now.Add(time.Duration(min(message.Fresh, maxWireFresh))*time.Microsecond))
	ackEpoch := h.board.epochOf(peer)
	// what the ping vouches for (vouch.go); a hub whose pings carry no
	// lead epoch (0) sends every record every interval and vouches for
	// nothing
	var vouching *pingPeer
	if message.Ping != 0 && message.LeadEpoch != 0 {
		vouching = h.board.noteVouch(peer, message.LeadEpoch, now)
	}
	routes := h.routesFrom(from)
	// the acks are about as long as the beats: the same keys, terms and
	// rounds, a follower's ID where the beat had the leader's
	acks := make([]byte, 0, len(message.Beats))
	var unserved, unknown []byte
	r := wireReader{buf: message.Beats}
	for n := 0; n < maxBeatsPerMessage; n++ {
		b, ok := r.beat()
		if ok == false {
			break
		}
		route := routes.route(h, b.key, b.cluster)
		switch {
		case route == nil:
			unknown = appendKeys(unknown, b.key)
			continue
		case len(route.slots) == 0:
			unserved = appendKeys(unserved, b.key)
			continue
		}
		// a hub speaks only for its own node's leaders
		leader := gen.PID{Node: peer, ID: b.leaderID, Creation: from.Creation}
		for _, s := range route.slots {
			s.mu.Lock()
			s.setAnchor(leader, b.term, message.LeadEpoch, now, vouching)
			answered := s.follow == leader && s.followTerm == b.term
			if answered {
				// how this hub's answers name the election while it is in
				// a step (pings.go)
				s.followKey, s.followKeyLeader, s.followKeyTerm = stepKey{hub: from, key: b.key}, leader, b.term
				// bound to it now: no longer named for having left it
				h.board.rebound(peer, s.followKey, s.actor.ID)
				s.beatAt = now
				// the round's F, which the follower's promise keeps after
				// a sign of loss (election.extendFresh); the actor bounds it
				if end := now.Add(time.Duration(min(b.fresh, maxWireFresh)) * time.Microsecond); end.After(s.freshEnd) {
					s.freshEnd = end
				}
			}
			s.mu.Unlock()
			if answered {
				acks = appendAck(acks, wireAck{key: b.key, term: b.term, round: b.round, followerID: s.actor.ID})
				continue
			}
			h.process.Send(s.actor, hubBeat{ClusterID: route.cluster, Term: b.term, Leader: leader, Round: b.round})
		}
	}
	routes.sweep()
	if r.malformed {
		h.malformed++
	}
	answer := &pendingAnswer{to: from, at: now, ping: message.Ping, ackEpoch: ackEpoch, acks: acks, unserved: unserved, unknown: unknown}
	if old := h.answers[peer]; old != nil {
		h.sendAnswer(peer, old) // the peer ticks faster: no merging
		delete(h.answers, peer)
	}
	if h.ticking && len(message.Beats) == 0 {
		// a ping alone: answered with the next tick's message there. Rounds
		// are answered at once: a leader that just won (or a new follower)
		// needs its first acknowledgement before round 1's lease runs out
		h.answers[peer] = answer
		return
	}
	h.sendAnswer(peer, answer)
}

// pendingAnswer is an answer to another hub's ping and rounds, waiting
// for the next tick's message to that node.
type pendingAnswer struct {
	to                      gen.PID
	at                      time.Time // when the ping came
	ping, ackEpoch          uint64
	acks, unserved, unknown []byte
}

// held is how long the answer waited, in microseconds.
func (a *pendingAnswer) held(now time.Time) uint64 {
	return uint64(max(now.Sub(a.at), 0) / time.Microsecond)
}

// sendAnswer sends an answer on its own.
func (h *hub) sendAnswer(node gen.Atom, a *pendingAnswer) {
	m := msgBeatAcks{Ping: a.ping, Held: a.held(h.clock()), AckEpoch: a.ackEpoch, Acks: a.acks, Unserved: a.unserved, Unknown: a.unknown}
	m.Epoch, m.Busy = h.answerEpoch(node, a.to) // last: it names the followers of leaders there in a step
	h.sendConnected(node, a.to, m)
}

// answerEpoch is the Epoch and Busy of an answer to hub, node's hub, sent
// now (pingBoard.answerEpoch).
func (h *hub) answerEpoch(node gen.Atom, hub gen.PID) (uint64, []byte) {
	epoch, busy := h.board.answerEpoch(node, hub)
	if len(busy) == 0 {
		return epoch, nil
	}
	return epoch, appendKeys(nil, busy...)
}

// resendNamed has a leader's record go at the next tick when the answers
// from node name its follower there twice in a row: that follower is no
// longer in a step but has left it (pings.go, pingPeer.left), and only an
// acknowledgement of the leader's record, which it gives if it follows
// the leader again, lets that node's pings count for the leader again.
// Only the leaders named pay for it, where a raise of that node's epoch
// would make every leader here send its record. At most once per liveness
// interval per leader: a follower that follows another leader answers
// the record itself (hubBeat), and tells the leader of its newer term.
func (h *hub) resendNamed(node gen.Atom, busy []uint64, now time.Time) {
	if len(busy) == 0 {
		return
	}
	for _, key := range h.board.namedAgain(node, busy) {
		s := h.byKey[key]
		if s == nil {
			continue
		}
		s.mu.Lock()
		if s.lead && s.needBeat == false && now.Sub(s.namedResend) >= s.interval {
			s.needBeat, s.namedResend = true, now
			s.quiet().Store(0) // the next tick visits it
		}
		s.mu.Unlock()
	}
}

// sendConnected sends to another node only while the framework has a
// connection to it. A send to a node that is not connected makes the
// framework dial it on the sender's goroutine, and a dial to a node behind
// a firewall that drops packets hangs until the dial times out: the hub
// would stop for every election on the node (their leases would run out).
// Nothing is lost by skipping: a node the hub does not reach is not carried,
// and its leaders send there themselves, through their dialers.
func (h *hub) sendConnected(node gen.Atom, to any, message any) {
	if _, err := h.process.Node().Network().Node(node); err != nil {
		return
	}
	h.process.Send(to, message)
}

// acks records the acknowledgements another node's hub sent for its
// followers, and what it could not answer.
func (h *hub) acks(from gen.PID, message msgBeatAcks) {
	h.heard(from)
	now := h.clock()
	peer := intern(from.Node) // compared with every leader's links
	malformed := false
	stamp := pingStamp{at: h.pings.sentAt(message.Ping)}
	if stamp.at.IsZero() == false {
		rtt := h.rttOf(peer)
		stamp.fresh = rtt.sentFresh(message.Ping)
		// the network's round trip: the time the answer waited for the
		// other hub's tick is not the network's, and F covers the network
		rtt.sample(now.Sub(stamp.at) - time.Duration(min(message.Held, maxWireFresh))*time.Microsecond)
	}
	var busy []uint64
	if len(message.Busy) > 0 {
		r := wireReader{buf: message.Busy}
		for k, ok := r.nextKey(); ok; k, ok = r.nextKey() {
			if len(busy) == maxBusyKeys {
				stamp = pingStamp{} // it names too many to be read: it counts for nobody
				break
			}
			busy = append(busy, k)
		}
		if r.malformed {
			malformed, stamp = true, pingStamp{} // whom it names is not known
		}
	}
	index := h.board.answered(peer, message.Epoch, stamp, busy)
	if last, ok := h.lastEpoch[peer]; ok && last != message.Epoch {
		h.resync = true // its followers must acknowledge a round again (pings.go)
	}
	h.lastEpoch[peer] = message.Epoch
	h.resendNamed(peer, busy, now)
	// each record's key is one this hub gave; whatever the other hub says
	// about it, it says only about its own node's followers (link(peer))
	each := func(buf []byte, record func(r *wireReader) (uint64, bool), apply func(l *followerLink, s *slot)) {
		r := wireReader{buf: buf}
		for n := 0; n < maxBeatsPerMessage; n++ {
			key, ok := record(&r)
			if ok == false {
				break
			}
			s := h.byKey[key]
			if s == nil {
				continue // it left meanwhile
			}
			s.mu.Lock()
			if l := s.link(peer); l != nil {
				apply(l, s)
			}
			s.mu.Unlock()
		}
		malformed = malformed || r.malformed
	}
	keyOf := func(r *wireReader) (uint64, bool) { return r.nextKey() }
	each(message.Unserved, keyOf, func(l *followerLink, s *slot) {
		l.unserved, l.namedBy = now, from
	})
	each(message.Unknown, keyOf, func(l *followerLink, s *slot) {
		l.namedBy = gen.PID{} // its next rounds name the election again
	})
	var a wireAck
	each(message.Acks, func(r *wireReader) (uint64, bool) {
		var ok bool
		a, ok = r.ack()
		return a.key, ok
	}, func(l *followerLink, s *slot) {
		// a hub speaks only for its own node's followers
		follower := gen.PID{Node: peer, ID: a.followerID, Creation: from.Creation}
		if l.pid != follower {
			return
		}
		l.namedBy = from
		if s.leadTerm == a.term && a.round <= s.round && a.round > l.ack {
			l.ack, l.ackAt, l.ackSent = a.round, now, s.stampOf(a.round)
			l.epoch, l.mark, l.epochSet = message.AckEpoch, index, true
			s.acksVersion++
		}
	})
	if malformed {
		h.malformed++
	}
}

// inspect answers the observer (Node.Inspect): what the hub carries.
func (h *hub) inspect() map[string]string {
	leading, delegated := 0, 0
	for _, s := range h.slots {
		s.mu.Lock()
		if s.lead {
			leading++
		}
		if s.follow != (gen.PID{}) {
			delegated++
		}
		s.mu.Unlock()
	}
	now := h.clock()
	var peers []string
	for node, p := range h.peers {
		if now.Sub(p.heardAt) < h.peerTTL() {
			peers = append(peers, string(node))
		}
	}
	return map[string]string{
		"ergo:hub_elections":    strconv.Itoa(len(h.slots)),
		"ergo:hub_leading":      strconv.Itoa(leading),
		"ergo:hub_delegated":    strconv.Itoa(delegated),
		"ergo:hub_peers":        joinSorted(peers),
		"ergo:hub_interval":     h.interval().String(),
		"ergo:hub_malformed":    strconv.FormatUint(h.malformed, 10),
		"ergo:hub_late_ticks":   strconv.FormatUint(h.lateTicks, 10),
		"ergo:hub_late_max":     h.lateMax.String(),
		"ergo:hub_tick_longest": h.tickLongest.String(),
		// elections the ticks looked at (took the lock of), and those
		// they passed by instead because the pings and their answers had
		// moved their timers on (passFollower, passLeader): on an idle
		// node the visits grow only at the refreshes and the passes
		// about by the elections every election timeout
		"ergo:hub_visits": strconv.FormatUint(h.visits, 10),
		"ergo:hub_passed": strconv.FormatUint(h.passed, 10),
		// records sent and lead epochs raised (vouch.go): records
		// growing about as fast as the leaders times the refreshes means
		// nothing is changing; raises growing means leaders stand down
		// or hang in steps longer than their grace
		"ergo:hub_records":      strconv.FormatUint(h.records, 10),
		"ergo:hub_vouch_raises": strconv.FormatUint(h.raises, 10),
		// answer epochs raised (pings.go): each makes the leaders of
		// that node resync their followers here
		"ergo:hub_answer_raises": strconv.FormatUint(h.board.raisedSoFar(), 10),
	}
}

func comparePID(a, b gen.PID) int {
	switch {
	case a.Node != b.Node:
		if a.Node < b.Node {
			return -1
		}
		return 1
	case a.ID != b.ID:
		if a.ID < b.ID {
			return -1
		}
		return 1
	}
	return 0
}

// rttOf returns the round-trip record of node's pings.
func (h *hub) rttOf(node gen.Atom) *pingRTT {
	r := h.pingRTT[node]
	if r == nil {
		r = &pingRTT{}
		h.pingRTT[intern(node)] = r
	}
	return r
}

// pingFresh is the F of the next ping to node (pingRTT): freshness at the
// shortest liveness interval, longer when the round trips there are long,
// never past the shortest freshCap.
func (h *hub) pingFresh(node gen.Atom) time.Duration {
	base := 3 * h.interval()
	want := base
	if r := h.pingRTT[node]; r != nil {
		want = 2*r.smooth + 2*h.interval()
	}
	return max(base, min(want, h.freshCap))
}
