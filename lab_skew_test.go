package leader

import (
	"fmt"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// cutNotice is when the two sides of a cut learnt of it, as the nodes'
// frameworks logged the ends of their connections (millisecond
// resolution).
type cutNotice struct {
	leader  string    // the cut-off leader's node
	noticed time.Time // when it logged the last of its lost connections
	lag     time.Duration
	known   bool // false: a log did not say (a framework that logs no such line)
}

// leaderNotice finds when the cut-off leader's framework reported the last
// of its connections to the majority ended, and how much later that was
// than the first majority node's framework reported its connection to the
// leader ended.
//
// That lag is what assumption A2 (docs/safety.md) bounds by
// ElectionTimeoutMin/30: the majority may fail over a step after it
// noticed, and the leader's IsLeader turns false when it notices. The lab
// releases the aborts of every namespace together, but a shell's wake-up
// and the exec of ss still leave them apart, by 5 to 16 ms on an idle box
// and 30 ms and more on a loaded one.
func (s *labScenario) leaderNotice(since time.Time, leader int, majority []int) cutNotice {
	s.t.Helper()
	n := cutNotice{leader: string(s.Node(leader).Name)}
	own := s.ConnectionEnds(leader, since)
	var first time.Time
	for _, j := range majority {
		mine, ok1 := own[string(s.Node(j).Name)]
		theirs, ok2 := s.ConnectionEnds(j, since)[n.leader]
		if ok1 == false || ok2 == false {
			s.t.Logf("the logs do not say when the connection between %s and %s ended", n.leader, s.Node(j).Name)
			return n
		}
		if mine.After(n.noticed) {
			n.noticed = mine
		}
		if first.IsZero() || theirs.Before(first) {
			first = theirs
		}
	}
	n.lag, n.known = n.noticed.Sub(first), true
	s.t.Logf("the cut-off leader noticed the last of its lost connections %s after the majority's first notice", labMs(n.lag))
	return n
}

// requireNoOverlapsAfter fails the test if two nodes did leader-only work at
// once (the work log). An overlap of the cut-off leader that began before
// its framework reported the cut (plus a unit of work, the margin and the
// log's millisecond) does not fail it when that report came later than
// assumption A2 allows after the majority's (leaderNotice): until then
// IsLeader rightly holds, and the harness, not the library, let the
// majority fail over first. If every overlap is of that kind the attempt is
// inconclusive; any other overlap fails.
func (s *labScenario) requireNoOverlapsAfter(tm labTimings, cut cutNotice) {
	s.t.Helper()
	records, err := lab.ReadWorkLog(s.WorkLog())
	if err != nil {
		s.t.Fatal(err)
	}
	tick := labTickMs * time.Millisecond
	overlaps := lab.FindOverlaps(records, tick, lab.DefaultMargin)
	if len(overlaps) == 0 {
		return
	}
	a2 := tm.electionMin()/30 + time.Millisecond
	excused := 0
	for _, o := range overlaps {
		involved := o.A == cut.leader || o.B == cut.leader
		if cut.known && cut.lag > a2 && involved && o.Start.After(cut.noticed.Add(tick+lab.DefaultMargin+time.Millisecond)) == false {
			excused++
			continue
		}
		s.t.Errorf("overlapping leader-only work: %s", o)
	}
	if excused == len(overlaps) {
		panic(labInconclusive{why: fmt.Sprintf("the cut-off leader's framework reported the cut %s after the majority's, beyond assumption A2 (%s), and every overlap of leader-only work began before that report (first: %s)",
			labMs(cut.lag), labMs(a2), overlaps[0])})
	}
}
