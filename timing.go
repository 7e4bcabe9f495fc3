package leader

import "time"

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

// quietPeriod is how long a freshly started actor grants no vote and no
// pre-vote, and does not campaign (its own vote is a grant too). Its
// previous incarnation, if any, may have granted a vote or promised a leader
// its support just before it stopped. A promise lasts at most
// promiseLength; a vote round is counted for at most ElectionTimeoutMin
// after the candidate opened it (election.roundCloses), and the grant came
// after that. Waiting ElectionTimeoutMin and a tenth from the start
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
// the middle of one step (hub.go): half of ElectionTimeoutMin, so a step
// doing the leader's own work (a database write) keeps its lease fresh,
// while a leader hung for longer stops being heard and is replaced.
func leaderStepGrace(cfg config) time.Duration { return cfg.electionTimeoutMin / 2 }

// hubPeerSilence is how long another node's hub may stay silent before the
// leaders on this node send their rounds to it directly (hub.go): three
// HeartbeatIntervals, so that a hub ticking every liveness interval does
// not give a peer up at a scheduling hiccup.
func hubPeerSilence(cfg config) time.Duration { return 3 * cfg.heartbeatInterval }
