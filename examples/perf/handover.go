package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

const handoverNodes = 5

// handoverResult is one way of handing leadership over.
type handoverResult struct {
	mode      string
	gap       dist // old leader's HandleBecomeFollower -> new leader's HandleBecomeLeader
	agreed    dist // old leader's HandleBecomeFollower -> every remaining node follows the new one
	elections []uint64
	failures  []string
}

func runHandover(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	var results []handoverResult
	for _, mode := range []string{"StepDown", "node Stop"} {
		p.progress("graceful handover via %s, %d runs", mode, p.handoverRuns)
		results = append(results, measureHandover(p, mode, p.handoverRuns, coalesceOptions(true)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d nodes, %s. The gap is the time between the old leader's `HandleBecomeFollower` and the new leader's `HandleBecomeLeader`, both stamped inside the callbacks: how long the cluster has nobody doing the leader's work. \"All follow\" runs from the same start until every remaining node follows the new leader. Via `StepDown` the old leader stays up and follows; via node `Stop` (graceful: the actor terminates with `shutdown` and hands over on the way out) the node is restarted after each run.\n\n", handoverNodes, optionsLabel())
	b.WriteString("| via | runs | gap p50 ms | gap p90 ms | gap p99 ms | gap max ms | all follow p50 ms | all follow p99 ms | one election | failed runs |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	var rows []summaryRow
	for _, r := range results {
		one := 0
		for _, e := range r.elections {
			if e == 1 {
				one++
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %d/%d | %d |\n", r.mode, r.gap.n(),
			ms(r.gap.pct(50)), ms(r.gap.pct(90)), ms(r.gap.pct(99)), ms(r.gap.max()),
			ms(r.agreed.pct(50)), ms(r.agreed.pct(99)), one, len(r.elections), len(r.failures))
		rows = append(rows, summaryRow{
			key:     "2. Handover gap via " + r.mode,
			target:  "-",
			result:  fmt.Sprintf("p50 %s ms, p99 %s ms (n=%d)", ms(r.gap.pct(50)), ms(r.gap.pct(99)), r.gap.n()),
			verdict: "reported",
		})
	}
	for _, r := range results {
		for _, f := range r.failures {
			fmt.Fprintf(&b, "\n- via %s, failed: %s", r.mode, f)
		}
	}
	fmt.Fprintf(&b, "\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "handover", title: "2. Graceful handover", body: b.String()}, rows
}

func measureHandover(p *plan, mode string, runs int, options leader.Options) handoverResult {
	r := handoverResult{mode: mode}
	var gaps, agreed []time.Duration
	spec := harnessSpec{nodes: handoverNodes, history: true, options: options}
	h, err := newHarness(spec)
	if err != nil {
		r.failures = append(r.failures, err.Error())
		return r
	}
	defer func() { h.close() }()
	for run := 0; run < runs && p.interrupted() == false; run++ {
		gap, all, elections, err := handoverOnce(h, mode)
		if err != nil {
			r.failures = append(r.failures, fmt.Sprintf("run %d: %v", run+1, err))
			p.progress("handover via %s, run %d: %v", mode, run+1, err)
			h.close()
			if h, err = newHarness(spec); err != nil {
				r.failures = append(r.failures, err.Error())
				break
			}
			continue
		}
		gaps, agreed = append(gaps, gap), append(agreed, all)
		r.elections = append(r.elections, elections)
		p.progress("handover via %s, run %d/%d: gap %s ms", mode, run+1, runs, ms(gap))
	}
	r.gap, r.agreed = newDist(gaps), newDist(agreed)
	return r
}

// handoverOnce hands leadership over once and reads the gap from the
// callbacks.
func handoverOnce(h *harness, mode string) (time.Duration, time.Duration, uint64, error) {
	g := h.groups[0]
	before, err := h.waitStable(g, 20*time.Second)
	if err != nil {
		return 0, 0, 0, err
	}
	old := before.leader.Node
	remaining := h.names
	start := time.Now()
	switch mode {
	case "StepDown":
		result := make(chan error, 1)
		if err := h.cl.Node(old).Send(before.leader, msgStepDown{result: result}); err != nil {
			return 0, 0, 0, err
		}
		select {
		case err := <-result:
			if err != nil {
				return 0, 0, 0, fmt.Errorf("StepDown: %w", err)
			}
		case <-time.After(5 * time.Second):
			return 0, 0, 0, errors.New("StepDown did not return")
		}
	default:
		h.cl.Stop(old)
		remaining = others(h.names, old)
	}
	after, err := h.waitAgreed(g, remaining, 20*time.Second, func(a agreement) bool { return a.leader.Node != old })
	if err != nil {
		return 0, 0, 0, err
	}
	stepped, led := findHandover(h.rec.since(g.id, start), before.leader, after)
	if stepped.IsZero() || led.IsZero() {
		return 0, 0, 0, errors.New("the callbacks of the handover were not recorded")
	}
	if mode != "StepDown" {
		if _, err := h.cl.Start(old); err != nil {
			return 0, 0, 0, err
		}
	}
	return led.Sub(stepped), after.at.Sub(stepped), after.term - before.term, nil
}

// findHandover returns when the old leader stood down and when the new one
// took over.
func findHandover(events []event, old gen.PID, after agreement) (stepped, led time.Time) {
	for _, e := range events {
		switch {
		case e.kind == evFollowing && e.pid == old && stepped.IsZero():
			stepped = e.at
		case e.kind == evLeading && e.pid == after.leader && e.term == after.term:
			led = e.at
		}
	}
	return stepped, led
}
