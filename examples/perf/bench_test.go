package main

import (
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

// Benchmarks of the same measurements as the command, for `go test -bench`.
// Each iteration is one real event on real nodes, so iterations are slow
// (tens to hundreds of milliseconds): pick a count, for example
//
//	go test -run '^$' -bench . -benchtime 20x ./examples/perf
//
// The timer covers only the event itself (a failover, a handover, a cold
// start); settling and restarting between iterations are excluded.
// Percentiles are reported as extra metrics next to the mean (ns/op).

func BenchmarkCrashFailover(b *testing.B) {
	for _, nodes := range []int{3, 5, 9} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			h := mustHarness(b, harnessSpec{nodes: nodes})
			g := h.groups[0]
			var samples []time.Duration
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				before, err := h.waitStable(g, 20*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				old := before.leader.Node
				survivors := others(h.names, old)
				start := time.Now()
				b.StartTimer()
				// a crash: every link lost, then the node gone (crashLostOnce)
				h.cl.Partition([]gen.Atom{old}, survivors)
				h.cl.Kill(old)
				after, err := h.waitAgreed(g, survivors, 20*time.Second, func(a agreement) bool { return a.leader.Node != old })
				b.StopTimer()
				h.cl.Heal()
				if err != nil {
					b.Fatal(err)
				}
				samples = append(samples, after.at.Sub(start))
				if _, err := h.cl.Start(old); err != nil {
					b.Fatal(err)
				}
			}
			reportDist(b, newDist(samples))
		})
	}
}

func BenchmarkHandoverStepDown(b *testing.B) {
	h := mustHarness(b, harnessSpec{nodes: handoverNodes, history: true})
	var gaps []time.Duration
	b.StopTimer()
	for i := 0; i < b.N; i++ {
		// handoverOnce settles first and measures from the callbacks; the
		// timer brackets the whole of it, so ns/op is an upper bound and
		// the gap metrics are the figure
		gap, _, _, err := handoverOnce(h, "StepDown")
		if err != nil {
			b.Fatal(err)
		}
		gaps = append(gaps, gap)
	}
	reportDist(b, newDist(gaps))
}

func BenchmarkColdStart(b *testing.B) {
	for _, nodes := range []int{3, 5} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			var samples []time.Duration
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				h := mustHarness(b, harnessSpec{nodes: nodes, deferSpawn: true})
				b.StartTimer()
				start, _, err := h.spawnAll()
				if err != nil {
					b.Fatal(err)
				}
				a, err := h.waitAgreed(h.groups[0], h.names, 20*time.Second, nil)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				samples = append(samples, a.at.Sub(start))
				h.close()
			}
			reportDist(b, newDist(samples))
		})
	}
}

// BenchmarkSteadyStateRound runs a settled cluster for b.N heartbeat
// intervals: ns/op is the interval, and the metrics are the cost of one
// round (counted from the leader's heartbeats) for the whole cluster. Use
// -benchtime 100x or more: a round costs a few hundred allocations, and the
// counters' own reads are amortised over the window.
func BenchmarkSteadyStateRound(b *testing.B) {
	for _, nodes := range []int{3, 5, 9} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			h := mustHarness(b, harnessSpec{nodes: nodes})
			a, err := h.waitStable(h.groups[0], 30*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			s0 := h.snap(a.leader.Node)
			b.ResetTimer()
			// b.N heartbeat intervals, without looking in between: reading
			// the counters allocates, and that would be counted per round
			time.Sleep(time.Duration(b.N) * h.heartbeat())
			b.StopTimer()
			c := costBetween(nodes, s0, h.snap(a.leader.Node))
			if c.rounds == 0 {
				b.Fatal("no heartbeat round in the window")
			}
			b.ReportMetric(c.perRound(c.mallocs), "allocs/round")
			b.ReportMetric(c.perRound(c.allocBytes), "B-alloc/round")
			b.ReportMetric(c.perRound(c.wire), "B-wire/round")
			b.ReportMetric(c.perRound(c.msgs), "msgs/round")
			if c.cpuOK {
				b.ReportMetric(float64(c.cpuPerRound())/float64(time.Microsecond), "cpu-µs/round")
			}
		})
	}
}

func mustHarness(b *testing.B, spec harnessSpec) *harness {
	b.Helper()
	h, err := newHarness(spec)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.close)
	return h
}

func reportDist(b *testing.B, d dist) {
	b.ReportMetric(float64(d.pct(50))/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(d.pct(99))/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(float64(d.max())/float64(time.Millisecond), "max-ms")
}

// benchClusters is the number of elections of the many-cluster benchmarks
// (section 6b's figure).
const benchClusters = 1000

func benchMode(coalesced bool) string {
	if coalesced {
		return "coalesced"
	}
	return "uncoalesced"
}

// manyHarness cold-starts benchClusters elections on three nodes and waits
// until all are led and a moment more.
func manyHarness(b *testing.B, coalesced bool, external int) *harness {
	b.Helper()
	h := mustHarness(b, harnessSpec{nodes: coalesceNodes, groups: benchClusters, options: coalesceOptions(coalesced), deferSpawn: true, external: external})
	if _, _, err := h.spawnAll(); err != nil {
		b.Fatal(err)
	}
	if _, err := h.waitAllLed(2 * time.Minute); err != nil {
		b.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	return h
}

// BenchmarkManyClustersIdle keeps benchClusters settled elections on three
// nodes for b.N heartbeat intervals, coalesced and not: ns/op is the
// interval, the metrics are the idle cost (-benchtime 100x or more).
func BenchmarkManyClustersIdle(b *testing.B) {
	for _, coalesced := range coalesceModes {
		b.Run(benchMode(coalesced), func(b *testing.B) {
			h := manyHarness(b, coalesced, 0)
			runtime.GC()
			s0 := h.snap("")
			b.ResetTimer()
			time.Sleep(time.Duration(b.N) * h.heartbeat())
			b.StopTimer()
			r := manyRun{nodes: coalesceNodes, interval: h.heartbeat(), idle: costBetween(coalesceNodes, s0, h.snap(""))}
			if r.idle.cpuOK {
				b.ReportMetric(100*r.idle.cpuShare(), "cpu-%-of-core")
			}
			b.ReportMetric(r.msgsPerPairInterval(), "msgs/pair/interval")
		})
	}
}

// BenchmarkManyClustersCrash crashes one of three nodes under benchClusters
// elections once per iteration (a fresh cold start each time, untimed; the
// node runs in a process of its own, which is killed) and
// reports the time until each election the node led is led again, pooled
// over the iterations.
func BenchmarkManyClustersCrash(b *testing.B) {
	p, err := parsePlan(nil, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	for _, coalesced := range coalesceModes {
		b.Run(benchMode(coalesced), func(b *testing.B) {
			var all []time.Duration
			b.StopTimer()
			for i := 0; i < b.N; i++ {
				h := manyHarness(b, coalesced, i%coalesceNodes+1) // the victim in a process of its own
				b.StartTimer()
				k := h.crashMany(p, h.names[i%coalesceNodes], 30*time.Second)
				b.StopTimer()
				if len(k.lost) > 0 {
					b.Fatalf("%d elections not led again: %s", len(k.lost), k.lost[0])
				}
				all = append(all, k.took...)
				h.close()
			}
			reportDist(b, newDist(all))
		})
	}
}
