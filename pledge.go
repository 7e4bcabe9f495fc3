package leader

import (
	"math"
	"time"

	"ergo.services/ergo/gen"
)

// Pledged votes: a fast failover in one round trip.
//
// A fast failover used to take two round trips after the survivor's
// staggered delay: a pre-vote ("could I win term T+1?") and then the vote
// for T+1. When a node crashes under a thousand elections, each of those
// hops waits for two cores busy with hundreds of other failovers, and the
// second round trip was a third of the time from the crash to the new
// leader. So a survivor's fast pre-vote asks each voter that grants it to
// give its vote for T+1 in the same reply: a pledge. A candidate that has a
// quorum of grants and of pledges wins T+1 the moment it moves there,
// without asking again.
//
// What a pledge is. A vote for term T+1, given while the voter is still at
// term T. The voter does not adopt T+1: a pre-vote must not move terms
// (a candidate that cannot win would otherwise depose a healthy leader
// through the voters it reached), so the vote is recorded beside the term
// (election.pledge) and becomes the voter's vote of T+1 the moment it
// reaches that term (adoptTerm), whoever takes it there. Until then it
// binds the voter as a vote does: it pledges T+1 to nobody else, its own
// campaign skips T+1 (startElection), it promises its support to the
// candidate (the lease, lease.go), and while that promise runs it
// acknowledges no leader's round of T (pledgeBinds).
//
// Why it is safe. A voter pledges exactly when it would grant a vote for
// T+1 arriving at that moment: it grants the pre-vote (no leader it still
// hears but the candidate itself, whose lease ran out: reclaim; no promise
// to keep but to the candidate, not in its quiet period, T+1 above its floor),
// it is a follower, and it has given its vote for T+1 to nobody else. So
// every vote of T+1, pledged or requested, is one per voter and term, and
// two leaders of a term still need two quorums with no voter in common.
// The two timings that votes rest on are kept by stamping the election's
// first round with the pre-vote's send time instead of the vote
// requests': a leader's lease runs from the send time of a round a quorum
// answered, and every pledge was given after the first pre-vote of the
// term that asked for it was sent; and a candidate counts a pledge only
// within ElectionTimeoutMin of that send time, as it counts a vote only
// within ElectionTimeoutMin of its request (roundCloses), which is what the
// quiet period of a restarted voter covers (a restart forgets the pledge
// as it forgets a vote).
//
// Only fast pre-votes ask for pledges: a survivor that saw its leader's
// down and was ranked to go first, or a leader whose lease ran out while
// its followers still follow it (reclaim, leadership.go). An election timeout's pre-vote does
// not, because several nodes may pre-vote at once there, and pledges given
// to whichever asked first would split the votes of T+1 before anyone knew
// who could win.

// pledgeState is a vote a voter gave with a pre-vote grant, for a term it
// has not reached.
type pledgeState struct {
	term  uint64
	to    gen.PID
	until time.Time // the promise that comes with it (lease.go) runs out
}

// offerPledge is called when this node grants req: it gives its vote for
// req.Term+1 with the grant when the requester asked for it and a vote
// request for that term would be granted now, and returns the term it
// pledged (0: none). The caller has checked what a vote shares with a
// pre-vote (grantRefusal, the floor, the view size).
func (e *election) offerPledge(m *member, req msgPreVote) uint64 {
	switch {
	case req.Pledge == false:
		return 0
	case e.role != roleFollower || req.Term != e.term || req.Term == math.MaxUint64:
		// a candidate voted for itself; a leader does not vote; a voter at
		// another term would not answer a vote for req.Term+1 the same way
		return 0
	case e.pledge.term == req.Term+1 && e.pledge.to != m.pid:
		e.drop("pledged_elsewhere")
		return 0
	case e.rankedFirst(m.node) == false && m.pid != e.leader:
		// another survivor may be the one to win: a pre-vote grant only.
		// The leader this node still follows, asking after its lease ran
		// out (reclaim), is the one: no survivor fails over from a leader
		// its followers have not lost
		return 0
	}
	e.pledge = pledgeState{term: req.Term + 1, to: m.pid, until: e.now.Add(voteRound(e.cfg))}
	e.pledgesGiven++
	e.promise(m.pid, false)
	// a vote for Term+1 would have moved this node there and ended what it
	// knew of a leader of Term; so does its pledge (pledgeBinds)
	e.leader = gen.PID{}
	// its own campaign for the term it has just given away is over (a
	// voter pre-voting fast refuses a requester ranked after it, so this
	// is one ranked before it, or a pre-vote of its own that failed)
	e.cancelTimer(timerFast)
	e.preVoting, e.preVoteFast, e.preVotes, e.pledges = false, false, nil, nil
	e.resetElectionDeadline()
	return req.Term + 1
}

// rankedFirst reports whether node is the survivor that fast failover
// ranks first as far as this node can tell: before this node and before
// every other member it still reaches in the failover order (rankedBefore,
// fastFailoverDelay). Pledges
// go to that survivor alone. A pledge binds, so pledges given to whichever
// survivor asked first could split the next term's votes among several
// candidates of a larger cluster, none with a quorum (the first version did:
// a 5-node crash now and then waited an election timeout), and a voter that
// pledged would refuse the others their pre-votes for as long as its
// promise runs. The others still get their pre-votes granted and are
// elected with votes as before.
func (e *election) rankedFirst(node gen.Atom) bool {
	if node == e.self.Node || e.rankedBefore(node, e.self.Node) == false {
		return false
	}
	for _, other := range e.members {
		if other.pid != (gen.PID{}) && other.node != node && e.rankedBefore(other.node, node) {
			return false
		}
	}
	return true
}

// pledgedVote makes the vote this node pledged for term its vote of term,
// when it reaches term (adoptTerm has just cleared votedFor).
func (e *election) pledgedVote(term uint64) {
	if e.pledge.term == term {
		e.votedFor = e.pledge.to
	}
}

// pledgeBinds reports whether this node's pledge forbids acknowledging a
// leader's round of term with an acknowledgement that counts toward its
// lease. A vote moves the voter to the vote's term, where rounds of older
// terms are stale; a pledge leaves it at the older term, so it refuses
// them for as long as its promise to the candidate runs: the candidate may
// win with the pledge, and an acknowledgement given after it would let a
// leader of the older term count on a member whose vote elected another
// (the lease, lease.go). Once the promise is over the candidate's lease,
// which counts from before the pledge, is over too, unless this node heard
// the candidate's rounds, which would have moved it to the pledged term.
func (e *election) pledgeBinds(term uint64) bool {
	return e.pledge.term > term && e.now.Before(e.pledge.until)
}

// nextTerm is the term this node campaigns for: the next one, or the one
// after the term it pledged to another candidate. ok is false when the
// term counter is at its end.
func (e *election) nextTerm() (term uint64, ok bool) {
	last := e.term
	if e.pledge.term > last && e.pledge.to != e.self {
		last = e.pledge.term
	}
	if last == math.MaxUint64 {
		return 0, false
	}
	return last + 1, true
}

// askPledges marks the pre-vote round campaign is starting as one that
// asks for pledges, and notes when the term's first such round went out.
func (e *election) askPledges() {
	e.pledges = map[gen.Atom]bool{}
	if e.pledgeAskedTerm != e.term || e.pledgeAskedAt.IsZero() {
		e.pledgeAskedTerm, e.pledgeAskedAt = e.term, e.now
	}
}

// takePledge handles the pledge in a granted pre-vote reply. It reports
// true when the reply was counted as a vote of the election the candidate
// has already started (a later reply of a larger view, whose pre-vote
// quorum came first); otherwise the grant goes on to be counted as a
// pre-vote grant.
func (e *election) takePledge(m *member, reply msgPreVoteReply) bool {
	switch {
	case reply.Granted == false:
		e.drop("malformed_pledge")
	case e.preVoting && e.pledges != nil && reply.Term == e.term && reply.Pledged == e.term+1:
		if e.pledgeOpen() {
			e.pledges[m.node] = true
		} else {
			e.drop("late_grant")
		}
	case e.role == roleCandidate && e.pledgedElection && reply.Pledged == e.term && reply.Term+1 == e.term:
		e.handleVoteReply(m, msgVoteReply{ClusterID: e.cfg.clusterID, Term: e.term, Granted: true})
		return true
	default:
		e.drop("unexpected_pledge")
	}
	return false
}

// pledgeOpen reports whether a pledge may still be counted: within
// voteRound of the first pre-vote that asked for it, the bound on every
// vote round (roundCloses).
func (e *election) pledgeOpen() bool {
	return e.pledgeAskedTerm == e.term && e.now.Before(e.pledgeAskedAt.Add(voteRound(e.cfg)))
}

// countPledges turns the pledges of the pre-vote round that started this
// election into its votes, once startElection has moved to the pledged
// term and opened round 1. Round 1 and the vote round are then counted
// from the first pre-vote that asked for pledges in the previous term, the
// earliest moment any of them can have been given.
func (e *election) countPledges(asked time.Time, pledges map[gen.Atom]bool) {
	e.pledgedElection = true
	e.roundSent[len(e.roundSent)-1].at = asked
	e.roundCloses = asked.Add(voteRound(e.cfg))
	for node := range pledges {
		m, ok := e.members[node]
		if ok == false {
			continue
		}
		e.votes[node] = true
		e.voteReplies++
		m.lastAck = e.now
		m.ackTerm = e.term
		e.acknowledged(m, 1)
	}
	if len(pledges) > 0 {
		e.pledgedElections++
	}
}
