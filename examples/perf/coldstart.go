package main

import (
	"fmt"
	"strings"
	"time"
)

type coldResult struct {
	nodes     int
	agreed    dist // all members spawned at once -> one leader every node follows
	spawning  dist // how long spawning took (Init dials the peers)
	elections []uint64
	failures  []string
	hi        time.Duration
}

func runColdStart(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	var results []coldResult
	for _, n := range p.coldSizes {
		p.progress("cold start, %d nodes, %d runs", n, p.coldRuns)
		results = append(results, measureColdStart(p, n, p.coldRuns))
	}
	var b strings.Builder
	b.WriteString("Each run starts fresh nodes (no connections between them yet), then spawns the members on every node at once, one goroutine per node. The time runs from the spawn until every node's callbacks name one leader at one term, confirmed through `Inspect`; it includes dialling and the handshakes of the first connections, which the members' `Hello`s open. Default options; the first election cannot start before a randomised ElectionTimeout in [150, 300] ms has passed, so that is the floor.\n\n")
	b.WriteString("| nodes | runs | p50 ms | p90 ms | p99 ms | max ms | p99 / ElectionTimeoutMax | spawning p50 ms | one election | failed runs |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var rows []summaryRow
	for _, r := range results {
		one := 0
		for _, e := range r.elections {
			if e == 1 {
				one++
			}
		}
		d := r.agreed
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s | %s | %d/%d | %d |\n", r.nodes, d.n(),
			ms(d.pct(50)), ms(d.pct(90)), ms(d.pct(99)), ms(d.max()), ratio(d.pct(99), r.hi), ms(r.spawning.pct(50)),
			one, len(r.elections), len(r.failures))
		target := 2 * r.hi
		row := summaryRow{
			key:    fmt.Sprintf("3. Cold start, %d nodes", r.nodes),
			target: "p99 <= 2 x ElectionTimeoutMax (" + ms(target) + " ms)",
			result: fmt.Sprintf("p50 %s ms, p99 %s ms (n=%d)", ms(d.pct(50)), ms(d.pct(99)), d.n()),
		}
		if d.n() == 0 {
			row.verdict = "no data"
		} else {
			row.verdict = verdict(d.pct(99) <= target, ms(d.pct(99)-target)+" ms")
		}
		rows = append(rows, row)
	}
	for _, r := range results {
		for _, f := range r.failures {
			fmt.Fprintf(&b, "\n- %d nodes, failed: %s", r.nodes, f)
		}
	}
	b.WriteString("\n\"One election\" counts the runs whose leader won term 1, the first election anyone held.\n")
	fmt.Fprintf(&b, "\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "coldstart", title: "3. Cold start", body: b.String()}, rows
}

func measureColdStart(p *plan, nodes, runs int) coldResult {
	r := coldResult{nodes: nodes}
	var agreed, spawning []time.Duration
	for run := 0; run < runs && p.interrupted() == false; run++ {
		took, spawn, term, err := coldStartOnce(nodes, &r)
		if err != nil {
			r.failures = append(r.failures, fmt.Sprintf("run %d: %v", run+1, err))
			p.progress("cold start %d nodes, run %d: %v", nodes, run+1, err)
			continue
		}
		agreed, spawning = append(agreed, took), append(spawning, spawn)
		r.elections = append(r.elections, term)
		p.progress("cold start %d nodes, run %d/%d: %s ms (term %d)", nodes, run+1, runs, ms(took), term)
	}
	r.agreed, r.spawning = newDist(agreed), newDist(spawning)
	return r
}

func coldStartOnce(nodes int, r *coldResult) (time.Duration, time.Duration, uint64, error) {
	h, err := newHarness(harnessSpec{nodes: nodes, deferSpawn: true})
	if err != nil {
		return 0, 0, 0, err
	}
	defer h.close()
	_, r.hi = h.timings()
	start, spawning, err := h.spawnAll()
	if err != nil {
		return 0, 0, 0, err
	}
	a, err := h.waitAgreed(h.groups[0], h.names, 20*time.Second, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	return a.at.Sub(start), spawning, a.term, nil
}
