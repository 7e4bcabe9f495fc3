package leader

import (
	"math/rand/v2"
	"time"
)

// Every duration the election derives from its options is named here, so
// that the relations safety needs can be read (and are tested) in one
// place: timing_test.go checks them for the defaults and for a range of
// options.
//
// At the defaults (ElectionTimeoutMin 150 ms, HeartbeatInterval 50 ms):
//
//	liveness round interval   5 ms     a leader's rounds renew its lease
//	freshness window F        15 ms    IsLeader needs a quorum's ack of a round sent within it
//	acting lease              14.25 ms F less the drift margin
//	holding lease             142.5 ms the leader stands down when it runs out
//	promise                   150 ms   an ack's or grant's promise; F after it on a sign of loss
//	vote round                150 ms   a candidate counts a round's replies this long
//	quiet period              165 ms   a fresh actor grants nothing
//	fast-failover step        5 ms     the survivors' stagger, by rank

// leaseDriftMargin is the fraction of a lease given up to clock-rate drift:
// leases are safe while no node's clock runs more than 2.5% faster or
// slower than real time (a 5% difference between two nodes). Quartz clocks
// drift by parts per million; the margin is for virtual machines whose
// clocks are slewed hard.
const leaseDriftMargin = 20 // duration / 20 = 5%

// lessDrift is d less the drift margin.
func lessDrift(d time.Duration) time.Duration { return d - d/leaseDriftMargin }

// livenessInterval is how often a leader sends a numbered round: its lease
// needs a quorum's acknowledgement of a round sent within the freshness
// window, so rounds go several times per window. It is ElectionTimeoutMin/30,
// or HeartbeatInterval when that is shorter, at least a millisecond. With
// AssumeSymmetricConnectionLoss the lease is long and the rounds go every
// HeartbeatInterval, as the documented protocol has them.
func livenessInterval(cfg config) time.Duration {
	if cfg.assumeSymmetricLoss {
		return cfg.heartbeatInterval
	}
	return max(min(cfg.heartbeatInterval, cfg.electionTimeoutMin/30), time.Millisecond)
}

// freshness is F, the window that bounds how long a leader acts on one
// acknowledged round (actingLease) and how long a member keeps its promise
// after it saw a sign that its leader is gone (election.leaderLost): three
// liveness rounds. Failover after a crash costs about F less the age of the
// last round, plus a pre-vote and a vote.
func freshness(cfg config) time.Duration { return 3 * livenessInterval(cfg) }

// maxFresh is the longest F a round or a ping may have when the round
// trips are long (election.roundFresh, hub.pingFresh): half of
// ElectionTimeoutMin, so that it stays well inside the full promise.
func maxFresh(cfg config) time.Duration { return promiseLength(cfg) / 2 }

// actingLease is how long one acknowledged round lets the leader act
// (IsLeader): F less the drift margin, so that it ends, in real time,
// before the promise of F that each acknowledging member keeps at least.
// With AssumeSymmetricConnectionLoss it is the holding lease.
func actingLease(cfg config) time.Duration {
	if cfg.assumeSymmetricLoss {
		return holdingLease(cfg)
	}
	return lessDrift(freshness(cfg))
}

// holdingLease is how long one acknowledged round keeps the leader in its
// role: when no newer round was acknowledged by a quorum within it, the
// leader stands down (HandleBecomeFollower). ElectionTimeoutMin less the
// drift margin, inside every member's full promise.
func holdingLease(cfg config) time.Duration { return lessDrift(cfg.electionTimeoutMin) }

// promiseLength is how long a member keeps its promise to the leader whose
// round it acknowledged, or the candidate it granted a vote, when it sees
// no sign that the leader is gone: ElectionTimeoutMin.
func promiseLength(cfg config) time.Duration { return cfg.electionTimeoutMin }

// voteRound is how long a candidate counts the replies to one vote round
// (election.roundCloses): ElectionTimeoutMin. Replies take a round trip,
// and a bound on every round is what makes quietPeriod enough.
func voteRound(cfg config) time.Duration { return cfg.electionTimeoutMin }

// leaderHeardWithin is how recently a follower must have heard its leader
// to keep refusing other candidates' pre-votes for it (leader stickiness,
// election.hearsLeader), and how recently a leader must have heard a member
// to hand over to it (successorRefusal): ElectionTimeoutMin, the length of
// the promise a live leader's rounds keep renewing.
func leaderHeardWithin(cfg config) time.Duration { return cfg.electionTimeoutMin }

// timeoutSpread is the random part of an election timeout:
// ElectionTimeoutMax less ElectionTimeoutMin.
func timeoutSpread(cfg config) time.Duration { return cfg.electionTimeoutMax - cfg.electionTimeoutMin }

// quietPeriod is how long a freshly started actor grants no vote and no
// pre-vote, and does not campaign (its own vote is a grant too). Its
// previous incarnation, if any, may have granted a vote or promised a leader
// its support just before it stopped. A promise lasts at most
// promiseLength; a vote round is counted for at most voteRound after the
// candidate opened it (election.roundCloses), and the grant came after
// that. Waiting ElectionTimeoutMin and a tenth from the start
// outlasts both in real time, on any two clocks within the drift bound
// (1.1 x 0.975 > 1 / 0.975).
func quietPeriod(cfg config) time.Duration {
	return cfg.electionTimeoutMin + cfg.electionTimeoutMin/10
}

// failoverStep is the fast failover's stagger between survivors of
// consecutive rank: ElectionTimeoutMin/30, at least a millisecond
// (fastFailoverDelay).
func failoverStep(cfg config) time.Duration { return max(cfg.electionTimeoutMin/30, time.Millisecond) }

// leaderStepGrace is how long the hub keeps opening rounds for a leader in
// the middle of one step (hub_tick.go): half of ElectionTimeoutMin, so a step
// doing the leader's own work (a database write) keeps its lease fresh,
// while a leader hung for longer stops being heard and is replaced.
func leaderStepGrace(cfg config) time.Duration { return cfg.electionTimeoutMin / 2 }

// hubPeerSilence is how long another node's hub may stay silent before the
// leaders on this node send their rounds to it directly (hub.go): three
// HeartbeatIntervals, so that a hub ticking every liveness interval does
// not give a peer up at a scheduling hiccup.
func hubPeerSilence(cfg config) time.Duration { return 3 * cfg.heartbeatInterval }

// Pacing. The durations below bound how often the library does something
// or how long it waits for something; none of them is a safety margin
// (the lease, the promise and the quiet period above are), but they are
// derived from the same options, and changing a timing option moves them
// together.

// hubRetryPause is how long an actor waits for its hub's answer before it
// asks again: ten maximum election timeouts, so that thousands of
// elections without a hub cost little.
func hubRetryPause(cfg config) time.Duration { return 10 * cfg.electionTimeoutMax }

// hubRejoinPause is how long an actor whose hub ended waits before it
// joins the next one: ElectionTimeoutMin, time for the first election of
// the node to start it, and for the rest to find it rather than each start
// one.
func hubRejoinPause(cfg config) time.Duration { return cfg.electionTimeoutMin }

// handoverHold is how long a leader that handed over does not campaign
// against its successor: ElectionTimeoutMax, longer than the successor's
// campaign takes (departure.go).
func handoverHold(cfg config) time.Duration { return cfg.electionTimeoutMax }

// withdrawalHold is how long a Leave stays sticky: ElectionTimeoutMax, so
// that traffic already in flight from the node cannot re-admit it.
func withdrawalHold(cfg config) time.Duration { return cfg.electionTimeoutMax }

// probeEvery is the spacing of Hellos to a member that has not answered
// (membership.probeSpacing doubles it per unanswered Hello), and the delay
// of the first Hello to a node whose member left (gone.go):
// ElectionTimeoutMax.
func probeEvery(cfg config) time.Duration { return cfg.electionTimeoutMax }

// floorAskEvery is how often an actor that does not know its term floor
// yet asks the members it has not heard from (lease.go): ElectionTimeoutMin.
func floorAskEvery(cfg config) time.Duration { return cfg.electionTimeoutMin }

// silentMinQuiet is how long a connection's message count must have been
// still, at least, before a silence reset may cut it (dialer.go,
// connectionBoard.claim): ElectionTimeoutMin; a sample taken later than
// that could not tell.
func silentMinQuiet(cfg config) time.Duration { return cfg.electionTimeoutMin }

// linkProbeWait is how long the other node's framework has to answer the
// probe over a silent connection before the connection is reset
// (linkprobe.go): ElectionTimeoutMin. The probe runs off the actor, and a
// black-holed link's reset comes that much later.
func linkProbeWait(cfg config) time.Duration { return cfg.electionTimeoutMin }

// otherClusterAnswerEvery is how often at most an actor answers a node
// whose messages name another ClusterID (silence.go): twice per
// ElectionTimeoutMin, enough for the sender's silence checks, and bounded
// whatever the sender sends.
func otherClusterAnswerEvery(cfg config) time.Duration { return cfg.electionTimeoutMin / 2 }

// watchAnswerWait is how long the monitor of a member may go unanswered
// before it counts as overdue (silence.go): ElectionTimeoutMin.
func watchAnswerWait(cfg config) time.Duration { return cfg.electionTimeoutMin }

// lossRepeatWindow is how soon after the last loss of a member's
// connection another one is taken as the same loss (no new Hello, no new
// log line): ElectionTimeoutMin.
func lossRepeatWindow(cfg config) time.Duration { return cfg.electionTimeoutMin }

// turnHold is how long a turn lasts at most: two maximum election
// timeouts, longer than any one attempt.
func turnHold(cfg config) time.Duration { return 2 * cfg.electionTimeoutMax }

// departureWait bounds how long an outgoing leader waits for its successor
// to campaign. The successor's vote request comes a round trip after the
// handover; a successor that did not campaign in half an election timeout
// did not get the message, and the cluster elects a leader the usual way.
func departureWait(cfg config) time.Duration {
	return cfg.electionTimeoutMin / 2
}

// dialShare is how long a failed dial of a node answers for every election
// of this node that wants to reach it: half an ElectionTimeoutMin. It is
// shorter than the back-off of an election's own sends by name after a
// failure (ElectionTimeoutMax), so one election alone dials exactly as
// often as it would without the sharing; what it saves is the thousand
// elections of a node that all lose the same peer together and would each
// dial it within the same few milliseconds.
func (a *Actor) dialShare() time.Duration {
	return a.state.cfg.electionTimeoutMin / 2
}

// starvedLateness is how late a timer must fire for its node to count as
// starved: half an ElectionTimeoutMin (75 ms at the defaults), several
// times what a loaded but healthy node shows.
func starvedLateness(cfg config) time.Duration { return cfg.electionTimeoutMin / 2 }

// stuckAfter is how long a node may be without a leader, or a member's
// sends may fail, before the health check warns: ten maximum election
// timeouts, far more than any election takes, and at least a second.
func (e *election) stuckAfter() time.Duration {
	return max(10*e.cfg.electionTimeoutMax, time.Second)
}

// choreInterval is how often an election whose heartbeats the hub carries
// wakes for its chores (probes of declared peers that never answered,
// silent connections, overdue monitors), while it has any (choresPending,
// leaderChoresPending): twenty minimum election timeouts,
// 3 s at the defaults. Every wake-up of a thousand idle elections costs the
// node about as much as all of their heartbeats; nothing the chores do is
// urgent (the lease and the election timer do not wait for them: the hub
// fires those when they are due, parking.go).
func (e *election) choreInterval() time.Duration { return 20 * e.cfg.electionTimeoutMin }

// silenceBound is how long a member may leave requests unanswered before
// its connection is reset: two maximum election timeouts, several rounds of
// requests at any role.
func (e *election) silenceBound() time.Duration { return 2 * e.cfg.electionTimeoutMax }

// lazyDownPause is how late a down that may wait (downHints) reaches the
// actor: half of ElectionTimeoutMin (75 ms at the defaults), longer than
// the failovers of a node crash under a thousand elections take on two
// cores, and short against GhostTTL, which still counts from the loss
// (peerDown.Since). Until then the follower's view and Inspect show the
// member as reachable.
func lazyDownPause(cfg config) time.Duration { return cfg.electionTimeoutMin / 2 }

// waveWindow is how far apart two fast failovers of a node may start and
// still be one wave: the time a node's crash takes to reach all the
// elections it led, on a busy survivor.
func waveWindow(cfg config) time.Duration { return cfg.electionTimeoutMin / 3 }

// waveExtra is what a survivor ranked rank adds to its fast-failover delay
// in a wave: a quarter of ElectionTimeoutMin per rank, at most two (37.5 ms
// and 75 ms at the defaults), still well inside an election timeout.
func waveExtra(cfg config, rank int) time.Duration {
	return time.Duration(min(rank, 2)) * (cfg.electionTimeoutMin / 4)
}

// owedDownWait bounds how long a follower's election timer waits for a
// down the framework owes it (owed downs, pacing.go): ten
// ElectionTimeoutMax (3 s at the defaults). A crash under 10,000 elections
// on three node processes of two cores handed its last downs 0.65 to 1.5 s
// after the kill (docs/performance.md); with a bound of 1.2 s the followers
// still waiting campaigned on their timers all at once, in the wave, and
// split their votes. A down that never comes costs a failover this much.
func owedDownWait(cfg config) time.Duration { return 10 * cfg.electionTimeoutMax }

// parkedProbeBackstop is how long after its Hello found the ghost's node
// being dialed by another election of this node, or failing to connect a
// moment ago, an election probes the ghost again if the board did not tell
// it the connection is up (ghostprobe.go): half of GhostTTL (2.5 s at the
// default), at least one ghost probe spacing.
func parkedProbeBackstop(cfg config) time.Duration {
	return max(cfg.ghostTTL/2, max(cfg.ghostTTL/8, cfg.electionTimeoutMax))
}

// ghostProbeSpacing is the time between two Hellos to a ghost from a member
// that is not leading: an eighth of GhostTTL (625 ms at the default), at
// least ElectionTimeoutMax, with a quarter of jitter so that the elections of
// a node that all lost the same connection do not probe in one burst. Several
// probes fit in the window, so one lost to a loaded moment does not cost the
// member its place.
func (e *election) ghostProbeSpacing() time.Duration {
	spacing := max(e.cfg.ghostTTL/8, e.cfg.electionTimeoutMax)
	return spacing + time.Duration(e.rng.Int64N(int64(spacing)/4+1))
}

// firstProbeAfterLoss is how long after a lost connection the framework
// reported an election first says Hello to the member again: lazyDownPause
// and a random part of ElectionTimeoutMax, so that the elections of a
// crashed node's survivors probe it spread out, not all at once.
func firstProbeAfterLoss(cfg config, rng *rand.Rand) time.Duration {
	return lazyDownPause(cfg) + time.Duration(rng.Int64N(int64(cfg.electionTimeoutMax)+1))
}

// redialHold is how long no election of this node dials a peer again after
// one of them reset the connection to it for silence: a silence bound and
// an ElectionTimeoutMax more, so that the other side's own reset comes
// first (dialer.go staggers it by node name, redialPause).
func (e *election) redialHold() time.Duration { return e.silenceBound() + e.cfg.electionTimeoutMax }

// recordRefresh is how often a hub sends every leader's record even though
// nothing changed (vouch.go): twenty HeartbeatIntervals, a second at the
// defaults. Between refreshes the pings vouch for the leaders; a refresh
// only anchors again a follower whose anchor went with a lost message, and
// costs what sending every record every interval cost, a twentieth as
// often.
func recordRefresh(heartbeatInterval time.Duration) time.Duration { return 20 * heartbeatInterval }

// stallLateness is how late past its deadline an election timeout must
// come for the follower to take the silence as its own (stalledPastDeadline):
// half of ElectionTimeoutMin (75 ms at the defaults). A node that runs
// handles its timers within milliseconds of their deadlines, and within
// tens of milliseconds while it is busy; a stall of every node for a few
// hundred milliseconds makes every follower's timeout at least this late.
func stallLateness(cfg config) time.Duration { return cfg.electionTimeoutMin / 2 }
