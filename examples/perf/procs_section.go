package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"ergo.services/actor/leader"
)

// Section 6c: many elections on three nodes, every node an OS process of
// its own, coalesced liveness at the default timings. Each size is one
// cold start, an idle window, with -procs-stall a stop of every node
// process at once, and a SIGKILL of the node that leads the most
// elections.

const procsTitle = "6c. Many elections, every node its own OS process"

// procsRun is one size's figures.
type procsRun struct {
	clusters int
	allLed   time.Duration
	idle     time.Duration // the window's length
	costs    [2][]procCost // per node, at the window's start and end
	heaps    []uint64      // per node, live heap as the last collection found it
	changes  int           // HandleBecomeLeader calls in the idle window
	stall    *procsStall
	crash    *procsCrash
	err      error
}

// procsStall is every node process stopped at once, then resumed.
type procsStall struct {
	length   time.Duration
	changes  int             // HandleBecomeLeader calls from the stall to all led again
	ledAgain time.Duration   // the resumption -> every election agreed on a leader again
	cpu      []time.Duration // per node, over the same time
	err      error
}

// procsCrash is the SIGKILL of one node process.
type procsCrash struct {
	victim    int
	led       int             // elections it led
	perNode   []int           // elections each node led just before the kill
	took      []time.Duration // per election it led: the kill -> the survivors agree on a new leader
	splits    int             // of those, failovers that took more than one term
	disturbed int             // elections it did not lead whose leader or term changed
	unsettled int             // elections without an agreement just before the kill
	lostAgain int             // elections it led that were led again, then without a leader at the end
	lost      int             // elections without a leader at the end, whoever led them
	exited    time.Duration   // the kill -> the killed process had exited (its sockets closed)
}

// inProcessMany keeps section 6b's idle runs of this invocation, by size,
// to show beside section 6c's.
var inProcessMany = map[int]manyRun{}

func runProcs(p *plan) (section, []summaryRow) {
	lw := watchLoad()
	var runs []procsRun
	for _, clusters := range p.procsSizes {
		if p.interrupted() {
			break
		}
		r := measureProcs(p, clusters)
		if r.err != nil {
			p.progress("procs: %d elections: %v", clusters, r.err)
		}
		runs = append(runs, r)
	}
	body, rows := procsReport(p, runs)
	body += fmt.Sprintf("\n_Measured %s with `%s`; %s._\n", stamp(), p.command, lw)
	return section{id: "procs", title: procsTitle, body: body}, rows
}

// measureProcs cold-starts clusters elections on three node processes,
// measures an idle window and crashes the node that leads the most.
func measureProcs(p *plan, clusters int) (r procsRun) {
	r = procsRun{clusters: clusters, idle: p.procsIdle}
	p.progress("procs: %d elections on %d node processes: cold start", clusters, coalesceNodes)
	c, err := startProcCluster(coalesceNodes, clusters)
	if err != nil {
		r.err = err
		return r
	}
	defer c.close()
	c.progress = p.progress
	start, err := c.spawn()
	if err != nil {
		r.err = err
		return r
	}
	last, unled, err := c.waitAllLed(start, p.ledWithin)
	if err != nil {
		r.err = fmt.Errorf("cold start: %w", err)
		p.progress("procs: %d elections: %d unled; a few of them:\n%s", clusters, unled, c.describeUnled(3))
		return r
	}
	r.allLed = last.Sub(start)
	p.progress("procs: %d elections: all led %.2f s after the start; settling %s, then an idle window of %s", clusters, r.allLed.Seconds(), p.idleSettle, p.procsIdle)
	// The failover counters before the crash, taken now because the
	// tally inspects every election of every node: at 10,000 a burst that
	// saturates the node for a few hundred milliseconds, after which
	// thousands of followers time out on leaders whose vouching pings
	// came late and wait for turns to campaign for seconds. Just before
	// the kill, the crash would be measured on that tail, and on nodes
	// whose elections had all just run a step, which at 3,000 hides a
	// cascade a crash after a long idle has (docs/performance.md,
	// Analysis). The settle outlasts the burst.
	tallied := c.tally(-1, time.Time{})
	p.sleep(p.idleSettle)
	if os.Getenv(procProfileEnv) != "" && os.Getenv(procProfileCrashEnv) == "" {
		for _, n := range c.nodes {
			n.ask("profile "+p.procsIdle.String(), 10*time.Second) // the idle window alone
		}
	}
	leads := c.leadCount()
	if r.costs[0], err = c.cost(); err != nil {
		r.err = err
		return r
	}
	p.sleep(p.procsIdle)
	if r.costs[1], err = c.cost(); err != nil {
		r.err = err
		return r
	}
	r.changes = c.leadCount() - leads
	r.heaps = c.heaps()
	p.progress("procs: %d elections: idle CPU per node %s, %d leader changes", clusters, strings.Join(r.cpuTexts(), ", "), r.changes)
	if p.interrupted() {
		return r
	}
	if p.procsStall > 0 {
		r.stall = stallProcs(p, c)
		if r.stall.err != nil {
			p.progress("procs: %d elections: stall: %v", clusters, r.stall.err)
		} else {
			p.progress("procs: %d elections: every node process stopped for %s: %d leader changes, all led again %.2f s after they resumed, CPU per node %v",
				clusters, p.procsStall, r.stall.changes, r.stall.ledAgain.Seconds(), r.stall.cpu)
		}
		if p.interrupted() {
			return r
		}
		p.sleep(p.idleSettle)
		tallied = c.tally(-1, time.Time{}) // the crash's counters start after the stall
	}
	r.crash = crashProcs(p, c, tallied)
	d := newDist(r.crash.took)
	p.progress("procs: %d elections: leaders per node %v; killed a node leading %d; led again %d, p50 %s ms, p99 %s ms, max %s ms; %d failovers of more than one term, %d others disturbed, %d without a leader at the end",
		clusters, r.crash.perNode, r.crash.led, len(r.crash.took), ms(d.pct(50)), ms(d.pct(99)), ms(d.max()), r.crash.splits, r.crash.disturbed, r.crash.lost)
	c.reportWarnings(p)
	return r
}

// stallProcs stops every node process for p.procsStall at once and waits
// until every election is led again. Such a stall ends every leadership
// whose holding lease runs out during it (docs/safety.md: a leader cannot
// tell a stall of its own from everybody's), so what it measures is the
// price afterwards: how long re-electing every election takes, and what
// it costs each node. The callbacks of the first two seconds after the
// resumption are let land before the agreement is read.
func stallProcs(p *plan, c *procCluster) *procsStall {
	s := &procsStall{length: p.procsStall}
	leads := c.leadCount()
	pre, err := c.cost()
	if err != nil {
		s.err = err
		return s
	}
	for _, n := range c.nodes {
		if pause(n.cmd.Process) == false {
			s.err = fmt.Errorf("node processes cannot be stopped on this system")
			for _, n := range c.nodes {
				resume(n.cmd.Process)
			}
			return s
		}
	}
	time.Sleep(p.procsStall)
	for _, n := range c.nodes {
		resume(n.cmd.Process)
	}
	resumed := time.Now()
	p.sleep(2 * time.Second)
	last, _, err := c.waitAllLed(resumed, p.ledWithin)
	if err != nil {
		s.err = fmt.Errorf("after the stall: %w", err)
		return s
	}
	s.ledAgain = max(last.Sub(resumed), 0)
	s.changes = c.leadCount() - leads
	post, err := c.cost()
	if err != nil {
		s.err = err
		return s
	}
	for i := range pre {
		s.cpu = append(s.cpu, (post[i].CPU - pre[i].CPU).Round(10*time.Millisecond))
	}
	return s
}

// crashProcs kills the node process that leads the most elections and
// waits until the survivors lead every election again. tallied is every
// node's failover counters from before the settle (measureProcs).
func crashProcs(p *plan, c *procCluster, tallied [][]uint64) *procsCrash {
	before := c.agreements()
	count := make([]int, len(c.nodes))
	k := &procsCrash{}
	for _, a := range before {
		if a.leader < 0 {
			k.unsettled++
			continue
		}
		count[a.leader]++
	}
	k.perNode = count
	k.victim = slices.Index(count, slices.Max(count))
	k.led = count[k.victim]
	if os.Getenv(procProfileEnv) != "" && os.Getenv(procProfileCrashEnv) != "" {
		// from just before the kill, so that a window of a few tens of
		// milliseconds is the crash's
		for _, n := range c.nodes {
			n.ask("profile "+os.Getenv(procProfileCrashEnv), 10*time.Second)
		}
	}
	pre, _ := c.cost()
	var victimLed []int
	for g, a := range before {
		if a.leader == k.victim {
			victimLed = append(victimLed, g)
		}
	}
	killed, exited := c.kill(k.victim)
	k.exited = exited
	c.waitReLed(victimLed, p.failoverWithin)
	if post, err := c.cost(); err == nil && pre != nil {
		p.progress("procs: the survivors' CPU from the kill until all were led (and up to 150 ms of polling after): %s over %s",
			survivorsCPU(pre, post, k.victim), time.Since(killed).Round(time.Millisecond))
	}
	// A moment more, so that a disturbance the crash caused late is seen;
	// the agreements are read before the counters, whose tally inspects
	// every election (a burst that can itself make leases lapse at 10,000)
	p.sleep(2 * time.Second)
	after := c.agreements()
	p.progress("procs: the survivors' failover counters over the settle, the idle window and the crash: %s", c.tallyDelta(tallied, c.tally(k.victim, killed)))
	for g, a := range after {
		was := before[g]
		if a.leader < 0 {
			k.lost++
		}
		if was.leader == k.victim {
			first, ok := c.reLed(g)
			if ok {
				k.took = append(k.took, time.Unix(0, first.at).Sub(killed))
				if first.term > was.term+1 {
					k.splits++
				}
				if a.leader < 0 {
					k.lostAgain++
				}
			}
			continue
		}
		switch {
		case a.leader < 0:
		case was.leader >= 0 && (a.leader != was.leader || a.term != was.term):
			k.disturbed++
			if k.disturbed == 1 {
				p.progress("procs: disturbed: election %d was led by node %d at term %d, now by node %d at term %d:\n%s",
					g, was.leader+1, was.term, a.leader+1, a.term, c.describe(g))
			}
		}
	}
	return k
}

// survivorsCPU describes the CPU each node but victim spent between two
// readings: whether a crash wave waits for the CPU or for something else.
func survivorsCPU(pre, post []procCost, victim int) string {
	var parts []string
	for i := range post {
		if i != victim {
			// the epochs raised say how often the survivors' pings stopped
			// counting for the other's leaders until acknowledged again;
			// the slow answers, how long the survivors' hubs took to hear
			// each other while they worked through the wave
			parts = append(parts, fmt.Sprintf("node %d %s (%d lead and %d answer epochs raised, %d pings answered more than 50 ms late)", i+1, (post[i].CPU-pre[i].CPU).Round(100*time.Microsecond),
				post[i].Raises-pre[i].Raises, post[i].AnswerRaises-pre[i].AnswerRaises, post[i].SlowAnswers-pre[i].SlowAnswers))
		}
	}
	return strings.Join(parts, ", ")
}

// cpuShare is node i's CPU in the idle window, as a share of one core.
func (r procsRun) cpuShare(i int) float64 {
	return float64(r.costs[1][i].CPU-r.costs[0][i].CPU) / float64(r.idle)
}

// msgsPerPeerInterval is what node i sent each other node per heartbeat
// interval, on average over the idle window, as a table cell. The
// framework counts per connection, so a connection replaced in the window
// (a reset, a reconnect) starts again from zero and the difference
// undercounts; when it went below the count at the start the cell says so
// instead of printing a wrapped-around number.
func (r procsRun) msgsPerPeerInterval(i int) string {
	before, after := r.costs[0][i].MsgsOut, r.costs[1][i].MsgsOut
	if after < before {
		return "n/a (a connection was replaced)"
	}
	intervals := float64(r.idle) / float64(time.Duration(leader.DefaultHeartbeatInterval)*time.Millisecond)
	return fmt.Sprintf("%.1f", float64(after-before)/float64(coalesceNodes-1)/intervals)
}

// recordsPerInterval is how many leaders' records node i's hub sent per
// heartbeat interval over the idle window (the library sends a record only
// when something changed, and every leader's once a second).
func (r procsRun) recordsPerInterval(i int) float64 {
	intervals := float64(r.idle) / float64(time.Duration(leader.DefaultHeartbeatInterval)*time.Millisecond)
	return float64(r.costs[1][i].Records-r.costs[0][i].Records) / intervals
}

func (r procsRun) cpuTexts() []string {
	var texts []string
	for i := range r.costs[1] {
		texts = append(texts, fmt.Sprintf("%.1f%%", 100*r.cpuShare(i)))
	}
	return texts
}

// maxCPU is the busiest node's idle share.
func (r procsRun) maxCPU() float64 {
	top := 0.0
	for i := range r.costs[1] {
		top = max(top, r.cpuShare(i))
	}
	return top
}

func procsReport(p *plan, runs []procsRun) (string, []summaryRow) {
	var b strings.Builder
	var rows []summaryRow
	fmt.Fprintf(&b, "Three nodes, each an OS process of its own (this program again), talking TCP on loopback with the framework's own handshake and no proxy; every election has a member on each node, coalesced liveness, default timings. Each size is one cold start (every node spawns its members at once), a settle of %s, an idle window of %s, with -procs-stall a stop of every node process at once, and a SIGKILL of the node process that leads the most elections. Each node reports its own CPU (getrusage), resident set, live heap as its last collection found it (none is forced: a forced one runs the node's timers late) and the framework's message counters; the times come from the members' callbacks, stamped in their processes.\n\n", p.idleSettle, p.procsIdle)
	for _, r := range runs {
		fmt.Fprintf(&b, "### %s elections\n\n", thousands(r.clusters))
		if r.err != nil && len(r.costs[1]) == 0 {
			fmt.Fprintf(&b, "Not measured: %v.\n\n", r.err)
			rows = append(rows, summaryRow{procsKey(r.clusters, "all led after a cold start"), "<= 30 s", "not led: " + r.err.Error(), "missed"})
			continue
		}
		fmt.Fprintf(&b, "All led %.2f s after the start; %d leader changes in the idle window.\n\n", r.allLed.Seconds(), r.changes)
		b.WriteString("| node | idle CPU, % of one core | resident set | live heap | live heap per election | messages to each peer per heartbeat interval | leaders' records sent per heartbeat interval | lead epochs raised | warnings logged |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		for i := range r.costs[1] {
			role := ""
			if r.crash != nil && r.crash.victim == i {
				role = " (crashed below)"
			}
			fmt.Fprintf(&b, "| %d%s | %.1f%% | %s | %s | %s | %s | %.1f | %d | %d |\n", i+1, role, 100*r.cpuShare(i), bytesText(float64(r.costs[1][i].RSS)),
				bytesText(float64(r.heaps[i])), bytesText(float64(r.heaps[i])/float64(r.clusters)), r.msgsPerPeerInterval(i),
				r.recordsPerInterval(i), r.costs[1][i].Raises-r.costs[0][i].Raises, r.costs[1][i].Warnings)
		}
		if in, ok := inProcessMany[r.clusters]; ok && in.idleMeasured {
			fmt.Fprintf(&b, "\nSide by side, section 6b's run of the same size in this invocation, all three nodes in one process (with the lab's proxies): %s of one core for the whole process, %.1f messages per node pair and interval, %d leader changes in its %s idle window; here the busiest node took %.1f%%.\n",
				cpuPct(in.idle), in.msgsPerPairInterval(), in.changes, in.idle.elapsed.Round(time.Second), 100*r.maxCPU())
		}
		if st := r.stall; st != nil {
			if st.err != nil {
				fmt.Fprintf(&b, "\nThe stall: every node process stopped for %s at once: %v.\n", st.length, st.err)
			} else {
				fmt.Fprintf(&b, "\nThe stall: every node process stopped for %s at once (SIGSTOP, then SIGCONT), as a host that holds the machine's CPUs back stops them; every leader whose holding lease ran out meanwhile stood down. %d leader changes; every election led again %.2f s after the processes resumed; CPU per node over that time %s.\n",
					st.length, st.changes, st.ledAgain.Seconds(), durationsText(st.cpu))
			}
		}
		if k := r.crash; k != nil {
			d := newDist(k.took)
			fmt.Fprintf(&b, "\nLeaders per node just before the crash: %s.\n", joinInts(r.crash.perNode))
			led := fmt.Sprintf("Every one of them led again by the survivors: p50 %s ms, p99 %s ms, max %s ms after the kill", ms(d.pct(50)), ms(d.pct(99)), ms(d.max()))
			switch {
			case len(k.took) == 0:
				led = fmt.Sprintf("None of them was led again by the survivors within %s", p.failoverWithin)
			case len(k.took) < k.led:
				led = fmt.Sprintf("%d of them led again by the survivors: p50 %s ms, p99 %s ms, max %s ms after the kill (%d not within %s)", len(k.took), ms(d.pct(50)), ms(d.pct(99)), ms(d.max()), k.led-len(k.took), p.failoverWithin)
			}
			if k.lostAgain > 0 {
				led += fmt.Sprintf(", and %d of those were without a leader again at the end (the survivors' views dropped the dead node after GhostTTL, and two members are below MinClusterSize 3)", k.lostAgain)
			}
			fmt.Fprintf(&b, "\nThe crash: node %d, leading %d elections, killed (SIGKILL); the kernel had ended the process (and closed its sockets) %s ms after the kill, before which no survivor can see the crash. %s; %d took more than one term (a split vote); %d elections it did not lead changed leader or term; %d of all elections without a leader at the end of the measurement; %d had no agreement just before it. A failover counts when the survivors first agree on a new leader, whatever happens after.\n\n",
				k.victim+1, k.led, ms(k.exited), led, k.splits, k.disturbed, k.lost, k.unsettled)
		}
		rows = append(rows, procsRows(r)...)
	}
	return b.String(), rows
}

// procsRows are the targets of the many-election issue for one size.
func procsRows(r procsRun) []summaryRow {
	key := func(what string) string {
		return fmt.Sprintf("6c %s elections, node processes: %s", thousands(r.clusters), what)
	}
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	cpuTarget, crashTarget := 0.15, 100*time.Millisecond
	if r.clusters <= 1000 {
		cpuTarget, crashTarget = 0.10, 50*time.Millisecond
	}
	rows := []summaryRow{
		{key("all led after a cold start"), "<= 30 s", fmt.Sprintf("%.1f s", r.allLed.Seconds()), verdict(r.allLed <= 30*time.Second)},
		{key("leader changes in the idle window"), "0", fmt.Sprint(r.changes), verdict(r.changes == 0)},
		{key("idle CPU, busiest node"), fmt.Sprintf("<= %.0f%% of one core", 100*cpuTarget), fmt.Sprintf("%.1f%%", 100*r.maxCPU()), verdict(r.maxCPU() <= cpuTarget)},
	}
	if st := r.stall; st != nil && st.err == nil {
		rows = append(rows, summaryRow{key(fmt.Sprintf("every node process stopped %s, led again", st.length)), "-",
			fmt.Sprintf("%.1f s after they resumed, %d leader changes", st.ledAgain.Seconds(), st.changes), "reported"})
	}
	if k := r.crash; k != nil {
		d := newDist(k.took)
		rows = append(rows,
			summaryRow{key("node crash, led again p99"), fmt.Sprintf("<= %s ms", ms(crashTarget)), crashFigure(k, d), verdict(len(k.took) == k.led && d.pct(99) <= crashTarget)},
			summaryRow{key("node crash, split votes and others disturbed"), "0 and 0", fmt.Sprintf("%d and %d", k.splits, k.disturbed), verdict(k.splits == 0 && k.disturbed == 0)})
	}
	return rows
}

// procsKey is the summary row key of one figure of one size.
func procsKey(clusters int, what string) string {
	return fmt.Sprintf("6c %s elections, node processes: %s", thousands(clusters), what)
}

// thousands writes n with thousands separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// joinInts lists counts separated by commas.
func joinInts(counts []int) string {
	texts := make([]string, len(counts))
	for i, n := range counts {
		texts[i] = strconv.Itoa(n)
	}
	return strings.Join(texts, ", ")
}

// crashFigure is the summary's figure for a crash: the p99, or how many of
// the crashed node's elections were never led again.
func crashFigure(k *procsCrash, d dist) string {
	if len(k.took) < k.led {
		return fmt.Sprintf("%d of %d not led again", k.led-len(k.took), k.led)
	}
	return ms(d.pct(99)) + " ms"
}

// tally asks every node but skip for its failover counters (tallyKeys),
// summed over its elections; a node that does not answer gives nil.
func (c *procCluster) tally(skip int, since time.Time) [][]uint64 {
	out := make([][]uint64, len(c.nodes))
	for i, n := range c.nodes {
		if i == skip {
			continue
		}
		at := int64(0)
		if since.IsZero() == false {
			at = since.UnixNano()
		}
		reply, err := n.ask(fmt.Sprintf("tally %d", at), 30*time.Second)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(reply) {
			v, _ := strconv.ParseUint(f, 10, 64)
			out[i] = append(out[i], v)
		}
	}
	return out
}

// tallyDelta says, per node, how much each counter moved.
func (c *procCluster) tallyDelta(before, after [][]uint64) string {
	var nodes []string
	for i := range after {
		if len(before[i]) < len(tallyKeys) || len(after[i]) < len(tallyKeys)+5 {
			continue
		}
		var parts []string
		for k, key := range tallyKeys {
			parts = append(parts, fmt.Sprintf("%s %d", strings.TrimPrefix(key, "ergo:"), after[i][k]-before[i][k]))
		}
		gap := after[i][len(tallyKeys):]
		parts = append(parts, fmt.Sprintf("leaderless gap p50 %.1f ms, max %.1f ms; terms changed %.1f / %.1f / %.1f ms after the kill", float64(gap[0])/1000, float64(gap[1])/1000, float64(gap[2])/1000, float64(gap[3])/1000, float64(gap[4])/1000))
		nodes = append(nodes, fmt.Sprintf("node %d: %s", i+1, strings.Join(parts, ", ")))
	}
	return strings.Join(nodes, "; ")
}

// durationsText lists durations, comma-separated.
func durationsText(ds []time.Duration) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ", ")
}
