package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// Records only for what changed: a hub vouches for its leaders in its
// pings.
//
// A node's hub pings each node its leaders' rounds go to every liveness
// interval (pings.go), and the answered pings keep each leader's acting and
// holding leases (lease.go). What a per-election record added to that, sent
// every HeartbeatInterval, was liveness for the followers: a follower's
// election deadline moved on with each record of its leader, and stopped
// moving once the leader stopped leading, hung, or its node went quiet.
// Sending, answering and acknowledging a record per election and interval
// was most of an idle node's per-election cost (docs/performance.md). So a
// hub sends a leader's record only when it says something new (a new term,
// a new follower, a changed answer epoch: slot.needBeat, hub.resync), and
// otherwise vouches for all its leaders at once:
//
//   - Every ping carries the hub's lead epoch (msgBeats.LeadEpoch). The
//     hub raises it whenever a leader it sent a record for may have stopped
//     leading that record's term: a step of it ended without the lead (it
//     stood down, or leads a newer term), its actor terminated, or it has
//     been in one step for longer than its step grace. The last one is the
//     hung leader: the node's hub pings whatever its actors do, so it must
//     stop vouching for a leader stuck in a step itself, or that leader's
//     followers would never replace it. After a raise the next tick carries
//     the record of every leader still leading, under the new epoch.
//   - The receiving hub notes, for each follower a record reaches, the
//     leader, term and lead epoch the record came under: the follower's
//     anchor. While the pings from the leader's node carry that epoch, each
//     moves the follower's election deadline on as a record of its leader
//     would (slot.dueAt, settleShared). Once the epoch has moved past the
//     anchor's, the deadline counts from the first ping that carried the
//     newer one: that is when the leader's hub stopped vouching.
//   - Every recordRefresh every leader's record goes anyway, so that a
//     follower whose anchor went with a lost message (a dropped connection
//     loses what was in flight) is anchored again within that.
//
// None of this is safety. Leases count acknowledged rounds and answered
// pings only; an election deadline moved on too far makes a follower
// campaign later, never a leader act longer.

// vouchHistory is how many superseded lead epochs of a node the board
// remembers with the moment they were superseded: more raises than this
// within one election timeout and a follower anchored to an older one
// counts its deadline from its anchor's own record instead (it campaigns
// sooner, never later).
const vouchHistory = 8

// vouchLog is what a node's board knows of another node's hub vouching for
// its leaders; pingBoard.mu guards it.
type vouchLog struct {
	epoch    uint64    // the lead epoch of the newest ping
	lastPing time.Time // when the newest ping came
	// superseded epochs, the newest at index (next-1) % vouchHistory
	past [vouchHistory]pastEpoch
	next int
}

// pastEpoch is a lead epoch of a node's hub and when a ping first carried
// a different one.
type pastEpoch struct {
	epoch uint64
	until time.Time
}

// noteVouch records a ping from node's hub carrying lead epoch epoch,
// arrived at now, and returns node's entry, which the followers anchored
// to node's leaders keep (slot.anchorPeer).
func (b *pingBoard) noteVouch(node gen.Atom, epoch uint64, now time.Time) *pingPeer {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peer(node)
	v := &p.vouch
	if v.lastPing.IsZero() == false && v.epoch != epoch {
		v.past[v.next%vouchHistory] = pastEpoch{epoch: v.epoch, until: now}
		v.next++
	}
	v.epoch = epoch
	if now.After(v.lastPing) {
		v.lastPing = now
	}
	return p
}

// vouchedUntil is the latest moment node's hub (p) vouched for a leader
// whose record came under lead epoch epoch at anchorAt: its newest ping
// while that is still its epoch, or when the epoch was superseded; anchorAt
// when the board no longer knows.
func (b *pingBoard) vouchedUntil(p *pingPeer, epoch uint64, anchorAt time.Time) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	v := &p.vouch
	at := anchorAt
	if v.epoch == epoch {
		if v.lastPing.After(at) {
			at = v.lastPing
		}
		return at
	}
	for i := 1; i <= min(v.next, vouchHistory); i++ {
		if past := v.past[(v.next-i)%vouchHistory]; past.epoch == epoch {
			if past.until.After(at) {
				at = past.until
			}
			break
		}
	}
	return at
}

// anchor is the leader, term and lead epoch of the newest record that
// reached a follower's slot (vouch.go), and when it came.
type anchor struct {
	leader gen.PID
	term   uint64
	epoch  uint64
	at     time.Time
	peer   *pingPeer // the leader's node on this node's board
}

// setAnchor notes a record of leader's term that came under lead epoch
// epoch at now, unless the slot is anchored to a newer term; s.mu is held.
func (s *slot) setAnchor(leader gen.PID, term, epoch uint64, now time.Time, peer *pingPeer) {
	if peer == nil || term < s.anchor.term {
		return
	}
	if a := s.anchor; a.leader != leader || a.term != term || a.epoch != epoch || a.peer != peer {
		s.visitSoon() // what the parked timer waits on changed (quietCell.waits): visit
	}
	s.anchor = anchor{leader: leader, term: term, epoch: epoch, at: now, peer: peer}
}

// vouchedAt is the latest moment the hub of the leader the slot follows
// vouched for it (vouch.go), zero when it is not anchored to that leader
// and term; s.mu is held.
func (s *slot) vouchedAt() time.Time {
	a := &s.anchor
	if s.board == nil || a.peer == nil || s.follow == (gen.PID{}) || s.follow != a.leader || s.followTerm != a.term {
		return time.Time{}
	}
	return s.board.vouchedUntil(a.peer, a.epoch, a.at)
}

// vouchedDue is what a follower's parked election timer waits on between
// two visits of the hub: the pings of its leader's node (peer; nil: not
// that) under one lead epoch. While that node's hub pings under epoch,
// the timer is due no earlier than slack after the newest of them
// (slot.dueAt takes the latest of that, the timer's own time and the
// newest record), so a tick can move the follower's quiet time on from
// the board alone, without the slot's lock or even its memory
// (hub.passFollower). At ten thousand elections those visits, each a
// lock, two board look-ups and several cache misses, every election
// timeout per follower, were a fifth of an idle node's CPU.
type vouchedDue struct {
	peer  *pingPeer
	epoch uint64
	slack time.Duration
}

// vouchSeen is a node's hub's lead epoch and newest ping as the board had
// them at the start of a tick.
type vouchSeen struct {
	epoch uint64
	last  time.Time
}

// vouchEpochs fills into with every node's vouchSeen.
func (b *pingBoard) vouchEpochs(into map[*pingPeer]vouchSeen) {
	clear(into)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, p := range b.peers {
		if p.vouch.lastPing.IsZero() == false {
			into[p] = vouchSeen{epoch: p.vouch.epoch, last: p.vouch.lastPing}
		}
	}
}

// vouchedDueNow returns what the slot's parked timers wait on until the
// hub's next visit: its leader's pings under the epoch the board had at
// this tick (seen), when that is all, and nothing otherwise (a zero
// vouchedDue); s.mu is held. Only a follower's slot waits on pings.
func (s *slot) vouchedDueNow(seen map[*pingPeer]vouchSeen) vouchedDue {
	ei, _ := parkIndex(timerElection)
	li, _ := parkIndex(timerLease)
	election, lease := &s.parked[ei], &s.parked[li]
	if election.active == false || election.sent || (lease.active && lease.sent == false) {
		return vouchedDue{}
	}
	a := &s.anchor
	if s.board == nil || a.peer == nil || s.follow == (gen.PID{}) || s.follow != a.leader || s.followTerm != a.term {
		return vouchedDue{}
	}
	if v, ok := seen[a.peer]; ok == false || v.epoch != a.epoch {
		return vouchedDue{}
	}
	return vouchedDue{peer: a.peer, epoch: a.epoch, slack: election.slack}
}

// leaseDue is what a leader's parked lease timer waits on between two
// visits of the hub, when that is all it waits on: the answers of its
// follower nodes' hubs to this hub's pings (pongOf), need of them, each
// under the answer epoch and from the answer index its link was
// acknowledged at. The timer is due no earlier than lease after the
// need-th latest of the newest such answers that name no election (what
// hubLease counts is never less), so a tick can move the leader's quiet
// time on from the board alone (hub.passLeader).
type leaseDue struct {
	lease time.Duration
	need  int
	links []leaseLink
}

// leaseLink is one follower node of a leaseDue.
type leaseLink struct {
	node        gen.Atom
	epoch, mark uint64
}

// answerKey is a node and one of its hub's answer epochs.
type answerKey struct {
	node  gen.Atom
	epoch uint64
}

// answerSeen is the newest answer of an answerKey that names no election,
// as the board had it when a tick began.
type answerSeen struct {
	sent  time.Time
	index uint64
}

// answersSeen fills into with every node's and epoch's answerSeen.
func (b *pingBoard) answersSeen(into map[answerKey]answerSeen) {
	clear(into)
	b.mu.Lock()
	defer b.mu.Unlock()
	for node, p := range b.peers {
		for i := 1; i <= min(p.nextEpoch, answerEpochs); i++ {
			e := &p.byEpoch[(p.nextEpoch-i)%answerEpochs]
			for j := 1; j <= min(e.n, answersPerEpoch); j++ {
				if a := &e.recent[(e.n-j)%answersPerEpoch]; a.sent.IsZero() == false && len(a.busy) == 0 {
					into[answerKey{node: node, epoch: e.epoch}] = answerSeen{sent: a.sent, index: a.index}
					break
				}
			}
		}
	}
}

// leaseDueNow returns what the leader's parked timers wait on until the
// hub's next visit, nil unless that is only its lease timer and its
// followers' answers; old is the previous one, returned when nothing
// changed. s.mu is held; the caller has checked that the leader needs no
// record at every full tick. A leader in a step is not one (s.lead is
// false from the step's start to its end): the hub visits it until its
// grace ends.
func (s *slot) leaseDueNow(old *leaseDue) *leaseDue {
	ei, _ := parkIndex(timerElection)
	li, _ := parkIndex(timerLease)
	election, lease := &s.parked[ei], &s.parked[li]
	if lease.active == false || lease.sent || (election.active && election.sent == false) {
		return nil
	}
	// (a step deactivates the parked timers; a hub that stopped vouching
	// for the leader set pingsUntil with vouched false)
	if s.lead == false || s.needBeat || s.vouched == false || s.everyBeat || s.board == nil || s.leadTerm == 0 {
		return nil
	}
	same := old != nil && old.lease == lease.lease && old.need == lease.need
	n := 0
	for i := range s.links {
		l := &s.links[i]
		if l.ack == 0 || l.epochSet == false {
			continue
		}
		link := leaseLink{node: l.node, epoch: l.epoch, mark: l.mark}
		same = same && n < len(old.links) && old.links[n] == link
		n++
	}
	if same && n == len(old.links) {
		return old
	}
	d := &leaseDue{lease: lease.lease, need: lease.need, links: make([]leaseLink, 0, n)}
	for i := range s.links {
		if l := &s.links[i]; l.ack != 0 && l.epochSet {
			d.links = append(d.links, leaseLink{node: l.node, epoch: l.epoch, mark: l.mark})
		}
	}
	return d
}
