package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the vouching rules (vouch.go). Each names what breaks when it
// fails.

// vouchSlack is the election timeout the follower parks in these tests.
const vouchSlack = 150 * time.Millisecond

// parkFollowerTimer parks the follower's election timer as its actor
// would, due a slack after now unless its leader is heard of.
func (p *pingPair) parkFollowerTimer() {
	p.t.Helper()
	_, parked := p.follower.park(timerElection, parkedTimer{generation: 1, at: p.now.Add(vouchSlack), slack: vouchSlack}, p.now, parkHorizon(5*time.Millisecond))
	require.True(p.t, parked, "the follower's election timer is parked with its hub")
}

// followerDue is when the follower's parked election timer is due by what
// its hub saw.
func (p *pingPair) followerDue() time.Time {
	p.follower.mu.Lock()
	defer p.follower.mu.Unlock()
	return p.follower.dueAt(0)
}

// ticks runs n ticks 5 ms apart.
func (p *pingPair) ticks(n int) {
	for range n {
		p.now = p.now.Add(5 * time.Millisecond)
		p.tick()
	}
}

// After its first round, a leader whose state does not change gets no
// record until the refresh: its node's pings renew its lease and vouch
// for it. Breaks: every leader costs a record, an answer and an ack per
// follower node every HeartbeatInterval (the idle cost vouching removes),
// or a follower whose anchor went with a lost message is never anchored
// again.
func TestAHubSendsALeadersRecordOnlyWhenSomethingChanged(t *testing.T) {
	p := newPingPair(t)
	p.tick()
	require.Equal(t, uint64(1), p.lead.round, "the first tick carries the new leader's record")
	require.Equal(t, uint64(1), p.lead.links[0].ack)
	p.ticks(100) // half a second: ten HeartbeatIntervals
	assert.Equal(t, uint64(1), p.lead.round, "no record while nothing changed")
	assert.Equal(t, p.now, p.counted(), "the pings count as the follower's acks")
	p.lead.mu.Lock()
	held := p.lead.hubLease(holdingLease(config{electionTimeoutMin: 150 * time.Millisecond}), 1)
	p.lead.mu.Unlock()
	assert.True(t, held.After(p.now.Add(100*time.Millisecond)), "the hub's parked lease timer counts the pings too, not only the round of half a second ago: %s", held.Sub(p.now))
	p.ticks(110)
	assert.Equal(t, uint64(2), p.lead.round, "the refresh (every %s) carries the record again", recordRefresh(p.lead.beatEvery))

	// a new follower node is something new
	p.lead.settle(0, 0)
	p.lead.share(grant{lead: true, leadTerm: 1, fresh: 15 * time.Millisecond, round: p.lead.round,
		followers: map[gen.Atom]gen.PID{node("b"): pid("b"), node("c"): pid("c")}})
	p.a.tick()
	assert.Equal(t, uint64(3), p.lead.round, "a new follower gets the record at the next tick")
}

// A follower's election deadline moves on with every ping from its
// leader's node while the leader's hub vouches for it, with no record.
// Breaks: followers campaign against a healthy leader every election
// timeout.
func TestThePingsVouchForTheLeadersFollowers(t *testing.T) {
	p := newPingPair(t)
	p.parkFollowerTimer()
	p.tick()
	for range 9 { // within the refresh
		p.ticks(20)
		assert.False(t, p.followerDue().Before(p.now.Add(vouchSlack-5*time.Millisecond)), "due a slack after the newest ping, not after the record of %s ago", p.now.Sub(t0))
	}
	require.Equal(t, uint64(1), p.lead.round, "all of that without a second record")

	// a follower of another leader or term is not vouched for by this one
	p.follower.settle(0, 0)
	p.follower.share(grant{follow: pid("a"), followTerm: 2})
	p.ticks(1)
	p.follower.mu.Lock()
	assert.True(t, p.follower.vouchedAt().IsZero(), "anchored to term 1, it follows term 2")
	p.follower.mu.Unlock()
}

// Once a leader's step ends without the lead, its hub stops vouching for
// it: the follower's deadline counts from the first ping that said so.
// The other leaders' followers are anchored again by the records of the
// tick that raised the epoch. Breaks: the followers of a leader that stood
// down (its lease ran out) never campaign, or every other election of
// the node campaigns with them.
func TestAHubStopsVouchingForALeaderThatStoodDown(t *testing.T) {
	p := newPingPair(t)
	other, otherFollower := p.addElection("d")
	p.parkFollowerTimer()
	p.tick()
	p.ticks(20)
	p.lead.settle(0, 0)
	p.lead.share(grant{}) // it stood down
	p.ticks(1)            // the tick that sees it
	p.ticks(1)            // the tick that raises the epoch, with the others' records
	raised := p.now
	assert.Equal(t, uint64(1), p.a.raises)
	assert.Equal(t, uint64(2), other.round, "the other leader's record went again under the new epoch")
	p.ticks(40)
	assert.Equal(t, raised.Add(vouchSlack), p.followerDue(), "due a slack after the epoch moved on")
	otherFollower.mu.Lock()
	assert.Equal(t, p.now, otherFollower.vouchedAt(), "the other election is still vouched for")
	otherFollower.mu.Unlock()
}

// A leader in one step for longer than its step grace is no longer
// vouched for, while one in a shorter step still is. Breaks: the followers
// of a hung leader never replace it (the node's hub keeps pinging whatever
// its actors do), or a leader doing a slow write loses its followers.
func TestAHubStopsVouchingForAHungLeader(t *testing.T) {
	p := newPingPair(t)
	p.addElection("d") // so that the node still pings b
	p.lead.stepGrace = 75 * time.Millisecond
	p.parkFollowerTimer()
	p.tick()
	p.lead.settle(0, 0) // a step begins, and does not end
	began := p.now
	p.ticks(14)
	assert.Zero(t, p.a.raises, "within its grace it is only busy")
	assert.False(t, p.followerDue().Before(p.now.Add(vouchSlack-5*time.Millisecond)), "and still vouched for")
	p.ticks(10)
	assert.Equal(t, uint64(1), p.a.raises, "past its grace it is hung")
	due := p.followerDue()
	assert.True(t, due.Before(began.Add(p.lead.stepGrace+vouchSlack+15*time.Millisecond)), "the follower is due a slack after the grace ran out, not later: %s", due.Sub(began))
	p.ticks(40)
	assert.Equal(t, due, p.followerDue(), "and stays due then")

	// the step ends, still leading: the record goes again
	p.lead.share(grant{lead: true, leadTerm: 1, fresh: 15 * time.Millisecond, round: p.lead.round, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	p.ticks(10)
	assert.False(t, p.followerDue().Before(p.now.Add(vouchSlack-5*time.Millisecond)), "vouched for again once it recorded anew")
}

// A leader whose actor terminated is no longer vouched for. Breaks: the
// followers of a leader that crashed in a step wait for the refresh, or
// forever.
func TestAHubStopsVouchingForALeaderThatTerminated(t *testing.T) {
	p := newPingPair(t)
	p.addElection("d") // so that the node still pings b
	p.parkFollowerTimer()
	p.tick()
	p.ticks(10)
	p.a.leave(p.lead.actor)
	p.ticks(1) // the tick that raises the epoch
	left := p.now
	assert.Equal(t, uint64(1), p.a.raises)
	p.ticks(40)
	assert.Equal(t, left.Add(vouchSlack), p.followerDue())
}

// The board keeps when each of a node's recent lead epochs was
// superseded, so a follower anchored to one counts from its end however
// many raises came after. Breaks: a later raise moves the deadline of a
// follower whose leader stopped earlier on, and a node whose leaders
// change often keeps such followers from ever campaigning.
func TestTheBoardRemembersWhenEachLeadEpochEnded(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	p := b.noteVouch(node("a"), 7, at(0))
	b.noteVouch(node("a"), 7, at(10))
	assert.Equal(t, at(10), b.vouchedUntil(p, 7, at(0)), "the newest ping of the epoch")
	b.noteVouch(node("a"), 8, at(20))
	b.noteVouch(node("a"), 9, at(30))
	b.noteVouch(node("a"), 9, at(40))
	assert.Equal(t, at(20), b.vouchedUntil(p, 7, at(0)), "until the first ping of a newer one")
	assert.Equal(t, at(30), b.vouchedUntil(p, 8, at(0)))
	assert.Equal(t, at(40), b.vouchedUntil(p, 9, at(0)))
	for i := range vouchHistory {
		b.noteVouch(node("a"), uint64(10+i), at(50+i))
	}
	assert.Equal(t, at(5), b.vouchedUntil(p, 7, at(5)), "forgotten: the anchor's own record")
	assert.Equal(t, at(5), b.vouchedUntil(p, 1234, at(5)), "an epoch never seen")
}

// A record of an older term does not take the anchor of a newer one, and
// a hub whose pings carry no lead epoch vouches for nothing. Breaks: a
// stale leader's record (it has not heard of the new term) keeps the new
// leader's followers from being vouched for, or a node running a version
// that sends every record every interval without raising vouches forever
// for a leader that stood down.
func TestAnAnchorIsTheNewestTermsAndNeedsALeadEpoch(t *testing.T) {
	p := newPingPair(t)
	peer := p.b.board.noteVouch(node("a"), 5, t0)
	s := p.follower
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setAnchor(pid("a"), 1, 5, t0, peer)
	s.setAnchor(pid("c"), 0, 5, t0.Add(time.Millisecond), peer)
	assert.Equal(t, pid("a"), s.anchor.leader, "term 0 does not replace term 1")
	assert.Equal(t, t0, s.vouchedAt())

	p = newPingPair(t)
	leader := pid("a")
	record := appendBeat(nil, 1, "c", true, 1, leader.ID, 1, 15000)
	p.b.beats(gen.PID{Node: leader.Node, ID: 3, Creation: leader.Creation}, msgBeats{Ping: 99, Fresh: 15000, Beats: record})
	p.follower.mu.Lock()
	defer p.follower.mu.Unlock()
	require.Equal(t, t0, p.follower.beatAt, "the record was answered")
	assert.Nil(t, p.follower.anchor.peer, "but anchors nothing without a lead epoch")
	assert.True(t, p.follower.vouchedAt().IsZero())
}

// addElection adds a second election to the pair, led on a and followed
// on b; it returns its two slots.
func (p *pingPair) addElection(cluster string) (lead, follower *slot) {
	const interval = 5 * time.Millisecond
	la, fb := pid("a"), pid("b")
	la.ID, fb.ID = 7, 7
	lead = &slot{cluster: cluster, actor: la, interval: interval, beatEvery: 10 * interval, peerSilence: 30 * interval, freshCap: 75 * time.Millisecond, board: p.a.board}
	follower = &slot{cluster: cluster, actor: fb, interval: interval, beatEvery: 10 * interval, peerSilence: 30 * interval, freshCap: 75 * time.Millisecond, board: p.b.board}
	lead.share(grant{lead: true, leadTerm: 1, fresh: 3 * interval, followers: map[gen.Atom]gen.PID{node("b"): fb}})
	follower.share(grant{follow: la, followTerm: 1})
	p.a.add(lead)
	p.b.add(follower)
	return lead, follower
}

// A follower whose actor answered the leader's first record itself (it did
// not know the leader yet, so its hub could not) gets the record again at
// the next full tick, until its hub acknowledges one: only then do the
// answered pings count for it. Breaks: a new leader's lease rests on its
// first round alone, and it stands down a holding lease after winning.
func TestARecordGoesAgainUntilTheFollowersHubAcknowledgesIt(t *testing.T) {
	p := newPingPair(t)
	p.follower.settle(0, 0)
	p.follower.share(grant{}) // it does not know the leader yet
	p.tick()
	require.Equal(t, uint64(1), p.lead.round)
	require.Zero(t, p.lead.links[0].ack, "its actor got the record, not its hub")
	p.follower.settle(0, 0)
	p.follower.share(grant{follow: pid("a"), followTerm: 1}) // it answered, and follows
	p.ticks(12)                                              // past the next full tick
	assert.Equal(t, uint64(2), p.lead.round, "the record went again")
	assert.Equal(t, uint64(2), p.lead.links[0].ack, "and the follower's hub acknowledged it")
	assert.Equal(t, p.now, p.counted(), "so the pings count")
	p.ticks(20)
	assert.Equal(t, uint64(2), p.lead.round, "and no more records")
}

// The pings a hub sends after it stopped vouching for a hung leader do not
// count for that leader's leases, and once its last leader stood down a
// node stops pinging. Breaks: a leader stuck in a long callback holds its
// role through it while its followers wait for their timers, or a node
// with no leader keeps the promises of its former leader's followers (they
// refuse every pre-vote) until the refresh.
func TestPingsCountOnlyForLeadersTheHubVouchesFor(t *testing.T) {
	p := newPingPair(t)
	p.addElection("d") // so that the node still pings b
	p.lead.stepGrace = 75 * time.Millisecond
	p.tick()
	p.lead.settle(0, 0) // a step begins, and does not end
	p.ticks(20)
	require.Equal(t, uint64(1), p.a.raises, "hung")
	counted := p.counted()
	assert.False(t, counted.After(t0.Add(p.lead.stepGrace+10*time.Millisecond)), "no ping after the grace counts for it: %s", counted.Sub(t0))
	p.lead.share(grant{lead: true, leadTerm: 1, fresh: 15 * time.Millisecond, round: p.lead.round, followers: map[gen.Atom]gen.PID{node("b"): pid("b")}})
	p.ticks(3)
	assert.Equal(t, p.now, p.counted(), "they count again once its record went anew")

	p = newPingPair(t)
	p.tick()
	p.lead.settle(0, 0)
	p.lead.share(grant{}) // the node's only leader stood down
	p.a.tick()            // sees it
	p.pa.sent = nil
	p.now = p.now.Add(5 * time.Millisecond)
	p.a.tick() // raises, and looks at every leader: none
	for _, m := range p.pa.sent {
		if beats, ok := m.(msgBeats); ok {
			assert.Zero(t, beats.Ping, "no ping from a node with no leader")
		}
	}
}

// A follower whose epoch moved on while its actor was in a step, and
// whose acknowledgement of the resync's record was lost (a dropped
// connection takes what was in flight), gets the record again at the next
// full tick, until its hub acknowledges one under its current epoch.
// Breaks: the pings stop counting for that follower until the refresh,
// and a leader with no other support stands down meanwhile though its
// followers never left it.
func TestARecordGoesAgainUntilAckedUnderTheNewEpoch(t *testing.T) {
	p := newPingPair(t)
	p.tick()
	p.ticks(2)
	require.Equal(t, p.now, p.counted())
	p.follower.settle(0, 0) // a step: the next answer raises the epoch
	p.ticks(1)
	p.follower.share(grant{follow: pid("a"), followTerm: 1})
	p.now = p.now.Add(5 * time.Millisecond)
	p.a.tick() // the resync: its record reaches b, b's answer is lost
	for _, m := range p.pa.sent {
		if beats, ok := m.(msgBeats); ok {
			p.b.beats(p.pa.self, beats)
		}
	}
	p.pa.sent, p.pa.sentTo, p.pb.sent, p.pb.sentTo = nil, nil, nil, nil
	stale := p.counted()
	p.ticks(12) // past the next full tick
	assert.True(t, p.counted().After(stale), "the pings count again")
	assert.Equal(t, p.now, p.counted())
}

// followerPassedBy parks the follower's election timer, anchors it with
// its leader's record and ticks both hubs for 200 ms, in which the
// follower's hub passes it by on the leader's pings.
func (p *pingPair) followerPassedBy() {
	p.t.Helper()
	p.parkFollowerTimer()
	p.tick()
	require.False(p.t, p.tickFollowerHub())
	for range 40 {
		p.ticks(1)
		require.False(p.t, p.tickFollowerHub())
	}
	require.NotZero(p.t, p.b.passed, "passed by while it followed")
}

// tickFollowerHub runs the follower's hub's tick and reports whether it
// fired the follower's election timer.
func (p *pingPair) tickFollowerHub() (fired bool) {
	p.t.Helper()
	p.b.tick()
	for _, m := range p.pb.sent {
		if w, ok := m.(hubWake); ok && w.Kind == timerElection {
			fired = true
		}
	}
	p.pb.sent, p.pb.sentTo, p.pb.after = nil, nil, nil
	return fired
}

// firesWithin ticks the follower's hub every millisecond for up to limit
// and returns when it fired the follower's election timer, zero if not.
func (p *pingPair) firesWithin(limit time.Duration) time.Time {
	p.t.Helper()
	for end := p.now.Add(limit); p.now.Before(end); {
		p.now = p.now.Add(time.Millisecond)
		if p.tickFollowerHub() {
			return p.now
		}
	}
	return time.Time{}
}

// A follower whose leader's node keeps pinging under the epoch of its
// anchor is passed by at its hub's ticks without a visit (passVouched),
// however long that goes on. Once the leader's hub raises its epoch (the
// leader stood down), the follower is visited again and its timer fires a
// slack after the first ping that said so, as without the pass. Breaks: an
// idle node takes the lock of every follower every election timeout (a
// third of an idle node's CPU at ten thousand elections), or a follower
// passed by on pings that no longer vouch for its leader never campaigns.
func TestAFollowerIsPassedByWhileItsLeadersPingsVouch(t *testing.T) {
	p := newPingPair(t)
	_, other := p.addElection("d") // its leader keeps a's hub pinging after the first stands down
	_, parked := other.park(timerElection, parkedTimer{generation: 1, at: p.now.Add(vouchSlack), slack: vouchSlack}, p.now, parkHorizon(5*time.Millisecond))
	require.True(t, parked)
	p.parkFollowerTimer()
	p.tick() // the record anchors the follower
	require.False(t, p.tickFollowerHub())
	require.NotNil(t, p.follower.quietUntil.waits.peer, "its first visit notes that it waits on its leader's pings")
	visits := p.b.visits
	for range 200 { // a second: more than six slacks
		p.ticks(1)
		require.False(t, p.tickFollowerHub(), "the pings keep the timer from firing")
	}
	assert.Equal(t, visits, p.b.visits, "passed by at every tick, never visited")
	assert.NotZero(t, p.b.passed)

	p.lead.settle(0, 0)
	p.lead.share(grant{}) // it stood down
	p.ticks(1)            // the tick that sees it
	p.ticks(1)            // the tick that raises the epoch
	raised := p.now
	require.Equal(t, uint64(1), p.a.raises)
	var fired time.Time
	for fired.IsZero() && p.now.Before(raised.Add(2*vouchSlack)) {
		p.ticks(1) // the pings go on, under the new epoch
		if p.tickFollowerHub() {
			fired = p.now
		}
	}
	require.False(t, fired.IsZero(), "the timer fired once the pings stopped vouching")
	horizon := parkHorizon(5 * time.Millisecond)
	assert.False(t, fired.Before(raised.Add(vouchSlack).Add(-horizon)), "not before its due time's horizon: %s", fired.Sub(raised))
	assert.False(t, fired.After(raised.Add(vouchSlack)), "not after it is due: %s after the raise", fired.Sub(raised))
}

// A follower whose actor steps again and again while its leader's pings
// go on is visited after each step and goes back on its node's list of
// ping waiters, where it has one entry, not one per step; when its slot
// leaves, its list goes with it. Breaks: a visit or a leave that does not
// take it off the list (its old entries, never counted stale, pile up for
// as long as the pings go on).
func TestAFollowerThatStepsOftenHasOneEntryOnItsList(t *testing.T) {
	p := newPingPair(t)
	p.followerPassedBy()
	cell := p.follower.quietUntil
	require.NotNil(t, cell.waiting, "on its leader's node's list")
	for range 30 {
		p.parkFollowerTimer() // a step: the actor parks its timer again
		for n := 0; cell.until.Load() != waitingOnPings || n == 0; n++ {
			require.Less(t, n, 200, "back on the list within a second")
			p.ticks(1)
			require.False(t, p.tickFollowerHub())
		}
	}
	assert.LessOrEqual(t, len(cell.waiting.cells), 2, "one entry, and at most as many stale ones")

	p.b.leave(p.follower.actor)
	require.Nil(t, cell.waiting, "its slot left: off the list")
	p.ticks(1)
	p.tickFollowerHub()
	assert.Empty(t, p.b.waitOrder, "a list of nobody is dropped at the next tick")
}

// What the follower's actor shares or parks makes its hub visit it at the
// next tick, pings or not: a follower that stopped following (it
// campaigns) and parked a timer of its own has it fired on time. Breaks: a
// pass by on the pings of a leader the actor no longer follows, which
// fires its campaign's timer up to an election timeout late.
func TestAFollowerThatStoppedFollowingIsNotPassedBy(t *testing.T) {
	p := newPingPair(t)
	p.followerPassedBy()

	p.follower.settle(0, 0)
	p.follower.share(grant{}) // a candidate: it follows nobody
	due := p.now.Add(20 * time.Millisecond)
	_, parked := p.follower.park(timerElection, parkedTimer{generation: 2, at: due, slack: vouchSlack}, p.now, parkHorizon(5*time.Millisecond))
	require.True(t, parked)
	p.ticks(1) // the leader's node still pings
	fired := p.firesWithin(40 * time.Millisecond)
	require.False(t, fired.IsZero(), "its own timer fired although the pings go on")
	assert.False(t, fired.After(due), "on time: %s after it was due", fired.Sub(due))
}

// A record that anchors a follower to another leader, term, epoch or node
// makes its hub visit it at the next tick; the same anchor again does
// not. Breaks: a follower passed by on the pings of the leader it was
// anchored to before (passFollower), whose timer then fires late.
func TestANewAnchorMakesTheHubVisitTheFollower(t *testing.T) {
	p := newPingPair(t)
	p.parkFollowerTimer()
	p.tick()
	require.False(t, p.tickFollowerHub())
	quiet := p.follower.quietUntil.until.Load()
	require.NotZero(t, quiet)

	p.follower.mu.Lock()
	a := p.follower.anchor
	p.follower.setAnchor(a.leader, a.term, a.epoch, p.now.Add(time.Millisecond), a.peer)
	p.follower.mu.Unlock()
	assert.Equal(t, quiet, p.follower.quietUntil.until.Load(), "the same anchor, newer: nothing to look at")

	for name, change := range map[string]func(*anchor){
		"leader": func(a *anchor) { a.leader = pid("x") },
		"term":   func(a *anchor) { a.term++ },
		"epoch":  func(a *anchor) { a.epoch++ },
		"node":   func(a *anchor) { a.peer = &pingPeer{} },
	} {
		p.follower.mu.Lock()
		p.follower.quietUntil.until.Store(quiet)
		next := p.follower.anchor
		change(&next)
		p.follower.setAnchor(next.leader, next.term, next.epoch, p.now, next.peer)
		p.follower.mu.Unlock()
		assert.Zero(t, p.follower.quietUntil.until.Load(), "anchored anew (%s): visited at the next tick", name)
	}
}

// A follower passed by on its leader's pings that becomes a leader itself
// is visited at its hub's ticks as a leader, and its parked lease timer
// fires on time while the old leader's node still pings. Breaks: a visit
// that leaves what the slot waited on as a follower (quietCell.waits),
// after which the ticks pass the new leader by on the old leader's pings.
func TestAFollowerThatBecameALeaderIsNotPassedBy(t *testing.T) {
	p := newPingPair(t)
	p.followerPassedBy()

	p.follower.settle(0, 0)
	p.follower.share(grant{lead: true, leadTerm: 2, fresh: 15 * time.Millisecond, followers: map[gen.Atom]gen.PID{node("c"): pid("c")}})
	due := p.now.Add(40 * time.Millisecond)
	_, parked := p.follower.park(timerLease, parkedTimer{generation: 3, at: due, lease: time.Second, need: 1}, p.now, parkHorizon(5*time.Millisecond))
	require.True(t, parked)
	var fired time.Time
	for fired.IsZero() && p.now.Before(due.Add(20*time.Millisecond)) {
		p.ticks(1) // the old leader's node still pings
		p.b.tick()
		for _, m := range p.pb.sent {
			if w, ok := m.(hubWake); ok && w.Kind == timerLease && w.Generation == 3 {
				fired = p.now
			}
		}
		p.pb.sent, p.pb.sentTo, p.pb.after = nil, nil, nil
	}
	require.False(t, fired.IsZero(), "its lease timer fired")
	assert.False(t, fired.After(due), "on time: %s after it was due", fired.Sub(due))
}

// parkLeaseTimer parks the leader's lease timer as its actor would: due a
// holding lease after its newest evidence, at least after now.
func (p *pingPair) parkLeaseTimer(generation uint64) time.Duration {
	p.t.Helper()
	lease := holdingLease(config{electionTimeoutMin: 150 * time.Millisecond})
	_, parked := p.lead.park(timerLease, parkedTimer{generation: generation, at: p.now.Add(lease), lease: lease, need: 1}, p.now, parkHorizon(5*time.Millisecond))
	require.True(p.t, parked, "the leader's lease timer is parked with its hub")
	return lease
}

// A leader whose follower node answers its hub's pings is passed by at the
// ticks (passLeader) instead of being visited every holding lease, still
// gets its record at the refresh, and once the answers stop its lease
// timer fires a holding lease after the last answered ping, as without
// the pass. Breaks: an idle node takes the lock of every leader every
// holding lease (the larger part of what is left of an idle node's CPU at
// ten thousand elections), a leader passed by at the refresh (its
// followers' anchors are never renewed), or a leader whose answers
// stopped holds its role past its lease.
func TestALeaderIsPassedByWhileItsFollowersAnswer(t *testing.T) {
	p := newPingPair(t)
	lease := p.parkLeaseTimer(1)
	p.tick()
	p.ticks(40)
	visits := p.a.visits
	p.ticks(220) // 1.1 s: the refresh comes once
	assert.LessOrEqual(t, p.a.visits-visits, uint64(1), "passed by but at the refresh, not visited every holding lease")
	assert.NotZero(t, p.a.passed)
	assert.Equal(t, uint64(2), p.lead.round, "the refresh still carries the leader's record")
	for _, m := range p.pa.sent {
		require.NotEqual(t, hubWake{Kind: timerLease, Generation: 1}, m, "no lease timer while the answers come")
	}

	lastAnswered := p.now
	var fired time.Time
	for fired.IsZero() && p.now.Before(lastAnswered.Add(2*lease)) {
		p.now = p.now.Add(time.Millisecond)
		p.a.tick() // pings that nobody answers
		for _, m := range p.pa.sent {
			if m == (hubWake{Kind: timerLease, Generation: 1}) {
				fired = p.now
			}
		}
		p.pa.sent, p.pa.sentTo, p.pa.after = nil, nil, nil
	}
	require.False(t, fired.IsZero(), "the lease timer fired once the answers stopped")
	due := lastAnswered.Add(lease)
	assert.False(t, fired.Before(due.Add(-parkHorizon(5*time.Millisecond))), "not before its horizon: %s after the last answer", fired.Sub(lastAnswered))
	assert.False(t, fired.After(due), "not after it was due: %s after the last answer", fired.Sub(lastAnswered))
}

// A leader passed by on its followers' answers that starts a step is
// visited again: its hub stops vouching for it once the step outlasts its
// grace, answers or not. Breaks: a leader hung in a callback whose
// followers are never told (its node's hub vouches for it forever).
func TestALeaderInAStepIsNotPassedBy(t *testing.T) {
	p := newPingPair(t)
	p.addElection("d") // so that the node still pings b
	p.parkLeaseTimer(1)
	p.tick()
	p.ticks(40)
	require.NotZero(t, p.a.passed, "passed by before the step")
	p.lead.stepGrace = 50 * time.Millisecond
	p.lead.settle(0, 0) // a step begins, and hangs
	started := p.now
	for p.a.raises == 0 && p.now.Before(started.Add(time.Second)) {
		p.ticks(1)
	}
	require.NotZero(t, p.a.raises, "the hub stopped vouching for the hung leader")
	assert.LessOrEqual(t, p.now.Sub(started), p.lead.stepGrace+20*time.Millisecond, "within its grace and a few ticks")
}

// Answers given while the leader's follower there is in a step name the
// leader, and do not renew its lease; a leader passed by on answers is
// passed by only on answers that name nobody, so its lease timer fires a
// holding lease after the last one that counted. Breaks: a leader whose
// follower hung keeps its role on the pings of the follower's node.
func TestALeaderIsNotPassedByOnAnswersThatNameIt(t *testing.T) {
	p := newPingPair(t)
	lease := p.parkLeaseTimer(1)
	p.tick()
	p.ticks(40)
	require.NotZero(t, p.a.passed)
	p.follower.settle(0, 0) // the follower's step begins, and hangs
	lastCounted := p.now
	var fired time.Time
	for fired.IsZero() && p.now.Before(lastCounted.Add(2*lease)) {
		p.now = p.now.Add(time.Millisecond)
		p.a.tick()
		for _, m := range p.pa.sent {
			if beats, ok := m.(msgBeats); ok {
				p.b.beats(p.pa.self, beats)
			}
			if m == (hubWake{Kind: timerLease, Generation: 1}) {
				fired = p.now
			}
		}
		p.pa.sent, p.pa.sentTo, p.pa.after = nil, nil, nil
		for _, m := range p.pb.sent {
			if acks, ok := m.(msgBeatAcks); ok {
				require.NotEmpty(t, acks.Busy, "b's answers name the leader whose follower is in a step")
				p.a.acks(p.pb.self, acks)
			}
		}
		p.pb.sent, p.pb.sentTo, p.pb.after = nil, nil, nil
	}
	require.False(t, fired.IsZero(), "the lease timer fired although b kept answering")
	assert.False(t, fired.After(lastCounted.Add(lease)), "not after a holding lease from the last answer that counted: %s", fired.Sub(lastCounted))
}

// An answer older than the one that carried a link's acknowledgement does
// not count for it (pongOf), and does not let the tick pass the leader by.
func TestALeaderIsNotPassedByOnAnAnswerOlderThanItsAck(t *testing.T) {
	h := &hub{process: &scriptedProcess{self: pid("h")}, clock: func() time.Time { return t0 }}
	h.init()
	cell := &quietCell{leads: &leaseDue{lease: time.Second, need: 1, links: []leaseLink{{node: node("b"), epoch: 7, mark: 10}}}}
	quiet := t0.Add(-time.Millisecond).UnixNano()
	cell.until.Store(quiet)
	h.answerSeen[answerKey{node: node("b"), epoch: 7}] = answerSeen{sent: t0, index: 9}
	assert.False(t, h.passLeader(cell, quiet, t0, 7*time.Millisecond), "answer 9 is older than the ack's 10")
	h.answerSeen[answerKey{node: node("b"), epoch: 7}] = answerSeen{sent: t0, index: 10}
	assert.True(t, h.passLeader(cell, quiet, t0, 7*time.Millisecond), "answer 10 counts")
	assert.Equal(t, t0.Add(time.Second-7*time.Millisecond).UnixNano(), cell.until.Load())
}

// What a tick passes leaders by on is, per node and answer epoch, the
// newest answer that names no election: an answer that names some counts
// for the others but not for those, and the snapshot cannot tell which
// leader asks. Breaks: a leader whose follower is in a step is passed by
// on answers that do not count for it.
func TestTheAnswersATickPassesLeadersByOnNameNobody(t *testing.T) {
	b := &pingBoard{peers: make(map[gen.Atom]*pingPeer)}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	b.answered(node("b"), 7, pingStamp{at: at(0)}, nil)
	b.answered(node("b"), 7, pingStamp{at: at(5)}, nil)
	named := b.answered(node("b"), 7, pingStamp{at: at(10)}, []uint64{42})
	b.answered(node("b"), 8, pingStamp{at: at(15)}, []uint64{42})
	seen := make(map[answerKey]answerSeen)
	b.answersSeen(seen)
	assert.Equal(t, answerSeen{sent: at(5), index: named - 1}, seen[answerKey{node: node("b"), epoch: 7}], "the newest answer of epoch 7 that names nobody")
	_, ok := seen[answerKey{node: node("b"), epoch: 8}]
	assert.False(t, ok, "epoch 8 has none")
}
