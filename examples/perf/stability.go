package main

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const stabilityNodes = 5

func runStability(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	fail := func(err error) (section, []summaryRow) {
		return section{id: "stability", title: "7. Stability under CPU load", body: "failed: " + err.Error()},
			[]summaryRow{{key: "7. Stability under CPU load", target: "0 leader changes", result: "failed", verdict: "no data"}}
	}
	h, err := newHarness(harnessSpec{nodes: stabilityNodes, history: true})
	if err != nil {
		return fail(err)
	}
	defer h.close()
	g := h.groups[0]
	before, err := h.waitStable(g, 30*time.Second)
	if err != nil {
		return fail(err)
	}
	preVotes := h.sumKey("ergo:prevote_rounds")
	warnings := h.logs.count()

	spinners := runtime.NumCPU()
	p.progress("stability: %d nodes for %s with %d busy-loop goroutines", stabilityNodes, p.stableFor, spinners)
	stop := startLoad(spinners)
	start := time.Now()
	cpu0, ok0 := cpuTime()
	time.Sleep(p.stableFor)
	cpu1, ok1 := cpuTime()
	elapsed := time.Since(start)
	stop()

	changes := countLeading(h.rec.since(g.id, start))
	after, agreed := h.rec.agreed(g.id, h.names)
	terms := h.sumKey("ergo:term") - int64(stabilityNodes)*int64(before.term)
	preVotes = h.sumKey("ergo:prevote_rounds") - preVotes
	warnings = h.logs.count() - warnings
	share := "n/a"
	if ok0 && ok1 {
		share = fmt.Sprintf("%.0f%%", 100*float64(cpu1-cpu0)/float64(elapsed))
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%d settled nodes, default options, for %s while %d goroutines in the same process spin in a busy loop (one per core, GOMAXPROCS %d): the nodes' goroutines compete with them for the scheduler, so timers fire and messages are handled late, as on an overloaded host. The process used %s of one core during the window (the spinners take what they get; the rest is the cluster), on top of whatever else the machine ran.\n\n",
		stabilityNodes, p.stableFor, spinners, runtime.GOMAXPROCS(0), share)
	b.WriteString("| window | busy goroutines | leader changes | term increments (sum over nodes) | pre-vote rounds started | warnings logged | same leader at the end |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|\n")
	same := agreed && after.leader == before.leader
	fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %v |\n", p.stableFor, spinners, changes, terms, preVotes, warnings, same)
	b.WriteString("\nA pre-vote round is a follower that missed heartbeats for a whole election timeout and asked whether it could win; with pre-vote it cannot depose a live leader, so a round is a near miss rather than a change.\n")
	fmt.Fprintf(&b, "\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	row := summaryRow{
		key:     "7. Stability, 5 nodes under CPU load",
		target:  "0 leader changes",
		result:  fmt.Sprintf("%d leader changes in %s with %d busy-loop goroutines", changes, p.stableFor, spinners),
		verdict: verdict(changes == 0 && same, fmt.Sprintf("%d changes", changes)),
	}
	return section{id: "stability", title: "7. Stability under CPU load", body: b.String()}, []summaryRow{row}
}

// startLoad spins n goroutines until the returned stop is called.
func startLoad(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spins := 0
			for done.Load() == false {
				spins++
			}
			spinSink.Add(int64(spins))
		}()
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// spinSink keeps the busy loops from being optimised away.
var spinSink atomic.Int64

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
