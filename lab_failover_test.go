package leader

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// Crashes on the process lab: a crash is a killed OS process (SIGKILL), whose
// kernel closes its sockets, so the peers see their connections lost, as
// when a pod or a machine dies; or a lost connection (CutAbort).

// labFailover is what one crash of the leader's process gave.
type labFailover struct {
	old, next       string
	term, nextTerm  uint64
	elected, agreed time.Duration // from the kill to the new leader's HandleBecomeLeader / to the last survivor's callback naming it
	// died is when the test saw the killed process exit, after the signal:
	// its sockets close as it exits, so no peer can notice the crash before
	died time.Duration
	// per survivor: how long after the kill it reported losing the leader
	// (HandleBecomeFollower with no leader; absent when it went straight
	// to the new leader), how many early pre-votes (fast failover) it
	// started, and the downs its actor dropped meanwhile
	lost    map[string]time.Duration
	fast    map[string]int
	dropped map[string]string
	// per survivor, just before the kill: whether its watcher process
	// monitored the leader's PID, the watcher's state and queues
	watch map[string]string
}

func (f labFailover) String() string {
	var parts []string
	names := make([]string, 0, len(f.fast))
	for name := range f.fast {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		lost := "-"
		if d, ok := f.lost[name]; ok {
			lost = labMs(d)
		}
		part := fmt.Sprintf("%s lost=%s fast=%d", strings.SplitN(name, "@", 2)[0], lost, f.fast[name])
		if f.dropped[name] != "" {
			part += " dropped=" + f.dropped[name]
		}
		if w := f.watch[name]; w != "" {
			part += " watcher=" + w
		}
		parts = append(parts, part)
	}
	return fmt.Sprintf("killed %s (term %d), exited after %s; %s won term %d after %s, all agree after %s [%s]",
		f.old, f.term, labMs(f.died), f.next, f.nextTerm, labMs(f.elected), labMs(f.agreed), strings.Join(parts, "; "))
}

// labKillLeader waits for a settled cluster (every view whole, the leader
// leading for a second), kills the leader's process, waits for the
// survivors to agree on a new leader, takes the figures from the nodes'
// callbacks, and restarts the killed node.
func labKillLeader(t *testing.T, c *lab.Cluster, size int, restartedAt time.Time) labFailover {
	t.Helper()
	// a restarted node first waits out its quiet period (it grants
	// nothing); measure from a settled cluster
	c.Await(labConverge, "every node sees the whole view", func() (bool, string) {
		if time.Since(restartedAt) < time.Second {
			return false, "settling after the restart"
		}
		for _, n := range c.Nodes() {
			if n.Status().ViewSize() != size {
				return false, n.Status().String()
			}
		}
		return true, ""
	})
	old, term := c.AwaitAgreement(labConverge, c.All()...)
	f := labFailover{old: c.Node(old).Name, term: term, lost: map[string]time.Duration{}, fast: map[string]int{}, dropped: map[string]string{}, watch: map[string]string{}}
	// and it has led for a second: every follower has heard it
	c.Await(labConverge, f.old+" leads for a second", func() (bool, string) {
		for _, e := range labEvents(c, "leader", f.old, time.Time{}) {
			if e.Term == term {
				return time.Since(e.Time()) > time.Second, "leading since " + e.Time().Format("15:04:05.000")
			}
		}
		return false, "no leader event"
	})
	if l, tm, ok, description := c.Agreement(c.All()...); ok == false || l != old || tm != term {
		t.Fatalf("the leadership changed while settling: %s", description)
	}
	survivors := c.All(old)
	keys := []string{"ergo:fast_failover_rounds", "ergo:dropped_by_reason"}
	before := map[int]map[string]string{}
	for _, i := range survivors {
		before[i] = labInspect(t, c, i, keys...)
		f.watch[c.Node(i).Name] = labWatcherOf(t, c, i, labInspect(t, c, i, "ergo:leader_pid")["ergo:leader_pid"])
	}

	killedAt := c.Node(old).Kill()
	next, nextTerm := c.AwaitAgreement(labConverge, survivors...)
	f.next, f.nextTerm = c.Node(next).Name, nextTerm
	if nextTerm <= term {
		t.Fatalf("%s leads term %d after the kill, not above %d", f.next, nextTerm, term)
	}

	var wonAt, all time.Time
	learned := map[string]time.Time{}
	for _, e := range c.EventsSince(killedAt) {
		switch {
		case e.Kind == "follower" && e.Leader == "" && e.Term <= term:
			if _, seen := f.lost[e.Node]; seen == false {
				f.lost[e.Node] = e.Time().Sub(killedAt)
			}
		case e.Leader == f.next && e.Term == nextTerm:
			if e.Kind == "leader" && wonAt.IsZero() {
				wonAt = e.Time()
			}
			if _, seen := learned[e.Node]; seen == false {
				learned[e.Node] = e.Time()
			}
		}
	}
	for _, i := range survivors {
		name := c.Node(i).Name
		at, ok := learned[name]
		if ok == false {
			t.Fatalf("no callback reported %s at term %d on %s", f.next, nextTerm, name)
		}
		if at.After(all) {
			all = at
		}
		after := labInspect(t, c, i, keys...)
		b, _ := strconv.Atoi(before[i]["ergo:fast_failover_rounds"])
		a, _ := strconv.Atoi(after["ergo:fast_failover_rounds"])
		f.fast[name] = a - b
		if after["ergo:dropped_by_reason"] != before[i]["ergo:dropped_by_reason"] {
			f.dropped[name] = before[i]["ergo:dropped_by_reason"] + " -> " + after["ergo:dropped_by_reason"]
		}
	}
	f.elected, f.agreed = wonAt.Sub(killedAt), all.Sub(killedAt)
	f.died = c.Node(old).ExitedAt().Sub(killedAt)
	c.Node(old).Restart()
	return f
}

// labRounds is the number of rounds of a repeated scenario: def, or
// LEADER_LAB_ROUNDS.
func labRounds(def int) int {
	if v, err := strconv.Atoi(os.Getenv("LEADER_LAB_ROUNDS")); err == nil && v > 0 {
		return v
	}
	return def
}

// What It Guarantees / a leader that stops, the crash: the leader's process
// is killed (SIGKILL) in a five-node cluster with the library's default
// timings; the survivors see their connections to it lost, and with fast
// failover they pre-vote at once instead of waiting out an election
// timeout. Every round they agree on a new leader at a higher term within
// three maximum election timeouts (plus slack), and no two nodes ever do
// leader-only work at once (the shared work log). The figures are logged,
// not asserted: how many rounds took the fast path, and p50/p90/p99/max.
//
//	LEADER_LAB_ROUNDS=30 go test -run TestLabLeaderKilled -v .
func TestLabLeaderKilled(t *testing.T) {
	lab.Require(t)
	const size = 5
	tm := labDefaultTimings
	rounds := labRounds(5)
	c := lab.Start(t, lab.Config{Nodes: size, Params: tm.params(3)})
	bound := 3*tm.electionMax() + labSlack
	var elected, agreed, died []time.Duration
	fastPath := 0
	var restartedAt time.Time
	for round := 1; round <= rounds; round++ {
		f := labKillLeader(t, c, size, restartedAt)
		restartedAt = time.Now()
		elected = append(elected, f.elected)
		agreed = append(agreed, f.agreed)
		died = append(died, f.died)
		if f.fast[f.next] > 0 {
			fastPath++
		}
		t.Logf("round %d: %s", round, f)
		if f.agreed >= bound {
			t.Errorf("round %d: the survivors agreed on a new leader %s after the kill, later than %s", round, labMs(f.agreed), labMs(bound))
		}
	}
	t.Logf("SIGKILL of the leader, %d nodes, default timings (%d/%d/%d ms), %d rounds, from the signal: new leader elected %s; all survivors agree %s; in %d of %d rounds the winner had pre-voted early on the leader's down (fast failover); the killed process exited %s",
		size, tm.min, tm.max, tm.hb, rounds, clSummary(elected), clSummary(agreed), fastPath, rounds, clSummary(died))

	// a killed leader does no more work: nothing may overlap
	labRequireNoOverlaps(t, c)
}

// labRequireNoOverlaps fails the test if two nodes recorded leader-only
// work at overlapping times in the cluster's work log. Nothing excuses an
// overlap (docs/safety.md assumes only bounded clock-rate drift).
func labRequireNoOverlaps(t *testing.T, c *lab.Cluster) {
	t.Helper()
	overlaps := labOverlaps(t, c)
	for _, o := range overlaps {
		t.Errorf("overlapping leader-only work: %s", o)
	}
	if len(overlaps) > 0 {
		c.Failed(fmt.Sprintf("%d overlaps of leader-only work, the first: %s", len(overlaps), overlaps[0]))
		records, _ := lab.ReadWorkLog(c.WorkLog())
		t.Fatalf("%d overlaps of leader-only work; work log:\n%s", len(overlaps), lab.WorkSummary(records))
	}
}

// labOverlaps reads the cluster's work log and returns the overlaps of
// leader-only work in it.
func labOverlaps(t *testing.T, c *lab.Cluster) []lab.Overlap {
	t.Helper()
	records, err := lab.ReadWorkLog(c.WorkLog())
	if err != nil {
		t.Fatal(err)
	}
	return lab.FindOverlaps(records, labTickMs*time.Millisecond, lab.DefaultMargin)
}

// Membership / GhostTTL: a member whose connection dropped stays counted,
// listed in ergo:unreachable, until GhostTTL, and only then leaves the
// view; the three left still qualify and keep one leader. The connection
// drops either because the links to it fail ("link cut") or because its
// process was killed, whose kernel closes its sockets: a crash is a lost
// connection too, not a termination the framework can report.
func TestLabGhostTTL(t *testing.T) {
	lab.Require(t)
	for _, how := range []string{"link cut", "process killed"} {
		t.Run(how, func(t *testing.T) {
			tm := labFastTimings
			tm.ghost = 1500
			c, leader, _ := labStartSettled(t, 4, tm.params(3))

			gone := c.All(leader)[rand.IntN(3)]
			goneName := c.Node(gone).Name
			survivors := c.All(gone)
			// Discovery stops listing it, otherwise it would Join it back.
			labUnlist(t, c, goneName, survivors...)
			lostAt := time.Now()
			if how == "link cut" {
				c.PartitionWith(lab.CutAbort, survivors, []int{gone})
			} else {
				c.Node(gone).Kill()
			}

			shrunk := make(map[int]time.Duration)
			seenGhost := make(map[int]bool)
			c.Await(tm.ghostTTL()+labConverge, "the lost member leaves every view", func() (bool, string) {
				for _, i := range survivors {
					s := c.Node(i).Status()
					if _, done := shrunk[i]; done || s.Err != "" {
						continue
					}
					switch s.ViewSize() {
					case 4:
						if strings.Contains(s.Inspect["ergo:unreachable"], goneName) {
							seenGhost[i] = true
						}
					case 3:
						shrunk[i] = s.Time().Sub(lostAt)
					default:
						t.Fatalf("unexpected view: %s", s)
					}
				}
				return len(shrunk) == len(survivors), labDescribe(c, survivors)
			})
			for _, i := range survivors {
				t.Logf("%s dropped the lost member %s after the loss", c.Node(i).Name, labMs(shrunk[i]))
				if seenGhost[i] == false {
					t.Errorf("%s must have listed the lost member in ergo:unreachable while counting it", c.Node(i).Name)
				}
				if shrunk[i] < tm.ghostTTL() {
					t.Errorf("%s: the view shrank %s after the loss, before GhostTTL %s", c.Node(i).Name, labMs(shrunk[i]), labMs(tm.ghostTTL()))
				}
				if limit := tm.ghostTTL() + labSlack + time.Second; shrunk[i] >= limit {
					t.Errorf("%s: the view shrank %s after the loss, later than %s", c.Node(i).Name, labMs(shrunk[i]), labMs(limit))
				}
			}
			c.AwaitAgreement(labConverge, survivors...)
		})
	}
}

// GhostTTL, a blip between two followers: the connection between them drops
// and comes back well inside GhostTTL, while their discovery loops no longer
// list each other, so only the elections' own probes can bring the members
// back. Neither may drop the other: a follower has no reason to write to a
// follower, and before ghosts were probed by every role both views fell to
// two, below the floor, and stayed there for good.
func TestLabFollowersThatLostEachOtherForAMomentKeepEachOther(t *testing.T) {
	lab.Require(t)
	tm := labFastTimings
	tm.ghost = 2000
	// a node process that was not scheduled for half an election timeout,
	// or a leader whose quorum's acknowledgements came later than its
	// lease allows (a loaded box: the leader's links were not cut), moves
	// the leader whatever the blip did: such an attempt proves nothing,
	// and labRetry runs it again (it fails when every attempt was so)
	labRetry(t, lab.Config{Nodes: 3, Params: tm.params(3)}, tm, func(s *labScenario) {
		c := s.Cluster
		all := c.All()
		leader, term := c.AwaitAgreement(labConverge, all...)
		labAwaitViews(c, labConverge, 3, all...)
		s.expectLeaseKept(leader)

		f := c.All(leader)
		names := []string{c.Node(f[0]).Name, c.Node(f[1]).Name}
		labUnlist(t, c, names[1], f[0])
		labUnlist(t, c, names[0], f[1])
		cutAt := time.Now()
		c.CutFast(f[0], f[1])
		c.Await(labConverge, "each follower lists the other as unreachable", func() (bool, string) {
			for k, i := range f {
				if st := c.Node(i).Status(); strings.Contains(st.Inspect["ergo:unreachable"], names[1-k]) == false {
					return false, labDescribe(c, f)
				}
			}
			return true, ""
		})
		c.Heal(f[0], f[1])
		healedAt := time.Now()
		// Hold the views until well past the end of GhostTTL counted from
		// the cut: that is when a ghost nobody probed would have been
		// dropped.
		end := cutAt.Add(tm.ghostTTL() + 2*tm.electionMax())
		s.steady(cutAt, time.Until(end), "every view at three", func() (bool, string) {
			for _, i := range all {
				if st := c.Node(i).Status(); st.Err != "" || st.ViewSize() != 3 {
					return false, fmt.Sprintf("%s after the heal (%s after the cut), a view shrank: %s", labMs(time.Since(healedAt)), labMs(time.Since(cutAt)), labDescribe(c, all))
				}
			}
			return true, ""
		})
		c.Await(labConverge, "no member unreachable", func() (bool, string) {
			for _, i := range all {
				if st := c.Node(i).Status(); st.Inspect["ergo:unreachable"] != "" {
					return false, labDescribe(c, all)
				}
			}
			return true, ""
		})
		if l, now, ok, description := c.Agreement(all...); ok == false || l != leader || now != term {
			s.disrupted(cutAt, "a blip between two followers must not move the leader or the term: "+description)
		}
	})
}

// Set MinClusterSize / No leader below the floor, a node that is gone for
// good: three nodes with the default floor of three elect; a follower's
// process is killed, which the survivors see as a lost connection (it stays
// in their views, a ghost, for GhostTTL: a minute here), and the discovery
// that no longer lists it calls Leave. The views shrink to two at once, the
// leader steps down to unclustered, and nobody leads.
func TestLabMinClusterSizeNodeGoneAndLeave(t *testing.T) {
	lab.Require(t)
	tm := labFastTimings
	tm.ghost = 60000 // only Leave may shrink the view here
	c, leader, term := labStartSettled(t, 3, tm.params(0))

	gone := c.All(leader)[rand.IntN(2)]
	goneName := c.Node(gone).Name
	survivors := c.All(gone)
	labUnlist(t, c, goneName, survivors...)
	removedAt := c.Node(gone).Kill()
	// the crash alone keeps the member: two of three are still a quorum
	c.Await(labConverge, "the survivors list the killed node as unreachable", func() (bool, string) {
		for _, i := range survivors {
			if s := c.Node(i).Status(); s.ViewSize() != 3 || strings.Contains(s.Inspect["ergo:unreachable"], goneName) == false {
				return false, labDescribe(c, survivors)
			}
		}
		return true, ""
	})
	if l, tm, ok, description := c.Agreement(survivors...); ok == false || l != leader || tm != term {
		t.Fatalf("a crash of a follower must not change the leader of a quorum of two: %s", description)
	}
	leftAt := time.Now()
	for _, i := range survivors {
		if _, err := c.Node(i).Do("leave", goneName); err != nil {
			t.Fatal(err)
		}
	}
	c.Await(labConverge, "the survivors unclustered with views of two", func() (bool, string) {
		for _, i := range survivors {
			if s := c.Node(i).Status(); s.Err != "" || s.Role() != "unclustered" || s.ViewSize() != 2 {
				return false, labDescribe(c, survivors)
			}
		}
		return true, ""
	})
	took := time.Since(leftAt)
	t.Logf("killed %s %s before the Leave; unclustered %s after it", goneName, labMs(leftAt.Sub(removedAt)), labMs(took))
	if took >= tm.ghostTTL()/2 {
		t.Errorf("Leave shrinks the view at once, not after GhostTTL: took %s", labMs(took))
	}
	if _, ok := labFirstEvent(c, "follower", c.Node(leader).Name, leftAt); ok == false {
		t.Errorf("the leader of term %d must run HandleBecomeFollower when it drops below the floor", term)
	}
	if won := labEvents(c, "leader", "", removedAt); len(won) > 0 {
		t.Errorf("nobody may lead below the floor: %v", won)
	}
}

// labStartSettled starts a lab of n nodes with params and waits until they
// agree on a leader and every view holds all n; it returns the leader's
// index and term.
func labStartSettled(t *testing.T, n int, params map[string]string) (*lab.Cluster, int, uint64) {
	t.Helper()
	c := lab.Start(t, lab.Config{Nodes: n, Params: params})
	leader, term := c.AwaitAgreement(labConverge, c.All()...)
	labAwaitViews(c, labConverge, n, c.All()...)
	return c, leader, term
}

// labUnlist makes the discovery loops of idxs stop listing node.
func labUnlist(t *testing.T, c *lab.Cluster, node string, idxs ...int) {
	t.Helper()
	for _, i := range idxs {
		if _, err := c.Node(i).Do("unlist", node); err != nil {
			t.Fatal(err)
		}
	}
}

// labWatcherOf describes node i's watcher process: whether it monitors
// pid (+ or -), its state and its queues (main/system).
func labWatcherOf(t *testing.T, c *lab.Cluster, i int, pid string) string {
	t.Helper()
	out, err := c.Node(i).Do(labOpHelpers)
	if err != nil {
		return err.Error()
	}
	var helpers []labHelper
	if err := json.Unmarshal([]byte(out), &helpers); err != nil {
		return err.Error()
	}
	for _, h := range helpers {
		if strings.Contains(h.Behavior, "watcher") == false {
			continue
		}
		mark := "-"
		if slices.Contains(h.Monitors, pid) {
			mark = "+"
		}
		return fmt.Sprintf("%s%s,%d/%d", mark, h.State, h.Main, h.System)
	}
	return "none"
}
