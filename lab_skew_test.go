package leader

import (
	"time"
)

// cutNotice is when the two sides of a cut learnt of it, as the nodes'
// frameworks logged the ends of their connections (millisecond
// resolution). It is for the logs only: no check of the work log depends
// on it.
type cutNotice struct {
	leader  string    // the cut-off leader's node
	noticed time.Time // when it logged the last of its lost connections
	lag     time.Duration
	known   bool // false: a log did not say (a framework that logs no such line, or an end never noticed)
}

// leaderNotice finds when the cut-off leader's framework reported the last
// of its connections to the majority ended, and how much later that was
// than the first majority node's framework reported its connection to the
// leader ended, and logs it.
//
// The lab releases the aborts of every namespace together, but a shell's
// wake-up and the exec of ss still leave them apart, by 5 to 16 ms on an
// idle box and 30 ms and more on a loaded one; a one-sided cut leaves the
// leader's end unreported for good. Safety does not care (docs/safety.md:
// it assumes nothing about when either end notices), so this is a figure
// for the log, not an excuse for an overlap.
func (s *labScenario) leaderNotice(since time.Time, leader int, majority []int) cutNotice {
	s.t.Helper()
	n := cutNotice{leader: string(s.Node(leader).Name)}
	own := s.ConnectionEnds(leader, since)
	var first time.Time
	for _, j := range majority {
		mine, ok1 := own[string(s.Node(j).Name)]
		theirs, ok2 := s.ConnectionEnds(j, since)[n.leader]
		if ok1 == false || ok2 == false {
			s.t.Logf("the logs do not say when the connection between %s and %s ended (%s's end: %v, %s's end: %v)",
				n.leader, s.Node(j).Name, n.leader, ok1, s.Node(j).Name, ok2)
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

// requireNoOverlaps fails the test if two nodes did leader-only work at
// once (the work log), whatever either end of a cut noticed and when: the
// library's safety rests on bounded clock-rate drift alone, so no overlap
// is excused and none makes an attempt inconclusive.
func (s *labScenario) requireNoOverlaps() {
	s.t.Helper()
	labRequireNoOverlaps(s.t, s.Cluster)
}
