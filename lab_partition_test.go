package leader

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// Partitions on the process lab: every node is its own OS process in its
// own network namespace, and a cut is a route that drops (CutSilent) or
// rejects (CutAbort, the links fail at once) every packet between two
// nodes, on every link of the framework's pooled connections.

// Partitions and Healing, the walkthrough: five nodes, leader A. Split
// {A,B,C} | {D,E}: A keeps leading at the same term, D and E elect nobody
// and, pre-voting, do not raise their term; every view stays at five. Heal:
// one leader, the same one. Then the split that leaves the leader on the
// minority side: it steps down within one election timeout (plus a
// heartbeat) and the majority elects. Heal: one leader, views back to five
// everywhere. Both ways a partition happens: links that go silent, and
// links that fail at once.
func TestLabPartitionWalkthrough(t *testing.T) {
	lab.Require(t)
	for _, mode := range []lab.CutMode{lab.CutSilent, lab.CutAbort} {
		t.Run(mode.String(), func(t *testing.T) { labPartitionWalkthrough(t, mode) })
	}
}

func labPartitionWalkthrough(t *testing.T, mode lab.CutMode) {
	tm := labSteadyTimings
	labRetry(t, lab.Config{Nodes: 5, Params: tm.params(3)}, tm, func(s *labScenario) {
		all := s.All()
		a, term := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		settled := time.Now()
		s.expectLeaseKept(a)

		rest := s.All(a)
		rand.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
		majority := []int{a, rest[0], rest[1]}
		minority := []int{rest[2], rest[3]}
		t.Logf("leader %s at term %d; split %v | %v (%s)", s.Node(a).Name, term, majority, minority, mode)

		splitAt := time.Now()
		s.PartitionWith(mode, majority, minority)
		s.steady(settled, 10*tm.electionMax(), "A leading at the same term, the minority leaderless at the same term, views of five", func() (bool, string) {
			for _, i := range all {
				st := s.Node(i).Status()
				switch {
				case st.Err != "", st.ViewSize() != 5, st.Term() != term:
					return false, labDescribe(s.Cluster, all)
				case i == a && st.Role() != "leader":
					return false, labDescribe(s.Cluster, all)
				case i != a && st.Role() == "leader":
					return false, labDescribe(s.Cluster, all)
				}
			}
			return true, ""
		})
		s.noLeaderSince(splitAt, "nobody may win an election during the split")
		var preVotes []string
		for _, i := range minority {
			raw := labInspect(t, s.Cluster, i, "ergo:prevote_rounds", "ergo:term")
			preVotes = append(preVotes, fmt.Sprintf("%s: %s pre-vote rounds, term %s", s.Node(i).Name, raw["ergo:prevote_rounds"], raw["ergo:term"]))
		}
		t.Logf("during the split: %s", strings.Join(preVotes, "; "))

		s.HealAll()
		leader, after := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		if leader != a || after != term {
			s.disrupted(settled, fmt.Sprintf("nobody outranked A, so D and E follow it again: want %s at term %d, got %s at term %d",
				s.Node(a).Name, term, s.Node(leader).Name, after))
		}
		s.noLeaderSince(splitAt, "the heal may not change the leader")
		s.expectLeaseKept(-1)

		// The leader on the wrong side.
		x := rest[rand.IntN(len(rest))]
		small := []int{a, x}
		large := s.All(a, x)
		t.Logf("split %v | %v with the leader on the minority side", small, large)
		splitAt = time.Now()
		s.PartitionWith(mode, small, large)
		s.requireStepDown(tm, a, splitAt, "the isolated leader")

		newLeader, newTerm := s.AwaitAgreement(labConverge, large...)
		if newTerm <= term {
			t.Fatalf("the majority elected %s at term %d, not above %d", s.Node(newLeader).Name, newTerm, term)
		}
		// The minority side never wins (read from the event stream: a
		// node's status is a snapshot pushed every few milliseconds). That
		// the cut-off leader did no leader-only work once the majority's
		// leader did is the work log's check, at the end: what IsLeader
		// said, not when HandleBecomeFollower ran.
		stepDown, _ := labFirstEvent(s.Cluster, "follower", s.Node(a).Name, splitAt)
		for _, won := range labEvents(s.Cluster, "leader", "", splitAt) {
			if won.Node == s.Node(a).Name || won.Node == s.Node(x).Name {
				t.Fatalf("the minority side must not lead: %s won term %d", won.Node, won.Term)
			}
			t.Logf("%s won term %d %s after the cut-off leader's HandleBecomeFollower", won.Node, won.Term, labMs(won.Time().Sub(stepDown.Time())))
		}

		if mode == lab.CutAbort {
			s.leaderNotice(splitAt, a, large) // for the log only
		}

		s.HealAll()
		final, finalTerm := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		t.Logf("majority elected %s at term %d; after healing %s leads term %d", s.Node(newLeader).Name, newTerm, s.Node(final).Name, finalTerm)
		if finalTerm < newTerm {
			t.Fatalf("the term went back from %d to %d", newTerm, finalTerm)
		}
		s.requireNoOverlaps()
	})
}

// Pre-vote: two followers isolated (each alone) for ten election timeouts
// rejoin without a single leader change or term increment on the majority.
// (Campaigning with real votes instead, the isolated followers' terms run
// ahead and their return deposes the leader: the simulator's
// TestSimulationPreVotePreventsDisruptiveRejoin shows the scenario is one
// where pre-vote decides.)
func TestLabPreVoteRejoin(t *testing.T) {
	lab.Require(t)
	t.Run("pre-vote", labPreVoteRejoin)
}

func labPreVoteRejoin(t *testing.T) {
	tm := labSteadyTimings // the isolated keep their view of five, and keep campaigning
	labRetry(t, lab.Config{Nodes: 5, Params: tm.params(3)}, tm, func(s *labScenario) {
		all := s.All()
		leader, term := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		settled := time.Now()
		s.expectLeaseKept(leader)
		leaderName := s.Node(leader).Name

		followers := s.All(leader)
		rand.Shuffle(len(followers), func(i, j int) { followers[i], followers[j] = followers[j], followers[i] })
		isolated := followers[:2]
		majority := s.All(isolated...)
		s.PartitionWith(lab.CutAbort, majority, isolated[:1], isolated[1:])

		isolation := 10 * tm.electionMax()
		s.steady(settled, isolation, "the majority's leader and term while two followers are isolated",
			labSteadyLeader(s.Cluster, majority, leader, term))
		isolatedStates := labDescribe(s.Cluster, isolated)
		var isolatedTerms []uint64
		for _, i := range isolated {
			isolatedTerms = append(isolatedTerms, s.Node(i).Status().Term())
		}
		s.HealAll()

		// Pre-vote never let the isolated followers raise their term.
		for k, i := range isolated {
			if isolatedTerms[k] != term {
				t.Fatalf("an isolated follower with pre-vote keeps its term %d: %s", term, s.Node(i).Status())
			}
		}
		// Everyone back under the same leader at the same term, and it
		// stays so.
		got, gotTerm := s.AwaitAgreement(labConverge, all...)
		if got != leader || gotTerm != term {
			s.disrupted(settled, fmt.Sprintf("after the rejoin %s leads term %d; %s led term %d before", s.Node(got).Name, gotTerm, leaderName, term))
		}
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		s.steady(settled, 3*tm.electionMax(), "the leader and term after the rejoin", labSteadyLeader(s.Cluster, all, leader, term))
		s.noLeaderSince(settled, "a leader change")
		if demoted, ok := labFirstEvent(s.Cluster, "follower", leaderName, settled); ok {
			s.disrupted(settled, fmt.Sprintf("the leader was deposed: %s", demoted))
		}
		t.Logf("isolated followers before the heal: %s", isolatedStates)
	})
}

// Check-quorum on responses: when the leader's inbound traffic is lost but
// its outbound is delivered (every link to it half-open, lab.Deafen), it
// cannot tell it is cut off from its sends alone. Counting only what it
// receives, it steps down within ElectionTimeoutMin + HeartbeatInterval and
// the others elect exactly one leader. (The documented reference rule,
// which counts accepted sends, would keep it leading a cluster it cannot
// hear.)
func TestLabAsymmetricPartition(t *testing.T) {
	lab.Require(t)
	t.Run("response quorum", labAsymmetricPartition)
}

func labAsymmetricPartition(t *testing.T) {
	tm := labSteadyTimings
	labRetry(t, lab.Config{Nodes: 5, Params: tm.params(3)}, tm, func(s *labScenario) {
		all := s.All()
		leader, term := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		// The leader must already know (and monitor) every follower: a
		// remote Monitor is a request that waits for a reply, and no reply
		// reaches a leader whose inbound is lost.
		s.Await(labConverge, "the leader knows every follower's PID", func() (bool, string) {
			raw := labInspect(t, s.Cluster, leader, "ergo:peers", "ergo:unreachable")
			return raw["ergo:peers"] == "4" && raw["ergo:unreachable"] == "", fmt.Sprint(raw)
		})
		leaderName := s.Node(leader).Name

		dropAt := time.Now()
		s.Deafen(leader)

		s.requireStepDown(tm, leader, dropAt, "the deaf leader")
		next, nextTerm := s.AwaitAgreement(labConverge, s.All(leader)...)
		if nextTerm <= term {
			t.Fatalf("%s leads term %d, not above %d", s.Node(next).Name, nextTerm, term)
		}
		elected := time.Now()
		s.steady(elected, 3*tm.electionMax(), "exactly one leader among the five", func() (bool, string) {
			for _, i := range all {
				if st := s.Node(i).Status(); st.Err != "" || (st.Role() == "leader") != (i == next) {
					return false, labDescribe(s.Cluster, all)
				}
			}
			return true, ""
		})
		t.Logf("%s (deaf) stepped down; %s leads term %d", leaderName, s.Node(next).Name, nextTerm)
	})
}

// A single follower whose link to the leader flaps (the connection fails,
// every redial is refused, then it is restored) does not disrupt it: its
// early pre-vote is refused by the others, who still hear the leader.
func TestLabFollowerLinkFlapDoesNotDisrupt(t *testing.T) {
	lab.Require(t)
	flaps := 5
	if clEvidenceMode() {
		flaps = 50
	}
	tm := labDefaultTimings
	labRetry(t, lab.Config{Nodes: 5, Params: tm.params(3)}, tm, func(s *labScenario) {
		all := s.All()
		leader, term := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		settled := time.Now()
		follower := s.All(leader)[rand.IntN(4)]
		leaderName, followerName := s.Node(leader).Name, s.Node(follower).Name
		// the leader and every follower but the flapping one keep the term
		undisturbed := func() {
			if ok, description := labSteadyLeader(s.Cluster, s.All(follower), leader, term)(); ok == false {
				s.disrupted(settled, "the leader or the term moved: "+description)
			}
		}

		for flap := range flaps {
			s.CutFast(follower, leader)
			s.Await(labConverge, fmt.Sprintf("flap %d: the follower loses the leader", flap), func() (bool, string) {
				undisturbed()
				st := s.Node(follower).Status()
				return st.Err == "" && st.Leader() == "", st.String()
			})
			// Keep it cut for a while: long enough for the follower's early
			// pre-vote, and up to a regular one.
			time.Sleep(time.Duration(rand.IntN(tm.max)) * time.Millisecond)
			s.Heal(follower, leader)
			s.Await(labConverge, fmt.Sprintf("flap %d: the follower follows the leader again", flap), func() (bool, string) {
				undisturbed()
				f, l := s.Node(follower).Status(), s.Node(leader).Status()
				ok := f.Err == "" && l.Err == "" && f.Leader() == leaderName && f.Term() == term &&
					strings.Contains(l.Inspect["ergo:unreachable"], followerName) == false
				return ok, f.String() + " / " + l.String()
			})
		}
		s.steady(settled, tm.electionMax(), "the leader and term after the flaps", labSteadyLeader(s.Cluster, all, leader, term))
		s.noLeaderSince(settled, "a leader change")
		if demoted, ok := labFirstEvent(s.Cluster, "follower", leaderName, settled); ok {
			s.disrupted(settled, fmt.Sprintf("the leader stepped down: %s", demoted))
		}
		raw := labInspect(t, s.Cluster, follower, "ergo:fast_failover_rounds", "ergo:prevote_rounds")
		t.Logf("%d flaps of %s's link to the leader: leader and term %d unchanged; the follower started %s early pre-votes (%s in all)",
			flaps, followerName, term, raw["ergo:fast_failover_rounds"], raw["ergo:prevote_rounds"])
	})
}

// A member that cannot be reached must not stall the ones that can. One
// follower goes behind a firewall that drops every packet: either its
// connections fail first and every redial then hangs in the TCP handshake
// until the framework's dial timeout ("lost, then black-holed"), or its
// connections simply go silent ("silently black-holed"). The other four
// are a healthy majority and must keep their leader and term: nothing may
// block the actor for a dial (sends to an unconnected node are held while
// the dialer process connects).
func TestLabBlackholedMemberDoesNotStallTheMajority(t *testing.T) {
	lab.Require(t)
	for _, lostFirst := range []bool{true, false} {
		name := "lost, then black-holed"
		if lostFirst == false {
			name = "silently black-holed"
		}
		t.Run(name, func(t *testing.T) { labBlackholedMember(t, lostFirst) })
	}
}

func labBlackholedMember(t *testing.T, lostFirst bool) {
	tm := labDefaultTimings
	labRetry(t, lab.Config{Nodes: 5, Params: tm.params(3)}, tm, func(s *labScenario) {
		all := s.All()
		leader, term := s.AwaitAgreement(labConverge, all...)
		labAwaitViews(s.Cluster, labConverge, 5, all...)
		settled := time.Now()
		lost := s.All(leader)[rand.IntN(4)]
		healthy := s.All(lost)
		t.Logf("leader %s at term %d; black-holing %s", s.Node(leader).Name, term, s.Node(lost).Name)

		for _, i := range healthy {
			if lostFirst {
				s.CutFast(lost, i)
			}
			s.Cut(lost, i) // replaces an abort cut in place
		}
		s.steady(settled, 10*tm.electionMax(), "the healthy majority's leader and term", labSteadyLeader(s.Cluster, healthy, leader, term))
		s.noLeaderSince(settled, "a leader change")
		raw := labInspect(t, s.Cluster, leader, "ergo:unreachable", "ergo:longest_step", "ergo:send_failing_peers")
		t.Logf("after %s: the leader's unreachable=%q longest_step=%s send_failing=%q",
			labMs(10*tm.electionMax()), raw["ergo:unreachable"], raw["ergo:longest_step"], raw["ergo:send_failing_peers"])
	})
}
