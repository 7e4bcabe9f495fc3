package leader

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/require"
)

// The protocol extensions on real nodes. Each mechanism is shown by
// comparing a run with it and a run without it (protocolSwitches), so a
// test proves the mechanism rather than a lucky timing.

// The helpers themselves: every pair of nodes talks through its proxies, and
// a cut really isolates (no way around it through the registrar).
func TestClusterProxiesCarryAndCutTheTraffic(t *testing.T) {
	c := newRealCluster(t, clConfig{})
	all := c.addNodes(3)
	c.spawnAll(all, clusterFastTimings.options("mesh", 3), protocolSwitches{})
	c.waitLeader(all, clActorName, clConverge)
	c.waitViews(all, clActorName, 3, clConverge)
	for _, i := range all {
		for _, j := range all {
			if i < j {
				links := c.proxy(i, j).LiveLinks() + c.proxy(j, i).LiveLinks()
				require.Positive(t, links, "nodes %d and %d must be connected through their proxies", i, j)
			}
		}
	}

	c.partition([]int{all[0]}, all[1:])
	network := c.n(all[0]).node.Network()
	for _, j := range all[1:] {
		peer := c.name(j)
		waitFor(t, clConverge, "the cut connection to close", func() (bool, string) {
			_, err := network.Node(peer)
			return err != nil, fmt.Sprintf("still connected to %s", peer)
		})
		began := time.Now()
		_, err := network.GetNode(peer)
		require.Error(t, err, "a cut link must not be bypassed (registrar fallback)")
		t.Logf("connecting over a cut link failed after %s: %v", time.Since(began).Round(10*time.Microsecond), err)
	}

	c.healAll()
	for _, j := range all[1:] {
		_, err := network.GetNode(c.name(j))
		require.NoError(t, err)
	}
	c.waitLeader(all, clActorName, clConverge)
}

// clSteadyLeader is a condition that holds while idxs all report term and
// only leader leads.
func clSteadyLeader(c *realCluster, idxs []int, leader int, term uint64) func() (bool, string) {
	return func() (bool, string) {
		states := c.states(idxs, clActorName)
		for _, s := range states {
			switch {
			case s.err != nil:
				return false, clDescribe(states)
			case s.term != term:
				return false, clDescribe(states)
			case s.idx == leader && s.state != "leader":
				return false, clDescribe(states)
			case s.idx != leader && s.state == "leader":
				return false, clDescribe(states)
			}
		}
		return true, ""
	}
}

// Pre-vote: two followers isolated for ten election timeouts rejoin without
// a single leader change or term increment on the majority. Without it,
// their campaigns inflate the term and depose the leader when they return.
func TestClusterPreVoteRejoin(t *testing.T) {
	for _, preVote := range []bool{true, false} {
		name := "pre-vote"
		if preVote == false {
			name = "without pre-vote"
		}
		t.Run(name, func(t *testing.T) {
			tm := clusterSteadyTimings // the isolated keep their view of five, and keep campaigning
			tolerance := tm.electionMin() / 2
			clRetry(t, clConfig{}, func(c *realCluster) {
				all := c.addNodes(5)
				switches := protocolSwitches{noPreVote: preVote == false}
				c.spawnAll(all, tm.options("prevote", 3), switches)
				leader, term := c.waitLeader(all, clActorName, clConverge)
				c.waitViews(all, clActorName, 5, clConverge)
				settled := time.Now()

				followers := clWithout(all, leader)
				rand.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
				isolated := followers[:2]
				majority := clWithout(all, isolated...)
				isolatedAt := time.Now()
				c.partition(majority, isolated[:1], isolated[1:])

				isolation := 10 * tm.electionMax()
				if preVote {
					c.steady(settled, tolerance, isolation, "the majority's leader and term while two followers are isolated",
						clSteadyLeader(c, majority, leader, term))
				} else {
					waitFor(t, clConverge, "the isolated followers to campaign with real votes", func() (bool, string) {
						states := c.states(isolated, clActorName)
						for _, s := range states {
							if s.err != nil || s.term <= term {
								return false, clDescribe(states)
							}
						}
						return true, ""
					})
					// the scenario: the isolation lasts as long as with pre-vote
					time.Sleep(time.Until(isolatedAt.Add(isolation)))
				}
				isolatedStates := c.states(isolated, clActorName)
				c.healAll()

				if preVote {
					// Pre-vote never let the isolated followers raise their term.
					for _, s := range isolatedStates {
						require.Equal(t, term, s.term, "an isolated follower with pre-vote keeps its term: %s", s)
					}
					// Everyone back under the same leader at the same term, and
					// it stays so.
					got, gotTerm := c.waitLeader(all, clActorName, clConverge)
					if got != leader || gotTerm != term {
						c.disrupted(settled, tolerance, fmt.Sprintf("after the rejoin %s leads term %d; %s led term %d before", c.name(got), gotTerm, c.name(leader), term))
					}
					c.waitViews(all, clActorName, 5, clConverge)
					c.steady(settled, tolerance, 3*tm.electionMax(), "the leader and term after the rejoin", clSteadyLeader(c, all, leader, term))
					if won := c.rec.leadersSince("prevote", settled); len(won) > 0 {
						c.disrupted(settled, tolerance, fmt.Sprintf("a leader change: %v", won))
					}
					if demoted, ok := c.rec.firstAfter(cbFollower, "prevote", c.name(leader), settled); ok {
						c.disrupted(settled, tolerance, fmt.Sprintf("the leader was deposed: %s", demoted))
					}
					t.Logf("isolated followers before the heal: %s", clDescribe(isolatedStates))
					return
				}

				// Without pre-vote the isolated followers' terms ran ahead and
				// the rejoin disrupts the leader.
				for _, s := range isolatedStates {
					require.Greater(t, s.term, term, "an isolated follower without pre-vote inflates its term: %s", s)
				}
				_, newTerm := c.waitLeader(all, clActorName, clConverge)
				require.Greater(t, newTerm, term, "the majority's term must have been bumped")
				_, demoted := c.rec.firstAfter(cbFollower, "prevote", c.name(leader), settled)
				require.True(t, demoted, "the leader must have been deposed by the returning followers")
				t.Logf("without pre-vote: term %d -> %d; isolated before the heal: %s", term, newTerm, clDescribe(isolatedStates))
			})
		})
	}
}

// Check-quorum on responses: when the leader's inbound traffic is lost but
// its outbound is delivered (a half-open link), it cannot tell it is cut
// off from the sends alone. Counting only what it receives, it steps down
// within ElectionTimeoutMin + HeartbeatInterval and the others elect
// exactly one leader. Counting accepted sends (noResponseQuorum) it keeps
// leading a cluster it cannot hear.
func TestClusterAsymmetricPartition(t *testing.T) {
	for _, responseQuorum := range []bool{true, false} {
		name := "response quorum"
		if responseQuorum == false {
			name = "send quorum"
		}
		t.Run(name, func(t *testing.T) {
			tm := clusterSteadyTimings
			tolerance := tm.electionMin() / 2
			clRetry(t, clConfig{}, func(c *realCluster) {
				all := c.addNodes(5)
				c.spawnAll(all, tm.options("asymmetric", 3), protocolSwitches{noResponseQuorum: responseQuorum == false})
				leader, term := c.waitLeader(all, clActorName, clConverge)
				c.waitViews(all, clActorName, 5, clConverge)
				// The leader must already know (and monitor) every follower:
				// a remote Monitor is a request that waits for a reply, and
				// no reply reaches a leader whose inbound is lost.
				waitFor(t, clConverge, "the leader to know every follower's PID", func() (bool, string) {
					raw, err := c.inspect(leader, clActorName, "ergo:peers", "ergo:unreachable")
					if err != nil {
						return false, err.Error()
					}
					return raw["ergo:peers"] == "4" && raw["ergo:unreachable"] == "", fmt.Sprint(raw)
				})
				settled := time.Now()
				rest := clWithout(all, leader)

				dropAt := time.Now()
				c.dropToward(leader)

				if responseQuorum == false {
					hold := 10 * (tm.electionMin() + tm.heartbeat())
					c.steady(settled, tolerance, hold, "the deaf leader keeping its leadership", clSteadyLeader(c, all, leader, term))
					if demoted, ok := c.rec.firstAfter(cbFollower, "asymmetric", c.name(leader), dropAt); ok {
						c.disrupted(settled, tolerance, fmt.Sprintf("the deaf leader stepped down: %s", demoted))
					}
					return
				}

				c.requireStepDown(tm, "asymmetric", leader, dropAt, tolerance, "the deaf leader")

				next, nextTerm := c.waitLeader(rest, clActorName, clConverge)
				require.Greater(t, nextTerm, term)
				elected := time.Now()
				c.steady(elected, tolerance, 3*tm.electionMax(), "exactly one leader among the five", func() (bool, string) {
					states := c.states(all, clActorName)
					for _, s := range states {
						if s.err != nil || (s.state == "leader") != (s.idx == next) {
							return false, clDescribe(states)
						}
					}
					return true, ""
				})
			})
		})
	}
}

// clHandover is one recorded handover: the old leader's HandleBecomeFollower
// and the successor's HandleBecomeLeader, and the term the cluster settled
// on (above the successor's when another election followed at once).
type clHandover struct {
	old, next cbEvent
	settled   uint64
}

// gap is the leaderless time between the two callbacks; negative when the
// successor started leading before the old leader had stopped.
func (h clHandover) gap() time.Duration { return h.next.at.Sub(h.old.at) }

// clWaitHandover waits for both callbacks of a handover that began at since.
func clWaitHandover(t *testing.T, c *realCluster, cluster string, old gen.Atom, since time.Time) clHandover {
	t.Helper()
	var h clHandover
	waitFor(t, clConverge, "the handover to be recorded", func() (bool, string) {
		var ok bool
		h.old, ok = c.rec.firstAfter(cbFollower, cluster, old, since)
		if ok == false {
			return false, "the old leader has not reported HandleBecomeFollower"
		}
		elected := c.rec.find(func(e cbEvent) bool {
			return e.kind == cbLeader && e.cluster == cluster && e.node != old && e.at.Before(since) == false
		})
		if len(elected) == 0 {
			return false, "no successor has reported HandleBecomeLeader"
		}
		h.next = elected[0]
		return true, ""
	})
	return h
}

// clReplaceNode retires node gone from the discovery and the views of the
// survivors (as a discovery loop calling Leave would) and starts a fresh
// node in its place, so a long series of stops keeps five nodes.
func clReplaceNode(t *testing.T, c *realCluster, gone int, tm clusterTimings, cluster string, switches protocolSwitches) {
	t.Helper()
	c.setListed(gone, false)
	for _, i := range c.live() {
		c.send(i, clActorName, ctlLeave{node: c.name(gone)})
	}
	fresh := c.addNode()
	c.mustSpawn(fresh, clActorSpec{options: tm.options(cluster, 3), switches: switches})
	live := c.live()
	c.waitViews(live, clActorName, len(live), clConverge)
	c.waitLeader(live, clActorName, clConverge)
}

// clRunHandovers hands leadership over runs times, by StepDown called from
// inside the leader or by a graceful Stop of the leader's node (replaced
// after each run), and returns what the callbacks recorded.
func clRunHandovers(t *testing.T, how string, runs int, tm clusterTimings) []clHandover {
	t.Helper()
	const cluster = "handover"
	c := newRealCluster(t, clConfig{})
	all := c.addNodes(5)
	c.spawnAll(all, tm.options(cluster, 3), protocolSwitches{})
	var handovers []clHandover
	for run := range runs {
		live := c.live()
		old, term := c.waitLeader(live, clActorName, clConverge)
		oldName := c.name(old)
		since := time.Now()
		if how == "StepDown" {
			before, err := c.inspect(old, clActorName, "ergo:handovers")
			require.NoError(t, err)
			result := make(chan error, 1)
			c.send(old, clActorName, ctlStepDown{result: result})
			require.NoError(t, <-result, "StepDown on the leader")
			after, err := c.inspect(old, clActorName, "ergo:handovers")
			require.NoError(t, err)
			require.NotEqual(t, before["ergo:handovers"], after["ergo:handovers"], "StepDown must hand over to a successor")
		} else {
			c.stopNode(old, true)
		}
		h := clWaitHandover(t, c, cluster, oldName, since)
		require.Equal(t, gen.PID{}, h.old.leader, "a handing-over leader reports no known leader")
		require.Greater(t, h.next.term, term)
		_, h.settled = c.waitLeader(c.live(), clActorName, clConverge)
		handovers = append(handovers, h)
		if clEvidenceMode() == false {
			t.Logf("run %d: %s -> %s, gap %s", run, oldName, h.next.node, h.gap().Round(10*time.Microsecond))
		}
		if how == "node Stop" && run < runs-1 {
			clReplaceNode(t, c, old, tm, cluster, protocolSwitches{})
		}
	}
	return handovers
}

// Graceful handover: StepDown (called from inside the actor) and a
// graceful node Stop hand leadership to an up-to-date follower at once. The
// gap between the old leader's HandleBecomeFollower and the new leader's
// HandleBecomeLeader is about a round trip, far below an election timeout.
func TestClusterGracefulHandover(t *testing.T) {
	runs := 3
	if clEvidenceMode() {
		runs = 50
	}
	tm := clusterDefaultTimings
	for _, how := range []string{"StepDown", "node Stop"} {
		t.Run(how, func(t *testing.T) {
			handovers := clRunHandovers(t, how, runs, tm)
			var gaps []time.Duration
			overlaps, again := 0, 0
			for _, h := range handovers {
				gaps = append(gaps, h.gap())
				if h.gap() < 0 {
					overlaps++
				}
				if h.settled > h.next.term {
					again++
				}
			}
			t.Logf("%s handover gap over %d runs: %s; successor leading before the old leader's HandleBecomeFollower: %d; another election right after the handover: %d",
				how, runs, clSummary(gaps), overlaps, again)
			sorted := slices.Clone(gaps)
			slices.Sort(sorted)
			require.Less(t, clPercentile(sorted, 50), tm.electionMin(), "the median handover must beat an election timeout")
		})
	}
}

// A graceful handover is planned, so it can and must end the old
// leadership before the new one starts: the old leader's
// HandleBecomeFollower has to run before the successor's HandleBecomeLeader
// ("HandleBecomeFollower is where the work stops").
func TestClusterHandoverStopsOldLeaderFirst(t *testing.T) {
	for _, how := range []string{"StepDown", "node Stop"} {
		t.Run(how, func(t *testing.T) {
			for i, h := range clRunHandovers(t, how, 10, clusterDefaultTimings) {
				require.Positive(t, h.gap(), "run %d: the successor's HandleBecomeLeader (%s) ran %s before the old leader's HandleBecomeFollower (%s): both ran leader work at once",
					i, h.next, -h.gap(), h.old)
			}
		})
	}
}

// Fast failover after the leader's node dies: the survivors observe the
// leader's down (ErrNoConnection) and pre-vote early instead of waiting a
// whole election timeout; every survivor agrees on the new leader.
func TestClusterFastFailover(t *testing.T) {
	runs := 3
	if clEvidenceMode() {
		runs = 50
	}
	tm := clusterDefaultTimings
	c := newRealCluster(t, clConfig{})
	all := c.addNodes(5)
	c.spawnAll(all, tm.options("failover", 3), protocolSwitches{})
	var failovers []time.Duration
	for run := range runs {
		live := c.live()
		old, term := c.waitLeader(live, clActorName, clConverge)
		killedAt := time.Now()
		c.stopNode(old, false)
		survivors := c.live()
		next, nextTerm := c.waitLeader(survivors, clActorName, clConverge)
		require.Greater(t, nextTerm, term)
		elected, ok := c.rec.firstAfter(cbLeader, "failover", "", killedAt)
		require.True(t, ok)
		require.Greater(t, elected.term, term)
		failover := elected.at.Sub(killedAt)
		failovers = append(failovers, failover)
		if clEvidenceMode() == false {
			t.Logf("run %d: %s killed, %s leads term %d after %s", run, c.name(old), c.name(next), nextTerm, failover.Round(10*time.Microsecond))
		}
		if run < runs-1 {
			clReplaceNode(t, c, old, tm, "failover", protocolSwitches{})
		}
	}
	sorted := slices.Clone(failovers)
	slices.Sort(sorted)
	t.Logf("failover after StopForce of the leader over %d runs: %s", runs, clSummary(failovers))
	require.Less(t, clPercentile(sorted, 50), tm.electionMax(), "the median failover must beat a full election timeout")
}

// A single follower whose link to the leader flaps does not disrupt it:
// its early pre-vote is refused by the others, who still hear the leader.
func TestClusterFollowerLinkFlapDoesNotDisrupt(t *testing.T) {
	flaps := 5
	if clEvidenceMode() {
		flaps = 50
	}
	tm := clusterDefaultTimings
	tolerance := tm.electionMin() / 2
	clRetry(t, clConfig{}, func(c *realCluster) {
		all := c.addNodes(5)
		c.spawnAll(all, tm.options("flap", 3), protocolSwitches{})
		leader, term := c.waitLeader(all, clActorName, clConverge)
		c.waitViews(all, clActorName, 5, clConverge)
		settled := time.Now()
		follower := clWithout(all, leader)[rand.IntN(4)]
		leaderName, followerName := c.name(leader), string(c.name(follower))
		// the leader and every follower but the flapping one keep the term
		undisturbed := func() {
			if ok, desc := clSteadyLeader(c, clWithout(all, follower), leader, term)(); ok == false {
				c.disrupted(settled, tolerance, "the leader or the term moved: "+desc)
			}
		}

		for flap := range flaps {
			c.cutPair(follower, leader)
			waitFor(t, clConverge, fmt.Sprintf("flap %d: the follower to lose the leader", flap), func() (bool, string) {
				undisturbed()
				s := c.stateOf(follower, clActorName)
				return s.err == nil && s.leaderNode == "", s.String()
			})
			// Keep it cut for a while: long enough for the follower's early
			// pre-vote, and up to a regular one.
			time.Sleep(time.Duration(rand.IntN(tm.max)) * time.Millisecond)
			c.healPair(follower, leader)
			waitFor(t, clConverge, fmt.Sprintf("flap %d: the follower to follow the leader again", flap), func() (bool, string) {
				undisturbed()
				f := c.stateOf(follower, clActorName)
				l := c.stateOf(leader, clActorName, "ergo:unreachable")
				ok := f.err == nil && l.err == nil && f.leaderNode == leaderName && f.term == term &&
					strings.Contains(l.raw["ergo:unreachable"], followerName) == false
				return ok, f.String() + " / " + l.String() + " unreachable=" + l.raw["ergo:unreachable"]
			})
		}
		c.steady(settled, tolerance, tm.electionMax(), "the leader and term after the flaps", clSteadyLeader(c, all, leader, term))
		if won := c.rec.leadersSince("flap", settled); len(won) > 0 {
			c.disrupted(settled, tolerance, fmt.Sprintf("a leader change: %v", won))
		}
		if demoted, ok := c.rec.firstAfter(cbFollower, "flap", leaderName, settled); ok {
			c.disrupted(settled, tolerance, fmt.Sprintf("the leader stepped down: %s", demoted))
		}
		t.Logf("%d flaps of %s's link to the leader: leader and term %d unchanged", flaps, followerName, term)
	})
}

// A member that cannot be reached must not stall the ones that can. Here
// one follower sits behind a firewall that drops its traffic after the TCP
// connect (or is too stuck to answer a handshake): a connection attempt to
// it takes the framework's whole handshake timeout. The other four are a
// healthy majority and must keep their leader and term. Sends to a member
// whose connection dropped go by name (Join's probes from the discovery
// loop, the leader's probes, campaign messages), and the framework connects
// synchronously in the sender's goroutine, so each of them can block the
// sending actor for that long: no heartbeats, no acks, and the healthy
// leader is deposed.
func TestClusterBlackholedMemberDoesNotStallTheMajority(t *testing.T) {
	tm := clusterDefaultTimings
	tolerance := tm.electionMin() / 2
	clRetry(t, clConfig{}, func(c *realCluster) {
		all := c.addNodes(5)
		c.spawnAll(all, tm.options("blackhole", 3), protocolSwitches{})
		leader, term := c.waitLeader(all, clActorName, clConverge)
		c.waitViews(all, clActorName, 5, clConverge)
		settled := time.Now()
		lost := clWithout(all, leader)[rand.IntN(4)]
		healthy := clWithout(all, lost)
		t.Logf("leader %s at term %d; blackholing %s", c.name(leader), term, c.name(lost))

		c.blackhole(lost)
		c.steady(settled, tolerance, 10*tm.electionMax(), "the healthy majority's leader and term", clSteadyLeader(c, healthy, leader, term))
		if won := c.rec.leadersSince("blackhole", settled); len(won) > 0 {
			c.disrupted(settled, tolerance, fmt.Sprintf("a leader change: %v", won))
		}
	})
}

// A hung leader (its actor blocked for longer than ElectionTimeoutMax) is
// replaced, and steps down as soon as it resumes.
func TestClusterHungLeaderIsReplaced(t *testing.T) {
	tm := clusterDefaultTimings
	c := newRealCluster(t, clConfig{})
	all := c.addNodes(5)
	c.spawnAll(all, tm.options("hung", 3), protocolSwitches{})
	hung, term := c.waitLeader(all, clActorName, clConverge)
	rest := clWithout(all, hung)

	block := 10 * tm.electionMax()
	started := make(chan struct{})
	c.send(hung, clActorName, ctlBlock{d: block, started: started})
	<-started
	blockedAt := time.Now()

	// Not inspecting the hung actor: it cannot answer while blocked.
	next, nextTerm := c.waitLeader(rest, clActorName, block)
	require.True(t, time.Now().Before(blockedAt.Add(block)), "the new leader must appear while the old one is still hung")
	require.Greater(t, nextTerm, term)
	t.Logf("%s hung at term %d; %s elected at term %d after %s", c.name(hung), term, c.name(next), nextTerm, time.Since(blockedAt).Round(time.Millisecond))

	var demoted cbEvent
	waitFor(t, block+clConverge, "the hung leader to step down once it resumes", func() (bool, string) {
		var ok bool
		demoted, ok = c.rec.firstAfter(cbFollower, "hung", c.name(hung), blockedAt)
		return ok, "no HandleBecomeFollower yet"
	})
	require.False(t, demoted.at.Before(blockedAt.Add(block)), "it cannot step down while hung")
	c.waitLeader(all, clActorName, clConverge)
}
