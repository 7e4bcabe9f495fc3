package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// plan is what one invocation measures and how much of it.
type plan struct {
	ctx     context.Context // cancelled by Ctrl-C: stop early, write nothing
	out     string          // markdown file to write; "" prints only
	svg     string          // failover plot; "" next to out
	replot  string          // an earlier failover plot to draw again, measuring nothing
	quick   bool
	long    bool
	only    map[string]bool // section ids; empty = all
	command string          // the command line, quoted in the report
	cpuprof string          // write a CPU profile of the whole run here

	crashSizes   []int
	crashRuns    int
	handoverRuns int
	coldSizes    []int
	coldRuns     int
	healRuns     int
	healHold     time.Duration // 0: ten times ElectionTimeoutMax
	healLongRuns int           // runs holding the partition beyond GhostTTL
	steadySizes  []int
	steadyWarmup time.Duration
	steadyWindow time.Duration
	longFor      time.Duration
	bigCluster   int
	manyClusters int
	manyRelaxed  bool // also run the many clusters with relaxed timings
	idleWindow   time.Duration
	stableFor    time.Duration

	// section coalesce
	coalesceKills  int           // crashes per mode under manyClusters elections
	hugeClusters   int           // the coalesced-only run
	coalesceSettle time.Duration // after all led, before a crash
	// after all led, before the idle window: the cold start's last work
	// (members' monitors, the first shared state) takes a few seconds more
	idleSettle time.Duration
	// the idle window of section 6b: the mean of a process whose CPU comes
	// in bursts (system calls, the scheduler's polling) wants a longer one
	idleWindowMany time.Duration
	ledWithin      time.Duration // how long a cold start of many elections may take
	failoverWithin time.Duration // how long after a crash every election must be led again

	// section procs
	procsSizes []int         // elections per run, every node its own process
	procsIdle  time.Duration // the idle window
	procsStall time.Duration // every node process stopped this long after the idle window; 0: not

	log   io.Writer
	logMu sync.Mutex
}

// sectionIDs are the measured sections in report order.
var sectionIDs = []string{"crash", "handover", "coldstart", "heal", "steady", "long", "scale", "coalesce", "procs", "stability"}

func parsePlan(args []string, log io.Writer) (*plan, error) {
	p := &plan{ctx: context.Background(), log: log}
	fs := flag.NewFlagSet("perf", flag.ContinueOnError)
	fs.SetOutput(log)
	fs.StringVar(&p.out, "out", "", "write the report to this markdown file (sections not measured are kept from it)")
	fs.StringVar(&p.svg, "svg", "", "write the failover plot here (default: failover.svg next to -out)")
	fs.StringVar(&p.replot, "replot", "", "measure nothing: draw the failover plot again from the samples in this SVG (one this program wrote) and section 1b of -out, to -svg (default: the same file); -out is only read")
	fs.BoolVar(&p.quick, "quick", false, "tiny run counts and short windows: a smoke run, not figures")
	fs.BoolVar(&p.long, "long", false, "also run the steady state for -long-for and compare allocations per round minute by minute (section long)")
	fs.DurationVar(&p.longFor, "long-for", 10*time.Minute, "length of the -long steady-state run")
	fs.StringVar(&p.cpuprof, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof), to see where the time goes")
	only := fs.String("only", "", "comma-separated sections to measure: "+strings.Join(sectionIDs, ","))
	runs := fs.Int("runs", 0, "runs per failover/handover/cold-start measurement (default 50, quick 2)")
	kills := fs.Int("kills", 0, "section coalesce: node crashes per mode under 1,000 elections (default 4)")
	huge := fs.Int("huge", -1, "section coalesce: elections of the coalesced-only large run (default 10,000; 0 skips it)")
	procs := fs.String("procs", "", "section procs: comma-separated election counts, every node its own OS process (default 1000,10000)")
	fs.DurationVar(&p.procsIdle, "procs-idle", time.Minute, "section procs: the idle window")
	fs.DurationVar(&p.procsStall, "procs-stall", 0, "section procs: after the idle window, stop every node process for this long at once (SIGSTOP), as a host that holds the machine's CPUs back does, and measure until every election is led again; 0 skips it")
	coalescedOnly := fs.Bool("coalesced-only", false, "section coalesce: measure the coalesced mode only, not DisableCoalescing")
	fs.BoolVar(&symmetricLoss, "symmetric", false, "sections handover, coalesce and procs: every election with Options.AssumeSymmetricConnectionLoss, the opt-in fast path, to compare with the default")
	fs.Usage = func() {
		fmt.Fprintf(log, "usage: go run ./examples/perf [flags]\n\nMeasures the leader actor on real nodes on loopback and prints markdown tables.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	p.only = make(map[string]bool)
	for _, id := range strings.Split(*only, ",") {
		if id = strings.TrimSpace(id); id == "" {
			continue
		}
		known := false
		for _, s := range sectionIDs {
			known = known || s == id
		}
		if known == false {
			return nil, fmt.Errorf("unknown section %q in -only (known: %s)", id, strings.Join(sectionIDs, ","))
		}
		p.only[id] = true
	}
	p.command = strings.TrimSpace("go run ./examples/perf " + strings.Join(displayArgs(args), " "))

	// the full run: the counts the issue asks for
	p.crashSizes, p.crashRuns = []int{3, 5, 9}, 50
	p.handoverRuns = 50
	p.coldSizes, p.coldRuns = []int{3, 5, 9}, 50
	p.healRuns, p.healLongRuns = 10, 5
	p.steadySizes = []int{3, 5, 9, 25}
	p.steadyWarmup, p.steadyWindow = 3*time.Second, 20*time.Second
	p.bigCluster, p.manyClusters, p.manyRelaxed = 51, 1000, true
	p.idleWindow = 10 * time.Second
	p.stableFor = 60 * time.Second
	p.coalesceKills, p.hugeClusters = 4, 10000
	p.coalesceSettle, p.ledWithin, p.failoverWithin = 3*time.Second, 3*time.Minute, 30*time.Second
	p.idleSettle = 10 * time.Second
	p.idleWindowMany = 20 * time.Second
	p.procsSizes = []int{1000, 10000}
	if p.quick {
		p.crashRuns, p.handoverRuns, p.coldRuns = 2, 2, 2
		p.coldSizes = []int{3, 5}
		p.healRuns, p.healLongRuns, p.healHold = 1, 0, time.Second
		p.steadySizes = []int{3, 5}
		p.steadyWarmup, p.steadyWindow = 200*time.Millisecond, time.Second
		p.bigCluster, p.manyClusters, p.manyRelaxed = 7, 20, false
		p.idleWindow = 500 * time.Millisecond
		p.stableFor = time.Second
		p.longFor = min(p.longFor, 2*time.Second)
		p.coalesceKills, p.hugeClusters = 1, 60
		p.coalesceSettle, p.failoverWithin = 300*time.Millisecond, 10*time.Second
		p.idleSettle = 300 * time.Millisecond
		p.idleWindowMany = p.idleWindow
		p.procsSizes, p.procsIdle = []int{30}, time.Second
	}
	if *procs != "" {
		p.procsSizes = nil
		for _, v := range strings.Split(*procs, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 1 {
				return nil, fmt.Errorf("-procs: %q is not an election count", v)
			}
			p.procsSizes = append(p.procsSizes, n)
		}
	}
	if *runs > 0 {
		p.crashRuns, p.handoverRuns, p.coldRuns = *runs, *runs, *runs
	}
	if *kills > 0 {
		p.coalesceKills = *kills
	}
	if *huge >= 0 {
		p.hugeClusters = *huge
	}
	if *coalescedOnly {
		coalesceModes = []bool{true}
	}
	return p, nil
}

// wants reports whether the section is to be measured.
func (p *plan) wants(id string) bool {
	return len(p.only) == 0 || p.only[id]
}

// interrupted reports whether the run was cancelled.
func (p *plan) interrupted() bool { return p.ctx.Err() != nil }

// sleep waits d, or less if the run is cancelled meanwhile.
func (p *plan) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.ctx.Done():
	case <-t.C:
	}
}

// progress tells the person waiting what is going on; the report itself
// goes elsewhere.
func (p *plan) progress(format string, args ...any) {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	fmt.Fprintf(p.log, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// displayArgs is the command line as the report quotes it: an absolute
// path is shown relative to the working directory, or by its base name
// outside it, so that the report names no directory of the machine it ran
// on.
func displayArgs(args []string) []string {
	wd, _ := os.Getwd()
	show := func(v string) string {
		if filepath.IsAbs(v) == false {
			return v
		}
		if wd != "" {
			if rel, err := filepath.Rel(wd, v); err == nil && rel != ".." && strings.HasPrefix(rel, ".."+string(filepath.Separator)) == false {
				return filepath.ToSlash(rel)
			}
		}
		return filepath.Base(v)
	}
	out := make([]string, len(args))
	for i, a := range args {
		if name, value, ok := strings.Cut(a, "="); ok && strings.HasPrefix(name, "-") {
			out[i] = name + "=" + show(value)
			continue
		}
		out[i] = show(a)
	}
	return out
}

func stamp() string {
	return time.Now().UTC().Format("2006-01-02 15:04 UTC")
}
