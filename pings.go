package leader

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
)

// Node-level liveness: pings between hubs, and the epochs that make them
// count for each election.
//
// An acting lease needs a quorum's acknowledgement of a round sent within F
// (lease.go), so a leader needs a round acknowledged every liveness
// interval (5 ms at the defaults). Carrying a record per election that
// often costs in proportion to the elections. What must be fresh is not
// each election's record but the promise behind it, and every election on
// node B that follows a leader on node A promises for the same reason at
// the same moment. So:
//
//   - Every msgBeats a hub sends is a ping: its number and F. The
//     per-election records go along only every HeartbeatInterval, or when
//     an election needs one (a new term, a new follower, a changed epoch).
//   - The hub on B answers each ping with the ping's number and B's epoch
//     for A, a counter raised whenever an election on B that followed a
//     leader on A may have stopped doing so, and with the epoch under which
//     it made the acknowledgements the answer carries. Before it reads
//     anything else of the ping, it notes the ping's end (its arrival plus
//     its F) as pongEnd. A hub that ticks answers a ping without rounds
//     with its next tick's message to A (msgBeats.Answer), so that an idle
//     node pair exchanges one message each way per interval, and says how
//     long it held it (Held), which A's measure of the network's round
//     trip leaves out; rounds are answered at once.
//   - An election on B withdraws the hub's permission to acknowledge for it
//     at the start of every step (coalesce.go); if it followed a leader on
//     A, it then counts as unbound until the end of the step, and it reads
//     pongEnd into its promise (election.pongPromise). An answer given
//     while an election is unbound names it (Busy: the key A's hub gave
//     its leader's record, which the election noted with its last
//     acknowledgement); only when the election cannot be named that way
//     (it has acknowledged nothing through A's current hub for this
//     leader and term) is the epoch raised first. A step that ends with
//     another permission than the one it withdrew (another leader, another
//     term, or none) leaves the election named by that key in every later
//     answer (pingPeer.left) until the hub acknowledges that leader's
//     record for it again, which it does only while the election is bound
//     to that leader; only when it cannot be named (its key is unknown)
//     does the end of the step raise the epoch. A new election actor
//     raises every epoch of its node before it can grant anything (the
//     dead process it replaces cannot).
//   - The leader on A counts a ping toward its acting lease, from the
//     ping's send time for the ping's F, when the answer came no earlier
//     than the answer carrying B's newest acknowledgement of its own round,
//     its epoch is the one that acknowledgement was made under, and it does
//     not name this leader's key (slot.answeredPings). Each hub numbers its
//     pings from a random start, so an answer meant for a node's earlier
//     hub matches no ping of its new one, and keys are unique for the
//     node's process (pingBoard.newKey), so a name meant for one leader
//     never clears another.
//
// Then every ping a leader counts for B was answered while that election on
// B was bound to it, and its end is inside the promise that election keeps:
// an election on B that grants anything, or follows anyone else, does so in
// a step that read pongEnd after the last answer that could count for it.
// The argument of docs/safety.md holds with answered pings as rounds.
//
// Naming rather than raising matters with many elections: with ten
// thousand of them some election is always in a step, so an epoch raised
// for any of them moved at every answer, no acknowledgement's epoch lasted
// long enough to count, and every leader had to send its record again,
// which put its followers in a step again (docs/coalescing.md). The same
// holds for the elections that change what they follow: while thousands
// of them start or fail over, an epoch raised at each change made every
// other leader of the node resend its record at every tick.
//
// So every answer a leader counts for a follower on B, unless it names
// the follower, was given while that follower was bound to it: from the
// start of each of its steps the follower is named (unbound), from the
// end of a step that changed its permission on (left), and that name goes
// only when the hub acknowledges the leader's record for it, which it
// does only under the follower's permission for that leader and term.

// pingBoard is one node's record of pings, shared by its hub and its
// election actors (goroutines of one OS process, hence the mutex).
type pingBoard struct {
	mu    sync.Mutex
	peers map[gen.Atom]*pingPeer
	keys  uint64 // the last key given (newKey)
	// lateAt is when the node's hub last ticked more than an interval
	// late, in unix nanoseconds on the hub's clock: the node's processes
	// wait for the CPU, and campaign admission backs off (pacing.go)
	lateAt atomic.Int64
	// leadsGained counts the node's slots that began to lead (slot.share):
	// the hub looks again for leaders among the names of an answer it
	// has seen before when it moved (hub.resendNamed)
	leadsGained atomic.Uint64
	// epochs raised so far, over every node (inspect): each makes the
	// leaders there resync, so a count that keeps growing on an idle node
	// means its elections keep changing what they follow
	raised uint64
	// the node's last hub whose end an election warned of: one warning
	// per node, not one per election (Actor.hubDown)
	endWarned gen.PID
}

// firstToSeeHubEnd reports whether hub's end has not been warned of on
// this node yet, and notes that it is now.
func (b *pingBoard) firstToSeeHubEnd(hub gen.PID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.endWarned == hub {
		return false
	}
	b.endWarned = hub
	return true
}

// pingPeer is what a board holds about one other node.
type pingPeer struct {
	// this node answering the pings of node's hub
	epoch uint64 // raised when an election here may stop following a leader on node
	// elections here that followed a leader on node and are in a step, by
	// that leader's record key (a zero key: not known)
	unbound map[stepKey]int
	// elections here that stopped following the leader keyed so at the
	// end of a step, until the hub acknowledges that leader's record for
	// them again (rebound); named in every answer like the unbound. A
	// raise of the epoch retires them all: no acknowledgement made before
	// it counts.
	left map[leftName]struct{}
	// leftPacked is left as the answers to one hub carry it, built again
	// only after left changed: an idle node keeps thousands of names after
	// a cold start, and walking, sorting and packing them for every
	// answer cost it more than anything else it did while idle
	leftPacked packedNames
	pongEnd    time.Time // the latest end of an answered ping's F

	// this node's hub pinging node's hub
	replies uint64 // answers counted from node's hub
	// the newest answers of each of node's recent epochs whose ping was
	// known, the newest epoch at index (nextEpoch-1) % answerEpochs
	byEpoch   [answerEpochs]epochAnswers
	nextEpoch int

	// node's hub vouching for its leaders (vouch.go)
	vouch vouchLog
}

// packedNames are the keys of a pingPeer's left names given by hub,
// sorted and packed as an answer's Busy. wire is never changed once built
// (answers in flight share it); valid is false when left changed since.
type packedNames struct {
	hub   gen.PID
	valid bool
	count int
	wire  []byte
}

// packedLeft returns p's left names given by hub, packed; b.mu is held.
func (p *pingPeer) packedLeft(hub gen.PID) *packedNames {
	c := &p.leftPacked
	if c.valid && c.hub == hub {
		return c
	}
	keys := make([]uint64, 0, len(p.left))
	for name := range p.left {
		if name.key.hub == hub {
			// the other keys are of node's earlier hub: the leaders of this
			// one count no acknowledgement made before they joined it
			// (hub.add)
			keys = append(keys, name.key.key)
		}
	}
	// sorted, so that the same names make the same bytes, which the
	// leaders' hub reads once (hub.heardNames)
	slices.Sort(keys)
	*c = packedNames{hub: hub, valid: true, count: len(keys), wire: appendKeys(nil, keys...)}
	return c
}

// pongSeen is an answer to a ping: the epoch it carried, its place among
// the answers from its node, when the ping was sent, with its F, and the
// keys of this node's leaders whose followers there were in a step when it
// was given (it counts for none of them).
type pongSeen struct {
	epoch uint64
	index uint64
	sent  time.Time
	fresh time.Duration
	busy  []uint64
}

// names reports whether the answer was given while the follower of the
// leader keyed key was in a step. busy is sorted (answered), so that a
// tick that looks at thousands of leaders does not scan a list of
// thousands for each.
func (a *pongSeen) names(key uint64) bool {
	_, found := slices.BinarySearch(a.busy, key)
	return found
}

// maxBusyKeys bounds the elections one answer names. An answer that would
// name more raises the epoch instead, and one that comes naming more
// counts for nobody: a peer cannot make a hub keep or search an unbounded
// list, and a list cut short would count for the elections cut off.
const maxBusyKeys = 1 << 14

// leftName is an election that left the leader keyed key: the election's
// actor (its process ID on this node) with the key, so that the leader's
// record acknowledged for another election here clears nothing of it.
type leftName struct {
	key      stepKey
	follower uint64
}

// maxLeftKeys bounds the elections a board names for having left their
// leader (pingPeer.left): past it the epoch is raised instead, which
// retires every name. Keys of leaders that are gone, or of another node's
// earlier hub, are never acknowledged again, and go the same way.
const maxLeftKeys = maxBusyKeys / 2

// answersPerEpoch is how many of the newest answers of one epoch a board
// keeps: an election named by the newest (in a step) counts the newest
// before it that does not name it. A step longer than that many liveness
// intervals is a stall, which the lease is for.
const answersPerEpoch = 4

// epochAnswers are the newest answers of one epoch, the newest at index
// (n-1) % answersPerEpoch.
type epochAnswers struct {
	epoch  uint64
	n      int
	recent [answersPerEpoch]pongSeen
}

// stepKey names the election a follower here follows as the leader's
// node's hub does: that hub, and the key it gave the leader's record
// (routes.go). The zero key: not known.
type stepKey struct {
	hub gen.PID
	key uint64
}

// pingBoards holds each running node's board (nodestate.go forgets it with
// the node).
var pingBoards = struct {
	sync.Mutex
	of map[gen.Node]*pingBoard
}{of: make(map[gen.Node]*pingBoard)}

// boardOf returns node's board, making it if it has none.
func boardOf(node gen.Node) *pingBoard {
	pingBoards.Lock()
	defer pingBoards.Unlock()
	b := pingBoards.of[node]
	if b == nil {
		b = &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
		pingBoards.of[node] = b
	}
	return b
}

func forgetBoard(node gen.Node) {
	pingBoards.Lock()
	delete(pingBoards.of, node)
	pingBoards.Unlock()
}

// peer returns the entry of node; b.mu is held. A new entry's epoch starts
// at random, so that no answer of an earlier board (an earlier OS process
// of this node) carries an epoch a leader still holds.
func (b *pingBoard) peer(node gen.Atom) *pingPeer {
	p := b.peers[node]
	if p == nil {
		p = &pingPeer{epoch: rand.Uint64() >> 1}
		b.peers[intern(node)] = p
	}
	return p
}

// newKey gives a hub's new slot its key: unique for this board's life, so
// for every hub this OS process of the node runs, and an answer that names
// a key given by the node's earlier hub names no slot of the current one.
func (b *pingBoard) newKey() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys++
	return b.keys
}

// noteLate records that the node's hub ticked late at at.
func (b *pingBoard) noteLate(at time.Time) { b.lateAt.Store(at.UnixNano()) }

// lateWithin reports whether the node's hub ticked late within d before
// now.
func (b *pingBoard) lateWithin(now time.Time, d time.Duration) bool {
	at := b.lateAt.Load()
	return at != 0 && now.UnixNano()-at < int64(d)
}

// raisedSoFar is how many epochs the board raised.
func (b *pingBoard) raisedSoFar() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.raised
}

// raiseAll raises every epoch: a new election actor starts here, and no
// answer given before may count for an election of this node any more.
func (b *pingBoard) raiseAll() {
	b.mu.Lock()
	for _, p := range b.peers {
		b.raise(p)
	}
	b.mu.Unlock()
}

// pinged notes a ping from node's hub, which asks for a promise until end,
// before anything of it is read.
func (b *pingBoard) pinged(node gen.Atom, end time.Time) {
	b.mu.Lock()
	p := b.peer(node)
	if end.After(p.pongEnd) {
		p.pongEnd = end
	}
	b.mu.Unlock()
}

// epochOf is node's epoch now, as acknowledgements made now carry it.
func (b *pingBoard) epochOf(node gen.Atom) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peer(node).epoch
}

// answerNames is the epoch an answer to hub, node's hub, carries now, and
// the keys of that hub's leaders whose followers here are in a step or
// left them, packed as the answer's Busy. The epoch is raised first when
// an election in a step cannot be named to hub (its key is unknown, or was
// given by another hub), or when the answer would name more than
// maxBusyKeys.
func (b *pingBoard) answerNames(node gen.Atom, hub gen.PID) (uint64, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peer(node)
	var busy []byte
	for k := range p.unbound {
		if k.key == 0 || k.hub != hub {
			b.raise(p)
			return p.epoch, nil // a new epoch: no acknowledgement made before counts it
		}
		busy = appendKeys(busy, k.key)
	}
	left := p.packedLeft(hub)
	if len(p.unbound)+left.count > maxBusyKeys {
		b.raise(p)
		return p.epoch, nil
	}
	if len(busy) == 0 {
		return p.epoch, left.wire
	}
	return p.epoch, append(busy, left.wire...)
}

// raise moves p's epoch on, which retires the names of the elections that
// left their leader; b.mu is held.
func (b *pingBoard) raise(p *pingPeer) {
	p.epoch++
	b.raised++
	clear(p.left)
	p.leftPacked.valid = false
}

// unbind counts an election that followed a leader on node as in a step,
// named by key, and returns the end of the pings answered so far, which
// its promise keeps.
func (b *pingBoard) unbind(node gen.Atom, key stepKey) time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peer(node)
	if p.unbound == nil {
		p.unbound = make(map[stepKey]int)
	}
	p.unbound[key]++
	return p.pongEnd
}

// rebind ends the step of the election of actor follower that unbind
// counted under key. changed says it granted another permission than the
// one the step withdrew: the election is named under key from now on
// (left), or, when key is not known or too many are named, the epoch is
// raised.
func (b *pingBoard) rebind(node gen.Atom, key stepKey, follower uint64, changed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peer(node)
	if p.unbound[key] <= 1 {
		delete(p.unbound, key)
	} else {
		p.unbound[key]--
	}
	if changed == false {
		return
	}
	if key.key == 0 || len(p.left) >= maxLeftKeys {
		b.raise(p)
		return
	}
	if p.left == nil {
		p.left = make(map[leftName]struct{})
	}
	p.left[leftName{key: key, follower: follower}] = struct{}{}
	p.leftPacked.valid = false
}

// rebound notes that the hub acknowledged the record of the leader on node
// keyed key for the election of actor follower, bound to that leader: it
// follows it again, and answers need not name it for having left it.
func (b *pingBoard) rebound(node gen.Atom, key stepKey, follower uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peers[node]
	if p == nil {
		return
	}
	name := leftName{key: key, follower: follower}
	if _, named := p.left[name]; named {
		// every acknowledgement comes here: only one that ends a name
		// makes the answers pack their names again
		delete(p.left, name)
		p.leftPacked.valid = false
	}
}

// answerEpochs is how many of another node's recent epochs a board keeps
// the newest answer of. An answer counts for a follower whose ack was made
// under its epoch whatever came after it (every answer of that epoch was
// given while the node's elections that followed a leader here were
// bound), so a leader keeps the newest of those while the other node's
// epoch moves on: in a crash wave, every step of an election there raises
// it, and the leaders here must not lose the pings of the epoch before
// (they would stand down: vouch.go sends no record while nothing changed).
const answerEpochs = 8

// answered records an answer from node's hub; ping is the stamp of the
// ping it answers (zero when it is no longer known), busy the keys it
// names. It returns the answer's index, which the acknowledgements it
// carries are marked with.
func (b *pingBoard) answered(node gen.Atom, epoch uint64, ping pingStamp, busy []uint64) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peer(node)
	p.replies++
	if ping.at.IsZero() {
		return p.replies
	}
	if slices.IsSorted(busy) == false {
		slices.Sort(busy) // a list the hub read once is shared (hub.heardNames)
	}
	seen := pongSeen{epoch: epoch, index: p.replies, sent: ping.at, fresh: ping.fresh, busy: busy}
	var e *epochAnswers
	if p.nextEpoch > 0 && p.byEpoch[(p.nextEpoch-1)%answerEpochs].epoch == epoch {
		e = &p.byEpoch[(p.nextEpoch-1)%answerEpochs]
	} else {
		e = &p.byEpoch[p.nextEpoch%answerEpochs]
		*e = epochAnswers{epoch: epoch}
		p.nextEpoch++
	}
	e.recent[e.n%answersPerEpoch] = seen
	e.n++
	return p.replies
}

// answerOf returns the newest answer from node's hub of epoch epoch whose
// ping is known and that does not name key, if the board still keeps it.
func (b *pingBoard) answerOf(node gen.Atom, epoch, key uint64) (pongSeen, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peers[node]
	if p == nil {
		return pongSeen{}, false
	}
	for i := 1; i <= min(p.nextEpoch, answerEpochs); i++ {
		e := &p.byEpoch[(p.nextEpoch-i)%answerEpochs]
		if e.epoch != epoch {
			continue
		}
		for j := 1; j <= min(e.n, answersPerEpoch); j++ {
			if a := e.recent[(e.n-j)%answersPerEpoch]; a.sent.IsZero() == false && a.names(key) == false {
				return a, true
			}
		}
		return pongSeen{}, false
	}
	return pongSeen{}, false
}

// namedAgain returns the keys of busy that the two newest answers from
// node's hub both name: the elections there are not in a step for a
// moment but left the leaders keyed so (pingPeer.left), or are in a long
// step. One lock and a binary search per key, whatever the answer names.
func (b *pingBoard) namedAgain(node gen.Atom, busy []uint64) []uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.peers[node]
	if p == nil || p.nextEpoch == 0 {
		return nil
	}
	e := &p.byEpoch[(p.nextEpoch-1)%answerEpochs]
	if e.n < 2 {
		return nil
	}
	newest, before := &e.recent[(e.n-1)%answersPerEpoch], &e.recent[(e.n-2)%answersPerEpoch]
	var again []uint64
	for _, key := range busy {
		if newest.names(key) && before.names(key) {
			again = append(again, key)
		}
	}
	return again
}

// pingStamp is when a hub sent a ping, and the F it gave it.
type pingStamp struct {
	at    time.Time
	fresh time.Duration
}

// recentPings is how many of its newest pings a hub remembers: an answer
// to an older one proves a lease long over.
const recentPings = 16

// pingLog is a hub's ring of its recent pings' send times.
type pingLog struct {
	seq  uint64
	seqs [recentPings]uint64
	at   [recentPings]time.Time
}

// next numbers a new ping sent at now.
func (l *pingLog) next(at time.Time) uint64 {
	l.seq++
	l.seqs[l.seq%recentPings], l.at[l.seq%recentPings] = l.seq, at
	return l.seq
}

// sentAt returns when ping seq was sent, zero if it is not among the
// recent.
func (l *pingLog) sentAt(seq uint64) time.Time {
	if seq != 0 && l.seqs[seq%recentPings] == seq {
		return l.at[seq%recentPings]
	}
	return time.Time{}
}

// pingRTT is a hub's record of the round trips of its pings to one node,
// and the F it gave them. A ping's F is freshness, or longer when the
// round trips to that node are long (as a leader's roundFresh): an answer
// must come well within it, or it could never count.
type pingRTT struct {
	smooth time.Duration // smoothed as TCP does: 7/8 of the old, 1/8 of the new
	seqs   [recentPings]uint64
	fresh  [recentPings]time.Duration
}

func (r *pingRTT) sample(d time.Duration) {
	if d <= 0 {
		return
	}
	if r.smooth == 0 {
		r.smooth = d
		return
	}
	r.smooth += (d - r.smooth) / 8
}

// sending records that ping seq goes with F fresh, and returns it.
func (r *pingRTT) sending(seq uint64, fresh time.Duration) time.Duration {
	r.seqs[seq%recentPings], r.fresh[seq%recentPings] = seq, fresh
	return fresh
}

// sentFresh is the F ping seq went with, zero if it is not among the
// recent.
func (r *pingRTT) sentFresh(seq uint64) time.Duration {
	if seq != 0 && r.seqs[seq%recentPings] == seq {
		return r.fresh[seq%recentPings]
	}
	return 0
}

// forget drops what the board holds about node, gone for long (the hub's
// forgetGonePeers).
func (b *pingBoard) forget(node gen.Atom) {
	b.mu.Lock()
	delete(b.peers, node)
	b.mu.Unlock()
}
