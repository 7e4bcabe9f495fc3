package leader

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// Failover under membership churn on node processes: the simulator's
// scenario (sim_churn_test.go) in real time. Five nodes at the default
// timings, each discovering every 50 ms. Each round the leader's node is
// killed (SIGKILL) or stopped gracefully, in turn; the survivors' discovery
// stops listing its name (Leave), and its namespace comes back as a node
// with a new name (a pod rescheduled under a new name), which the
// survivors' discovery then lists (Join). Node names therefore never
// repeat.
//
// Per round, from the signal or the stop command until another node's
// HandleBecomeLeader: logged as p50/p90/max for crashes and graceful stops
// (the figures of docs/performance.md), not asserted. Asserted: every round
// is led again, all five agree once the new node has joined, and no two
// nodes ever did leader-only work at once (the shared work log). The same
// runs again with Options.AssumeSymmetricConnectionLoss, the opt-in fast
// path, to compare with: a crash here is a killed process, whose
// connections both ends see end, which is the fault that opt-in assumes.
//
//	LEADER_LAB_ROUNDS=50 go test -run TestLabFailoverUnderMembershipChurn -v .
func TestLabFailoverUnderMembershipChurn(t *testing.T) {
	lab.Require(t)
	for _, mode := range []struct {
		name      string
		symmetric bool
	}{{"lease", false}, {"symmetric_loss_opt_in", true}} {
		t.Run(mode.name, func(t *testing.T) {
			const size = 5
			tm := labDefaultTimings
			rounds := labRounds(6)
			params := tm.params(3)
			params[labParamDiscover] = "50"
			if mode.symmetric {
				params[labParamSymmetricLoss] = "1"
			}
			c := lab.Start(t, lab.Config{Nodes: size, Params: params})
			var crashes, stops []time.Duration
			changes := 0
			for round := 1; round <= rounds; round++ {
				r := labChurnRound(t, c, size, round)
				if r.graceful {
					stops = append(stops, r.gap)
				} else {
					crashes = append(crashes, r.gap)
				}
				changes += r.changes
				t.Logf("round %d: %s", round, r)
			}
			t.Logf("membership churn on node processes (%s), %d nodes, default timings (%d/%d/%d ms), discovery every 50 ms, %d rounds: crash (SIGKILL) until another node leads %s; graceful stop until another node leads %s; leader changes while the new node joined: %d",
				mode.name, size, tm.min, tm.max, tm.hb, rounds, clSummary(crashes), clSummary(stops), changes)
			labRequireNoOverlaps(t, c)
		})
	}
}

// labChurn is one round of TestLabFailoverUnderMembershipChurn.
type labChurn struct {
	graceful  bool
	old, next string
	gap       time.Duration // from the fault until next's HandleBecomeLeader
	changes   int           // leaders elected after next, until the new node agreed
	joined    string
}

func (r labChurn) String() string {
	how := "killed"
	if r.graceful {
		how = "stopped"
	}
	return fmt.Sprintf("%s %s; %s leads after %s; %s joined; %d more leader changes", how, r.old, r.next, labMs(r.gap), r.joined, r.changes)
}

// labChurnRound waits for a settled cluster, takes its leader's node away,
// tells the survivors' discovery, brings the namespace back under a new
// name and waits until all five agree again.
func labChurnRound(t *testing.T, c *lab.Cluster, size, round int) labChurn {
	t.Helper()
	c.Await(labConverge, "every node sees the whole view", func() (bool, string) {
		for _, n := range c.Nodes() {
			if n.Status().ViewSize() != size {
				return false, n.Status().String()
			}
		}
		return true, ""
	})
	old, term := c.AwaitAgreement(labConverge, c.All()...)
	r := labChurn{graceful: round%2 == 0, old: c.Node(old).Name}
	// led for half a second: the new node of the last round has been heard
	c.Await(labConverge, r.old+" leads for half a second", func() (bool, string) {
		for _, e := range labEvents(c, "leader", r.old, time.Time{}) {
			if e.Term == term {
				return time.Since(e.Time()) > 500*time.Millisecond, "leading since " + e.Time().Format("15:04:05.000")
			}
		}
		return false, "no leader event"
	})
	survivors := c.All(old)
	var at time.Time
	if r.graceful {
		at = time.Now()
		c.Node(old).Stop()
	} else {
		at = c.Node(old).Kill()
	}
	for _, i := range survivors {
		if _, err := c.Node(i).Do("leave", r.old); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	base, _, _ := strings.Cut(r.old, "@")
	base, _, _ = strings.Cut(base, "r")
	r.joined = fmt.Sprintf("%sr%d@%s", base, round, c.Node(old).IP)
	c.Node(old).RestartAs(r.joined)
	for _, i := range survivors {
		if _, err := c.Node(i).Do("join", r.joined); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	next, _ := c.AwaitAgreement(labConverge, c.All()...)
	r.next = c.Node(next).Name
	var elected []lab.Event
	for _, e := range labEvents(c, "leader", "", at) {
		if e.Node != r.old && e.Term > term {
			elected = append(elected, e)
		}
	}
	if len(elected) == 0 {
		t.Fatalf("round %d: no node but %s led after it went:\n%s", round, r.old, c.Describe())
	}
	r.gap = elected[0].Time().Sub(at)
	r.changes = len(elected) - 1
	return r
}
