package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"ergo.services/actor/leader"
)

const stabilityNodes = 5

// stabilityCase is one kind of load on one set of timings.
type stabilityCase struct {
	label      string
	inProcess  bool // spinners share this process's Go scheduler with the nodes
	options    leader.Options
	changes    int
	terms      int64 // term increments, summed over the nodes
	preVotes   int64
	warnings   []string // the last few
	warned     int      // how many were logged
	cpuShare   string   // this process's CPU over the window, as a share of one core
	lateness   dist     // how late a 10 ms sleep woke up during the window
	sameLeader bool
	err        error
}

func runStability(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	spinners := runtime.NumCPU()
	cases := []*stabilityCase{
		{label: "busy loops in this process, default timings", inProcess: true},
		{label: "busy loops in another process, default timings"},
		{label: "busy loops in this process, 1000/2000/300 ms", inProcess: true,
			options: leader.Options{ElectionTimeoutMin: 1000, ElectionTimeoutMax: 2000, HeartbeatInterval: 300}},
	}
	for _, c := range cases {
		if p.interrupted() {
			break
		}
		p.progress("stability: %d nodes for %s, %s (%d spinners)", stabilityNodes, p.stableFor, c.label, spinners)
		measureStability(p, c, spinners)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d settled nodes for %s each while %d goroutines spin in a busy loop, one per core (GOMAXPROCS %d). The first row is the measurement asked for: the spinners run in this process, so the nodes' goroutines compete with them inside the Go scheduler, which preempts a spinning goroutine only every 10 ms or so; every hop of a heartbeat (timer, actor, network write, proxy, network read, actor, and back) can wait for such a slot. The second row runs the same spinners in a separate process, which is plain CPU load that the kernel shares out. The third row is the first with the timings the documentation recommends where pauses of a couple of hundred milliseconds occur. Leader changes are `HandleBecomeLeader` calls during the window.\n\n",
		stabilityNodes, p.stableFor, spinners, runtime.GOMAXPROCS(0))
	b.WriteString("| load | leader changes | term increments (sum over nodes) | pre-vote rounds started | warnings logged | same leader at the end | this process's CPU | wake-up lateness p50 / p99 / max ms |\n")
	b.WriteString("|---|---:|---:|---:|---:|---|---:|---:|\n")
	for _, c := range cases {
		if c.err != nil {
			fmt.Fprintf(&b, "| %s | failed: %v ||||||\n", c.label, c.err)
			continue
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %v | %s | %s / %s / %s |\n", c.label, c.changes, c.terms, c.preVotes, c.warned, c.sameLeader, c.cpuShare,
			ms(c.lateness.pct(50)), ms(c.lateness.pct(99)), ms(c.lateness.max()))
	}
	b.WriteString("\nWake-up lateness is how much a 10 ms sleep in this process overran during the window: every hop of a heartbeat is such a wake-up, and so is the leader's own heartbeat tick.\n")
	b.WriteString("\nA pre-vote round is a follower that missed heartbeats for a whole election timeout and asked whether it could win; pre-vote keeps it from deposing a leader the others still hear, so a round alone is a near miss, not a change.\n")
	for _, c := range cases {
		if len(c.warnings) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\nWarnings logged with %s:\n\n", c.label)
		for i, w := range c.warnings {
			if i == 8 {
				fmt.Fprintf(&b, "- ... (%d in all)\n", c.warned)
				break
			}
			fmt.Fprintf(&b, "- `%s`\n", w)
		}
	}
	fmt.Fprintf(&b, "\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)

	first := cases[0]
	row := summaryRow{key: "7. Stability, 5 nodes under CPU load", target: "0 leader changes"}
	switch {
	case first.err != nil:
		row.result, row.verdict = "failed", "no data"
	default:
		row.result = fmt.Sprintf("%d leader changes in %s with %d busy-loop goroutines in the process (%d with the load in another process, %d with 1000/2000/300 ms)",
			first.changes, p.stableFor, spinners, cases[1].changes, cases[2].changes)
		row.verdict = verdict(first.changes == 0 && first.sameLeader, fmt.Sprintf("%d changes", first.changes))
	}
	return section{id: "stability", title: "7. Stability under CPU load", body: b.String()}, []summaryRow{row}
}

func measureStability(p *plan, c *stabilityCase, spinners int) {
	h, err := newHarness(harnessSpec{nodes: stabilityNodes, history: true, options: c.options})
	if err != nil {
		c.err = err
		return
	}
	defer h.close()
	g := h.groups[0]
	before, err := h.waitStable(g, 30*time.Second)
	if err != nil {
		c.err = err
		return
	}
	preVotes, terms := h.sumKey("ergo:prevote_rounds"), h.sumKey("ergo:term")
	warnings := h.logs.count()

	var stop func()
	if c.inProcess {
		stop = startLoad(spinners)
	} else if stop, err = startLoadProcess(spinners); err != nil {
		c.err = err
		return
	}
	start := time.Now()
	probe := startLatencyProbe()
	cpu0, ok0 := cpuTime()
	p.sleep(p.stableFor)
	cpu1, ok1 := cpuTime()
	elapsed := time.Since(start)
	c.lateness = probe.finish()
	stop()

	c.changes = countLeading(h.rec.since(g.id, start))
	after, agreed := h.rec.agreed(g.id, h.names)
	c.sameLeader = agreed && after.leader == before.leader
	c.terms = h.sumKey("ergo:term") - terms
	c.preVotes = h.sumKey("ergo:prevote_rounds") - preVotes
	c.warned = h.logs.count() - warnings
	if lines := h.logs.lastLines(); c.warned > 0 {
		c.warnings = lines[max(len(lines)-c.warned, 0):]
	}
	c.cpuShare = "n/a"
	if ok0 && ok1 {
		c.cpuShare = fmt.Sprintf("%.0f%%", 100*float64(cpu1-cpu0)/float64(elapsed))
	}
}

// sumKey adds up an integer inspect key over every member.
func (h *harness) sumKey(key string) int64 {
	var sum int64
	for _, name := range h.names {
		s, err := h.inspect(h.groups[0], name, key)
		if err != nil {
			continue
		}
		v, _ := strconv.ParseInt(s[key], 10, 64)
		sum += v
	}
	return sum
}
