package leader

import (
	"math"
	"reflect"
	"strconv"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestHub is a hub on node "a" with a scripted process and one slot per
// actor given.
func newTestHub(slots ...*slot) (*hub, *scriptedProcess) {
	p := &scriptedProcess{self: gen.PID{Node: node("a"), ID: 3, Creation: 1}}
	h := &hub{process: p, clock: func() time.Time { return t0 }}
	h.init()
	for _, s := range slots {
		s.relink()
		h.add(s)
	}
	return h, p
}

// named is a round of another hub's election key that names it cluster;
// keyed is one that names it by key alone.
func named(key uint64, cluster string, term, leaderID, round uint64) wireBeat {
	return wireBeat{key: key, cluster: []byte(cluster), term: term, leaderID: leaderID, round: round}
}

func keyed(key uint64, term, leaderID, round uint64) wireBeat {
	return wireBeat{key: key, term: term, leaderID: leaderID, round: round}
}

// The hub answers a round only for a follower that allowed it, for exactly
// that leader and term; it hands the others to their actors and says which
// elections it cannot serve at all. A hub speaks only for its own node's
// leaders: an entry names the leader by process ID, and its node and
// creation are the sending hub's, so the hub of a restarted node cannot
// speak for the leader of the node's previous life.
func TestHubAnswersOnlyWhatItWasAllowedTo(t *testing.T) {
	follower := &slot{cluster: "c", actor: pid("a"), follow: pid("b"), followTerm: 4}
	h, p := newTestHub(follower)
	peerHub := gen.PID{Node: node("b"), ID: 3, Creation: 1}
	leaderID := pid("b").ID
	h.beats(peerHub, packBeats(
		named(1, "c", 4, leaderID, 7),              // allowed
		named(2, "c", 5, leaderID, 1),              // another term: the actor decides
		named(3, "c", 4, leaderID+1, 8),            // another process: the actor decides
		named(4, "nobody", 1, leaderID, 1),         // no actor here
		named(5, "c", math.MaxUint64, leaderID, 0), // absurd: the actor decides
		keyed(6, 4, leaderID, 7),                   // never named: unknown
	))
	require.Len(t, p.sent, 4)
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 5, Leader: pid("b"), Round: 1}, p.sent[0])
	other := pid("b")
	other.ID++
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 4, Leader: other, Round: 8}, p.sent[1])
	assert.Equal(t, hubBeat{ClusterID: "c", Term: math.MaxUint64, Leader: pid("b"), Round: 0}, p.sent[2])
	assertAcks(t, p.sent[3], []wireAck{{key: 1, term: 4, round: 7, followerID: pid("a").ID}}, []uint64{4}, []uint64{6})
	assert.Equal(t, t0, follower.beatAt)

	p.sent = nil
	h.beats(peerHub, packBeats(keyed(1, 4, leaderID, 8)))
	assertAcks(t, p.sent[0], []wireAck{{key: 1, term: 4, round: 8, followerID: pid("a").ID}}, nil, nil)

	p.sent = nil
	restarted := peerHub
	restarted.Creation++
	h.beats(restarted, packBeats(keyed(1, 4, leaderID, 9)))
	assertAcks(t, p.sent[0], nil, nil, []uint64{1}) // "a restarted node's hub's keys are its own
	p.sent = nil
	h.beats(restarted, packBeats(named(1, "c", 4, leaderID, 9)))
	stale := pid("b")
	stale.Creation++
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 4, Leader: stale, Round: 9}, p.sent[0], "a restarted node's hub does not speak for the old leader")
	assertAcks(t, p.sent[1], nil, nil, nil)

	follower.follow = gen.PID{} // the actor is in a step
	p.sent = nil
	h.beats(restarted, packBeats(keyed(1, 4, leaderID, 10)))
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 4, Leader: stale, Round: 10}, p.sent[0], "no permission: the actor answers itself")
}

// A route follows this node's slots: an actor that leaves is no longer
// answered for under a key learnt while it was there, and one that joins
// later is found under a key learnt before it came.
func TestHubRoutesFollowTheSlots(t *testing.T) {
	h, p := newTestHub()
	peerHub := gen.PID{Node: node("b"), ID: 3, Creation: 1}
	leaderID := pid("b").ID
	h.beats(peerHub, packBeats(named(7, "c", 4, leaderID, 1)))
	assertAcks(t, p.sent[0], nil, []uint64{7}, nil)

	follower := &slot{cluster: "c", actor: pid("a"), follow: pid("b"), followTerm: 4}
	h.add(follower)
	p.sent = nil
	h.beats(peerHub, packBeats(keyed(7, 4, leaderID, 2)))
	assertAcks(t, p.sent[0], []wireAck{{key: 7, term: 4, round: 2, followerID: pid("a").ID}}, nil, nil)

	h.leave(follower.actor)
	p.sent = nil
	h.beats(peerHub, packBeats(keyed(7, 4, leaderID, 3)))
	assertAcks(t, p.sent[0], nil, []uint64{7}, nil)
}

// A leader's rounds name the election until the follower's hub answered
// a round of it, and again once that hub says it does not know the key.
func TestHubNamesAnElectionUntilTheOtherHubKnowsIt(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, interval: 50 * time.Millisecond,
		followers: map[gen.Atom]gen.PID{node("b"): pid("b")}}
	h, p := newTestHub(leader)
	peerHub := gen.PID{Node: node("b"), ID: 3, Creation: 1}
	sentBeats := func() []wireBeat {
		var all []wireBeat
		for _, m := range p.sent {
			if b, ok := m.(msgBeats); ok {
				beats, malformed := unpackBeats(b)
				require.False(t, malformed)
				all = append(all, beats...)
			}
		}
		p.sent = nil
		return all
	}
	h.tick()
	require.Equal(t, []wireBeat{named(leader.key, "c", 2, pid("a").ID, 1)}, sentBeats())
	h.acks(peerHub, packAcks([]wireAck{{key: leader.key, term: 2, round: 1, followerID: pid("b").ID}}, nil, nil))
	h.tick()
	require.Equal(t, []wireBeat{keyed(leader.key, 2, pid("a").ID, 2)}, sentBeats(), "b's hub knows the key")
	h.acks(peerHub, packAcks(nil, nil, []uint64{leader.key}))
	h.tick()
	require.Equal(t, []wireBeat{named(leader.key, "c", 2, pid("a").ID, 3)}, sentBeats(), "b's hub forgot it")
	h.acks(peerHub, packAcks([]wireAck{{key: leader.key, term: 2, round: 3, followerID: pid("b").ID}}, nil, nil))
	restarted := peerHub
	restarted.ID++
	h.acks(restarted, packAcks(nil, nil, nil)) // b's new hub is heard
	h.tick()
	require.Equal(t, []wireBeat{named(leader.key, "c", 2, pid("a").ID, 4)}, sentBeats(), "b's new hub never knew it")
}

// A send to a node that is not connected would make the framework dial it
// on the hub's goroutine, and a dial to a node behind a firewall that drops
// packets hangs for the dial timeout: every election of the node would lose
// its heartbeats meanwhile. The hub sends only to connected nodes; the
// leader reaches the others itself (the node is not carried).
func TestHubSendsNothingToANodeThatIsNotConnected(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2,
		followers: map[gen.Atom]gen.PID{node("b"): pid("b"), node("c"): pid("c")}}
	h, p := newTestHub(leader)
	leader.interval = 50 * time.Millisecond
	p.unconnected = map[gen.Atom]bool{node("c"): true}
	h.tick()
	assert.Equal(t, []any{gen.ProcessID{Name: hubName, Node: node("b")}}, p.sentTo[:1], "beats go to b's hub only")
	for _, to := range p.sentTo {
		if id, ok := to.(gen.ProcessID); ok {
			assert.NotEqual(t, node("c"), id.Node, "nothing is sent to c, which is not connected")
		}
	}
	p.sent, p.sentTo = nil, nil
	h.beats(gen.PID{Node: node("c"), ID: 3, Creation: 1}, msgBeats{})
	assert.Empty(t, p.sentTo, "no answer to c's hub while c is not connected")
}

// A follower's node the framework has no connection to counts as carried:
// the leader is not woken to send its own heartbeats there, which would
// not arrive either. Breaks: after a node crash under thousands of
// elections every leader with a follower there was woken, and sent into
// the void every liveness interval, on the two cores the failovers needed.
// Once the node's hub has been silent for peerTTL while the node is
// connected, the leader sends itself, as before.
func TestHubDoesNotWakeLeadersForADisconnectedNode(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, interval: 50 * time.Millisecond,
		peerSilence: 150 * time.Millisecond, followers: map[gen.Atom]gen.PID{node("c"): pid("c")}}
	h, p := newTestHub(leader)
	peerHub := gen.PID{Node: node("c"), ID: 3, Creation: 1}
	h.heard(peerHub)
	h.tick()
	require.True(t, leader.links[0].carried, "c's hub answers")
	wakes := func() int { return countOf[hubCarryLost](p.sent) }
	p.unconnected = map[gen.Atom]bool{node("c"): true}
	h.peers[node("c")] = hubPeer{pid: peerHub, heardAt: t0.Add(-time.Hour)} // silent for long
	h.tick()
	assert.True(t, leader.links[0].carried, "not connected: still carried")
	assert.Zero(t, wakes(), "the leader is not woken")
	p.unconnected = nil
	h.tick()
	assert.False(t, leader.links[0].carried, "connected, its hub silent: not carried")
	assert.Equal(t, 1, wakes(), "and the leader is woken to send there itself")
}

// A leader in the middle of a step when the hub ticks gets its round all
// the same: the acting lease needs a round every liveness interval, and the
// leader's own work (a database write in a step) may take longer. Not for
// longer than its step grace: a hung leader must be replaced. One that
// stood down, and shared that at the end of its step, gets none.
func TestHubOpensRoundsForALeaderInTheMiddleOfAStep(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), interval: 5 * time.Millisecond, stepGrace: 75 * time.Millisecond}
	leader.share(grant{lead: true, leadTerm: 2, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	h, p := newTestHub(leader)
	now := t0
	h.clock = func() time.Time { return now }
	beats := func() []msgBeats { // with rounds: a ping alone carries none
		var list []msgBeats
		for _, m := range p.sent {
			if b, ok := m.(msgBeats); ok && len(b.Beats) > 0 {
				list = append(list, b)
			}
		}
		return list
	}
	leader.settle(0, 0) // the actor's step begins
	h.tick()
	require.Len(t, beats(), 1, "the round, during the step")
	entries, malformed := unpackBeats(beats()[0])
	require.False(t, malformed)
	assert.Equal(t, uint64(1), entries[0].round)

	now = now.Add(75 * time.Millisecond) // the step goes on: a hung leader
	p.sent = nil
	h.tick()
	assert.Empty(t, beats(), "no round once the step has lasted its grace")

	leader.share(grant{lead: true, leadTerm: 2, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}}) // the step ends
	leader.settle(0, 0)                                                                                // and another begins
	p.sent = nil
	h.tick()
	require.Len(t, beats(), 1, "a new step has its own grace")

	leader.share(grant{}) // it stood down in that step
	p.sent = nil
	h.tick()
	assert.Empty(t, beats(), "no round for a node that no longer leads")
}

// Acknowledgements count only for the leader's own term, from the follower
// it sends to, for rounds it opened; a node's hub speaks only for its own
// followers (an ack names the follower by process ID, on the answering
// hub's node and creation).
func TestHubRecordsOnlyValidAcks(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, round: 9,
		followers: map[gen.Atom]gen.PID{node("b"): pid("b"), node("c"): pid("c")}}
	h, _ := newTestHub(leader)
	peerHub := gen.PID{Node: node("b"), ID: 3, Creation: 1}
	id := pid("b").ID
	restarted := peerHub
	restarted.Creation++
	key := leader.key
	h.acks(restarted, packAcks([]wireAck{{key: key, term: 2, round: 9, followerID: id}}, nil, nil))
	assert.Zero(t, leader.link(node("b")).ack, "a restarted node's hub does not speak for the old follower")
	h.acks(peerHub, packAcks([]wireAck{
		{key: key, term: 2, round: 8, followerID: id + 1}, // another process
		{key: key, term: 2, round: 9, followerID: id},     // counts
		{key: key, term: 2, round: 12, followerID: id},    // a round never opened
		{key: key, term: 1, round: 9, followerID: id},     // another term
		{key: key + 1, term: 2, round: 9, followerID: id}, // no such election here
	}, []uint64{key}, nil))
	assert.Equal(t, uint64(9), leader.link(node("b")).ack)
	assert.Zero(t, leader.link(node("c")).ack)
	assert.Equal(t, t0, leader.link(node("b")).unserved, "b's hub has no actor of c that lets it answer")
}

// A slot's permissions end with settle, and what the hub recorded comes
// back in the view; a new term forgets the old one's rounds and acks.
func TestSlotSettleAndShare(t *testing.T) {
	s := &slot{cluster: "c", actor: pid("a")}
	s.share(grant{follow: pid("b"), followTerm: 3})
	s.share(grant{lead: true, leadTerm: 4, round: 1, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	s.rounds = []roundStamp{{round: 2, at: t0}}
	s.link(node("b")).ack = 2
	s.acksVersion++
	v := s.settle(0, 0)
	assert.False(t, s.lead)
	assert.Equal(t, gen.PID{}, s.follow)
	assert.Equal(t, []roundStamp{{round: 2, at: t0}}, v.rounds)
	assert.Equal(t, uint64(2), v.acks[node("b")])
	assert.Nil(t, s.rounds, "rounds are handed over once")
	s.share(grant{lead: true, leadTerm: 4, round: 1, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	assert.Equal(t, uint64(2), s.link(node("b")).ack, "the same term and follower: the ack stands")
	s.share(grant{lead: true, leadTerm: 4, round: 1, followers: map[gen.Atom]gen.PID{node("b"): pid("c")}})
	assert.Zero(t, s.link(node("b")).ack, "another process on b: its predecessor's ack is not its own")
	s.link(node("b")).ack = 2
	s.share(grant{lead: true, leadTerm: 5, round: 1, followers: map[gen.Atom]gen.PID{node("b"): pid("c")}})
	assert.Zero(t, s.link(node("b")).ack, "acks of term 4 mean nothing at term 5")
	assert.Equal(t, uint64(1), s.round)
}

// A follower's hub answered its leader's round: at the follower's next
// step the answer is its own promise, dated when the hub sent it, and the
// leader counts as heard.
func TestAckSentByTheHubIsTheFollowersPromise(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	s := &slot{cluster: "c", actor: pid("a")}
	h.e.hubAttached(nil, pid("hub"))
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	shareTo(s, h.e)
	require.Equal(t, pid("b"), s.follow, "a follower of b lets the hub answer b")

	h.advance(h.e.cfg.electionTimeoutMin / 2)
	s.beatAt = h.now // the hub answered b's round now
	h.advance(h.e.cfg.electionTimeoutMin * 3 / 4)
	h.e.stepStarts(h.now, settleFrom(s, h.e))
	assert.Equal(t, gen.PID{}, s.follow, "withdrawn for the step")
	assert.Equal(t, h.now.Add(-h.e.cfg.electionTimeoutMin*3/4), h.e.lastHeartbeatIn)
	out := h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "promised to b since the hub's answer")
}

// A leader's hub opened rounds and got a quorum's acks: they renew its
// lease from the round's send time at once, when it asks IsLeader between
// steps, which takes nothing in (a pure query), and again at its next
// step, which takes them in and must agree. Breaks: IsLeader waiting for a
// step (a renewed lease reads as lost), or IsLeader consuming the hub's
// records.
func TestRoundsTheHubOpenedRenewTheLease(t *testing.T) {
	h := leaderOfThree(t)
	s := &slot{cluster: "c", actor: pid("a")}
	h.e.hubAttached(nil, pid("hub"))
	shareTo(s, h.e)
	require.True(t, s.lead)
	h.advance(h.e.cfg.heartbeatInterval)
	sent := h.now
	next := h.e.round + 1
	s.rounds = []roundStamp{{round: next, at: sent}}
	b := s.link(node("b"))
	require.NotNil(t, b, "the leader shares its followers")
	b.ack, b.ackAt = next, sent.Add(time.Millisecond)
	s.acksVersion++
	h.advance(2 * time.Millisecond)
	require.False(t, h.e.leading(h.now), "the lease of the last step ran out")

	round, lease, acked := h.e.round, h.e.leaseUntil, h.e.members[node("b")].ackRound
	assert.True(t, h.e.leadingWhere(h.now, nil, peekFrom(s, h.e)), "the hub's round counts between steps")
	assert.Equal(t, sent.Add(actingLease(h.e.cfg)), h.e.actingUntil(nil, peekFrom(s, h.e)))
	assert.Equal(t, round, h.e.round, "the query took nothing in")
	assert.Equal(t, lease, h.e.leaseUntil, "the query renewed nothing")
	assert.Len(t, s.rounds, 1, "the hub still holds the round for the next step")
	assert.Equal(t, acked, h.e.members[node("b")].ackRound, "nor did it take the ack")

	h.e.stepStarts(h.now, settleFrom(s, h.e))
	assert.Equal(t, next, h.e.round)
	assert.Equal(t, sent.Add(actingLease(h.e.cfg)), h.e.leaseUntil, "the step agrees with the query")
	assert.True(t, h.e.leading(h.now))
}

// assertAcks checks that message is a msgBeatAcks holding exactly acks, in
// order, and the keys unserved and unknown.
func assertAcks(t *testing.T, message any, acks []wireAck, unserved, unknown []uint64) {
	t.Helper()
	m, ok := message.(msgBeatAcks)
	require.True(t, ok, "%T is not a msgBeatAcks", message)
	got, malformed := unpackAcks(m)
	require.False(t, malformed)
	assert.Equal(t, acks, got)
	gotUnserved, malformed := unpackKeys(m.Unserved)
	require.False(t, malformed)
	assert.Equal(t, unserved, gotUnserved, "unserved")
	gotUnknown, malformed := unpackKeys(m.Unknown)
	require.False(t, malformed)
	assert.Equal(t, unknown, gotUnknown, "unknown")
}

// The hubs' records travel packed. They read back as written, and a
// message cut anywhere or holding garbage yields the records before the
// damage and says it was malformed; the hub still answers the well-formed
// ones and counts the message (ergo:hub_malformed).
func TestHubWireReadsWhatParsesAndCountsTheRest(t *testing.T) {
	entries := []wireBeat{
		named(1, "c", 4, pid("b").ID, 7),
		named(maxWireKey, "a-longer-cluster-id", math.MaxUint64, 1, math.MaxUint64),
		keyed(3, 0, 0, 0),
		named(4, "", 1, 1, 1),
	}
	whole := packBeats(entries...)
	got, malformed := unpackBeats(whole)
	require.False(t, malformed)
	require.Equal(t, entries, got)
	acks := []wireAck{{key: 1, term: 2, round: 9, followerID: 12}, {key: 2, term: 1, round: 1, followerID: 1}}
	gotAcks, malformed := unpackAcks(packAcks(acks, nil, nil))
	require.False(t, malformed)
	require.Equal(t, acks, gotAcks)

	boundaries := map[int]int{0: 0} // length -> whole records in it
	for i := range entries {
		boundaries[len(packBeats(entries[:i+1]...).Beats)] = i + 1
	}
	for cut := 0; cut <= len(whole.Beats); cut++ {
		got, malformed := unpackBeats(msgBeats{Beats: whole.Beats[:cut]})
		records, atBoundary := boundaries[cut]
		assert.Equal(t, !atBoundary, malformed, "cut at %d", cut)
		if atBoundary {
			assert.Len(t, got, records, "cut at %d", cut)
		}
		for i, e := range got {
			assert.Equal(t, entries[i], e, "a record read off a cut message is one that was written")
		}
	}

	for _, garbage := range [][]byte{
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}, // a key beyond any hub's
		{0x03, 0xff, 0xff, 0xff, 0x0f},             // a ClusterID longer than any message
		{0x00, 0x01, 0x01, 0x01},                   // key 0, which no hub gives
		{0x02, 0x01, 0x01, 0xff, 0xff},             // a round cut short
	} {
		_, malformed = unpackBeats(msgBeats{Beats: garbage})
		assert.True(t, malformed, "% x", garbage)
	}
	_, malformed = unpackKeys([]byte{0x00})
	assert.True(t, malformed, "key 0")

	follower := &slot{cluster: "c", actor: pid("a"), follow: pid("b"), followTerm: 4}
	h, p := newTestHub(follower)
	damaged := append(packBeats(entries[0]).Beats, 0x05, 'x')
	h.beats(gen.PID{Node: node("b"), ID: 3, Creation: 1}, msgBeats{Beats: damaged})
	assertAcks(t, p.sent[0], []wireAck{{key: 1, term: 4, round: 7, followerID: pid("a").ID}}, nil, nil)
	assert.Equal(t, "1", h.inspect()["ergo:hub_malformed"])
}

// A slot keeps the recentStamps newest rounds, oldest first, and moves
// them down in place once full rather than growing a new list every
// recentStamps rounds.
func TestAppendRecentKeepsTheNewestRounds(t *testing.T) {
	var list []roundStamp
	for r := uint64(1); r <= 3*recentStamps; r++ {
		list = appendRecent(list, roundStamp{round: r, at: t0.Add(time.Duration(r) * time.Millisecond)})
	}
	require.Len(t, list, recentStamps)
	for i, s := range list {
		assert.Equal(t, uint64(2*recentStamps+1+i), s.round)
	}
	before := &list[0]
	list = appendRecent(list, roundStamp{round: 3*recentStamps + 1})
	assert.Same(t, before, &list[0], "no new list once full")
	assert.Equal(t, uint64(3*recentStamps+1), list[recentStamps-1].round)
}

// The hub reads the followers' quiet times from a block of its own, in
// the order of its slots; a slot that leaves takes its entry along, so
// the slots after it are still read from their own. Were the entries to
// shift against the slots, c would be read as quiet from b's entry and its
// timer would not fire.
func TestHubQuietTimesStayWithTheirSlotsWhenOneLeaves(t *testing.T) {
	now := t0
	horizon := parkHorizon(50 * time.Millisecond)
	slots := map[string]*slot{}
	var list []*slot
	for _, name := range []string{"a", "b", "c"} {
		s := &slot{cluster: "c-" + name, actor: pid(name), interval: 50 * time.Millisecond}
		slots[name] = s
		list = append(list, s)
	}
	h, p := newTestHub(list...)
	h.clock = func() time.Time { return now }
	for _, s := range list {
		_, parked := s.park(timerElection, parkedTimer{generation: 1, at: t0.Add(time.Second)}, now, horizon)
		require.True(t, parked)
	}
	h.tick()
	for name, s := range slots {
		require.Equal(t, t0.Add(time.Second).Add(-horizon).UnixNano(), s.quietUntil.until.Load(), "%s is quiet", name)
	}

	h.leave(pid("b"))
	_, parked := slots["c"].park(timerElection, parkedTimer{generation: 2, at: now.Add(horizon + time.Millisecond)}, now, horizon)
	require.True(t, parked)
	now = now.Add(2 * time.Millisecond)
	p.sent = nil
	h.tick()
	assert.Contains(t, p.sent, hubWake{Kind: timerElection, Generation: 2}, "c's timer, now within the horizon, fires")
	assert.NotContains(t, p.sent, hubWake{Kind: timerElection, Generation: 1}, "a's timer is not near yet")
}

// Between the ticks that read every slot, the hub reads only what its
// wheel has due (quietwheel.go): a slot that joined since is visited at the
// next tick, and its timer fires; a slot that left is not visited again,
// though its actor parked a timer after it left. Breaks: a new slot not
// filed with the wheel (its timer waits for the next refresh, a second
// away), or a left slot's cell kept in it.
func TestHubVisitsASlotThatJoinedBetweenTicksAndNoneThatLeft(t *testing.T) {
	now := t0
	interval := 5 * time.Millisecond
	horizon := parkHorizon(interval)
	newSlot := func(name string) *slot {
		return &slot{cluster: "c-" + name, actor: pid(name), interval: interval, beatEvery: 50 * time.Millisecond}
	}
	a, gone := newSlot("a"), newSlot("g")
	h, p := newTestHub(a, gone)
	h.clock = func() time.Time { return now }
	for _, s := range []*slot{a, gone} {
		_, parked := s.park(timerElection, parkedTimer{generation: 1, at: t0.Add(time.Second)}, now, horizon)
		require.True(t, parked)
	}
	h.tick() // the first tick reads every slot
	now = now.Add(interval)
	h.tick()
	visits := h.visits

	joined := newSlot("j")
	joined.relink()
	h.add(joined)
	_, parked := joined.park(timerElection, parkedTimer{generation: 7, at: now.Add(horizon + 2*time.Millisecond)}, now, horizon)
	require.True(t, parked)
	h.leave(gone.actor)
	_, parked = gone.park(timerElection, parkedTimer{generation: 8, at: now.Add(horizon + 2*time.Millisecond)}, now, horizon)
	require.True(t, parked)
	p.sent, p.sentTo = nil, nil
	now = now.Add(interval)
	h.tick()
	require.Equal(t, visits+1, h.visits, "a tick between refreshes visits the joined slot alone")
	assert.Contains(t, p.sent, hubWake{Kind: timerElection, Generation: 7}, "the joined slot's timer fires")
	assert.NotContains(t, p.sent, hubWake{Kind: timerElection, Generation: 8}, "the slot that left is not visited")
}

// A follower's slot with nothing due is passed by at the hub's ticks
// without taking its lock (slot.quietUntil) until its parked timer comes
// within the horizon, and the timer still fires on time; whatever the
// actor shares or parks makes the hub look again.
func TestHubPassesQuietFollowersByUntilTheirTimerIsNear(t *testing.T) {
	now := t0
	follower := &slot{cluster: "c", actor: pid("a"), interval: 50 * time.Millisecond, beatEvery: 50 * time.Millisecond}
	h, p := newTestHub(follower)
	h.clock = func() time.Time { return now }
	horizon := parkHorizon(50 * time.Millisecond)
	due := t0.Add(time.Second)
	_, parked := follower.park(timerElection, parkedTimer{generation: 1, at: due}, now, horizon)
	require.True(t, parked)
	wake := hubWake{Kind: timerElection, Generation: 1}

	h.tick()
	assert.Equal(t, due.Add(-horizon).UnixNano(), follower.quietUntil.until.Load(), "quiet until its timer is near")
	now = due.Add(-horizon - time.Millisecond)
	follower.mu.Lock() // a tick that takes the lock blocks until it is released
	ticked := make(chan struct{})
	go func() { h.tick(); close(ticked) }()
	select {
	case <-ticked:
	case <-time.After(5 * time.Second):
		follower.mu.Unlock()
		<-ticked
		t.Fatal("the tick took the lock of a slot with nothing due")
	}
	follower.mu.Unlock()
	assert.NotContains(t, p.sent, wake)

	now = due.Add(-horizon + time.Millisecond)
	h.tick()
	assert.Contains(t, p.sent, wake, "fired within the horizon of its due time")
	assert.Equal(t, int64(math.MaxInt64), follower.quietUntil.until.Load(), "nothing left to fire")

	follower.share(grant{lead: true, leadTerm: 3, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	assert.Zero(t, follower.quietUntil.until.Load(), "it leads now: the next tick opens its round")
	p.sent = nil
	h.tick()
	var rounds int
	for _, m := range p.sent {
		if _, ok := m.(msgBeats); ok {
			rounds++
		}
	}
	assert.Equal(t, 1, rounds)
}

// A hub reports how it keeps up: a tick that came more than an interval
// after it was due counts as late, and the latest one is kept, so that an
// operator can tell a starved node from a lost network.
func TestTheHubReportsTicksThatCameLate(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, interval: 5 * time.Millisecond}
	h, _ := newTestHub(leader)
	now := t0
	h.clock = func() time.Time { return now }
	h.armTick()
	interval := h.interval()
	require.Greater(t, interval, time.Duration(0))

	now = h.nextTick.Add(interval / 2) // a little late: within an interval
	h.tick()
	assert.Equal(t, "0", h.inspect()["ergo:hub_late_ticks"])
	assert.Equal(t, (interval / 2).String(), h.inspect()["ergo:hub_late_max"])
	assert.False(t, h.board.lateWithin(now, time.Hour), "campaign admission is not told of a tick on time")

	now = h.nextTick.Add(30 * interval) // the CPU went elsewhere
	h.tick()
	assert.True(t, h.board.lateWithin(now, interval), "campaign admission is told (pacing.go)")
	assert.Equal(t, "1", h.inspect()["ergo:hub_late_ticks"])
	assert.Equal(t, (30 * interval).String(), h.inspect()["ergo:hub_late_max"])
	assert.NotEmpty(t, h.inspect()["ergo:hub_tick_longest"])
}

// What a hub keeps per other node goes once that node's hub has been
// silent for boardRetention: node names come and go (a new pod name per
// deploy), and a table keyed by them that is never pruned grows for as long
// as the node runs. The check walks every map of the hub keyed by a node
// name, so a table added later is held to the same rule.
func TestHubForgetsEverythingItKeptAboutAGoneNode(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, interval: 5 * time.Millisecond,
		peerSilence: 150 * time.Millisecond, followers: map[gen.Atom]gen.PID{node("c"): pid("c")}}
	h, _ := newTestHub(leader)
	now := t0
	h.clock = func() time.Time { return now }
	h.heard(gen.PID{Node: node("c"), ID: 3, Creation: 1})
	h.answers[node("c")] = &pendingAnswer{}
	h.tick()
	h.resendNamed(node("c"), []uint64{leader.key}, now) // an answer from c named the leader
	h.heardNames(node("c"), appendKeys(nil, leader.key))
	kept := atomKeyedMaps(h)
	require.Contains(t, kept, "namesHeard", "and kept the names as read")
	require.Contains(t, kept, "batchSize", "the tick sent c records, so the hub noted their size")
	require.Contains(t, kept, "namedLeaders", "and noted the leaders c's answer named")
	require.NotEmpty(t, h.board.peers, "and the board knows c")
	h.leave(leader.actor) // c left the leader's view, and the leader the hub
	now = now.Add(boardRetention + boardSweepEvery + time.Second)
	h.tick()
	for name, has := range atomKeyedMaps(h) {
		if has[node("c")] {
			t.Errorf("hub.%s still holds node c %v after it was silent for longer than boardRetention", name, boardRetention)
		}
	}
	assert.Empty(t, h.board.peers, "the board forgot c too")
}

// atomKeyedMaps returns, for every map field of h keyed by a node name, the
// names it holds.
func atomKeyedMaps(h *hub) map[string]map[gen.Atom]bool {
	found := make(map[string]map[gen.Atom]bool)
	v := reflect.ValueOf(h).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if f.Kind() != reflect.Map || f.Type().Key() != reflect.TypeOf(gen.Atom("")) {
			continue
		}
		keys := make(map[gen.Atom]bool)
		for _, k := range f.MapKeys() {
			keys[gen.Atom(k.String())] = true
		}
		if len(keys) > 0 {
			found[v.Type().Field(i).Name] = keys
		}
	}
	return found
}

// A hub whose tick is overdue by half an interval ticks when another
// hub's message comes in, and the late timer's message is then ignored.
// Breaks: a node whose collector delays its timers (golang/go#45632)
// goes on answering the other nodes' pings but sends none of its own, and
// its leaders lose their leases all at once.
func TestAHubTicksOnAPeersMessageWhenItsTimerIsLate(t *testing.T) {
	p := newPingPair(t)
	p.tick()
	p.a.ticking = true
	p.a.armTick()
	late := p.a.tickGen
	p.pa.sent, p.pa.sentTo, p.pa.after = nil, nil, nil
	pings := func() (n int) {
		for _, m := range p.pa.sent {
			if b, ok := m.(msgBeats); ok && b.Ping != 0 {
				n++
			}
		}
		return n
	}

	p.now = p.a.nextTick.Add(p.a.interval()/2 - time.Millisecond)
	p.a.fromPeer(p.pb.self, msgBeats{Ping: 1})
	assert.Zero(t, pings(), "not overdue by half an interval yet: the timer may still come")

	p.now = p.a.nextTick.Add(p.a.interval() / 2)
	p.a.fromPeer(p.pb.self, msgBeats{Ping: 2})
	assert.Equal(t, 1, pings(), "overdue: the peer's message brings the tick, with its ping")
	assert.NotEqual(t, late, p.a.tickGen, "and the late timer's message is of an older generation")
	assert.Equal(t, p.now.Add(p.a.interval()), p.a.nextTick, "the next tick an interval on")
}

// An answer read more than slowAnswerIntervals after its ping went is
// counted for the operator (ergo:hub_slow_answers): how a node working
// through a crash wave shows that its leaders' evidence comes late.
func TestTheHubCountsAnswersReadLongAfterTheirPing(t *testing.T) {
	interval := 5 * time.Millisecond
	h, _ := newTestHub(&slot{cluster: "c", actor: pid("a"), interval: interval})
	now := t0
	h.clock = func() time.Time { return now }
	peerHub := gen.PID{Node: node("b"), ID: 3, Creation: 1}
	answer := func(after time.Duration) {
		seq := h.pings.next(now)
		now = now.Add(after)
		m := packAcks(nil, nil, nil)
		m.Ping = seq
		h.acks(peerHub, m)
	}
	answer(slowAnswerIntervals * interval)
	assert.Equal(t, "0", h.inspect()["ergo:hub_slow_answers"], "an answer within the bound is not slow")
	answer(slowAnswerIntervals*interval + time.Millisecond)
	assert.Equal(t, "1", h.inspect()["ergo:hub_slow_answers"])
	m := packAcks(nil, nil, nil)
	m.Ping = 12345 // a ping this hub never sent: its age is not known
	now = now.Add(time.Second)
	h.acks(peerHub, m)
	assert.Equal(t, "1", h.inspect()["ergo:hub_slow_answers"])
}

// A new leader with a hub announces itself to its followers directly and
// leaves the rounds after that to the hub, which decides at its next visit
// whether it carries them to each node and wakes the leader where it does
// not (TestHubWakesALeaderForANodeItDecidesNotToCarry). A node the hub has
// already decided not to carry gets the leader's own rounds, every
// liveness interval. Breaks: every new leader woke once more on its own
// timer only to read the hub's decision (a tenth of the survivors' steps
// in a node crash under a thousand elections), or the leader stopped
// sending to a node the hub does not carry.
func TestNewLeaderLeavesItsRoundsAfterTheAnnouncementToTheHub(t *testing.T) {
	for _, decided := range []map[gen.Atom]bool{nil, {node("b"): true}, {node("b"): false}} {
		h := newStateHarness(t, Options{}, "b", "c")
		h.recv("b", msgHello{ClusterID: "c"})
		h.recv("c", msgHello{ClusterID: "c"})
		h.e.hubAttached(nil, pid("hub"))
		h.e.carried = decided
		h.becomeLeader("b")
		// the announcement went out in becomeLeader; what is left is the
		// timer for the next round
		timer := h.e.timers[timerHeartbeat]
		if decided[node("b")] == false && decided != nil {
			require.True(t, timer.armed, "b not carried: the leader's own rounds")
			assert.Equal(t, livenessInterval(h.e.cfg), timer.due.Sub(h.now), "every liveness interval")
			continue
		}
		if timer.armed {
			assert.Equal(t, h.e.choreInterval(), timer.due.Sub(h.now), "carried %v: a chore tick at most, not a round", decided)
		}
	}
}

// The first decision a hub takes for a new leader's follower node, when
// the node's hub has not been heard within peerTTL, wakes the leader to
// send there itself: after its announcement the leader waits on that
// decision (TestNewLeaderLeavesItsRoundsAfterTheAnnouncementToTheHub), and
// nothing else would tell it. It is woken once, not at every tick. Breaks:
// a new leader whose follower's node had a silent hub sent nothing there
// after its announcement, and the follower timed out.
func TestHubWakesALeaderForANodeItDecidesNotToCarry(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, interval: 50 * time.Millisecond,
		peerSilence: 150 * time.Millisecond, followers: map[gen.Atom]gen.PID{node("b"): pid("b"), node("c"): pid("c")}}
	h, p := newTestHub(leader)
	h.heard(gen.PID{Node: node("b"), ID: 3, Creation: 1}) // b's hub answers; c's never did
	h.tick()
	require.Equal(t, node("b"), leader.links[0].node)
	assert.True(t, leader.links[0].carried, "b's hub answers")
	assert.False(t, leader.links[1].carried, "c's hub is silent")
	wakes := func() int { return countOf[hubCarryLost](p.sent) }
	assert.Equal(t, 1, wakes(), "the leader is woken to send to c itself")
	h.tick()
	assert.Equal(t, 1, wakes(), "once")
}

// A tick's buffer of records starts at the size of that node's recent
// batches, not its largest ever: once a tick carried every leader's record
// (a refresh, the new leaders after a crash), a tick with one record must
// not make a buffer for all of them again, every tick, for as long as the
// node runs.
func TestATicksRecordBufferFollowsRecentBatches(t *testing.T) {
	const leaders = 200
	var slots []*slot
	for i := 0; i < leaders; i++ {
		s := &slot{cluster: "c" + strconv.Itoa(i), actor: gen.PID{Node: node("a"), ID: uint64(100 + i), Creation: 1},
			interval: 5 * time.Millisecond, stepGrace: 75 * time.Millisecond}
		s.share(grant{lead: true, leadTerm: 2, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
		slots = append(slots, s)
	}
	h, p := newTestHub(slots...)
	now := t0
	h.clock = func() time.Time { return now }
	records := func() []msgBeats {
		var list []msgBeats
		for _, m := range p.sent {
			if b, ok := m.(msgBeats); ok && len(b.Beats) > 0 {
				list = append(list, b)
			}
		}
		p.sent = nil
		return list
	}
	h.tick()
	first := records()
	require.Len(t, first, 1, "every new leader's record, in one batch")
	entries, malformed := unpackBeats(first[0])
	require.False(t, malformed)
	require.Len(t, entries, leaders)
	full := len(first[0].Beats)

	for _, s := range slots[1:] {
		s.share(grant{}) // all but one stood down
	}
	for i := 0; i < 10; i++ { // ticks with pings, and a record or none
		now = now.Add(5 * time.Millisecond)
		h.tick()
		records()
	}
	slots[0].share(grant{lead: true, leadTerm: 3, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	now = now.Add(5 * time.Millisecond)
	h.tick()
	sent := records()
	require.Len(t, sent, 1, "the leader left sends a record for its new term")
	last := sent[0]
	entries, malformed = unpackBeats(last)
	require.False(t, malformed)
	require.Len(t, entries, 1)
	assert.Less(t, cap(last.Beats), full/4, "a batch of one record in a buffer made for %d", leaders)
}
