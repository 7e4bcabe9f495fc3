package main

import (
	"fmt"
	"strings"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

// healResult is the heal of one kind of partition, over several runs.
type healResult struct {
	hold        time.Duration
	converge    dist // heal -> every node follows one leader at one term
	changes     int  // leaderships won from the heal to a settle window after convergence
	during      int  // leaderships won while the partition held
	termsMoved  int  // runs whose term changed across the partition and heal
	leaderMoved int  // runs that ended with another leader than A
	failures    []string
}

// healSettle is how long a run keeps watching after convergence, so that a
// disruption arriving late is still counted against the heal.
const healSettle = time.Second

func runHeal(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	var results []healResult
	_, hi := timingsOf(leader.Options{})
	hold := p.healHold
	if hold == 0 {
		hold = 10 * hi
	}
	p.progress("partition heal, hold %s, %d runs", hold, p.healRuns)
	results = append(results, measureHeal(p, hold, p.healRuns))
	if p.healLongRuns > 0 {
		// beyond GhostTTL the two sides drop each other from their views, and
		// only the discovery loop's Join brings them back
		long := 5*time.Second + time.Second
		p.progress("partition heal, hold %s (beyond GhostTTL), %d runs", long, p.healLongRuns)
		results = append(results, measureHeal(p, long, p.healLongRuns))
	}

	var b strings.Builder
	b.WriteString("Five nodes A..E with A the leader (A is whichever node leads; the others are lettered after it). The links between {A,B,C} and {D,E} are cut at the proxies, so both sides see real connection losses; the cut holds, then heals. Convergence runs from the heal until every node's callbacks name one leader at one term (confirmed through `Inspect`), and leader changes are the `HandleBecomeLeader` calls from the heal until " + healSettle.String() + " after convergence. Default options (GhostTTL 5000 ms); the members re-run `Join` over their peers every second, the documented discovery loop, which is what re-admits peers dropped after GhostTTL.\n\n")
	b.WriteString("| hold | runs | converge p50 ms | converge max ms | leader changes after heal | leader changes during the cut | runs whose term moved | runs where the leader moved | failed runs |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var rows []summaryRow
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %d | %d | %d | %d | %d |\n", r.hold, r.converge.n(),
			ms(r.converge.pct(50)), ms(r.converge.max()), r.changes, r.during, r.termsMoved, r.leaderMoved, len(r.failures))
		row := summaryRow{
			key:    "4. Heal after a " + r.hold.String() + " partition",
			target: "0 leader changes",
			result: fmt.Sprintf("%d leader changes over %d runs; converged in p50 %s ms, max %s ms", r.changes, r.converge.n(), ms(r.converge.pct(50)), ms(r.converge.max())),
		}
		switch {
		case r.converge.n() == 0:
			row.verdict = "no data"
		default:
			row.verdict = verdict(r.changes == 0, fmt.Sprintf("%d changes", r.changes))
		}
		rows = append(rows, row)
	}
	for _, r := range results {
		for _, f := range r.failures {
			fmt.Fprintf(&b, "\n- hold %s, failed: %s", r.hold, f)
		}
	}
	fmt.Fprintf(&b, "\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "heal", title: "4. Partition heal", body: b.String()}, rows
}

func measureHeal(p *plan, hold time.Duration, runs int) healResult {
	r := healResult{hold: hold}
	var samples []time.Duration
	spec := harnessSpec{nodes: 5, history: true, rediscover: time.Second}
	h, err := newHarness(spec)
	if err != nil {
		r.failures = append(r.failures, err.Error())
		return r
	}
	defer func() { h.close() }()
	for run := 0; run < runs && p.interrupted() == false; run++ {
		s, err := healOnce(p, h, hold)
		if err != nil {
			r.failures = append(r.failures, fmt.Sprintf("run %d: %v", run+1, err))
			p.progress("heal, run %d: %v", run+1, err)
			h.close()
			if h, err = newHarness(spec); err != nil {
				r.failures = append(r.failures, err.Error())
				break
			}
			continue
		}
		samples = append(samples, s.converge)
		r.changes += s.changes
		r.during += s.during
		if s.termMoved {
			r.termsMoved++
		}
		if s.leaderMoved {
			r.leaderMoved++
		}
		p.progress("heal (hold %s), run %d/%d: converged in %s ms, %d leader changes", hold, run+1, runs, ms(s.converge), s.changes)
	}
	r.converge = newDist(samples)
	return r
}

type healSample struct {
	converge               time.Duration
	changes, during        int
	termMoved, leaderMoved bool
}

func healOnce(p *plan, h *harness, hold time.Duration) (healSample, error) {
	var s healSample
	g := h.groups[0]
	before, err := h.waitStable(g, 30*time.Second)
	if err != nil {
		return s, err
	}
	a := before.leader.Node
	rest := others(h.names, a)
	cut := time.Now()
	h.cl.Partition([]gen.Atom{a, rest[0], rest[1]}, rest[2:])
	p.sleep(hold)
	s.during = countLeading(h.rec.since(g.id, cut))

	healed := time.Now()
	h.cl.Heal()
	after, err := h.waitAgreed(g, h.names, 30*time.Second, nil)
	if err != nil {
		return s, err
	}
	time.Sleep(healSettle)
	s.converge = max(after.at.Sub(healed), 0)
	s.changes = countLeading(h.rec.since(g.id, healed))
	final, ok := h.rec.agreed(g.id, h.names)
	if ok == false || final.leader != after.leader {
		// it unravelled within the settle window: that is a change too
		s.changes = max(s.changes, 1)
	}
	s.termMoved = after.term != before.term
	s.leaderMoved = after.leader != before.leader
	return s, nil
}

func countLeading(events []event) int {
	n := 0
	for _, e := range events {
		if e.kind == evLeading {
			n++
		}
	}
	return n
}
