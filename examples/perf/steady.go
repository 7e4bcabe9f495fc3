package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// steadyResult is the cost of one settled cluster.
type steadyResult struct {
	nodes       int
	whole       cost
	first, last cost // the two halves of the window
	baseline    cost // the same nodes before any member was spawned
	changes     int  // leaderships won during the window: should be none
	err         error
}

func runSteady(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	var results []steadyResult
	for _, n := range p.steadySizes {
		if p.interrupted() {
			break
		}
		p.progress("steady state, %d nodes, %s window", n, p.steadyWindow)
		results = append(results, measureSteady(p, n))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A settled cluster (one leader, full views, no discovery loop) with default options, measured over %s after %s of warm-up. A heartbeat round is one heartbeat from the leader to each follower and the follower's ack: 2(N-1) messages. Rounds are counted from the leader's node's messages, messages from the framework's per-connection counters (`RemoteNodeInfo.MessagesOut`), wire bytes at the proxies (TCP payload in both directions; every pair of nodes talks through exactly one proxy). CPU is the whole process's user+system time (`getrusage`): all N nodes, their network stacks and the proxies' copying, so it is the cost of running the cluster on one machine rather than of one node; allocations are `runtime.MemStats` counts, again for the whole process. \"Idle nodes alone\" is the same process with the same nodes before any member was spawned, for comparison.\n\n", p.steadyWindow, p.steadyWarmup)
	b.WriteString("| nodes | rounds/s | msgs/s | msgs/round | wire bytes/s | bytes/msg | CPU, % of one core | idle nodes alone | CPU/round | allocs/round | alloc bytes/round | allocs/round, 1st half -> 2nd half | leader changes |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var rows []summaryRow
	for _, r := range results {
		if r.err != nil {
			fmt.Fprintf(&b, "| %d | failed: %v ||||||||||||\n", r.nodes, r.err)
			continue
		}
		c := r.whole
		fmt.Fprintf(&b, "| %d | %.1f | %.0f | %.1f | %s | %.0f | %s | %s | %s | %.0f | %s | %.0f -> %.0f | %d |\n", r.nodes,
			c.perSecond(c.rounds), c.perSecond(c.msgs), c.perRound(c.msgs), bytesText(c.perSecond(c.wire)), c.wire/max(c.msgs, 1),
			cpuPct(c), cpuPct(r.baseline), cpuRound(c), c.perRound(c.mallocs), bytesText(c.perRound(c.allocBytes)),
			r.first.perRound(r.first.mallocs), r.last.perRound(r.last.mallocs), r.changes)
		rows = append(rows, summaryRow{
			key:     fmt.Sprintf("5. Steady state, %d nodes", r.nodes),
			target:  "-",
			result:  fmt.Sprintf("%.0f msgs/s, %s/s on the wire, %s of one core, %.0f allocs/round", c.perSecond(c.msgs), bytesText(c.perSecond(c.wire)), cpuPct(c), c.perRound(c.mallocs)),
			verdict: "reported",
		})
	}
	var fw []string
	for _, r := range results {
		if r.err == nil && r.whole.wire > 0 {
			fw = append(fw, fmt.Sprintf("%d nodes %.3f", r.nodes, r.whole.fwBytes/r.whole.wire))
		}
	}
	fmt.Fprintf(&b, "\nThe framework's own byte counters (`RemoteNodeInfo.BytesOut`) over the proxies' count: %s; the proxies see exactly the frames the nodes write.\n", strings.Join(fw, ", "))
	b.WriteString("\nThe two halves of the window are the short check that allocations per round do not grow; section 5b compares minute 1 with minute 10 of a ten-minute run (`-long`).\n")
	fmt.Fprintf(&b, "\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "steady", title: "5. Steady-state cost", body: b.String()}, rows
}

func cpuPct(c cost) string {
	if c.cpuOK == false {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*c.cpuShare())
}

func cpuRound(c cost) string {
	if c.cpuOK == false {
		return "n/a"
	}
	return fmt.Sprintf("%.0f µs", float64(c.cpuPerRound())/float64(time.Microsecond))
}

func measureSteady(p *plan, nodes int) steadyResult {
	r := steadyResult{nodes: nodes}
	h, err := newHarness(harnessSpec{nodes: nodes, history: true, deferSpawn: true})
	if err != nil {
		r.err = err
		return r
	}
	defer h.close()
	// what the nodes cost on their own, idle and not yet connected
	p.sleep(p.steadyWarmup)
	b0 := h.snap("")
	p.sleep(p.steadyWindow / 4)
	r.baseline = costBetween(nodes, b0, h.snap(""))
	if _, _, err := h.spawnAll(); err != nil {
		r.err = err
		return r
	}
	g := h.groups[0]
	a, err := h.waitStable(g, 60*time.Second)
	if err != nil {
		r.err = err
		return r
	}
	p.sleep(p.steadyWarmup)
	runtime.GC()
	start := time.Now()
	s0 := h.snap(a.leader.Node)
	p.sleep(p.steadyWindow / 2)
	s1 := h.snap(a.leader.Node)
	p.sleep(p.steadyWindow / 2)
	s2 := h.snap(a.leader.Node)
	r.whole, r.first, r.last = costBetween(nodes, s0, s2), costBetween(nodes, s0, s1), costBetween(nodes, s1, s2)
	r.changes = countLeading(h.rec.since(g.id, start))
	return r
}

// longNodes is the size of the cluster of the long run.
const longNodes = 5

// runLong runs one settled cluster for p.longFor, in ten slices, and
// compares the allocations per round of the first slice with the last.
func runLong(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	p.progress("steady state, long run of %s", p.longFor)
	body, row := measureLong(p, longNodes)
	body += fmt.Sprintf("\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "long", title: "5b. Steady state over ten minutes", body: body}, []summaryRow{row}
}

func measureLong(p *plan, nodes int) (string, summaryRow) {
	fail := func(err error) (string, summaryRow) {
		return "Long run failed: " + err.Error() + "\n", summaryRow{key: "5b. Allocations per round, minute 1 vs minute 10", target: "flat", result: "failed", verdict: "no data"}
	}
	h, err := newHarness(harnessSpec{nodes: nodes, history: true})
	if err != nil {
		return fail(err)
	}
	defer h.close()
	g := h.groups[0]
	a, err := h.waitStable(g, 60*time.Second)
	if err != nil {
		return fail(err)
	}
	const slices = 10
	slice := p.longFor / slices
	unit := "slice"
	if slice == time.Minute {
		unit = "minute"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d settled nodes, default options, for %s; the counters are read every %s, after a forced GC so that the live heap is comparable. Flat means no trend: the last %s within 10%% of the first, and a live heap that does not grow; single %ss wobble by several per cent with whatever else the process and the machine do.\n\n", nodes, p.longFor, slice, unit, unit)
	fmt.Fprintf(&b, "| %s | rounds | allocs/round | alloc bytes/round | CPU/round | live heap after GC |\n|---:|---:|---:|---:|---:|---:|\n", unit)
	start := time.Now()
	runtime.GC()
	prev := h.snap(a.leader.Node)
	var costs []cost
	var heaps []uint64
	for i := 1; i <= slices; i++ {
		if p.sleep(slice); p.interrupted() {
			return fail(p.ctx.Err())
		}
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		next := h.snap(a.leader.Node)
		c := costBetween(nodes, prev, next)
		costs = append(costs, c)
		heaps = append(heaps, m.HeapAlloc)
		prev = next
		fmt.Fprintf(&b, "| %d | %.0f | %.1f | %s | %s | %s |\n", i, c.rounds, c.perRound(c.mallocs), bytesText(c.perRound(c.allocBytes)), cpuRound(c), bytesText(float64(m.HeapAlloc)))
		p.progress("long run: %s %d/%d, %.1f allocs/round", unit, i, slices, c.perRound(c.mallocs))
	}
	first, last := costs[0].perRound(costs[0].mallocs), costs[len(costs)-1].perRound(costs[len(costs)-1].mallocs)
	lo, hi := first, first
	for _, c := range costs {
		lo, hi = min(lo, c.perRound(c.mallocs)), max(hi, c.perRound(c.mallocs))
	}
	drift := (last - first) / max(first, 1)
	heapGrowth := float64(heaps[len(heaps)-1])/float64(max(heaps[0], 1)) - 1
	changes := countLeading(h.rec.since(g.id, start))
	fmt.Fprintf(&b, "\nAllocations per round, %s 1 -> %s %d: %.1f -> %.1f (%+.1f%%; every %s between %.1f and %.1f); live heap %s -> %s; leader changes during the run: %d.\n",
		unit, unit, slices, first, last, 100*drift, unit, lo, hi, bytesText(float64(heaps[0])), bytesText(float64(heaps[len(heaps)-1])), changes)
	flat := drift < 0.10 && drift > -0.10 && heapGrowth < 0.10
	return b.String(), summaryRow{
		key:     "5b. Allocations per round, " + unit + " 1 vs " + unit + " 10",
		target:  "flat",
		result:  fmt.Sprintf("%.1f -> %.1f (%+.1f%%) over %s, live heap %+.1f%%", first, last, 100*drift, p.longFor, 100*heapGrowth),
		verdict: verdict(flat, fmt.Sprintf("%+.1f%%", 100*drift)),
	}
}
