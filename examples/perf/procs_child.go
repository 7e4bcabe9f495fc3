package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// Section 6c runs every node as an OS process of its own, the way users
// run them: one heap and one garbage collector per node, nothing between
// the nodes but loopback TCP (no proxies), and a crash that is a SIGKILL.
// The node process is this program again, with procEnv set. It speaks a
// line protocol on its standard streams:
//
//	out  ready                          the node runs and listens
//	in   spawn                          spawn every member
//	out  spawned
//	out  e <election> <kind> <leader> <term> <unix ns>
//	                                    one per leadership callback, as it ran:
//	                                    kind S (started), L (leads), F (follows;
//	                                    leader -1 for none), T (terminated);
//	                                    leader is an index into the node names
//	in   cost                           out cost <procCost as JSON>
//	in   describe <election>            out describe <its member's inspect keys>
//	in   warnings                       out warnings <the last few, on one line>
//	in   profile [window]               out profile (see procProfileEnv)
//	in   tally <since unix ns>          out tally <tallyKeys' sums over the
//	                                    node's elections> <leaderless gap p50,
//	                                    max> <term changes after since: min,
//	                                    p50, max> (microseconds)
//	in   heap                           out heap <live heap bytes at the last GC>
//
// and ends when its standard input closes.

// procProfileEnv names a directory: each node process writes a CPU profile
// there (node-1.pprof, ...) over the idle window, with what it allocated
// (startProfile); from just before the crash instead when
// procProfileCrashEnv is set.
const procProfileEnv = "LEADER_PERF_NODE_PROFILES"

// procProfileCrashEnv, set with procProfileEnv, profiles the crash only:
// for as long as it says (a duration), or to the end.
const procProfileCrashEnv = "LEADER_PERF_NODE_PROFILE_CRASH"

// procProfileStartEnv, set with procProfileEnv, profiles the cold start
// too: each node process writes node-N-start.pprof from its start, for as
// long as it says (a duration).
const procProfileStartEnv = "LEADER_PERF_NODE_PROFILE_START"

// procLogEnv, when set, has every node process write its warnings to its
// standard error as they come.
const procLogEnv = "LEADER_PERF_NODE_LOG"

// procEnv carries the node process's procSpec, as JSON.
const procEnv = "LEADER_PERF_PROC"

// procSpec is what a node process needs to be its node.
type procSpec struct {
	Name      gen.Atom
	Cookie    string
	Port      uint16
	Peers     map[gen.Atom]uint16 // each other node's listening port: no proxies
	Names     []gen.Atom          // every node, in the order the events index them
	Groups    int
	Symmetric bool // Options.AssumeSymmetricConnectionLoss
}

// procCost is one node process's counters at one moment.
type procCost struct {
	CPU      time.Duration // user + system time of the process so far
	RSS      uint64        // resident set, bytes
	MsgsOut  uint64        // messages sent to every peer, the framework's counters
	Warnings int           // warnings and errors logged by the node
	// the node's liveness hub (its inspect keys): leaders' records sent
	// and lead epochs raised so far
	Records, Raises uint64
	AnswerRaises    uint64 // answer epochs raised (pings.go)
	// hub ticks that came more than an interval late so far, and the
	// latest any came
	LateTicks uint64
	LateMax   time.Duration
	// answers to the hub's pings read more than ten liveness intervals
	// after the ping went, so far
	SlowAnswers uint64
}

func init() {
	if spec, ok := os.LookupEnv(procEnv); ok {
		if err := runProc(spec, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintf(os.Stderr, "perf node process: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// startProfile starts a CPU profile written to path; stop ends it. The
// allocations go along: the allocs profile at the start and at the stop,
// in path+".allocs-before" and path+".allocs-after", so that
// `go tool pprof -sample_index=alloc_space -base <before> <after>` shows
// what the window allocated (what makes the collector run).
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := writeAllocs(path + ".allocs-before"); err != nil {
		f.Close()
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		writeAllocs(path + ".allocs-after")
	}, nil
}

// writeAllocs writes the allocs profile so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// markedHeap is the heap the last collection found live
// (/gc/heap/live:bytes), without forcing one. A forced collection of a
// node process's few hundred megabytes runs its timers late for as long
// as it marks (golang/go#45632), and the harness asked all three nodes one
// after the other just before the crash: a 10,000-election run whose idle
// minute had held lost its leaders to that, which no user's cluster does
// to itself.
func markedHeap() uint64 {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// runProc is a node process's whole life.
func runProc(encoded string, in io.Reader, stdout io.Writer) error {
	var spec procSpec
	if err := json.Unmarshal([]byte(encoded), &spec); err != nil {
		return err
	}
	index := make(map[gen.Atom]int, len(spec.Names))
	for i, name := range spec.Names {
		index[name] = i
	}
	if d, err := time.ParseDuration(os.Getenv(procProfileStartEnv)); err == nil && d > 0 {
		if dir := os.Getenv(procProfileEnv); dir != "" {
			stop, err := startProfile(filepath.Join(dir, fmt.Sprintf("node-%d-start.pprof", index[spec.Name]+1)))
			if err != nil {
				return err
			}
			time.AfterFunc(d, stop)
		}
	}
	lines := make(chan string, 1<<16)
	go writeLines(stdout, lines)

	h := &harness{
		spec:  harnessSpec{nodes: len(spec.Names), groups: spec.Groups, deferSpawn: true},
		rec:   newRecorder(false),
		names: spec.Names,
		logs:  &logSink{},
	}
	h.spec.options.AssumeSymmetricConnectionLoss = spec.Symmetric
	if os.Getenv(procLogEnv) != "" {
		h.logs.echo = os.Stderr
	}
	h.groups = groupsOf(spec.Groups)
	h.rec.sink = func(e event) { lines <- eventLine(e, index) }
	node, err := lab.StartDirect(spec.Name, h.nodeOptions(spec.Name), spec.Cookie, spec.Port, spec.Peers, h.setup)
	if err != nil {
		return err
	}
	defer node.StopForce()
	lines <- "ready"
	commands := bufio.NewScanner(in)
	for commands.Scan() {
		command, arg, _ := strings.Cut(commands.Text(), " ")
		switch command {
		case "spawn":
			for _, g := range h.groups {
				if err := h.spawn(node, g); err != nil {
					return fmt.Errorf("spawn %s: %w", g.name, err)
				}
			}
			lines <- "spawned"
		case "cost":
			c := procCost{RSS: residentSet(), Warnings: h.logs.count()}
			c.CPU, _ = cpuTime()
			for _, peer := range node.Network().Nodes() {
				if remote, err := node.Network().Node(peer); err == nil {
					c.MsgsOut += remote.Info().MessagesOut
				}
			}
			if hub, err := node.ProcessPID(hubRegistered); err == nil {
				if info, err := node.Inspect(hub, "ergo:hub_records", "ergo:hub_vouch_raises", "ergo:hub_answer_raises", "ergo:hub_late_ticks", "ergo:hub_late_max", "ergo:hub_slow_answers"); err == nil {
					c.Records, _ = strconv.ParseUint(info["ergo:hub_records"], 10, 64)
					c.Raises, _ = strconv.ParseUint(info["ergo:hub_vouch_raises"], 10, 64)
					c.AnswerRaises, _ = strconv.ParseUint(info["ergo:hub_answer_raises"], 10, 64)
					c.LateTicks, _ = strconv.ParseUint(info["ergo:hub_late_ticks"], 10, 64)
					c.LateMax, _ = time.ParseDuration(info["ergo:hub_late_max"])
					c.SlowAnswers, _ = strconv.ParseUint(info["ergo:hub_slow_answers"], 10, 64)
				}
			}
			encoded, _ := json.Marshal(c)
			lines <- "cost " + string(encoded)
		case "tally":
			// the failover counters summed over the node's elections
			since, _ := strconv.ParseInt(arg, 10, 64)
			lines <- "tally " + tallyMembers(node, h.groups, time.Unix(0, since))
		case "describe":
			// what the member of one election says of itself, for a run
			// that went wrong
			g, _ := strconv.Atoi(arg)
			lines <- "describe " + describeMember(node, h.groups[min(max(g, 0), len(h.groups)-1)])
		case "warnings":
			// the last warnings the node logged, one line
			lines <- "warnings " + strings.ReplaceAll(strings.Join(h.logs.lastLines(), " | "), "\n", " ")
		case "profile":
			// a CPU profile from now to the end of the process, to see
			// where a crash's time goes (procProfileEnv)
			if dir := os.Getenv(procProfileEnv); dir != "" {
				stop, err := startProfile(filepath.Join(dir, fmt.Sprintf("node-%d.pprof", index[spec.Name]+1)))
				if err != nil {
					return err
				}
				if d, err := time.ParseDuration(arg); err == nil && d > 0 {
					// a window only: "profile 300ms"
					time.AfterFunc(d, stop)
				} else {
					defer stop()
				}
			}
			lines <- "profile"
		case "heap":
			lines <- "heap " + strconv.FormatUint(markedHeap(), 10)
		}
	}
	return nil // stdin closed: the harness is gone
}

// tallyKeys are the counters a crash's tally sums (procCluster.tally).
var tallyKeys = []string{"ergo:fast_failover_rounds", "ergo:fast_prevotes_reasked", "ergo:fast_failovers_deferred",
	"ergo:fast_failovers_in_wave", "ergo:prevote_rounds", "ergo:elections_started", "ergo:pledged_elections", "ergo:owed_down_waits"}

// tallyMembers sums tallyKeys over every election of the node, as
// space-separated numbers in tallyKeys' order.
func tallyMembers(node gen.Node, groups []group, since time.Time) string {
	sums := make([]uint64, len(tallyKeys))
	var gaps, changed []time.Duration
	for _, g := range groups {
		pid, err := node.ProcessPID(g.name)
		if err != nil {
			continue
		}
		info, err := node.Inspect(pid, append([]string{"ergo:failover_gap_last", "ergo:term_changed_at"}, tallyKeys...)...)
		if err != nil {
			continue
		}
		for i, k := range tallyKeys {
			v, _ := strconv.ParseUint(info[k], 10, 64)
			sums[i] += v
		}
		if d, err := time.ParseDuration(info["ergo:failover_gap_last"]); err == nil && d > 0 {
			gaps = append(gaps, d)
		}
		if at, err := time.Parse(time.RFC3339Nano, info["ergo:term_changed_at"]); err == nil && since.IsZero() == false && at.After(since) {
			changed = append(changed, at.Sub(since))
		}
	}
	parts := make([]string, len(sums))
	for i, v := range sums {
		parts[i] = strconv.FormatUint(v, 10)
	}
	// the last leaderless gap of each election, as this node saw it (ms):
	// p50 and max
	slices.Sort(gaps)
	p50, top := time.Duration(0), time.Duration(0)
	if len(gaps) > 0 {
		p50, top = gaps[len(gaps)/2], gaps[len(gaps)-1]
	}
	parts = append(parts, strconv.FormatInt(p50.Microseconds(), 10), strconv.FormatInt(top.Microseconds(), 10))
	// when the terms changed after since (ms): min, p50 and max
	slices.Sort(changed)
	low, mid, high := time.Duration(0), time.Duration(0), time.Duration(0)
	if len(changed) > 0 {
		low, mid, high = changed[0], changed[len(changed)/2], changed[len(changed)-1]
	}
	parts = append(parts, strconv.FormatInt(low.Microseconds(), 10), strconv.FormatInt(mid.Microseconds(), 10), strconv.FormatInt(high.Microseconds(), 10))
	return strings.Join(parts, " ")
}

// describeMember is a one-line summary of one member's inspect keys.
func describeMember(node gen.Node, g group) string {
	pid, err := node.ProcessPID(g.name)
	if err != nil {
		return err.Error()
	}
	// with the view as this member sees it and what it dropped: an
	// election left unled with a member missing from one view (a cold
	// start at 10,000 once left one so for three minutes) is told apart
	// from one whose campaigns fail
	keys := []string{"ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_size", "ergo:lease_until", "ergo:elections_started", "ergo:prevote_rounds", "ergo:campaigns_queued", "ergo:leader_changes", "ergo:heartbeat_in_last",
		"ergo:members", "ergo:declared", "ergo:peers_list", "ergo:unreachable", "ergo:unmonitored", "ergo:dropped_by_reason", "ergo:send_failing_peers", "ergo:election_timer_armed", "ergo:timer_wakeups"}
	info, err := node.Inspect(pid, keys...)
	if err != nil {
		return err.Error()
	}
	var parts []string
	for _, k := range keys {
		parts = append(parts, strings.TrimPrefix(k, "ergo:")+"="+info[k])
	}
	// and how the node's liveness hub keeps up
	if hub, err := node.ProcessPID(hubRegistered); err == nil {
		if info, err := node.Inspect(hub, "ergo:hub_late_ticks", "ergo:hub_late_max", "ergo:hub_tick_longest"); err == nil {
			for _, k := range []string{"ergo:hub_late_ticks", "ergo:hub_late_max", "ergo:hub_tick_longest"} {
				parts = append(parts, strings.TrimPrefix(k, "ergo:")+"="+info[k])
			}
		}
	}
	return strings.Join(parts, " ")
}

// writeLines writes the lines in order, flushing whenever none is waiting,
// so that a callback's line leaves at once without a write per line while
// thousands come together.
func writeLines(out io.Writer, lines <-chan string) {
	w := bufio.NewWriterSize(out, 1<<16)
	for line := range lines {
		w.WriteString(line)
		w.WriteByte('\n')
		if len(lines) == 0 {
			w.Flush()
		}
	}
}

// eventLine encodes one callback for the harness (see the protocol above).
func eventLine(e event, index map[gen.Atom]int) string {
	g, _ := strconv.Atoi(strings.TrimPrefix(e.cluster, "perf-"))
	kind := map[eventKind]byte{evStarted: 'S', evLeading: 'L', evFollowing: 'F', evTerminated: 'T'}[e.kind]
	lead := -1
	if e.leader != (gen.PID{}) {
		if i, ok := index[e.leader.Node]; ok {
			lead = i
		}
	}
	return fmt.Sprintf("e %d %c %d %d %d", g, kind, lead, e.term, e.at.UnixNano())
}

// residentSet is the process's resident set size, from /proc where there is
// one; 0 elsewhere.
func residentSet() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(fields[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
