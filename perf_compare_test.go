package leader

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"ergo.services/actor/leader/internal/lab"
)

// The fast-failover comparison of docs/performance.md. It reads the lab's
// event stream, so it lives here rather than in examples/perf, and it is
// a measurement, not a test:
// it runs only when asked to and asserts nothing about speed. It runs on
// the process lab (a crash is a killed OS process; root needed).
//
//	LEADER_PERF=1 go test -run TestPerfFastFailoverComparison -v .
//	LEADER_PERF=1 LEADER_PERF_DOC=docs/performance.md LEADER_PERF_SIZES=3,5,9 go test -run TestPerfFastFailoverComparison -v .
//
// LEADER_PERF_RUNS sets the runs per size and mode (default 50),
// LEADER_PERF_SIZES the cluster sizes (default 5), and LEADER_PERF_DOC the
// report whose "compare" section is replaced with the table.

// TestPerfFastFailoverComparison kills the leader's process (SIGKILL) of a
// lab cluster, with fast failover on and off, and measures until every
// survivor follows one new leader; the killed node is restarted before the
// next run.
func TestPerfFastFailoverComparison(t *testing.T) {
	if os.Getenv("LEADER_PERF") == "" {
		t.Skip("a measurement: set LEADER_PERF=1 to run it")
	}
	lab.Require(t)
	runs := perfEnvInt(t, "LEADER_PERF_RUNS", 50)
	sizes := []int{5}
	if v := os.Getenv("LEADER_PERF_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 3 {
				t.Fatalf("LEADER_PERF_SIZES=%q: want sizes of at least 3", v)
			}
			sizes = append(sizes, n)
		}
	}
	load := perfLoadAvg()
	began := time.Now()
	var rows []perfFailoverRow
	for _, size := range sizes {
		for _, mode := range perfModes(t) {
			row := perfFailoverRow{nodes: size, mode: mode}
			t.Run(fmt.Sprintf("nodes=%d/%s", size, mode), func(t *testing.T) {
				var off []string
				switch mode {
				case perfModeSymmetric:
					off = append(off, labParamSymmetricLoss)
				}
				c := lab.Start(t, lab.Config{Nodes: size, Params: labDefaultTimings.params(3, off...)})
				var restartedAt time.Time
				for run := 0; run < runs; run++ {
					f := labKillLeader(t, c, size, restartedAt)
					restartedAt = time.Now()
					row.samples = append(row.samples, f.agreed)
					if f.nextTerm-f.term == 1 {
						row.oneElection++
					}
				}
			})
			t.Logf("nodes %d, %s: %s", size, row.mode, clSummary(row.samples))
			rows = append(rows, row)
		}
	}
	table := perfCompareTable(rows, runs, load, time.Since(began))
	t.Logf("\n%s", table)
	if path := os.Getenv("LEADER_PERF_DOC"); path != "" {
		if err := perfReplaceSection(path, "compare", table); err != nil {
			t.Fatal(err)
		}
	}
}

type perfFailoverRow struct {
	nodes       int
	mode        string
	samples     []time.Duration
	oneElection int
}

// The modes the comparison measures: the library as shipped (safety from
// the lease alone), the opt-in AssumeSymmetricConnectionLoss (the fast
// path that releases a promise at a lost connection).
const (
	perfModeDefault   = "default"
	perfModeSymmetric = "AssumeSymmetricConnectionLoss"
)

// perfModes are the modes to measure: LEADER_PERF_MODES lists some of
// default and symmetric (both by default).
func perfModes(t *testing.T) []string {
	all := map[string]string{"default": perfModeDefault, "symmetric": perfModeSymmetric}
	v := os.Getenv("LEADER_PERF_MODES")
	if v == "" {
		return []string{perfModeDefault, perfModeSymmetric}
	}
	var modes []string
	for _, f := range strings.Split(v, ",") {
		m, ok := all[strings.TrimSpace(f)]
		if ok == false {
			t.Fatalf("LEADER_PERF_MODES=%q: want some of default, symmetric", v)
		}
		modes = append(modes, m)
	}
	return modes
}

// perfCompareTable renders the rows for the report.
func perfCompareTable(rows []perfFailoverRow, runs int, load string, took time.Duration) string {
	lo, hi := clusterDefaultTimings.electionMin(), clusterDefaultTimings.electionMax()
	var b strings.Builder
	b.WriteString("## 1b. Crash failover on separate processes: the lease alone, the opt-in, and no fast failover\n\n")
	b.WriteString("Measured by a test of package leader on the process lab. Each size and mode is one cluster of the process lab (every node its own OS process in its own network namespace, default options); each run kills the leader's process with SIGKILL, the time runs until every survivor's callbacks name one new leader at one term, and the killed node is restarted (and the cluster settled) before the next run. \"default\" is the library as shipped: safety from the lease alone, the survivors keep their promise F (15 ms) after their last acknowledgement. \"AssumeSymmetricConnectionLoss\" is the opt-in that releases the promise at the lost connection (safe only if both ends notice a loss within 5 ms of each other).\n\n")
	b.WriteString("| mode | nodes | runs | p50 ms | p90 ms | p99 ms | max ms | p50 / ElectionTimeoutMin | p99 / ElectionTimeoutMin | p50 / ElectionTimeoutMax | p99 / ElectionTimeoutMax | one election |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		sorted := slices.Clone(r.samples)
		slices.Sort(sorted)
		p := func(q float64) time.Duration { return clPercentile(sorted, q) }
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s | %.2f | %.2f | %.2f | %.2f | %d/%d |\n",
			r.mode, r.nodes, len(sorted), perfMS(p(50)), perfMS(p(90)), perfMS(p(99)), perfMS(p(100)),
			float64(p(50))/float64(lo), float64(p(99))/float64(lo), float64(p(50))/float64(hi), float64(p(99))/float64(hi),
			r.oneElection, len(sorted))
	}
	fmt.Fprintf(&b, "\n_Measured %s with `LEADER_PERF=1 LEADER_PERF_RUNS=%d LEADER_PERF_SIZES=%s go test -run TestPerfFastFailoverComparison -v .`; took %s; 1-min load average %s at the start, %s at the end._",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runs, perfSizes(rows), took.Round(time.Second), load, perfLoadAvg())
	return b.String()
}

func perfSizes(rows []perfFailoverRow) string {
	var list []string
	for _, r := range rows {
		if s := strconv.Itoa(r.nodes); slices.Contains(list, s) == false {
			list = append(list, s)
		}
	}
	return strings.Join(list, ",")
}

func perfMS(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v < 10 {
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

// perfReplaceSection puts content between the section's markers in the
// report (the layout examples/perf writes), or appends it with markers.
func perfReplaceSection(path, id, content string) error {
	text, err := os.ReadFile(path)
	if err != nil && os.IsNotExist(err) == false {
		return err
	}
	begin, end := "<!-- perf:begin "+id+" -->", "<!-- perf:end "+id+" -->"
	s := string(text)
	i, j := strings.Index(s, begin), strings.Index(s, end)
	if i < 0 || j < i {
		s = strings.TrimRight(s, "\n") + "\n\n" + begin + "\n" + content + "\n" + end + "\n"
	} else {
		s = s[:i+len(begin)] + "\n" + content + "\n" + s[j:]
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

func perfEnvInt(t *testing.T, key string, fallback int) int {
	v := os.Getenv(key)
	if v == "" {
		return fallback
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", key, v)
	}
	return n
}

// perfLoadAvg is the 1-minute load average (Linux), "?" elsewhere.
func perfLoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
