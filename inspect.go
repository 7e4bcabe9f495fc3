package leader

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// inspectKey is one HandleInspect key: its help text and how to derive its
// value from the state. Every value is a plain string: durations as Go
// durations, times as RFC 3339 or "never", lists sorted and comma-separated.
type inspectKey struct {
	key   string
	help  string
	value func(e *election) string
}

var inspectKeys = []inspectKey{
	// role and term
	{"ergo:state", "leader, candidate, follower or unclustered", func(e *election) string { return e.role.String() }},
	{"ergo:leader", "whether this node believes it leads", func(e *election) string { return strconv.FormatBool(e.role == roleLeader) }},
	{"ergo:leader_pid", "PID of the recognised leader, empty if none", func(e *election) string { return pidText(e.leader) }},
	{"ergo:leader_node", "node of the recognised leader, empty if none", func(e *election) string { return string(e.leader.Node) }},
	{"ergo:term", "current term", func(e *election) string { return strconv.FormatUint(e.term, 10) }},
	{"ergo:voted_for", "PID voted for in the current term, empty if none", func(e *election) string { return pidText(e.votedFor) }},
	{"ergo:term_changed_at", "when the term last changed", func(e *election) string { return timeText(e.termChangedAt) }},
	// membership
	{"ergo:cluster", "the ClusterID", func(e *election) string { return e.cfg.clusterID }},
	{"ergo:view_size", "members of the view, this node included", func(e *election) string { return strconv.Itoa(e.viewSize()) }},
	{"ergo:quorum", "majority of the view", func(e *election) string { return strconv.Itoa(e.quorum()) }},
	{"ergo:min_cluster_size", "MinClusterSize", func(e *election) string { return strconv.Itoa(e.cfg.minClusterSize) }},
	{"ergo:peers", "number of peers whose PID is known", func(e *election) string { return strconv.Itoa(len(e.peers())) }},
	{"ergo:peers_list", "peers whose PID is known, as node:pid", peersList},
	{"ergo:members", "every node of the view, this node included", membersList},
	{"ergo:declared", "peers declared through Join or Bootstrap", declaredList},
	{"ergo:bootstrap", "Options.Bootstrap as node:name, this node left out", bootstrapList},
	{"ergo:unreachable", "members whose connection dropped, with how long ago", unreachableList},
	{"ergo:unmonitored", "members whose process is known but not yet monitored (a termination would look like a lost connection)", func(e *election) string {
		var list []string
		for _, m := range e.members {
			if m.pid != (gen.PID{}) && m.watchAskedAt.IsZero() == false {
				list = append(list, string(m.node))
			}
		}
		return joinSorted(list)
	}},
	{"ergo:ghost_ttl", "GhostTTL", func(e *election) string { return e.cfg.ghostTTL.String() }},
	// the current election
	{"ergo:votes_granted", "grants in the current election, self included", func(e *election) string { return strconv.Itoa(len(e.votes)) }},
	{"ergo:votes_count", "vote replies received in the current election", func(e *election) string { return strconv.Itoa(e.voteReplies) }},
	{"ergo:prevote", "whether a pre-vote round is in progress", func(e *election) string { return strconv.FormatBool(e.preVoting) }},
	{"ergo:prevote_granted", "pre-vote grants in the current round, self included", func(e *election) string { return strconv.Itoa(len(e.preVotes)) }},
	{"ergo:prevote_rounds", "pre-vote rounds started", func(e *election) string { return strconv.FormatUint(e.preVoteRounds, 10) }},
	{"ergo:fast_failover_rounds", "pre-votes started early after the leader's down", func(e *election) string { return strconv.FormatUint(e.fastRounds, 10) }},
	{"ergo:stall_graces", "election timeouts that came so late past their deadline that this follower kept its leader one more timeout rather than campaign (its node had not run)", func(e *election) string { return strconv.FormatUint(e.stallGraces, 10) }},
	{"ergo:lease_reclaims", "pre-votes this node asked at once, to lead the next term, after its lease as leader ran out", func(e *election) string { return strconv.FormatUint(e.reclaims, 10) }},
	{"ergo:pledges_given", "votes this node gave with its grants of fast pre-votes (pledged votes)", func(e *election) string { return strconv.FormatUint(e.pledgesGiven, 10) }},
	{"ergo:pledged_elections", "elections this node started with votes pledged to it counted", func(e *election) string { return strconv.FormatUint(e.pledgedElections, 10) }},
	{"ergo:fast_prevotes_reasked", "fast pre-votes asked again of a voter that had not seen the leader's loss yet", func(e *election) string { return strconv.FormatUint(e.fastReasks, 10) }},
	{"ergo:fast_failovers_deferred", "fast failovers this node gave up for a survivor ranked before it", func(e *election) string { return strconv.FormatUint(e.deferredFailovers, 10) }},
	{"ergo:owed_down_waits", "election timeouts that waited for the leader's down instead of campaigning, the framework having dropped the connection to the leader's node already", func(e *election) string { return strconv.FormatUint(e.owedDownWaits, 10) }},
	{"ergo:fast_failovers_in_wave", "fast failovers that waited longer because many elections of this node failed over at once", func(e *election) string { return strconv.FormatUint(e.waveDelayed, 10) }},
	{"ergo:campaigns_queued", "election timeouts that waited for a turn to campaign (the elections of a node campaign a few dozen at a time)", func(e *election) string { return strconv.FormatUint(e.campaignsQueued, 10) }},
	// coalesced liveness (coalesce.go, hub.go)
	{"ergo:liveness_hub", "the node's liveness hub this election's heartbeats go through, \"none\" when it sends its own", func(e *election) string {
		if e.coalesced == false {
			return "none"
		}
		return pidText(e.hubPID)
	}},
	{"ergo:liveness_carried", "as leader, the nodes the hub carries its heartbeat rounds to", func(e *election) string {
		var list []string
		if e.role == roleLeader {
			for node, carried := range e.carried {
				if carried {
					list = append(list, string(node))
				}
			}
		}
		return joinSorted(list)
	}},
	{"ergo:liveness_delegated", "as follower, whether the hub answers its leader's rounds for it", func(e *election) string {
		return strconv.FormatBool(e.coalesced && e.grantedFollow != (gen.PID{}))
	}},
	// what operators chart (stats.go): counters since the actor started,
	// durations as Go durations
	{"ergo:leader_changes", "times this node recognised a leader other than the one before, the first included", func(e *election) string { return strconv.FormatUint(e.stats.leaderChanges, 10) }},
	{"ergo:elections_started", "vote rounds this node opened as a candidate", func(e *election) string { return strconv.FormatUint(e.stats.electionsStarted, 10) }},
	{"ergo:elections_won", "vote rounds that made this node leader", func(e *election) string { return strconv.FormatUint(e.stats.electionsWon, 10) }},
	{"ergo:elections_lost", "vote rounds that did not, the one in progress left out", func(e *election) string { return strconv.FormatUint(e.electionsLost(), 10) }},
	{"ergo:leaderless_for", "how long this node has recognised no leader, 0s while it does", func(e *election) string { return e.leaderlessFor().String() }},
	{"ergo:leaderless_last", "the last completed period without a leader", func(e *election) string { return e.stats.leaderlessLast.String() }},
	{"ergo:leaderless_total", "every period without a leader since the start, the current one included", func(e *election) string {
		return (e.stats.leaderlessTotal + e.leaderlessFor()).String()
	}},
	{"ergo:failover_gap_last", "the last failover as this node saw it: from losing its leader to recognising the next (its leaderless gap)", func(e *election) string { return e.stats.failoverGap.String() }},
	// liveness
	{"ergo:election_timer_armed", "whether a campaign is scheduled", func(e *election) string { return strconv.FormatBool(e.timers[timerElection].armed) }},
	{"ergo:heartbeat_timer_armed", "whether heartbeats are scheduled", func(e *election) string { return strconv.FormatBool(e.timers[timerHeartbeat].armed) }},
	{"ergo:heartbeat_in_last", "last heartbeat received from the leader", func(e *election) string { return timeText(e.lastHeartbeatIn) }},
	{"ergo:heartbeat_out_last", "last heartbeat round sent as leader", func(e *election) string { return timeText(e.lastHeartbeatOut) }},
	{"ergo:election_timeout_min", "ElectionTimeoutMin", func(e *election) string { return e.cfg.electionTimeoutMin.String() }},
	{"ergo:election_timeout_max", "ElectionTimeoutMax", func(e *election) string { return e.cfg.electionTimeoutMax.String() }},
	{"ergo:heartbeat_interval", "HeartbeatInterval", func(e *election) string { return e.cfg.heartbeatInterval.String() }},
	{"ergo:lease_until", "until when this node's leadership is exclusive (its lease), never when it does not lead", func(e *election) string {
		if e.leading(e.now) == false {
			return "never"
		}
		return timeText(e.leaseUntil)
	}},
	{"ergo:quiet_until", "a freshly started actor grants no vote before this time", func(e *election) string { return timeText(e.startedAt.Add(e.quietPeriod())) }},
	{"ergo:longest_step", "the longest time the actor spent on one message, callbacks and sends included", func(e *election) string { return e.longestStep.String() }},
	{"ergo:timer_wakeups", "timers that went off: an idle election whose node's hub carries its heartbeats wakes only for its chores", func(e *election) string { return strconv.FormatUint(e.timerWakeups, 10) }},
	{"ergo:handovers", "graceful handovers started by this node", func(e *election) string { return strconv.FormatUint(e.handovers, 10) }},
	{"ergo:last_handover", "successor and time of the last handover", func(e *election) string { return textOr(e.lastHandover, "never") }},
	// problems
	{"ergo:dropped_by_reason", "discarded messages per reason", droppedList},
	{"ergo:send_failing_peers", "peers whose last send failed, with the error", sendFailingList},
	{"ergo:connections_kept", "times a silent member's connection was not reset because it still carried messages or a request and its answer (a member that is absent or ignores this election)", func(e *election) string { return strconv.FormatUint(e.connectionsKept, 10) }},
	{"ergo:confirm_denied", "elections won but withheld by HandleConfirmLeader", func(e *election) string { return strconv.FormatUint(e.confirmDenied, 10) }},
	{"ergo:last_denied_at", "when HandleConfirmLeader last withheld leadership", func(e *election) string { return timeText(e.lastDeniedAt) }},
	{"ergo:confirm_backoff", "no campaign before this time (confirm denial or handover)", func(e *election) string { return timeText(e.notBefore) }},
}

// inspect returns the election's keys: all of them, only the named ones
// (unknown names map to "<unknown item>"), or with "help" the key list with
// a description of each.
func (e *election) inspect(now time.Time, items ...string) map[string]string {
	e.now = now
	result := make(map[string]string)
	if len(items) == 1 && items[0] == "help" {
		for _, k := range inspectKeys {
			result[k.key] = k.help
		}
		return result
	}
	if len(items) == 0 {
		for _, k := range inspectKeys {
			result[k.key] = k.value(e)
		}
		return result
	}
	for _, item := range items {
		result[item] = "<unknown item>"
		for _, k := range inspectKeys {
			if k.key == item {
				result[item] = k.value(e)
				break
			}
		}
	}
	return result
}

// inspectMerged answers an inspect request: the election's keys with the
// behavior's own keys merged on top.
func (a *Actor) inspectMerged(from gen.PID, items ...string) map[string]string {
	result := a.state.inspect(a.clock(), items...)
	own := a.behavior.HandleInspect(from, items...)
	if len(items) > 0 && len(own) > 0 {
		// an item the behavior answers is not unknown
		for key := range own {
			delete(result, key)
		}
	}
	for key, value := range own {
		result[key] = value
	}
	return result
}

func pidText(pid gen.PID) string {
	if pid == (gen.PID{}) {
		return ""
	}
	return pid.String()
}

func timeText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func textOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func joinSorted(list []string) string {
	slices.Sort(list)
	return strings.Join(list, ",")
}

func peersList(e *election) string {
	var list []string
	for _, m := range e.members {
		if m.pid != (gen.PID{}) {
			list = append(list, fmt.Sprintf("%s:%s", string(m.node), m.pid))
		}
	}
	return joinSorted(list)
}

func membersList(e *election) string {
	list := []string{string(e.self.Node)}
	for node := range e.members {
		list = append(list, string(node))
	}
	return joinSorted(list)
}

func declaredList(e *election) string {
	var list []string
	for _, m := range e.members {
		if m.declared {
			list = append(list, string(m.node))
		}
	}
	return joinSorted(list)
}

// bootstrapList lists Options.Bootstrap as node:name (a process name and a
// node name joined by "@" would read as a node name), without this node.
func bootstrapList(e *election) string {
	var list []string
	for _, p := range e.cfg.bootstrap {
		if p.Node == e.self.Node {
			continue
		}
		list = append(list, fmt.Sprintf("%s:%s", string(p.Node), string(p.Name)))
	}
	return joinSorted(list)
}

func unreachableList(e *election) string {
	var list []string
	for _, m := range e.members {
		if m.unreachableSince.IsZero() == false {
			list = append(list, fmt.Sprintf("%s (%s ago)", string(m.node), e.now.Sub(m.unreachableSince).Round(time.Millisecond)))
		}
	}
	return joinSorted(list)
}

func droppedList(e *election) string {
	var list []string
	for reason, count := range e.dropped {
		list = append(list, fmt.Sprintf("%s=%d", reason, count))
	}
	return joinSorted(list)
}

func sendFailingList(e *election) string {
	var list []string
	for _, m := range e.members {
		if m.sendErr != nil {
			list = append(list, fmt.Sprintf("%s (%s)", string(m.node), m.sendErr))
		}
	}
	return joinSorted(list)
}
