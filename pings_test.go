package leader

import (
	"slices"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the pings' rules (pings.go; docs/safety.md, rule 8). Each names
// what breaks when it fails.

// pingPair is two hubs, a leader's on node a and a follower's on node b,
// each with its own board, delivering to each other by hand.
type pingPair struct {
	t        *testing.T
	now      time.Time
	a, b     *hub
	pa, pb   *scriptedProcess
	lead     *slot // on a, following nothing, leading term 1 with b as follower
	follower *slot // on b, following lead
}

func newPingPair(t *testing.T) *pingPair {
	p := &pingPair{t: t, now: t0}
	clock := func() time.Time { return p.now }
	p.pa = &scriptedProcess{self: gen.PID{Node: node("a"), ID: 3, Creation: 1}}
	p.pb = &scriptedProcess{self: gen.PID{Node: node("b"), ID: 3, Creation: 1}}
	p.a = &hub{process: p.pa, clock: clock}
	p.b = &hub{process: p.pb, clock: clock}
	p.a.init()
	p.b.init()
	const interval = 5 * time.Millisecond
	p.lead = &slot{cluster: "c", actor: pid("a"), interval: interval, beatEvery: 10 * interval, peerSilence: 30 * interval, freshCap: 75 * time.Millisecond, board: p.a.board}
	p.follower = &slot{cluster: "c", actor: pid("b"), interval: interval, beatEvery: 10 * interval, peerSilence: 30 * interval, freshCap: 75 * time.Millisecond, board: p.b.board}
	p.lead.share(grant{lead: true, leadTerm: 1, fresh: 3 * interval, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	p.follower.share(grant{follow: pid("a"), followTerm: 1})
	p.a.add(p.lead)
	p.b.add(p.follower)
	return p
}

// tick runs a's tick at now and delivers the ping and its answer; it
// returns the answer's epoch.
func (p *pingPair) tick() uint64 {
	p.t.Helper()
	p.a.tick()
	var epoch uint64
	answered := false
	for _, m := range p.pa.sent { // its only peer is b
		if beats, ok := m.(msgBeats); ok {
			p.b.beats(p.pa.self, beats)
		}
	}
	p.pa.sent, p.pa.sentTo = nil, nil
	for _, m := range p.pb.sent {
		if acks, ok := m.(msgBeatAcks); ok {
			p.a.acks(p.pb.self, acks)
			epoch, answered = acks.Epoch, true
		}
	}
	p.pb.sent, p.pb.sentTo = nil, nil
	require.True(p.t, answered, "b's hub answered the ping")
	return epoch
}

// counted returns the send time of the answered ping that counts as the
// follower's ack of the leader, zero when none does.
func (p *pingPair) counted() time.Time {
	v := p.lead.peek(0)
	for _, pong := range v.pongs {
		if pong.node == node("b") && pong.pid == pid("b") {
			return pong.sent
		}
	}
	return time.Time{}
}

// A ping counts for an election on the other node only while that
// election is bound to the leader: its answer's epoch is the one that
// came with the election's own acknowledgement, and no step of it began
// since. Breaks: the lease would count support that a follower in the
// middle of granting someone else has already withdrawn.
func TestPingsCountOnlyWhileTheFollowerIsBound(t *testing.T) {
	p := newPingPair(t)
	p.tick() // a full tick: the round and the ack
	require.Equal(t, uint64(1), p.lead.links[0].ack, "the follower acknowledged the round through its hub")
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick() // a ping alone
	assert.Equal(t, p.now, p.counted(), "the ping counts as the follower's ack")
	assert.Equal(t, uint64(1), p.lead.round, "no round was opened for it")

	// the follower's step begins: it may be about to grant someone else
	view := p.follower.settle(0, 0)
	assert.Equal(t, p.now.Add(15*time.Millisecond), view.pongEnd, "the step reads the end of the pings answered so far into its promise")
	pinged := p.now
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	assert.Equal(t, pinged, p.counted(), "a ping answered during the step does not count; the one before still does")

	// the step ends with the same permission: nothing changed
	p.follower.share(grant{follow: pid("a"), followTerm: 1})
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick() // the epoch stayed: the answer no longer names the follower
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	assert.Equal(t, p.now, p.counted(), "bound again, its pings count again")

	// a step that ends with another permission (it follows nobody now)
	p.follower.settle(0, 0)
	p.follower.share(grant{})
	for range 3 {
		p.now = p.now.Add(5 * time.Millisecond)
		p.tick()
	}
	assert.True(t, p.counted().Before(p.now.Add(-10*time.Millisecond)), "no ping answered after it stopped following counts")
}

// An answer sent while an election is in a step names it, and the epoch
// stays; the epoch rises when a step whose key is unknown ends with another
// permission, when an election in a step cannot be named to the hub the
// answer goes to (its key is unknown, or was given by another hub of that
// node), and when a new actor starts. Breaks: pings stop counting for every
// quiet follower (an epoch raised at every step: ten thousand elections
// never settle), or count across a defection (one never raised).
func TestTheEpochRisesWhenAFollowerMayHaveDefected(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	hubA := gen.PID{Node: node("a"), ID: 9, Creation: 1}
	named := stepKey{hub: hubA, key: 4}
	start, busy := b.answerEpoch(node("a"), hubA)
	assert.Empty(t, busy)
	b.unbind(node("a"), named)
	during, busy := b.answerEpoch(node("a"), hubA)
	assert.Equal(t, start, during, "an answer while a step is open keeps the epoch ...")
	assert.Equal(t, []uint64{4}, busy, "... and names the election")
	b.rebind(node("a"), named, 7, false)
	after, busy := b.answerEpoch(node("a"), hubA)
	assert.Equal(t, start, after, "a step that changed nothing")
	assert.Empty(t, busy, "and the election is bound again")

	b.unbind(node("a"), stepKey{})
	unknown, _ := b.answerEpoch(node("a"), hubA)
	assert.NotEqual(t, start, unknown, "an election in a step whose key is unknown")
	b.rebind(node("a"), stepKey{}, 7, false)

	b.unbind(node("a"), named)
	other, _ := b.answerEpoch(node("a"), gen.PID{Node: node("a"), ID: 10, Creation: 1})
	assert.NotEqual(t, unknown, other, "a key another hub of the node gave")
	b.rebind(node("a"), named, 7, false)
	b.unbind(node("a"), stepKey{})
	b.rebind(node("a"), stepKey{}, 7, true)
	changed, _ := b.answerEpoch(node("a"), hubA)
	assert.NotEqual(t, other, changed, "a step that changed the permission, its key unknown")
	b.raiseAll()
	last, _ := b.answerEpoch(node("a"), hubA)
	assert.NotEqual(t, changed, last, "a new actor on the node")
	assert.Empty(t, b.peers[node("a")].unbound, "no step stays open on the board")
	assert.Equal(t, last-start, b.raisedSoFar(), "every raise is counted for the operator (ergo:hub_answer_raises)")
}

// A follower that follows a leader it has not acknowledged through the
// hub (no key: it granted the leader directly, or the leader's term is
// new) counts for that leader through no answered ping, bound or not, and
// it starts to count only with an acknowledgement through the hub in the
// leader's current term. Breaks: a leader keeps an acknowledgement of an
// earlier term as the epoch its pings count under, and counts the answers
// given while its follower of the new term grants someone else.
func TestAFollowerWithoutAKeyIsNeverCounted(t *testing.T) {
	p := newPingPair(t)
	p.tick() // term 1: the round and the ack through the hub
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	require.Equal(t, p.now, p.counted(), "acknowledged through the hub, the pings count")

	// term 2: the leader won again; the follower granted it directly and
	// has acknowledged nothing of term 2 through the hub
	p.lead.settle(0, 0)
	p.lead.share(grant{lead: true, leadTerm: 2, fresh: 15 * time.Millisecond, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	p.follower.settle(0, 0)
	p.follower.share(grant{follow: pid("a"), followTerm: 2})
	assert.True(t, p.counted().IsZero(), "a new term counts no acknowledgement of the old one")
	for range 3 {
		// the follower in a step, then defecting: the answers neither name
		// it nor raise the epoch, and the leader counts none of them
		p.follower.settle(0, 0)
		p.follower.share(grant{})
		p.now = p.now.Add(5 * time.Millisecond)
		p.tick() // its record of term 2 finds no follower bound to it: no ack
		assert.True(t, p.counted().IsZero(), "no answer counts for a follower without a key")
	}
}

// An answer that names a leader's key counts for that leader's follower
// not at all (the newest earlier answer of the epoch that does not name it
// counts instead), and for every other leader as usual. Breaks: a follower
// in the middle of granting someone else is counted as support (names
// ignored), or every leader loses its pings whenever one follower steps.
func TestAnAnswerNamingAFollowerInAStepCountsOnlyForTheOthers(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	at := func(ms int) pingStamp { return pingStamp{at: t0.Add(time.Duration(ms) * time.Millisecond)} }
	b.answered(node("b"), 7, at(0), nil)
	b.answered(node("b"), 7, at(5), []uint64{4})
	got, ok := b.answerOf(node("b"), 7, 5)
	require.True(t, ok)
	assert.Equal(t, at(5).at, got.sent, "leader 5's follower was bound: the newest answer counts")
	got, ok = b.answerOf(node("b"), 7, 4)
	require.True(t, ok)
	assert.Equal(t, at(0).at, got.sent, "leader 4's follower was in a step: the answer before counts")
	for i := range answersPerEpoch {
		b.answered(node("b"), 7, at(10+5*i), []uint64{4})
	}
	_, ok = b.answerOf(node("b"), 7, 4)
	assert.False(t, ok, "a step longer than the answers kept: nothing counts for it")
}

// Two elections between the same two nodes: while one follower is in a
// step, the answers its hub sends count for the other election and not for
// its own, and the epoch does not move. Breaks as the test above, through
// the hubs and the wire.
func TestOneFollowersStepLeavesTheOtherElectionsPingsCounting(t *testing.T) {
	p := newPingPair(t)
	lead2 := &slot{cluster: "d", actor: gen.PID{Node: node("a"), ID: 5, Creation: 1}, interval: p.lead.interval, beatEvery: p.lead.beatEvery, peerSilence: p.lead.peerSilence, freshCap: p.lead.freshCap, board: p.a.board}
	follower2 := &slot{cluster: "d", actor: gen.PID{Node: node("b"), ID: 5, Creation: 1}, interval: p.lead.interval, beatEvery: p.lead.beatEvery, peerSilence: p.lead.peerSilence, freshCap: p.lead.freshCap, board: p.b.board}
	lead2.share(grant{lead: true, leadTerm: 1, fresh: 3 * p.lead.interval, followers: map[gen.Atom]gen.PID{node("b"): follower2.actor}})
	follower2.share(grant{follow: lead2.actor, followTerm: 1})
	p.a.add(lead2)
	p.b.add(follower2)
	counted := func(s *slot, follower gen.PID) time.Time {
		for _, pong := range s.peek(0).pongs {
			if pong.pid == follower {
				return pong.sent
			}
		}
		return time.Time{}
	}
	epoch := p.tick() // the rounds of both and their acks
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	require.Equal(t, p.now, counted(p.lead, pid("b")))
	require.Equal(t, p.now, counted(lead2, follower2.actor))

	p.follower.settle(0, 0) // the first election's follower steps
	before := p.now
	p.now = p.now.Add(5 * time.Millisecond)
	assert.Equal(t, epoch, p.tick(), "the epoch stays")
	assert.Equal(t, before, counted(p.lead, pid("b")), "the answer does not count for the follower in a step")
	assert.Equal(t, p.now, counted(lead2, follower2.actor), "it counts for the other")
	p.follower.share(grant{follow: pid("a"), followTerm: 1})
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	assert.Equal(t, p.now, counted(p.lead, pid("b")), "bound again with the same permission: it counts again")
}

// An actor that loses its hub takes its permission back for good: the new
// hub's answers to pings must not count for it while it works alone.
// Breaks: a follower without a hub grants a vote while its node's pings
// still renew the old leader's lease.
func TestAFollowerThatLosesItsHubStopsCounting(t *testing.T) {
	p := newPingPair(t)
	p.tick()
	lost := p.now
	p.follower.settle(0, 0)   // hubDown: a step begins ...
	p.follower.share(grant{}) // ... and the slot is dropped with nothing granted
	for range 3 {
		p.now = p.now.Add(5 * time.Millisecond)
		p.tick()
	}
	assert.False(t, p.counted().After(lost), "nothing answered after the hub was lost counts")
	assert.Empty(t, p.b.board.peers[node("a")].unbound, "and no step stays open on the board")
}

// A follower bound through the hub keeps the promise of the pings its node
// answered: past the end of its per-round promise after a lost
// connection, until a handover or a real termination releases it. Breaks:
// a survivor grants before the old leader's lease from pings runs out.
func TestThePingsPromiseBindsTheFollower(t *testing.T) {
	h := lostLeaderBoundByPings(t)
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "promised", why, "the pings' promise still binds")
	assert.False(t, h.e.mayDelegateAcks(), "nor does it let its hub acknowledge another leader")
	h.advance(20 * time.Millisecond)
	h.e.now = h.now
	why, _ = h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "", why, "it ends when the pings' promise does")

	h = newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	h.e.pongPromise, h.e.pongPromiseTo = h.now.Add(40*time.Millisecond), pid("b")
	h.e.down(h.now, pid("b"), gen.TerminateReasonKill)
	why, _ = h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "", why, "a real termination releases it")
}

// The lease counts an answered ping as the member's ack from the ping's
// send time for its F, and the holding lease counts it from its send time
// too. Breaks: the default's liveness would need a record per election
// every liveness interval (the cost the pings remove), a ping would count
// for longer than the promise behind it, or a leader whose hub vouches for
// it would stand down for want of records (vouch.go).
func TestTheLeaseCountsAnsweredPings(t *testing.T) {
	h := leaderOfThree(t)
	h.e.sendHeartbeats()
	h.e.takeEffects()
	round, sent := h.e.round, h.now
	h.recv("b", msgHeartbeatAck{ClusterID: "c", Term: h.e.term, Round: round})
	require.Equal(t, sent.Add(actingLease(h.e.cfg)), h.e.leaseUntil)
	pinged := sent.Add(20 * time.Millisecond)
	m := h.e.members[node("b")]
	m.pongSent, m.pongFresh = pinged, 30*time.Millisecond
	h.e.renewLease()
	assert.Equal(t, pinged.Add(lessDrift(30*time.Millisecond)), h.e.leaseUntil, "from the ping's send time, for its F less the drift margin")
	assert.Equal(t, pinged.Add(holdingLease(h.e.cfg)), h.e.holdUntil, "and the role's: a hub sends rounds only when something changed (vouch.go)")
}

// The end of a node's hub is warned of once for the node, not by each of
// its elections (thousands at a StopForce); a later hub's end again.
func TestAHubsEndIsWarnedOfOncePerNode(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	first, second := gen.PID{Node: node("a"), ID: 3, Creation: 1}, gen.PID{Node: node("a"), ID: 9, Creation: 1}
	assert.True(t, b.firstToSeeHubEnd(first))
	assert.False(t, b.firstToSeeHubEnd(first), "another election of the node")
	assert.True(t, b.firstToSeeHubEnd(second), "a later hub")
}

// An answer counts for a follower whose ack was made under its epoch
// though the other node's epoch moved on since, and the board keeps the
// newest answer of its last few epochs for that. Breaks: in a crash wave,
// where every step of an election on the other node raises its epoch, the
// leaders here lose every ping of the epoch before and, with no record
// sent while nothing changed, stand down (vouch.go); or an answer of an
// epoch long gone keeps counting.
func TestTheNewestAnswerOfTheAcksEpochCounts(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	at := func(ms int) pingStamp { return pingStamp{at: t0.Add(time.Duration(ms) * time.Millisecond)} }
	b.answered(node("a"), 7, at(0), nil)
	b.answered(node("a"), 7, at(5), nil)
	b.answered(node("a"), 8, at(10), nil)
	b.answered(node("a"), 9, at(15), nil)
	got, ok := b.answerOf(node("a"), 7, 1)
	require.True(t, ok)
	assert.Equal(t, at(5).at, got.sent, "the newest answer of epoch 7, after newer epochs came")
	assert.Equal(t, uint64(2), got.index)
	got, _ = b.answerOf(node("a"), 9, 1)
	assert.Equal(t, at(15).at, got.sent)
	for i := range answerEpochs {
		b.answered(node("a"), uint64(20+i), at(20+i), nil)
	}
	_, ok = b.answerOf(node("a"), 7, 1)
	assert.False(t, ok, "an epoch the board no longer keeps")
	_, ok = b.answerOf(node("b"), 7, 1)
	assert.False(t, ok, "a node never heard")
}

// An answer counts for a follower only if it came no earlier than the
// answer that carried the follower's acknowledgement, even when its epoch
// is the same: an election on the other node that followed a leader
// elsewhere and then this one does not raise this node's epoch when it
// switches, so an answer of the same epoch from before its ack was given
// while it was not bound here. Breaks: the lease counts a ping answered
// before the follower promised anything to this leader.
func TestAnAnswerBeforeTheAckDoesNotCount(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	b.answered(node("b"), 7, pingStamp{at: t0, fresh: 15 * time.Millisecond}, nil) // index 1: before the ack
	mark := b.answered(node("b"), 7, pingStamp{}, nil)                             // the ack's answer, its ping no longer known
	s := &slot{board: b, leadTerm: 1, links: []followerLink{{node: node("b"), pid: pid("b"), ack: 2, epoch: 7, mark: mark, epochSet: true}}}
	_, ok := s.pongOf(&s.links[0])
	assert.False(t, ok, "the answer of index 1 predates the ack of index %d", mark)
	b.answered(node("b"), 7, pingStamp{at: t0.Add(5 * time.Millisecond), fresh: 15 * time.Millisecond}, nil)
	p, ok := s.pongOf(&s.links[0])
	require.True(t, ok, "a later answer of the same epoch counts")
	assert.Equal(t, t0.Add(5*time.Millisecond), p.sent)
}

// A follower whose step ends with another permission (another leader,
// another term, none) is named in every later answer, and the epoch stays,
// so the other leaders of its leader's node keep counting their pings; the
// name goes only when the hub acknowledges that leader's record for that
// very follower again. Too many names, or a raise for any other reason,
// retire them all with a new epoch. Breaks: an epoch raised at every
// change (every leader of the node resends its record at every tick while
// elections start or fail over), a name that goes too early (the old
// leader counts the pings of a follower that left it), or one that another
// follower's acknowledgement clears.
func TestAFollowerThatLeftItsLeaderIsNamedUntilItFollowsItAgain(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	hubA := gen.PID{Node: node("a"), ID: 9, Creation: 1}
	left := stepKey{hub: hubA, key: 4}
	start, _ := b.answerEpoch(node("a"), hubA)

	b.unbind(node("a"), left)
	b.rebind(node("a"), left, 7, true)
	for range 3 {
		epoch, busy := b.answerEpoch(node("a"), hubA)
		assert.Equal(t, start, epoch, "no raise: the other leaders' acknowledgements keep counting")
		assert.Equal(t, []uint64{4}, busy, "every answer names the follower that left")
	}
	b.rebound(node("a"), left, 8)
	_, busy := b.answerEpoch(node("a"), hubA)
	assert.Equal(t, []uint64{4}, busy, "another election's acknowledgement of that leader clears nothing")
	_, busy = b.answerEpoch(node("a"), gen.PID{Node: node("a"), ID: 10, Creation: 1})
	assert.Empty(t, busy, "a name is only for the hub that gave the key")
	b.rebound(node("a"), left, 7)
	epoch, busy := b.answerEpoch(node("a"), hubA)
	assert.Equal(t, start, epoch)
	assert.Empty(t, busy, "it follows that leader again")

	for k := range uint64(maxLeftKeys) {
		key := stepKey{hub: hubA, key: 100 + k}
		b.unbind(node("a"), key)
		b.rebind(node("a"), key, 7, true)
	}
	epoch, busy = b.answerEpoch(node("a"), hubA)
	assert.Equal(t, start, epoch, "up to maxLeftKeys names")
	assert.Len(t, busy, maxLeftKeys)
	b.unbind(node("a"), left)
	b.rebind(node("a"), left, 7, true)
	epoch, busy = b.answerEpoch(node("a"), hubA)
	assert.NotEqual(t, start, epoch, "one more: a new epoch instead")
	assert.Empty(t, busy, "which retires every name")

	b.unbind(node("a"), left)
	b.rebind(node("a"), left, 7, true)
	b.raiseAll()
	_, busy = b.answerEpoch(node("a"), hubA)
	assert.Empty(t, busy, "a new actor's raise retires them too")
}

// A follower that left its leader and then follows it again is named in
// the answers until it acknowledges the leader's record; the leader's hub,
// seeing it named twice in a row, sends that record at its next tick, and
// the pings count for the leader again a few intervals later, with the
// epoch unchanged. Breaks: no record goes (the leader counts nothing from
// that node until the record refresh, a second later, and stands down if
// it needed it), or the name outlives the acknowledgement.
func TestALeaderWhoseFollowerCameBackSendsItsRecordAgain(t *testing.T) {
	p := newPingPair(t)
	start := p.tick()
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	require.Equal(t, p.now, p.counted(), "the pings count while it is bound")

	p.follower.settle(0, 0)
	p.follower.share(grant{}) // it left: it follows nobody
	p.follower.settle(0, 0)
	p.follower.share(grant{follow: pid("a"), followTerm: 1}) // and follows the leader again
	left := p.now
	records := p.a.records
	for range 6 {
		p.now = p.now.Add(5 * time.Millisecond)
		assert.Equal(t, start, p.tick(), "no raise of the epoch")
	}
	assert.Greater(t, p.a.records, records, "the leader's record went again")
	assert.True(t, p.counted().After(left), "pings answered after it acknowledged the record count again")
	assert.Empty(t, p.b.board.peers[node("a")].left, "its name went with that acknowledgement")
}

// While the answers name a leader's follower, the leader's record goes
// again every few intervals, though every answer names the same keys (the
// leaders among them are looked up once per list, hub.resendNamed); once
// the slot stands down, nothing goes. Breaks: a list seen before skips
// its leaders (the record goes once, and the pings from that node count
// for nobody until the refresh), a slot that stood down is made to send
// its record, or one that leads again is not looked at while the answers
// name the same keys.
func TestANamedLeaderSendsItsRecordWhileTheSameNamesComeBack(t *testing.T) {
	p := newPingPair(t)
	p.tick()
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	p.follower.settle(0, 0)
	p.follower.share(grant{}) // it left for good: named in every answer
	records := p.a.records
	for range 20 {
		p.now = p.now.Add(5 * time.Millisecond)
		p.tick()
	}
	assert.GreaterOrEqual(t, p.a.records-records, uint64(5), "the record goes again and again while it leads")

	p.lead.settle(0, 0)
	p.lead.share(grant{}) // it stood down; answers still name it
	p.lead.needBeat = false
	named := []uint64{p.lead.key, p.lead.key + 1000} // a list of its own: looked at afresh
	for range 3 {
		p.now = p.now.Add(5 * time.Millisecond)
		p.a.board.answered(node("b"), p.a.board.epochOf(node("b")), pingStamp{at: p.now}, named)
		p.a.resendNamed(node("b"), named, p.now)
	}
	assert.False(t, p.lead.needBeat, "a slot that stood down sends nothing, named or not")

	p.lead.share(grant{lead: true, leadTerm: 2, fresh: 15 * time.Millisecond, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	p.lead.needBeat = false // its new term's record went
	for range 3 {
		p.now = p.now.Add(5 * time.Millisecond)
		p.a.board.answered(node("b"), p.a.board.epochOf(node("b")), pingStamp{at: p.now}, named)
		p.a.resendNamed(node("b"), named, p.now)
	}
	assert.True(t, p.lead.needBeat, "leading again under the same names, it is looked at again")
}

// A leader that joins a new hub of its node (the old one failed) counts
// no answer to the new hub's pings until its follower acknowledges its
// record through that hub. Breaks: the leader keeps counting under the epoch of its follower's
// acknowledgement through the old hub, and counts the new hub's pings
// answered while that follower grants someone else.
func TestALeaderOnANewHubCountsOnlyAcknowledgementsThroughIt(t *testing.T) {
	p := newPingPair(t)
	p.tick()
	p.now = p.now.Add(5 * time.Millisecond)
	p.tick()
	require.Equal(t, p.now, p.counted(), "acknowledged through the old hub, the pings count")

	pa2 := &scriptedProcess{self: gen.PID{Node: node("a"), ID: 4, Creation: 1}}
	a2 := &hub{process: pa2, clock: func() time.Time { return p.now }, board: p.a.board}
	a2.init()
	a2.add(p.lead)
	p.follower.settle(0, 0)
	p.follower.share(grant{}) // it defects; its key is the old hub's
	for range 3 {
		p.now = p.now.Add(5 * time.Millisecond)
		a2.tick()
		for _, m := range pa2.sent {
			if beats, ok := m.(msgBeats); ok {
				p.b.beats(pa2.self, beats)
			}
		}
		pa2.sent, pa2.sentTo = nil, nil
		for _, m := range p.pb.sent {
			if acks, ok := m.(msgBeatAcks); ok {
				a2.acks(p.pb.self, acks)
			}
		}
		p.pb.sent, p.pb.sentTo = nil, nil
		assert.True(t, p.counted().IsZero(), "no answer to the new hub's pings counts without an acknowledgement through it")
	}
}

// Rule 8: while the pings its node answered bind a follower to its leader,
// it acknowledges no other leader's rounds, though its per-round promise
// ended after the lost connection. Breaks: a new leader counts the
// follower's acknowledgement while the old one still acts on the pings.
func TestThePingsPromiseWithholdsAcknowledgementsFromAnotherLeader(t *testing.T) {
	h := lostLeaderBoundByPings(t)
	out := h.recv("c", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("c"), Round: 1})
	acks := sentTo[msgHeartbeatAck](out, "c")
	require.Len(t, acks, 1)
	assert.Equal(t, uint64(0), acks[0].Round, "the heartbeat is answered, but acknowledges no round")
	h.advance(20 * time.Millisecond) // the pings' promise is over
	out = h.recv("c", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("c"), Round: 2})
	acks = sentTo[msgHeartbeatAck](out, "c")
	require.Len(t, acks, 1)
	assert.Equal(t, uint64(2), acks[0].Round, "then it acknowledges the new leader's round")
}

// Rule 8, on the follower's side: a step of a follower bound through the
// hub reads the end of the pings its node answered for the leader's node
// into its promise, which then outlasts the per-round promise after a
// loss. Breaks: a survivor grants while the old leader still acts on
// pings answered in the survivor's name.
func TestAFollowersStepTakesThePingsAnsweredIntoItsPromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	board := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	s := &slot{cluster: "c", actor: pid("a"), board: board}
	h.e.hubAttached(nil, pid("hub"))
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	shareTo(s, h.e)
	require.Equal(t, pid("b"), s.follow, "a follower of b lets the hub answer b")
	end := h.now.Add(40 * time.Millisecond)
	board.pinged(node("b"), end) // b's hub pinged, and this node answers for the election
	h.advance(time.Millisecond)
	h.e.stepStarts(h.now, settleFrom(s, h.e))
	assert.Equal(t, end, h.e.pongPromise, "the step took the pings' end into its promise")
	assert.Equal(t, pid("b"), h.e.pongPromiseTo)
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.advance(20 * time.Millisecond) // past F after the last acknowledgement
	h.e.now = h.now
	why, _ := h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "promised", why, "the pings answered in its name still bind it")
	h.now, h.e.now = end, end
	why, _ = h.e.grantRefusal(false, pid("c"))
	assert.Equal(t, "", why, "until they end")
}

// lostLeaderBoundByPings is a follower of b whose node answered b's pings
// until 40 ms from now, 20 ms after it lost b's connection: past its
// per-round promise, inside the pings'.
func lostLeaderBoundByPings(t *testing.T) *stateHarness {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 3})
	h.e.pongPromise, h.e.pongPromiseTo = h.now.Add(40*time.Millisecond), pid("b")
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.advance(20 * time.Millisecond)
	h.e.now = h.now
	return h
}

// answerEpoch is answerNames with the names read back.
func (b *pingBoard) answerEpoch(node gen.Atom, hub gen.PID) (uint64, []uint64) {
	epoch, wire := b.answerNames(node, hub)
	keys, malformed := unpackKeys(wire)
	if malformed {
		panic("the board packed names that do not parse")
	}
	return epoch, keys
}

// The names an answer carries are the board's names at that moment, though
// the board packs its names that left a leader once and reuses them: every
// change to them (a name added, one ended by an acknowledgement, all
// retired by a raise) shows in the next answer, to the same hub. Breaks:
// an answer carries names packed before the change, so a follower that
// left its leader is not named (the leader counts the pings answered while
// it follows someone else), or one that came back stays named.
func TestAnswersNameWhatTheBoardNamesAtTheirTime(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	hubA := gen.PID{Node: node("a"), ID: 9, Creation: 1}
	leave := func(key, follower uint64) {
		k := stepKey{hub: hubA, key: key}
		b.unbind(node("a"), k)
		b.rebind(node("a"), k, follower, true)
	}
	names := func() []uint64 {
		_, keys := b.answerEpoch(node("a"), hubA)
		slices.Sort(keys)
		return keys
	}
	leave(5, 7)
	require.Equal(t, []uint64{5}, names())
	require.Equal(t, []uint64{5}, names(), "the same names again")
	leave(4, 8)
	assert.Equal(t, []uint64{4, 5}, names(), "a name added")
	b.rebound(node("a"), stepKey{hub: hubA, key: 4}, 7)
	assert.Equal(t, []uint64{4, 5}, names(), "an acknowledgement for another election ends no name")
	b.rebound(node("a"), stepKey{hub: hubA, key: 4}, 8)
	assert.Equal(t, []uint64{5}, names(), "a name ended")
	b.unbind(node("a"), stepKey{hub: hubA, key: 6})
	assert.Equal(t, []uint64{5, 6}, names(), "an election in a step, beside the names")
	b.rebind(node("a"), stepKey{hub: hubA, key: 6}, 9, false)
	assert.Equal(t, []uint64{5}, names(), "its step over, unchanged")
	b.raiseAll()
	assert.Empty(t, names(), "a raise retires every name")
	leave(3, 7)
	assert.Equal(t, []uint64{3}, names(), "and names come again after it")
}

// The leaders' hub reads an answer's names once while they come in the
// same bytes, and reads any others afresh; names it cannot read count for
// nobody however often they come. Breaks: an answer that names other
// elections in as many bytes is taken for the one before (a leader counts
// a ping its follower's step was open for), or a garbled list read once
// is taken as read the next time.
func TestTheLeadersHubReadsEachAnswersNames(t *testing.T) {
	p := newPingPair(t)
	h, from := p.a, node("b")
	read := func(keys ...uint64) ([]uint64, bool, bool) {
		return h.heardNames(from, appendKeys(nil, keys...))
	}
	keys, readable, garbled := read(5, 3)
	require.True(t, readable)
	require.False(t, garbled)
	assert.Equal(t, []uint64{3, 5}, keys, "sorted")
	keys, _, _ = read(5, 3)
	assert.Equal(t, []uint64{3, 5}, keys, "the same again")
	keys, readable, _ = read(5, 4)
	assert.True(t, readable)
	assert.Equal(t, []uint64{4, 5}, keys, "other names in as many bytes")
	for range 2 {
		_, readable, garbled = h.heardNames(from, []byte{0xff})
		assert.False(t, readable, "garbled names count for nobody")
		assert.True(t, garbled)
	}
	many := make([]uint64, maxBusyKeys+1)
	for i := range many {
		many[i] = uint64(i + 1)
	}
	for range 2 {
		_, readable, garbled = read(many...)
		assert.False(t, readable, "too many names count for nobody")
		assert.False(t, garbled)
	}
	keys, readable, _ = read(5, 4)
	assert.True(t, readable)
	assert.Equal(t, []uint64{4, 5}, keys)
	keys, readable, _ = h.heardNames(from, nil)
	assert.True(t, readable)
	assert.Empty(t, keys, "no names")
}
