package leader

import (
	"fmt"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// A node can be without a leader for good and say nothing: a lone node
// below MinClusterSize, a view whose other members it cannot reach, a typo
// in a peer's name. The health check runs every stuckAfter and says so,
// once a minute, with what the operator needs to act: the view, the floor,
// and which members fail and why. It also reports members whose sends
// have failed for that long.

// armHealthCheck schedules the next health check, unless one is scheduled.
// It runs only while there is something to watch: no leader, or a member
// whose sends fail. A healthy node, which is what thousands of elections
// on a node mostly are, is not woken for it.
func (e *election) armHealthCheck() {
	if e.timers[timerHealth].armed == false {
		e.armTimer(timerHealth, e.stuckAfter())
	}
}

// needsHealthCheck reports whether there is anything to watch.
func (e *election) needsHealthCheck() bool {
	if e.stats.leaderlessSince.IsZero() == false {
		return true
	}
	for _, m := range e.members {
		if m.sendErr != nil {
			return true
		}
	}
	return false
}

// healthCheck warns about a node that has been without a leader, or about
// members whose sends have been failing, for stuckAfter.
func (e *election) healthCheck() {
	defer func() {
		if e.needsHealthCheck() {
			e.armHealthCheck()
		}
	}()
	bound := e.stuckAfter()
	for _, m := range e.sortedMembers() {
		if m.sendErr != nil && m.sendFailingSince.IsZero() == false && e.now.Sub(m.sendFailingSince) >= bound {
			e.warnEvery("send "+string(m.node), time.Minute,
				"sends to peer %s have failed for %s: %s. Until they get through it counts in the view (quorum %d of %d) without taking part; %s",
				m.node, e.now.Sub(m.sendFailingSince).Round(time.Second), m.sendErr, e.quorum(), e.viewSize(), sendErrorHint)
		}
	}
	gap := e.leaderlessFor()
	if gap < bound {
		return
	}
	if e.role == roleUnclustered {
		e.warnEvery("stuck", time.Minute,
			"no leader for %s: the view has %d members, below MinClusterSize %d, so this node does not campaign. Members: %s. Join the missing peers (through Join or Bootstrap), or lower MinClusterSize if the cluster is meant to be smaller",
			gap.Round(time.Second), e.viewSize(), e.cfg.minClusterSize, e.memberHealth())
		return
	}
	e.warnEvery("stuck", time.Minute,
		"no leader for %s at term %d: view %d, quorum %d, %d of them reachable (this node included). Members: %s. A quorum of the view must reach each other: check the failing members' nodes, routes and cookies, and Leave members that are gone for good",
		gap.Round(time.Second), e.term, e.viewSize(), e.quorum(), e.reachable(), e.memberHealth())
}

// sendErrorHint explains what a failed send to a peer can mean.
const sendErrorHint = "\"no route\" means the framework could not reach the node or the handshake was refused (a cookie mismatch is logged on the other node); check the node name, its routes and the cookie"

// memberHealth describes each member: reachable, or why not.
func (e *election) memberHealth() string {
	if len(e.members) == 0 {
		return "none besides this node"
	}
	var parts []string
	for _, m := range e.sortedMembers() {
		var state string
		switch {
		case m.pid != (gen.PID{}):
			state = "reachable"
		case m.sendErr != nil:
			state = "failing: " + m.sendErr.Error()
		case m.unreachableSince.IsZero() == false:
			state = fmt.Sprintf("connection lost %s ago", e.now.Sub(m.unreachableSince).Round(time.Millisecond))
		default:
			state = "has not answered"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", m.node, state))
	}
	return strings.Join(parts, ", ")
}
