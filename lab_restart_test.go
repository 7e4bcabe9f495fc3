package leader

import (
	"strings"
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// A restart with a partial view on node processes: the simulator's
// TestSimulationARestartWithAPartialViewWinsNoTermTwice (its vouched half)
// with real nodes. Five nodes at the default timings meet; a partition
// cuts {L, B, E} from {C, D}, and the leader L hands over, so that the
// majority side wins a new term T with E's vote while C and D stay at the
// term before. E's process is killed; E comes back on C and D's side of
// the partition, its discovery listing C alone. C and D knew E's earlier
// process, so E learns it restarted and takes its term floor from a quorum
// of the view of five it is told of, which C and D alone are not: E grants
// nothing, and C and D, two of five, cannot win T a second time. Asserted:
// no two nodes report HandleBecomeLeader for one term, and no two nodes did
// leader-only work at once; after the heal all five agree on one leader.
//
//	LEADER_LAB=require go test -count=20 -run TestLabARestartWithAPartialViewWinsNoTermTwice .
func TestLabARestartWithAPartialViewWinsNoTermTwice(t *testing.T) {
	lab.Require(t)
	const size = 5
	tm := labDefaultTimings
	c := lab.Start(t, lab.Config{Nodes: size, Params: tm.params(3)})
	all := c.All()
	old, oldTerm := c.AwaitAgreement(labConverge, all...)
	labAwaitViews(c, labConverge, size, all...)

	majority := []int{old}
	var minority []int
	for _, i := range c.All(old) {
		if len(majority) < 3 {
			majority = append(majority, i)
		} else {
			minority = append(minority, i)
		}
	}
	c.PartitionWith(lab.CutAbort, majority, minority)
	if _, err := c.Node(old).Do("stepdown"); err != nil {
		t.Fatal(err)
	}
	winner, term := c.AwaitAgreement(labConverge, majority...)
	if term <= oldTerm {
		t.Fatalf("the majority side agrees on term %d, not above %d", term, oldTerm)
	}
	var others []int
	for _, i := range majority {
		if i != winner {
			others = append(others, i)
		}
	}
	e, b := others[0], others[1]
	eName := c.Node(e).Name
	t.Logf("%s won term %d on {%s} cut from {%s}; killing %s",
		c.Node(winner).Name, term, labNames(c, majority), labNames(c, minority), eName)
	c.Node(e).Kill()
	c.Await(labConverge, c.Node(winner).Name+" stands down, reaching two of five", func() (bool, string) {
		st := c.Node(winner).Status()
		return st.IsLeader() == false, st.String()
	})

	// E moves to C and D's side; W and B stay cut from C and D throughout
	c.CutWith(lab.CutAbort, e, winner)
	c.CutWith(lab.CutAbort, e, b)
	for _, i := range minority {
		c.Heal(e, i)
	}
	c.Node(e).RestartWith(map[string]string{labParamJoinOnly: c.Node(minority[0]).Name})
	restartedAt := time.Now()
	// E meets C, learns from it that it restarted, and meets D through the
	// protocol (its own view is those three; theirs, which they tell it, is
	// five); a floor taken from them alone would let C or D win T
	c.Await(labConverge, eName+" meets both members of its side", func() (bool, string) {
		st := c.Node(e).Status()
		return st.ViewSize() == 1+len(minority), st.String()
	})
	// two election timeouts and more in which C and D campaign, less than
	// GhostTTL: the views keep their five members
	for time.Since(restartedAt) < 2*time.Second {
		time.Sleep(50 * time.Millisecond)
	}
	// C and D knew E's earlier process, and one of them must have said so
	// (a Hello reply, or its own Hello when it found E first)
	if lines := c.LogLines(e, restartedAt.Add(-time.Second), "knew an earlier process of this node"); len(lines) == 0 {
		t.Errorf("%s never learned that it restarted", eName)
	}
	winners := map[uint64]map[string]bool{}
	for _, ev := range c.Events() {
		if ev.Kind != "leader" {
			continue
		}
		if winners[ev.Term] == nil {
			winners[ev.Term] = map[string]bool{}
		}
		winners[ev.Term][ev.Node] = true
	}
	for tm, nodes := range winners {
		if len(nodes) > 1 {
			t.Errorf("term %d was won by %d nodes: %v", tm, len(nodes), nodes)
		}
	}
	if nodes := winners[term]; len(nodes) != 1 {
		t.Errorf("term %d: winners %v, want %s alone", term, nodes, c.Node(winner).Name)
	}

	c.HealAll()
	next, nextTerm := c.AwaitAgreement(labConverge, all...)
	t.Logf("after the heal all five follow %s at term %d", c.Node(next).Name, nextTerm)
	labRequireNoOverlaps(t, c)
}

// labNames lists the names of idxs without their hosts.
func labNames(c *lab.Cluster, idxs []int) string {
	names := make([]string, 0, len(idxs))
	for _, i := range idxs {
		name, _, _ := strings.Cut(c.Node(i).Name, "@")
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}
