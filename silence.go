package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// A connection that carries nothing. The framework can report a peer as
// connected while nothing flows either way: after two nodes dialed each
// other at the same instant, some framework versions keep both outbound
// connections and deliver nothing, and a link whose packets are dropped
// stays "up" until TCP gives up on it, minutes later. Sends succeed, so
// nothing in the send path notices.
//
// Every request this node sends (Hello, pre-vote, vote, heartbeat) is
// answered by a live peer, even when the answer is no. So a member that has
// answered nothing for silenceBound since this node first asked it something
// is unreachable in fact, whatever the framework says, and its connection is
// reset (disconnected and dialed again, by the dialer process, never from the
// actor). A reset at most once per silenceBound per member keeps a peer that
// is really gone from being dialed in a loop.
//
// Only a connection that carries nothing is reset. Halfway through a
// member's silence the actor notes how many messages the connection has
// brought from that node (RemoteNodeInfo.MessagesIn, counted by the
// framework for every election and every process), and at the end it
// resets only if that count has not moved. A node so loaded that one
// election's answers come late still sends the others' (and the liveness
// hub's): resetting its connection would cut all of them, which makes the
// load worse, and the nodes would never settle (10,000 elections starting
// at once on 3 nodes did exactly that).
//
// A starved node waits longer: when a timer of any of its elections fired
// late by more than half an ElectionTimeoutMin within the last silence
// bound (connectionBoard.markStarved), its own readers may be what keeps the
// answers from being seen, and a connection must have brought nothing for
// four silence bounds, not ElectionTimeoutMin, before it is reset. 10,000
// elections cold-starting on 3 nodes of the stand-in reset dozens of
// connections in their first minute without this rule, each reset costing
// every election on the connection its member, and did not settle; with it
// they lead in 15 to 26 s without losing a connection. Starvation only
// delays a reset: a connection that is silent in fact (the real framework's
// simultaneous connect) keeps the node's elections campaigning in vain, and
// so keeps the node starved, until it is reset.
//
// A reset this node makes is not a failure it observed: the down it causes
// releases no promise and starts no fast failover (election.down), because
// the other end may never see it (packets dropped) and its leader's lease
// may still be running there.

// answerOtherCluster answers a request of another ClusterID with this
// actor's msgHelloReply, which that actor drops in turn as a mismatch and
// so learns that this node is alive and merely in another election
// (member.otherCluster). Without an answer, a node with a misspelt
// ClusterID whose peers had nothing of their own to send it (followers
// write to followers only on Join) took its peers for silent connections
// and reset them. Replies are never answered, so two actors of different
// ClusterIDs cannot keep each other talking; one answer per sender per half
// ElectionTimeoutMin bounds what a flood of requests costs.
func (e *election) answerOtherCluster(from gen.PID, message any) {
	switch message.(type) {
	case msgHello, msgPreVote, msgVote, msgHeartbeat:
	default:
		return
	}
	every := otherClusterAnswerEvery(e.cfg)
	if last, ok := e.otherClusterAnswered[from.Node]; ok && e.now.Sub(last) < every {
		return
	}
	if e.otherClusterAnswered == nil {
		e.otherClusterAnswered = make(map[gen.Atom]time.Time)
	}
	if len(e.otherClusterAnswered) >= maxWarnedKeys {
		// keyed by sender: bounded, and an entry older than every
		// limits nothing any more
		for n, at := range e.otherClusterAnswered {
			if e.now.Sub(at) >= every {
				delete(e.otherClusterAnswered, n)
			}
		}
		if len(e.otherClusterAnswered) >= maxWarnedKeys {
			return
		}
	}
	e.otherClusterAnswered[from.Node] = e.now
	e.out.sends = append(e.out.sends, outbound{node: from.Node, to: from, message: msgHelloReply{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, ViewSize: e.viewSize(), Incarnation: e.incarnation}})
}

// awaitAnswer notes that a request went to m.
func (e *election) awaitAnswer(m *member) {
	if m.awaitingSince.IsZero() && m.otherCluster == false {
		m.awaitingSince = e.now
	}
}

// findSilentConnections asks the actor to reset the connection of every
// member that has left requests unanswered for silenceBound.
func (e *election) findSilentConnections() {
	e.watchOverdue()
	bound := e.silenceBound()
	owed := func(m *member) bool { return m.awaitingSince.IsZero() == false && e.now.Sub(m.lastReset) >= bound }
	for _, m := range append(sortedWhere(e.members, owed), sortedWhere(e.gone, owed)...) {
		silent := e.now.Sub(m.awaitingSince)
		if silent >= bound/2 && m.inboundSampledAt.Before(m.awaitingSince) {
			m.inboundSampledAt = e.now
			e.out.sampleInbound = append(e.out.sampleInbound, m.node)
			// a reset needs the count to stay still after the sample
			// (resetConnection): not in the step that takes it, which
			// a chore that comes rarely would otherwise try
			continue
		}
		if silent < bound {
			continue
		}
		m.lastReset = e.now
		m.inboundSampledAt = time.Time{} // the silence goes on: sample the next connection too
		e.out.reset = append(e.out.reset, m.node)
	}
}

// choresPending reports whether a chore (findSilentConnections) has
// anything to look at: a member that has left a request unanswered, or one
// whose monitor was asked for and not confirmed. Nothing else makes one
// find anything, and both can only begin in a step of the actor's.
func (e *election) choresPending() bool {
	for _, m := range e.members {
		if m.awaitingSince.IsZero() == false || (m.pid != (gen.PID{}) && m.watchAskedAt.IsZero() == false) {
			return true
		}
	}
	return false
}

// restartSilences measures every member's silence anew from now: a timer
// fired late, so this node did not run for a while (stopped, or starved),
// and the answers it has not seen may be waiting to be read. Without it, a
// node resumed after a stall longer than the silence bound reset its
// connections in its first steps, and its callbacks flapped (no leader, the
// leader, no leader, the leader) as the resets took the leader's member
// away and Hellos brought it back.
func (e *election) restartSilences() {
	for _, m := range append(e.sortedMembers(), e.sortedGone()...) {
		if m.awaitingSince.IsZero() == false {
			m.awaitingSince, m.inboundSampledAt = e.now, time.Time{}
		}
	}
}

// connectionKept notes that the actor did not reset node's connection: it
// carried messages from that node while the member was silent, or a
// request to that node's framework and its answer (linkCarries), so what
// is silent is the member's actor (absent, stalled, overloaded, or in
// another election), not the link, and a reset would only cut every
// monitor and link over the connection. The member's silence is measured
// anew.
func (e *election) connectionKept(node gen.Atom) {
	m, ok := e.members[node]
	if ok == false {
		m, ok = e.gone[node]
	}
	if ok {
		e.connectionsKept++
		m.lastReset = time.Time{}
		m.awaitingSince = e.now
	}
}

// monitored notes that the watcher's monitor of pid is in place.
func (e *election) monitored(pid gen.PID) {
	if m, ok := e.members[pid.Node]; ok && m.pid == pid {
		m.watchAskedAt = time.Time{}
	}
}

// monitoring notes that m's process is being monitored anew (the watcher
// of its node was replaced): unconfirmed until the new watcher reports.
func (e *election) monitoring(node gen.Atom) {
	if m, ok := e.members[node]; ok && m.pid != (gen.PID{}) {
		m.watchAskedAt = e.now
	}
}

// watchOverdue asks the actor to check the connection of every member whose
// monitor has not been confirmed within ElectionTimeoutMin. A monitor
// request that went over a connection the framework then replaced or lost
// gets no answer until the framework's request timeout (seconds), and the
// member's termination meanwhile produces no down: if its node is no
// longer connected, it is treated as lost (dialed).
func (e *election) watchOverdue() {
	overdue := func(m *member) bool {
		return m.pid != (gen.PID{}) && m.watchAskedAt.IsZero() == false && e.now.Sub(m.watchAskedAt) >= watchAnswerWait(e.cfg)
	}
	for _, m := range sortedWhere(e.members, overdue) {
		e.out.checkConnected = append(e.out.checkConnected, m.node)
	}
}

// resetting reports whether this node reset its connection to node within
// the last silenceBound: a down for it then is this node's own doing.
func (e *election) resetting(m *member) bool {
	return m.lastReset.IsZero() == false && e.now.Sub(m.lastReset) < e.silenceBound()
}
