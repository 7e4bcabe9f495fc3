package main

import (
	"strings"
	"testing"
	"time"
)

// TestFailoverPlot: the plot carries its samples, so -replot draws it again
// without measuring, and it draws section 1b's fast-failover-off rows.
func TestFailoverPlot(t *testing.T) {
	report := "<!-- perf:begin compare -->\n| fast failover | nodes | runs | p50 ms | p90 ms | p99 ms | max ms |\n|---|---:|---:|---:|---:|---:|---:|\n" +
		"| on | 3 | 50 | 5.34 | 6.46 | 7.12 | 7.12 |\n| off | 3 | 50 | 184.6 | 246.4 | 422.0 | 422.0 |\n<!-- perf:end compare -->\n"
	off := offCurves(report)
	if len(off) != 1 || off[0].nodes != 3 || off[0].runs != 50 || off[0].p50 != 184600*time.Microsecond || off[0].max != 422*time.Millisecond {
		t.Fatalf("off curves %+v", off)
	}
	samples := []time.Duration{5 * time.Millisecond, 5400 * time.Microsecond, 7123 * time.Microsecond}
	svg := failoverSVG([]crashResult{{nodes: 3, all: newDist(samples), lo: 150 * time.Millisecond, hi: 300 * time.Millisecond}}, off)
	if err := checkSVG(svg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failovers complete (share of runs)", "3 nodes, fast failover off", `class="off"`} {
		if strings.Contains(string(svg), want) == false {
			t.Errorf("no %q in the plot", want)
		}
	}
	results, err := replotResults(svg)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].nodes != 3 || results[0].all.n() != 3 || results[0].all.max() != 7123*time.Microsecond || results[0].hi != 300*time.Millisecond {
		t.Errorf("replotted %+v", results)
	}
}
