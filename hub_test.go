package leader

import (
	"math"
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
	h.slots = make(map[gen.PID]*slot)
	h.byCluster = make(map[string][]*slot)
	h.peers = make(map[gen.Atom]hubPeer)
	for _, s := range slots {
		s.relink()
		h.slots[s.actor] = s
		h.order = append(h.order, s.actor)
		h.byCluster[s.cluster] = append(h.byCluster[s.cluster], s)
	}
	return h, p
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
		beatEntry{ClusterID: "c", Term: 4, LeaderID: leaderID, Round: 7},              // allowed
		beatEntry{ClusterID: "c", Term: 5, LeaderID: leaderID, Round: 1},              // another term: the actor decides
		beatEntry{ClusterID: "c", Term: 4, LeaderID: leaderID + 1, Round: 8},          // another process: the actor decides
		beatEntry{ClusterID: "nobody", Term: 1, LeaderID: leaderID, Round: 1},         // no actor here
		beatEntry{ClusterID: "c", Term: math.MaxUint64, LeaderID: leaderID, Round: 0}, // absurd: the actor decides
	))
	require.Len(t, p.sent, 4)
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 5, Leader: pid("b"), Round: 1}, p.sent[0])
	other := pid("b")
	other.ID++
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 4, Leader: other, Round: 8}, p.sent[1])
	assert.Equal(t, hubBeat{ClusterID: "c", Term: math.MaxUint64, Leader: pid("b"), Round: 0}, p.sent[2])
	assertAcks(t, p.sent[3], []beatAck{{ClusterID: "c", Term: 4, Round: 7, FollowerID: pid("a").ID}}, "nobody")
	assert.Equal(t, t0, follower.beatAt)

	p.sent = nil
	restarted := peerHub
	restarted.Creation++
	h.beats(restarted, packBeats(beatEntry{ClusterID: "c", Term: 4, LeaderID: leaderID, Round: 8}))
	stale := pid("b")
	stale.Creation++
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 4, Leader: stale, Round: 8}, p.sent[0], "a restarted node's hub does not speak for the old leader")
	assertAcks(t, p.sent[1], nil)

	follower.follow = gen.PID{} // the actor is in a step
	p.sent = nil
	h.beats(peerHub, packBeats(beatEntry{ClusterID: "c", Term: 4, LeaderID: leaderID, Round: 8}))
	assert.Equal(t, hubBeat{ClusterID: "c", Term: 4, Leader: pid("b"), Round: 8}, p.sent[0], "no permission: the actor answers itself")
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

// A leader in the middle of a step when the hub ticks has withdrawn its
// permission to open rounds. The hub does not skip it (a leader that
// handles a message every few milliseconds is often in a step at the tick,
// and two skipped rounds would end its lease): it comes back a moment
// later and opens the round once the step ended; a leader that stood down
// in that step is not waited for.
func TestHubComesBackForALeaderInTheMiddleOfAStep(t *testing.T) {
	leader := &slot{cluster: "c", actor: pid("a"), interval: 50 * time.Millisecond}
	leader.share(grant{lead: true, leadTerm: 2, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	h, p := newTestHub(leader)
	leader.settle(true, 0, 0) // the actor's step begins
	h.tick()
	beats := func() []msgBeats {
		var list []msgBeats
		for _, m := range p.sent {
			if b, ok := m.(msgBeats); ok {
				list = append(list, b)
			}
		}
		return list
	}
	assert.Empty(t, beats(), "no round for a leader in a step")
	assert.Contains(t, p.sent, hubRetick{Generation: h.retickGen}, "the hub comes back for it")
	assert.Equal(t, uint64(0), leader.round)

	leader.share(grant{lead: true, leadTerm: 2, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}}) // the step ends
	p.sent = nil
	h.retick()
	require.Len(t, beats(), 1, "the round, a moment late")
	entries, malformed := unpackBeats(beats()[0])
	require.False(t, malformed)
	assert.Equal(t, uint64(1), entries[0].Round)
	assert.Empty(t, h.pending)

	leader.settle(true, 0, 0)
	h.tick()
	leader.share(grant{}) // it stood down in that step
	p.sent = nil
	h.retick()
	assert.Empty(t, beats())
	assert.Empty(t, h.pending, "nobody to wait for")
	assert.NotContains(t, p.sent, hubRetick{Generation: h.retickGen + 1})
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
	h.acks(restarted, packAcks([]beatAck{{ClusterID: "c", Term: 2, Round: 9, FollowerID: id}}, nil))
	assert.Zero(t, leader.link(node("b")).ack, "a restarted node's hub does not speak for the old follower")
	h.acks(peerHub, packAcks([]beatAck{
		{ClusterID: "c", Term: 2, Round: 8, FollowerID: id + 1}, // another process
		{ClusterID: "c", Term: 2, Round: 9, FollowerID: id},     // counts
		{ClusterID: "c", Term: 2, Round: 12, FollowerID: id},    // a round never opened
		{ClusterID: "c", Term: 1, Round: 9, FollowerID: id},     // another term
		{ClusterID: "zz", Term: 2, Round: 9, FollowerID: id},    // no such election here
	}, []string{"c"}))
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
	v := s.settle(true, 0, 0)
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
	h.e.shared = &slot{cluster: "c", actor: pid("a")}
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 2})
	h.e.shareState()
	require.Equal(t, pid("b"), h.e.shared.follow, "a follower of b lets the hub answer b")

	h.advance(h.e.cfg.electionTimeoutMin / 2)
	h.e.shared.beatAt = h.now // the hub answered b's round now
	h.advance(h.e.cfg.electionTimeoutMin * 3 / 4)
	h.e.now = h.now
	h.e.settleShared()
	assert.Equal(t, gen.PID{}, h.e.shared.follow, "withdrawn for the step")
	assert.Equal(t, h.now.Add(-h.e.cfg.electionTimeoutMin*3/4), h.e.lastHeartbeatIn)
	out := h.recv("c", msgVote{ClusterID: "c", Term: 2, ViewSize: 3})
	assert.False(t, sentTo[msgVoteReply](out, "c")[0].Granted, "promised to b since the hub's answer")
}

// A leader's hub opened rounds and got a quorum's acks: at the leader's
// next step (or when it asks IsLeader) they renew its lease from the
// round's send time.
func TestRoundsTheHubOpenedRenewTheLease(t *testing.T) {
	h := leaderOfThree(t)
	h.e.shared = &slot{cluster: "c", actor: pid("a")}
	h.e.shareState()
	require.True(t, h.e.shared.lead)
	h.advance(h.e.cfg.heartbeatInterval)
	sent := h.now
	next := h.e.round + 1
	h.e.shared.rounds = []roundStamp{{round: next, at: sent}}
	b := h.e.shared.link(node("b"))
	require.NotNil(t, b, "the leader shares its followers")
	b.ack, b.ackAt = next, sent.Add(time.Millisecond)
	h.e.shared.acksVersion++
	h.advance(2 * time.Millisecond)
	h.e.now = h.now
	h.e.importShared(false)
	assert.Equal(t, next, h.e.round)
	assert.Equal(t, sent.Add(h.e.leaseDuration()), h.e.leaseUntil, "the lease runs from the hub's round")
}

// assertAcks checks that message is a msgBeatAcks holding exactly acks, in
// order, and unserved.
func assertAcks(t *testing.T, message any, acks []beatAck, unserved ...string) {
	t.Helper()
	m, ok := message.(msgBeatAcks)
	require.True(t, ok, "%T is not a msgBeatAcks", message)
	got, malformed := unpackAcks(m)
	require.False(t, malformed)
	assert.Equal(t, acks, got)
	assert.Equal(t, unserved, append([]string(nil), m.Unserved...))
}

// The hubs' records travel packed. They read back as written, and a
// message cut anywhere or holding garbage yields the records before the
// damage and says it was malformed; the hub still answers the well-formed
// ones and counts the message (ergo:hub_malformed).
func TestHubWireReadsWhatParsesAndCountsTheRest(t *testing.T) {
	entries := []beatEntry{
		{ClusterID: "c", Term: 4, LeaderID: pid("b").ID, Round: 7},
		{ClusterID: "a-longer-cluster-id", Term: math.MaxUint64, LeaderID: 1, Round: math.MaxUint64},
		{ClusterID: "", Term: 0, LeaderID: 0, Round: 0},
	}
	whole := packBeats(entries...)
	got, malformed := unpackBeats(whole)
	require.False(t, malformed)
	require.Equal(t, entries, got)
	acks := []beatAck{{ClusterID: "c", Term: 2, Round: 9, FollowerID: 12}, {ClusterID: "d", Term: 1, Round: 1, FollowerID: 1}}
	gotAcks, malformed := unpackAcks(packAcks(acks, nil))
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

	huge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f} // a ClusterID longer than any message
	_, malformed = unpackBeats(msgBeats{Beats: huge})
	assert.True(t, malformed)

	follower := &slot{cluster: "c", actor: pid("a"), follow: pid("b"), followTerm: 4}
	h, p := newTestHub(follower)
	damaged := append(packBeats(entries[0]).Beats, 0x05, 'x')
	h.beats(gen.PID{Node: node("b"), ID: 3, Creation: 1}, msgBeats{Beats: damaged})
	assertAcks(t, p.sent[0], []beatAck{{ClusterID: "c", Term: 4, Round: 7, FollowerID: pid("a").ID}})
	assert.Equal(t, "1", h.inspect()["ergo:hub_malformed"])
}
