package leader

import (
	"math/rand/v2"
	"slices"
	"strconv"
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
	// wheel files the cells by quiet time, so that most ticks read only
	// those due (quietwheel.go); dueCells is its last answer, reused
	wheel    quietWheel
	dueCells []*quietCell
	// the followers passed by on their leader's node's pings, a list per
	// node and lead epoch, in the order they were made (pingwaiters.go)
	waitLists map[waitKey]*pingWaiters
	waitOrder []*pingWaiters
	waitSeq   uint64
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
	// batchSize is the size of the recent msgBeats sent to each node (the
	// last one's, or half the previous figure if that is larger): a tick's
	// buffer of records to that node starts that large (appendRecord)
	batchSize map[gen.Atom]int
	malformed uint64 // messages from other hubs whose records did not all parse
	// answers read more than slowAnswerIntervals after their ping was
	// sent: the pings of a node busy or starved past its leases (inspect)
	slowAnswers uint64
	// by node: the keys its newest answer named, and the leaders among
	// them (resendNamed)
	namedLeaders map[gen.Atom]*namedLeaders
	namesHeard   map[gen.Atom]heardNames // by node: its newest answer's names (heardNames)
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
	h.namedLeaders = make(map[gen.Atom]*namedLeaders)
	h.namesHeard = make(map[gen.Atom]heardNames)
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
	h.waitLists = make(map[waitKey]*pingWaiters)
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
	cell.wheel, cell.slot = &h.wheel, s
	s.mu.Lock()
	s.wave = &h.wave
	s.quietUntil = cell // 0: the first tick visits it
	h.wheel.file(cell, 0)
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
	if s.quietUntil != nil {
		s.quietUntil.gone = true // the wheel drops it
		h.unwait(s.quietUntil)
	}
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
		// answers read more than slowAnswerIntervals liveness intervals
		// after their ping went: a leader's holding lease counts from the
		// ping, so answers this slow on both ends of a pair are how a
		// node that works through a crash wave loses its own leaders
		"ergo:hub_slow_answers": strconv.FormatUint(h.slowAnswers, 10),
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
