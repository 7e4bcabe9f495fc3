package leader

import (
	"bytes"
	"slices"
	"time"

	"ergo.services/ergo/gen"
)

// The other hubs' messages: their rounds answered for the followers here
// (beats), and the acknowledgements of this hub's rounds (acks).

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
// now (pingBoard.answerNames).
func (h *hub) answerEpoch(node gen.Atom, hub gen.PID) (uint64, []byte) {
	return h.board.answerNames(node, hub)
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
//
// Most names are of elections whose leader here stood down: after a cold
// start or a failover, followers there that left a leader here for
// another one for good are named in every answer until that node's epoch
// is raised, thousands of them at 10,000 elections, two hundred answers
// a second. Reading each one's slot at every answer (a cache miss each)
// was most of an idle node's work on answers, so the leaders among the
// names (slot.mayLead) are found once, and kept while the answers name
// the same keys and no slot of the node began to lead
// (pingBoard.leadsGained): the same leaders are looked at as before.
func (h *hub) resendNamed(node gen.Atom, busy []uint64, now time.Time) {
	c := h.namedLeaders[node]
	if c == nil {
		c = &namedLeaders{}
		h.namedLeaders[node] = c
	}
	if gained := h.board.leadsGained.Load(); gained != c.gained || slices.Equal(busy, c.named) == false {
		c.named, c.leaders, c.gained = busy, c.leaders[:0], gained
		for _, key := range busy {
			if s := h.byKey[key]; s != nil && s.mayLead.Load() {
				c.leaders = append(c.leaders, key)
			}
		}
	}
	if len(c.leaders) == 0 {
		return
	}
	for _, key := range h.board.namedAgain(node, c.leaders) {
		s := h.byKey[key]
		if s == nil {
			continue
		}
		s.mu.Lock()
		if s.lead && s.needBeat == false && now.Sub(s.namedResend) >= s.interval {
			s.needBeat, s.namedResend = true, now
			s.visitSoon()
		}
		s.mu.Unlock()
	}
}

// heardNames reads the keys an answer from node names (its Busy), sorted.
// readable is false when they are more than maxBusyKeys or do not parse
// (garbled): keys are then those read before, in the order sent.
//
// Most answers name what the one before named, in the same bytes (the
// board packs its names once, pingPeer.packedLeft): those are not read
// again, and the list is shared, so nobody changes it. Keeping wire is
// safe because nobody changes it either: the framework decodes every
// []byte of a message from another node into a copy of its own (its
// network buffers go back to a pool), and a sender in this OS process
// hands over the board's packed list, which is never written again.
func (h *hub) heardNames(node gen.Atom, wire []byte) (keys []uint64, readable, garbled bool) {
	if len(wire) == 0 {
		return nil, true, false
	}
	if last, ok := h.namesHeard[node]; ok && bytes.Equal(last.wire, wire) {
		return last.keys, true, false
	}
	delete(h.namesHeard, node)
	r := wireReader{buf: wire}
	for k, ok := r.nextKey(); ok; k, ok = r.nextKey() {
		if len(keys) == maxBusyKeys {
			return keys, false, false
		}
		keys = append(keys, k)
	}
	if r.malformed {
		return keys, false, true
	}
	slices.Sort(keys)
	h.namesHeard[node] = heardNames{wire: wire, keys: keys}
	return keys, true, false
}

// heardNames are the newest names read from a node's answers, as they
// came and as read.
type heardNames struct {
	wire []byte
	keys []uint64
}

// namedLeaders are the keys the newest answer from a node named (the
// board's list, which nobody changes), which of them were of slots that
// led then, and the board's leadsGained then (resendNamed).
type namedLeaders struct {
	named, leaders []uint64
	gained         uint64
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

// slowAnswerIntervals is how many liveness intervals after its ping an
// answer counts as slow (hub.slowAnswers): 50 ms at the defaults, ten
// times a round trip between two busy hubs on one network.
const slowAnswerIntervals = 10

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
		if now.Sub(stamp.at) > slowAnswerIntervals*h.interval() {
			h.slowAnswers++
		}
	}
	busy, readable, garbled := h.heardNames(peer, message.Busy)
	if readable == false {
		// whom it names is not known, or it names too many to be read: it
		// counts for nobody
		stamp = pingStamp{}
	}
	malformed = malformed || garbled
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
