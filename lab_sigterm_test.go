package leader

import (
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// What It Guarantees / a leader that stops, the orchestrator's way: SIGTERM
// to the leader's node process. ergo.StartNode handles the signal with a
// graceful Stop (framework v3.3.0), so the leader hands over on its way
// out: the successor wins by the handover's TimeoutNow, without a pre-vote
// of its own, and the old leader's HandleBecomeFollower ran before the
// successor's HandleBecomeLeader (the shared work log has no overlap).
// The handover gap is logged, not asserted.
//
//	LEADER_LAB_ROUNDS=20 go test -run TestLabSIGTERMHandsOver -v .
func TestLabSIGTERMHandsOver(t *testing.T) {
	lab.Require(t)
	const size = 5
	tm := labDefaultTimings
	rounds := labRounds(3)
	c := lab.Start(t, lab.Config{Nodes: size, Params: tm.params(3)})
	var gaps []time.Duration
	for round := 1; round <= rounds; round++ {
		labAwaitViews(c, labConverge, size, c.All()...)
		old, term := c.AwaitAgreement(labConverge, c.All()...)
		oldName := c.Node(old).Name
		// led for a second: every follower has acknowledged it, and the
		// node restarted in the last round is past its quiet period
		c.Await(labConverge, oldName+" leads for a second", func() (bool, string) {
			for _, e := range labEvents(c, "leader", oldName, time.Time{}) {
				if e.Term == term {
					return time.Since(e.Time()) > time.Second, "leading since " + e.Time().Format("15:04:05.000")
				}
			}
			return false, "no leader event"
		})
		survivors := c.All(old)
		preVotes := map[int]string{}
		for _, i := range survivors {
			preVotes[i] = labInspect(t, c, i, "ergo:prevote_rounds")["ergo:prevote_rounds"]
		}

		at := c.Node(old).Terminate()
		next, nextTerm := c.AwaitAgreement(labConverge, survivors...)
		if nextTerm <= term {
			t.Fatalf("round %d: %s leads term %d after the SIGTERM, not above %d", round, c.Node(next).Name, nextTerm, term)
		}
		if got := labInspect(t, c, next, "ergo:prevote_rounds")["ergo:prevote_rounds"]; got != preVotes[next] {
			t.Fatalf("round %d: the successor %s ran a pre-vote (rounds %s -> %s) before it won term %d: the SIGTERM did not hand over, the cluster failed over\n%s",
				round, c.Node(next).Name, preVotes[next], got, nextTerm, c.Describe())
		}
		var stopped, won time.Time
		for _, e := range c.EventsSince(at) {
			if e.Kind == "follower" && e.Node == oldName && stopped.IsZero() {
				stopped = e.Time()
			}
			if e.Kind == "leader" && e.Node == c.Node(next).Name && e.Term == nextTerm && won.IsZero() {
				won = e.Time()
			}
		}
		if stopped.IsZero() || won.IsZero() {
			t.Fatalf("round %d: no HandleBecomeFollower of %s (%v) or HandleBecomeLeader of %s (%v) after the SIGTERM\n%s",
				round, oldName, stopped, c.Node(next).Name, won, c.Describe())
		}
		if won.Before(stopped) {
			t.Fatalf("round %d: %s led at %s, before %s stopped leading at %s", round, c.Node(next).Name, won.Format("15:04:05.000000"), oldName, stopped.Format("15:04:05.000000"))
		}
		gaps = append(gaps, won.Sub(stopped))
		t.Logf("round %d: SIGTERM to %s (term %d); %s won term %d by the handover, %s after the old leader's HandleBecomeFollower", round, oldName, term, c.Node(next).Name, nextTerm, labMs(won.Sub(stopped)))
		c.Node(old).Restart()
	}
	t.Logf("SIGTERM to the leader's node process, %d nodes, default timings, %d rounds: handover gap %s", size, rounds, clSummary(gaps))
	labRequireNoOverlaps(t, c)
}
