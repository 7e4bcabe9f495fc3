package main

import (
	"fmt"
	"strings"
	"time"
)

// crashRun is one failover.
type crashRun struct {
	took      time.Duration
	elections uint64 // terms it took: 1 when the first election won
}

// crashResult is the failover of one cluster size.
type crashResult struct {
	nodes    int
	runs     []crashRun
	all      dist
	failures []string
	lo, hi   time.Duration
}

func runCrash(p *plan) (section, []summaryRow, []crashResult) {
	lw := watchLoad()
	var results []crashResult
	for _, n := range p.crashSizes {
		if p.interrupted() {
			break
		}
		p.progress("crash failover, %d nodes, %d runs", n, p.crashRuns)
		results = append(results, measureCrash(p, n, p.crashRuns))
	}
	return crashSection(p, results, lw), crashRows(results), results
}

// measureCrash crashes the leader's node runs times (crashLostOnce: every
// link to it is cut, then it stops, so the survivors see lost connections
// and nothing is handed over, as when a host dies), restarting it after
// each run, and measures until every survivor recognises one new leader,
// confirmed through Inspect.
func measureCrash(p *plan, nodes, runs int) crashResult {
	r := crashResult{nodes: nodes}
	h, err := newHarness(harnessSpec{nodes: nodes})
	if err != nil {
		r.failures = append(r.failures, err.Error())
		return r
	}
	defer func() { h.close() }()
	r.lo, r.hi = h.timings()
	for run := 0; run < runs && p.interrupted() == false; run++ {
		c, err := crashLostOnce(h)
		if err != nil {
			r.failures = append(r.failures, fmt.Sprintf("run %d: %v", run+1, err))
			p.progress("crash %d nodes, run %d: %v", nodes, run+1, err)
			// start over from a fresh cluster rather than measure a broken one
			h.close()
			if h, err = newHarness(harnessSpec{nodes: nodes}); err != nil {
				r.failures = append(r.failures, err.Error())
				break
			}
			continue
		}
		r.runs = append(r.runs, c)
		p.progress("crash %d nodes, run %d/%d: %s ms", nodes, run+1, runs, ms(c.took))
	}
	var all []time.Duration
	for _, c := range r.runs {
		all = append(all, c.took)
	}
	r.all = newDist(all)
	return r
}

// crashSection renders the failover table.
func crashSection(p *plan, results []crashResult, lw loadWatch) section {
	var b strings.Builder
	b.WriteString("The leader's node crashes: every link to it is cut at the proxies and then it is stopped, so the survivors see lost connections and nothing is handed over, as when its host dies. The time is taken from the cut until every survivor's callbacks name one new leader at one term, confirmed through `Inspect`. The node is restarted and the cluster settles (one leader, full views) before the next run. Options are the defaults (150/300/50 ms, GhostTTL 5000); fast failover is on, as it is by default.\n\n")
	b.WriteString("| nodes | runs | p50 ms | p90 ms | p99 ms | max ms | mean ms | p50 / ElectionTimeoutMin | p99 / ElectionTimeoutMin | p50 / ElectionTimeoutMax | p99 / ElectionTimeoutMax | one election | failed runs |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		one := 0
		for _, c := range r.runs {
			if c.elections == 1 {
				one++
			}
		}
		d := r.all
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d/%d | %d |\n",
			r.nodes, d.n(), ms(d.pct(50)), ms(d.pct(90)), ms(d.pct(99)), ms(d.max()), ms(d.mean()),
			ratio(d.pct(50), r.lo), ratio(d.pct(99), r.lo), ratio(d.pct(50), r.hi), ratio(d.pct(99), r.hi),
			one, len(r.runs), len(r.failures))
	}
	b.WriteString("\nPercentiles are nearest-rank, so with 50 runs p99 is the largest sample (the 50th of 50) rather than an extrapolation. \"One election\" counts the failovers that took a single term, that is without a split vote.\n")
	for _, r := range results {
		for _, f := range r.failures {
			fmt.Fprintf(&b, "\n- %d nodes, failed: %s\n", r.nodes, f)
		}
	}
	fmt.Fprintf(&b, "\nThe distributions are plotted in [failover.svg](failover.svg).\n\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "crash", title: "1. Crash failover", body: b.String()}
}

// crashRows are the targets rows: p99 under 50 ms for five nodes; the other
// sizes are reported without a target.
func crashRows(results []crashResult) []summaryRow {
	var rows []summaryRow
	for _, r := range results {
		all := r.all
		row := summaryRow{
			key:    fmt.Sprintf("1. Crash failover, %d nodes", r.nodes),
			target: "-",
			result: fmt.Sprintf("p50 %s ms, p99 %s ms (n=%d)", ms(all.pct(50)), ms(all.pct(99)), all.n()),
		}
		switch {
		case all.n() == 0:
			row.verdict = "no data"
		case r.nodes == 5:
			const target = 50 * time.Millisecond
			row.target = "p99 < 50 ms"
			switch {
			case len(r.failures) > 0:
				// a failover that never completed is beyond any percentile
				row.verdict = fmt.Sprintf("**missed**: %d runs did not converge", len(r.failures))
			default:
				row.verdict = verdict(all.pct(99) < target, ms(all.pct(99)-target)+" ms")
			}
		default:
			row.verdict = "reported"
		}
		rows = append(rows, row)
	}
	return rows
}
