package leader

import (
	"slices"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// checker holds the invariants of one election, checked after every
// simulated event (a simulator running several elections over the same
// nodes has a checker per election, sim_many_test.go, and each names its
// election's ClusterID in the violations it reports):
//  1. at most one leader per term over one view: a later leader of a term
//     won over the same view is a violation while the first one still
//     lives (a cluster whose every witness of a term died may reuse it: the
//     spec keeps no state across restarts), restarts under the old name
//     included. Leaders
//     over diverged views are the spec's "two clusters"; for them, and for
//     every leader, each counted vote must have been granted (checkVotesCounted)
//  2. a node grants at most one vote per term
//  3. a node's term never decreases while it lives
//  4. no leader while its view, with the seats kept for members that
//     stopped gracefully, is below MinClusterSize
//  5. with a converged view and only connectivity faults, no leader is
//     elected on a side without a majority of the full view
//  6. a leader cut off from a quorum steps down within ElectionTimeoutMin
//     + HeartbeatInterval (+ the network's maximum delay); a stalled one,
//     which cannot run, must at least have lost its lease by then
//  7. liveness, checked by the scenarios: after the last fault heals, one
//     leader that every node follows, within a derived bound
//  8. HandleBecomeLeader and HandleBecomeFollower alternate correctly and
//     each change is reported exactly once
//  9. at no instant do two actors over the same view both hold leadership
//     (election.leading at the simulator's clock): the lease property, the
//     one users rely on when they guard work with IsLeader. Terms do not
//     matter here; a stalled leader's state counts as long as its lease
//     says it leads
type checker struct {
	s       *simulator
	cluster string             // the election's ClusterID, named in its violations when the simulator runs several
	actors  map[*simActor]bool // live incarnations
	list    []*simActor        // the same, ordered, for deterministic checks

	// fullView enables invariant 5 with that many nodes as the full view.
	fullView int

	leaderOfTerm map[uint64]leadership
	votes        map[string]map[uint64]gen.PID
	// unvouched holds the votes an incarnation granted while no node it
	// had heard from had heard from an earlier incarnation of its node
	// (vouched): nothing could have told it that it restarted
	unvouched map[string]map[uint64]bool

	leaderChanges int // distinct (term, incarnation) leaderships seen
	// terms won a second time over one view that sharedOnlyForgotten
	// excused
	wonAgainUnvouched int
	maxTerm           uint64

	// hooks run after every event's checks until they return true: the
	// nemesis scenarios (sim_nemesis_test.go) act through them at a chosen
	// moment of an election
	hooks []func() bool
}

// actorCheck is the checker's memory of one incarnation, kept on the
// actor itself so the per-event checks need no map lookups.
type actorCheck struct {
	term     uint64
	voteTerm uint64
	votedFor gen.PID
	observed publicState
	last     callbackRecord
	wonTerm  uint64
	won      leadership
	cut      *cutOff
}

// leadership is one won term: who won it, over which view, and with the
// votes of which incarnation of each node (the winner's own included).
type leadership struct {
	inc    string
	view   string
	at     time.Time // when it was won
	voters map[gen.Atom]string
}

// cutOff is when a leader lost the links to a quorum of a view of a given
// size. A view that shrinks (ghosts expiring) lowers the quorum and may give
// the leader a quorum again, so the clock restarts with the quorum.
// A member that becomes reachable (a restarted pod, say) brings fresh
// evidence, so it restarts the clock too.
type cutOff struct {
	since  time.Time
	quorum int
	reach  map[gen.Atom]bool
}

type callbackRecord struct {
	seen    bool
	leading bool
	leader  gen.PID
}

func newChecker(s *simulator) *checker {
	return &checker{
		s:            s,
		actors:       make(map[*simActor]bool),
		leaderOfTerm: make(map[uint64]leadership),
		votes:        make(map[string]map[uint64]gen.PID),
		unvouched:    make(map[string]map[uint64]bool),
	}
}

// fail reports a violation of this election's invariants.
func (c *checker) fail(format string, args ...any) {
	if c.cluster != "" {
		format, args = "election %q: "+format, append([]any{c.cluster}, args...)
	}
	c.s.fail(format, args...)
}

func (c *checker) started(b *simActor) {
	c.actors[b] = true
	c.list = append(c.list, b)
	slices.SortFunc(c.list, func(x, y *simActor) int { return strings.Compare(x.inc, y.inc) })
}

func (c *checker) sortedActors() []*simActor {
	list := make([]*simActor, 0, len(c.actors))
	for b := range c.actors {
		list = append(list, b)
	}
	slices.SortFunc(list, func(a, b *simActor) int { return strings.Compare(a.inc, b.inc) })
	return list
}

// forgotten reports whether a majority of e's view runs incarnations that
// started after since: then no quorum of the view remembers the terms won
// before, and a term can be won a second time (docs/safety.md, "What is
// not covered": without persistence, a term is unique while a quorum of
// the view remembers it, or its peers can tell the restarted that they
// are).
func (c *checker) forgotten(e *election, since time.Time) bool {
	view := make(map[gen.Atom]bool)
	for node := range e.members {
		view[node] = true
	}
	view[e.self.Node] = true
	fresh := 0
	for b := range c.actors {
		if view[b.PID().Node] && b.state != nil && b.state.startedAt.After(since) {
			fresh++
		}
	}
	return fresh >= len(view)/2+1
}

// votersOf returns the incarnation of each node whose vote b counted for
// its term, b's own included.
func (c *checker) votersOf(b *simActor) map[gen.Atom]string {
	e := b.state
	voters := map[gen.Atom]string{b.PID().Node: b.inc}
	for node := range e.votes {
		for inc, votes := range c.votes {
			if strings.HasPrefix(inc, string(node)+"#") && votes[e.term] == b.PID() {
				voters[node] = inc
			}
		}
	}
	return voters
}

// sharedOnlyForgotten reports whether the quorums of two wins of term
// share only nodes whose vote in the second came from a later incarnation
// than in the first, one that granted it taking itself for a first start:
// no member it heard knew its earlier incarnation, so nothing could tell it
// that it may have voted in the term already. Without persistence such a
// term can be won twice (docs/safety.md, "What is not covered"), a majority
// of the view restarting together (forgotten) being one case of it.
func (c *checker) sharedOnlyForgotten(first, second leadership, term uint64) bool {
	shared := 0
	for node, earlier := range first.voters {
		later, ok := second.voters[node]
		if ok == false {
			continue
		}
		shared++
		if later == earlier || c.unvouched[later][term] == false {
			return false
		}
	}
	return shared > 0
}

func (c *checker) alive(inc string) bool {
	for b := range c.actors {
		if b.inc == inc {
			return true
		}
	}
	return false
}

func (c *checker) terminated(p *simProcess) {
	for b := range c.actors {
		if b.PID() == p.pid {
			delete(c.actors, b)
		}
	}
	c.list = slices.DeleteFunc(c.list, func(b *simActor) bool { return b.PID() == p.pid })
}

// callback checks invariant 8 at the moment a callback runs.
func (c *checker) callback(b *simActor, leading bool, leader gen.PID) {
	last := b.chk.last
	before := b.chk.observed
	switch {
	case leading && last.leading:
		c.fail("%s: HandleBecomeLeader twice without HandleBecomeFollower in between", b.inc)
	case leading == false && before.leading == false && before.campaigning == false && before.leader == leader:
		c.fail("%s: HandleBecomeFollower(%s) reported without a change", b.inc, leader)
	}
	b.chk.observed = publicState{leading: leading, leader: leader}
	if leading {
		c.s.note("%s: HandleBecomeLeader at term %d", b.inc, b.Term())
	} else {
		c.s.note("%s: HandleBecomeFollower(%s) at term %d", b.inc, leader.Node, b.Term())
	}
	b.chk.last = callbackRecord{seen: true, leading: leading, leader: leader}
}

func (c *checker) afterEvent() {
	var current []leadership
	var currentTerms []uint64
	var leading []*simActor
	for _, b := range c.list {
		e := b.state
		if e == nil {
			continue
		}
		k := &b.chk
		// 3: terms never decrease
		if e.term < k.term {
			c.fail("%s: term went back from %d to %d", b.inc, k.term, e.term)
		}
		k.term = e.term
		c.maxTerm = max(c.maxTerm, e.term)

		// 2: one vote per term (recorded on change only; this runs after
		// every event and is most of the simulator's work; voteSent records
		// the grants a process makes and supersedes within one event)
		if e.votedFor != (gen.PID{}) && (e.term != k.voteTerm || e.votedFor != k.votedFor) {
			c.recordVote(b, e.term, e.votedFor)
			k.voteTerm, k.votedFor = e.term, e.votedFor
		}

		// 8: what the callbacks reported matches the state
		public := e.public()
		k.observed = public
		if b.reported != public {
			c.fail("%s: callbacks reported %+v but the state is %+v", b.inc, b.reported, public)
		}
		if e.role == roleLeader && k.last.leading == false {
			c.fail("%s: leads term %d without HandleBecomeLeader", b.inc, e.term)
		}
		if e.role != roleLeader && k.last.leading {
			c.fail("%s: stopped leading without HandleBecomeFollower", b.inc)
		}

		if e.role != roleLeader {
			k.cut = nil
			continue
		}
		// 4: no leader below the floor; a member that stopped gracefully
		// keeps its seat for it until its seat runs out (seats.go), which
		// the actor learns from its ghost timer, an event of its own (a
		// stalled one when it runs again: meanwhile its lease must be over)
		seats := 0
		for _, until := range e.seats {
			if c.s.now.Before(until.Add(time.Millisecond)) {
				seats++
			}
		}
		if e.viewSize()+seats < e.cfg.minClusterSize && c.runningOrLeading(b) {
			c.fail("%s: leads with view %d and %d kept seats, below MinClusterSize %d", b.inc, e.viewSize(), seats, e.cfg.minClusterSize)
		}
		// 1: election safety, over the views the leaders won with
		if k.wonTerm != e.term || k.won.inc == "" {
			k.wonTerm = e.term
			k.won = leadership{inc: b.inc, view: membersList(e), at: c.s.now, voters: c.votersOf(b)}
			c.leaderChanges++
			c.s.note("LEADER %s term %d (view %s)", b.inc, e.term, k.won.view)
			c.checkMajoritySide(b)
			c.checkVotesCounted(b)
			if first, ok := c.leaderOfTerm[e.term]; ok == false {
				c.leaderOfTerm[e.term] = k.won
			} else if first.view == k.won.view && c.alive(first.inc) && c.forgotten(e, first.at) == false {
				if c.sharedOnlyForgotten(first, k.won, e.term) {
					c.wonAgainUnvouched++
					c.s.note("term %d won again by %s: its quorum shares with %s's only votes of unvouched restarts", e.term, b.inc, first.inc)
				} else {
					c.fail("two leaders in term %d over the same view %s: %s and later %s", e.term, k.won.view, first.inc, b.inc)
				}
			}
		}
		for i, other := range current {
			if currentTerms[i] == e.term && other.view == k.won.view {
				c.fail("two leaders at once in term %d over view %s: %s and %s", e.term, k.won.view, other.inc, b.inc)
			}
		}
		current = append(current, k.won)
		currentTerms = append(currentTerms, e.term)
		c.checkCutOff(b)
		leading = append(leading, b)
	}
	if len(leading) > 1 {
		c.checkActing(leading)
	}
	if len(c.hooks) > 0 {
		c.runHooks()
	}
}

// checkActing is invariant 9: of the actors in the leader role whose lease
// holds now, no two share a view. (Only when two are in the role: asking
// IsLeader has the actor read what its hub recorded, which is most of the
// simulator's work when many elections run.)
func (c *checker) checkActing(leading []*simActor) {
	acting := slices.DeleteFunc(leading, func(b *simActor) bool { return b.IsLeader() == false })
	views := make([]string, len(acting))
	for i, b := range acting {
		views[i] = membersList(b.state)
		for j := range i {
			if views[j] == views[i] {
				a := acting[j]
				c.fail("two acting leaders at once over view %s: %s (term %d, lease until +%s) and %s (term %d, lease until +%s)",
					views[i], a.inc, a.state.term, a.state.leaseUntil.Sub(c.s.start), b.inc, b.state.term, b.state.leaseUntil.Sub(c.s.start))
			}
		}
	}
}

// whenever adds a hook that runs after every event until it returns true.
func (c *checker) whenever(hook func() bool) {
	c.hooks = append(c.hooks, hook)
}

func (c *checker) runHooks() {
	hooks := c.hooks
	c.hooks = nil
	for _, hook := range hooks {
		if len(c.s.failures) > 0 || hook() == false {
			c.hooks = append(c.hooks, hook)
		}
	}
}

func (c *checker) recordVote(b *simActor, term uint64, to gen.PID) {
	votes := c.votes[b.inc]
	if votes == nil {
		votes = make(map[uint64]gen.PID)
		c.votes[b.inc] = votes
	}
	if previous, ok := votes[term]; ok && previous != to {
		c.fail("%s: voted for %s and then %s in term %d", b.inc, previous.Node, to.Node, term)
	}
	votes[term] = to
	if c.vouched(b) == false {
		if c.unvouched[b.inc] == nil {
			c.unvouched[b.inc] = make(map[uint64]bool)
		}
		c.unvouched[b.inc][term] = true
	}
}

// vouched reports whether some node incarnation that b's node has heard
// from since b's start had heard from an earlier incarnation of b's node:
// the ground truth of whether b could know it restarted, whatever b
// itself concluded (its election's restarted flag is what is under test).
func (c *checker) vouched(b *simActor) bool {
	self := b.PID()
	for k := range c.s.heard {
		if k.node != self.Node || k.creation != self.Creation || k.from == self.Node {
			continue
		}
		for j := range c.s.heard {
			if j.node == k.from && j.creation == k.fromCreation && j.from == self.Node && j.fromCreation < self.Creation {
				return true
			}
		}
	}
	return false
}

// actorOf returns the live incarnation whose process is pid.
func (c *checker) actorOf(pid gen.PID) *simActor {
	for _, b := range c.list {
		if b.PID() == pid {
			return b
		}
	}
	return nil
}

// voteSent records a grant as its reply leaves: a stalled process that
// drains its mailbox may grant a vote and move on to a later term within
// one event, where the per-event record sees only the end.
func (c *checker) voteSent(voter gen.PID, term uint64, to any) {
	if pid, ok := to.(gen.PID); ok {
		if b := c.actorOf(voter); b != nil {
			c.recordVote(b, term, pid)
		}
	}
}

// kindSet notes a candidacy the moment the actor reports it (candidates
// get no callback): within one event an actor may stand down, campaign and
// stand down again, and invariant 8 must know it campaigned in between.
func (c *checker) kindSet(pid gen.PID, kind gen.ProcessKind) {
	if kind != kindCandidate {
		return
	}
	if b := c.actorOf(pid); b != nil {
		b.chk.observed = publicState{campaigning: true}
	}
}

// checkVotesCounted: every grant a new leader counted was really granted
// to it, for its term, by the voter. With one vote per term (invariant 2),
// this is what makes two leaders over one view impossible, and it also
// covers leaders whose views have diverged, where invariant 1 cannot apply.
func (c *checker) checkVotesCounted(b *simActor) {
	e := b.state
	for node := range e.votes {
		if node == b.PID().Node {
			continue
		}
		granted := false
		for inc, votes := range c.votes {
			if strings.HasPrefix(inc, string(node)+"#") && votes[e.term] == b.PID() {
				granted = true
			}
		}
		if granted == false {
			c.fail("%s won term %d counting a vote from %s that was never granted to it", b.inc, e.term, node)
		}
	}
}

// checkMajoritySide is invariant 5: with a converged view and only
// connectivity faults, a new leader won with the votes of a majority of the
// full view, so a side of a partition without such a majority never elects.
// (The votes, not the links at the moment of the win: a partition that
// moves while the vote replies travel may leave a rightful winner on a
// smaller side, which its quorum check then unseats.)
func (c *checker) checkMajoritySide(b *simActor) {
	if c.fullView == 0 {
		return
	}
	if got, want := len(b.state.votes), c.fullView/2+1; got < want {
		c.fail("%s elected at term %d with %d votes, not a majority of the full view of %d", b.inc, b.term(), got, c.fullView)
	}
}

// checkCutOff is invariant 6: a leader that cannot exchange messages with a
// quorum of its view must step down within ElectionTimeoutMin plus one
// heartbeat interval, plus the time the last message in flight may take.
func (c *checker) checkCutOff(b *simActor) {
	e := b.state
	self := b.PID().Node
	reachable := func(node gen.Atom) bool {
		n := c.s.nodes[node]
		return n != nil && n.alive && c.s.link(node, self) == linkUp && c.s.link(self, node) == linkUp
	}
	count := 1
	for node := range e.members {
		if reachable(node) {
			count++
		}
	}
	if count >= e.quorum() {
		b.chk.cut = nil
		return
	}
	reach := make(map[gen.Atom]bool)
	for node := range e.members {
		if reachable(node) {
			reach[node] = true
		}
	}
	cut := b.chk.cut
	gained := false
	for node := range reach {
		if cut == nil || cut.reach[node] == false {
			gained = true
		}
	}
	if cut == nil || cut.quorum != e.quorum() || gained {
		b.chk.cut = &cutOff{since: c.s.now, quorum: e.quorum(), reach: reach}
		bound := e.cfg.electionTimeoutMin + e.cfg.heartbeatInterval + c.s.net.worstDelay() + time.Millisecond
		// make sure an event happens at the deadline, so a leader that
		// never steps down is caught even if nothing else is scheduled
		c.s.after(bound+time.Microsecond, "", func() {})
		return
	}
	bound := e.cfg.electionTimeoutMin + e.cfg.heartbeatInterval + c.s.net.worstDelay() + time.Millisecond
	if c.s.now.Sub(cut.since) > bound && c.runningOrLeading(b) {
		c.fail("%s still leads term %d %s after being cut off from a quorum of %d (bound %s)", b.inc, e.term, c.s.now.Sub(cut.since), cut.quorum, bound)
	}
}

// runningOrLeading: a stalled process cannot step down until it runs
// again (it does before it handles anything: see the user ticks of
// sim_nemesis_test.go); while stalled, only its lease must have run out.
func (c *checker) runningOrLeading(b *simActor) bool {
	p := c.s.process(b.PID())
	return p == nil || p.paused == false || b.IsLeader()
}

func (b *simActor) term() uint64 { return b.state.term }
