// Command perf measures the leader actor on real nodes and writes the
// figures as markdown tables.
//
// Every node runs in this process on the framework's runtime, and every
// pair of nodes talks over real TCP on loopback through a proxy that counts
// the bytes (examples/internal/lab). The one exception is the node that
// section 6b crashes under a thousand elections: it runs in a process of
// its own (this program again), so that its crash is a killed process that
// takes no CPU from the survivors. It measures crash failover, graceful
// handover, cold start, partition heal, steady-state cost, scale,
// coalesced liveness against per-election heartbeats (section 6b, -only
// coalesce) and stability under CPU load, prints the tables, and with -out
// writes the
// report (docs/performance.md) and an SVG of the failover distributions
// next to it:
//
//	go run ./examples/perf -long -out docs/performance.md   # everything, ~25 min
//	go run ./examples/perf -out docs/performance.md         # without the 10-minute run
//	go run ./examples/perf -only crash,heal -out docs/performance.md
//	go run ./examples/perf -only coalesce -out docs/performance.md  # ~5 min
//	go run ./examples/perf -quick                           # a smoke run, seconds
//	go run ./examples/perf -only scale -cpuprofile scale.pprof
//	go run ./examples/perf -replot docs/failover.svg -out docs/performance.md
//
// The failover plot (section 1's distributions, and dashed beside them the
// fast-failover-off percentiles of section 1b) keeps its samples, so
// -replot draws it again, measuring nothing.
//
// A run with -only replaces its own sections of an existing report and
// keeps the rest, including the sections written elsewhere (the
// fast-failover comparison, a test of package leader) or by hand. Ctrl-C
// ends a run early and writes nothing. The same measurements exist as
// benchmarks: go test -run '^$' -bench . -benchtime 20x ./examples/perf.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/lab"
)

func main() {
	lab.Main("perf", runCommand)
}

// runCommand is the whole program: the measurements go to out (and to -out),
// the progress to stderr. Ctrl-C cancels ctx, which ends the run early and
// writes nothing, so a report never mixes finished and unfinished sections.
func runCommand(ctx context.Context, args []string, out io.Writer) error {
	p, err := parsePlan(args, os.Stderr)
	if err != nil {
		return err
	}
	p.ctx = ctx
	r, err := run(p)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(out, r.markdown)
	return err
}

// report is what a run produced.
type report struct {
	sections []section
	rows     []summaryRow
	markdown string // the whole report with -out, the measured sections otherwise
	svg      []byte // nil when the crash failover was not measured
	svgPath  string
}

// run measures what the plan asks for and writes the report.
func run(p *plan) (*report, error) {
	r := &report{}
	if p.cpuprof != "" {
		f, err := os.Create(p.cpuprof)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}
	// Section 1b (fast failover off) is written by a test of package
	// leader into the report; the plot draws it beside section 1.
	var existing []byte
	if p.out != "" {
		existing, _ = os.ReadFile(p.out) // none yet: a plot without it
	}
	if p.replot != "" {
		return replot(p, offCurves(string(existing)))
	}
	r.sections = append(r.sections, headerSection(p))
	if p.wants("crash") {
		s, rows, results := runCrash(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
		r.svg = failoverSVG(results, offCurves(string(existing)))
	}
	if p.wants("handover") {
		s, rows := runHandover(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("coldstart") {
		s, rows := runColdStart(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("heal") {
		s, rows := runHeal(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("steady") {
		s, rows := runSteady(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.long && p.wants("long") {
		s, rows := runLong(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("scale") {
		s, rows := runScale(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("coalesce") {
		s, rows := runCoalesce(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("procs") {
		s, rows := runProcs(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}
	if p.wants("stability") {
		s, rows := runStability(p)
		r.sections, r.rows = append(r.sections, s), append(r.rows, rows...)
	}

	if p.interrupted() {
		return nil, fmt.Errorf("interrupted, nothing written: %w", p.ctx.Err())
	}
	if p.out == "" {
		r.markdown = renderDoc("", r.sections, r.rows)
	} else {
		if err := os.MkdirAll(filepath.Dir(p.out), 0o755); err != nil {
			return nil, err
		}
		markdown, err := writeReport(p.out, r.sections, r.rows)
		if err != nil {
			return nil, err
		}
		r.markdown = markdown
	}
	r.svgPath = p.svg
	if r.svgPath == "" && p.out != "" {
		r.svgPath = filepath.Join(filepath.Dir(p.out), "failover.svg")
	}
	if r.svg != nil && r.svgPath != "" {
		if err := os.WriteFile(r.svgPath, r.svg, 0o644); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// replot draws the failover plot again from the samples of an earlier one:
// a change of the figure, or a new section 1b, needs no new measurement.
func replot(p *plan, off []offCurve) (*report, error) {
	old, err := os.ReadFile(p.replot)
	if err != nil {
		return nil, err
	}
	results, err := replotResults(old)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.replot, err)
	}
	r := &report{svg: failoverSVG(results, off), svgPath: p.svg}
	if r.svgPath == "" {
		r.svgPath = p.replot
	}
	r.markdown = fmt.Sprintf("failover plot of %d cluster sizes (%d fast-failover-off curves from section 1b) written to %s\n", len(results), len(off), r.svgPath)
	return r, os.WriteFile(r.svgPath, r.svg, 0o644)
}

// headerSection is the title and the introduction: what is measured, how,
// and on what. It says nothing of the machine's other users or its
// directories; each section records the load around it instead.
func headerSection(p *plan) section {
	mode := "all sections"
	switch {
	case p.quick:
		mode = "QUICK MODE: tiny run counts, the figures mean nothing"
	case len(p.only) > 0:
		mode = "only some sections; the others are kept from an earlier run"
	}
	lo, hi := timingsOf(leader.Options{})
	body := fmt.Sprintf(`# Leader actor: performance

How fast the leader actor fails over, hands over and starts, what a settled cluster costs, and how it behaves at scale, with coalesced liveness and without it, and under CPU load. Every figure comes from real nodes talking real TCP over loopback, with the default timings (ElectionTimeoutMin %s ms, ElectionTimeoutMax %s ms, HeartbeatInterval %d ms) unless a row says otherwise, on one machine (%s). Section 0 runs every node as its own OS process, on the real framework and on the framework stand-in that ships with this repository. Sections 1 to 7 run every node in one process on the stand-in's runtime (goroutine-per-process actors), and every pair of nodes talks through a proxy of its own, which counts the bytes. Nothing is simulated except in section 8.

Timing figures are upper bounds of what the library needs on an idle machine; each section records the 1-minute load average around it. Counts (messages, bytes, allocations, leader changes) do not depend on the load.

_This header was last written by `+"`%s`"+` (%s), %s, %s._`, ms(lo), ms(hi), leader.DefaultHeartbeatInterval, machine(), p.command, mode, stamp(), revision())
	return section{id: "header", body: body}
}
