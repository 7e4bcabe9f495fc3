package leader

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// checker holds the invariants, checked after every simulated event:
//  1. at most one leader per term over one view: a later leader of a term
//     won over the same view is a violation while the first one still
//     lives (a cluster whose every witness of a term died may reuse it: the
//     spec keeps no state across restarts); with nodes restarted under their
//     old name only simultaneous leaders are (see relaxedSafety). Leaders
//     over diverged views are the spec's "two clusters"; for them, and for
//     every leader, each counted vote must have been granted (checkVotesCounted)
//  2. a node grants at most one vote per term
//  3. a node's term never decreases while it lives
//  4. no leader while its view is below MinClusterSize
//  5. with a converged view and only connectivity faults, no leader is
//     elected on a side without a majority of the full view
//  6. a leader cut off from a quorum steps down within ElectionTimeoutMin
//     + HeartbeatInterval (+ the network's maximum delay)
//  7. liveness, checked by the scenarios: after the last fault heals, one
//     leader that every node follows, within a derived bound
//  8. HandleBecomeLeader and HandleBecomeFollower alternate correctly and
//     each change is reported exactly once
type checker struct {
	s      *simulator
	actors map[*simActor]bool // live incarnations

	// relaxedSafety checks invariant 1 among simultaneous leaders only. A
	// node restarted under its old name has forgotten the votes it cast
	// (the spec: no persistence), so a term it voted in before the crash
	// may be won a second time after the first leader has long stepped
	// down; two nodes acting as leader at once is what must never happen.
	relaxedSafety bool
	// fullView enables invariant 5 with that many nodes as the full view.
	fullView int

	leaderOfTerm map[uint64]leadership
	won          map[string]leadership // inc/term -> the view it won with
	votes        map[string]map[uint64]gen.PID
	terms        map[string]uint64
	lastCallback map[string]callbackRecord
	observed     map[string]publicState // state last seen, after an event or a callback
	cutSince     map[string]cutOff

	leaderChanges int // distinct (term, incarnation) leaderships seen
	maxTerm       uint64
}

// leadership is one won term: who won it and over which view.
type leadership struct {
	inc  string
	view string
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
		won:          make(map[string]leadership),
		votes:        make(map[string]map[uint64]gen.PID),
		terms:        make(map[string]uint64),
		lastCallback: make(map[string]callbackRecord),
		observed:     make(map[string]publicState),
		cutSince:     make(map[string]cutOff),
	}
}

func (c *checker) started(b *simActor) { c.actors[b] = true }

func (c *checker) sortedActors() []*simActor {
	list := make([]*simActor, 0, len(c.actors))
	for b := range c.actors {
		list = append(list, b)
	}
	slices.SortFunc(list, func(a, b *simActor) int { return strings.Compare(a.inc, b.inc) })
	return list
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
}

// callback checks invariant 8 at the moment a callback runs.
func (c *checker) callback(b *simActor, leading bool, leader gen.PID) {
	last := c.lastCallback[b.inc]
	before := c.observed[b.inc]
	switch {
	case leading && last.leading:
		c.s.fail("%s: HandleBecomeLeader twice without HandleBecomeFollower in between", b.inc)
	case leading == false && before.leading == false && before.campaigning == false && before.leader == leader:
		c.s.fail("%s: HandleBecomeFollower(%s) reported without a change", b.inc, leader)
	}
	c.observed[b.inc] = publicState{leading: leading, leader: leader}
	if leading {
		c.s.note("%s: HandleBecomeLeader at term %d", b.inc, b.Term())
	} else {
		c.s.note("%s: HandleBecomeFollower(%s) at term %d", b.inc, leader.Node, b.Term())
	}
	c.lastCallback[b.inc] = callbackRecord{seen: true, leading: leading, leader: leader}
}

func (c *checker) afterEvent() {
	current := make(map[uint64]leadership)
	for _, b := range c.sortedActors() {
		e := b.state
		if e == nil {
			continue
		}
		// 3: terms never decrease
		if e.term < c.terms[b.inc] {
			c.s.fail("%s: term went back from %d to %d", b.inc, c.terms[b.inc], e.term)
		}
		c.terms[b.inc] = e.term
		c.maxTerm = max(c.maxTerm, e.term)

		// 2: one vote per term
		if e.votedFor != (gen.PID{}) {
			votes := c.votes[b.inc]
			if votes == nil {
				votes = make(map[uint64]gen.PID)
				c.votes[b.inc] = votes
			}
			if previous, ok := votes[e.term]; ok && previous != e.votedFor {
				c.s.fail("%s: voted for %s and then %s in term %d", b.inc, previous.Node, e.votedFor.Node, e.term)
			}
			votes[e.term] = e.votedFor
		}

		// 8: what the callbacks reported matches the state
		c.observed[b.inc] = e.public()
		if b.reported != e.public() {
			c.s.fail("%s: callbacks reported %+v but the state is %+v", b.inc, b.reported, e.public())
		}
		last := c.lastCallback[b.inc]
		if e.role == roleLeader && last.leading == false {
			c.s.fail("%s: leads term %d without HandleBecomeLeader", b.inc, e.term)
		}
		if e.role != roleLeader && last.leading {
			c.s.fail("%s: stopped leading without HandleBecomeFollower", b.inc)
		}

		if e.role != roleLeader {
			delete(c.cutSince, b.inc)
			continue
		}
		// 4: no leader below the floor
		if e.viewSize() < e.cfg.minClusterSize {
			c.s.fail("%s: leads with view %d below MinClusterSize %d", b.inc, e.viewSize(), e.cfg.minClusterSize)
		}
		// 1: election safety, over the views the leaders won with
		key := fmt.Sprintf("%s/%d", b.inc, e.term)
		won, seen := c.won[key]
		if seen == false {
			won = leadership{inc: b.inc, view: membersList(e)}
			c.won[key] = won
			c.leaderChanges++
			c.s.note("LEADER %s term %d (view %s)", b.inc, e.term, won.view)
			c.checkMajoritySide(b)
			c.checkVotesCounted(b)
			if first, ok := c.leaderOfTerm[e.term]; ok == false {
				c.leaderOfTerm[e.term] = won
			} else if first.view == won.view && c.relaxedSafety == false && c.alive(first.inc) {
				c.s.fail("two leaders in term %d over the same view %s: %s and later %s", e.term, won.view, first.inc, b.inc)
			}
		}
		if other, ok := current[e.term]; ok && other.view == won.view {
			c.s.fail("two leaders at once in term %d over view %s: %s and %s", e.term, won.view, other.inc, b.inc)
		}
		current[e.term] = won
		c.checkCutOff(b)
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
			c.s.fail("%s won term %d counting a vote from %s that was never granted to it", b.inc, e.term, node)
		}
	}
}

// checkMajoritySide is invariant 5: a new leader's side of a connectivity
// partition holds a majority of the full view.
func (c *checker) checkMajoritySide(b *simActor) {
	if c.fullView == 0 {
		return
	}
	side := 1
	for name := range b.cluster.actors {
		if name != b.PID().Node && c.s.link(name, b.PID().Node) == linkUp && c.s.link(b.PID().Node, name) == linkUp {
			side++
		}
	}
	if side < c.fullView/2+1 {
		c.s.fail("%s elected at term %d on a side of %d nodes, not a majority of %d", b.inc, b.term(), side, c.fullView)
	}
}

// checkCutOff is invariant 6: a leader that cannot exchange messages with a
// quorum of its view must step down within ElectionTimeoutMin plus one
// heartbeat interval, plus the time the last message in flight may take.
func (c *checker) checkCutOff(b *simActor) {
	e := b.state
	if e.switches.noResponseQuorum {
		return // the reference rule counts accepted sends: a half-open link fools it
	}
	self := b.PID().Node
	reach := make(map[gen.Atom]bool)
	for node := range e.members {
		n := c.s.nodes[node]
		if n != nil && n.alive && c.s.link(node, self) == linkUp && c.s.link(self, node) == linkUp {
			reach[node] = true
		}
	}
	if 1+len(reach) >= e.quorum() {
		delete(c.cutSince, b.inc)
		return
	}
	cut, ok := c.cutSince[b.inc]
	gained := false
	for node := range reach {
		if cut.reach[node] == false {
			gained = true
		}
	}
	if ok == false || cut.quorum != e.quorum() || gained {
		c.cutSince[b.inc] = cutOff{since: c.s.now, quorum: e.quorum(), reach: reach}
		bound := e.cfg.electionTimeoutMin + e.cfg.heartbeatInterval + c.s.net.maxDelay + time.Millisecond
		// make sure an event happens at the deadline, so a leader that
		// never steps down is caught even if nothing else is scheduled
		c.s.after(bound+time.Microsecond, "", func() {})
		return
	}
	bound := e.cfg.electionTimeoutMin + e.cfg.heartbeatInterval + c.s.net.maxDelay + time.Millisecond
	if c.s.now.Sub(cut.since) > bound {
		c.s.fail("%s still leads term %d %s after being cut off from a quorum of %d (bound %s)", b.inc, e.term, c.s.now.Sub(cut.since), cut.quorum, bound)
	}
}

func (b *simActor) term() uint64 { return b.state.term }
