package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo"
	"ergo.services/ergo/gen"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Deadlines are generous: a loaded 2-core CI box under -race.
const (
	converge = 60 * time.Second
	poll     = 20 * time.Millisecond
)

// testOptions are short election timeouts, as the library's cluster tests
// use, with the heartbeat at a fifth of ElectionTimeoutMin so a follower
// tolerates a few late heartbeats.
func testOptions(clusterID string) leader.Options {
	return leader.Options{
		ClusterID:          clusterID,
		MinClusterSize:     3,
		ElectionTimeoutMin: 150,
		ElectionTimeoutMax: 300,
		HeartbeatInterval:  30,
		GhostTTL:           2000,
	}
}

// scraped is one scrape, parsed: the families by name, and each sample's
// value by metric name and node.
type scraped struct {
	families map[string]*dto.MetricFamily
	values   map[string]map[string]float64
	clusters map[string]map[string]string // metric name -> node -> cluster label
}

func (s scraped) String() string {
	var lines []string
	for name, byNode := range s.values {
		for node, v := range byNode {
			lines = append(lines, fmt.Sprintf("%s{node=%s} %g", name, node, v))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// scrape GETs url and parses the text exposition.
func scrape(url string) (scraped, error) {
	resp, err := http.Get(url)
	if err != nil {
		return scraped{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return scraped{}, fmt.Errorf("GET %s: %s\n%s", url, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return scraped{}, fmt.Errorf("parse the exposition: %w", err)
	}
	s := scraped{families: families, values: map[string]map[string]float64{}, clusters: map[string]map[string]string{}}
	for name, f := range families {
		s.values[name] = map[string]float64{}
		s.clusters[name] = map[string]string{}
		for _, m := range f.GetMetric() {
			var node, cluster, reason string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "node":
					node = l.GetValue()
				case "cluster":
					cluster = l.GetValue()
				case "reason":
					reason = l.GetValue()
				}
			}
			if reason != "" {
				node += "/" + reason // leader_inspect_errors_total, by node and reason
			}
			s.values[name][node] = value(m)
			s.clusters[name][node] = cluster
		}
	}
	return s, nil
}

// waitScrape scrapes until cond holds, and returns that scrape.
func waitScrape(t *testing.T, url, what string, cond func(s scraped) (bool, string)) scraped {
	t.Helper()
	deadline := time.Now().Add(converge)
	var last string
	for {
		s, err := scrape(url)
		if err != nil {
			last = err.Error()
		} else {
			ok, why := cond(s)
			if ok {
				return s
			}
			last = why + "\n" + s.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; last scrape:\n%s", what, converge, last)
		}
		time.Sleep(poll)
	}
}

// exported are the metrics every live actor must have, with their type.
var exported = map[string]dto.MetricType{
	"leader_elections_started_total":   dto.MetricType_COUNTER,
	"leader_elections_won_total":       dto.MetricType_COUNTER,
	"leader_elections_lost_total":      dto.MetricType_COUNTER,
	"leader_changes_total":             dto.MetricType_COUNTER,
	"leader_is_leader":                 dto.MetricType_GAUGE,
	"leader_term":                      dto.MetricType_GAUGE,
	"leader_view_size":                 dto.MetricType_GAUGE,
	"leader_quorum":                    dto.MetricType_GAUGE,
	"leader_leaderless_seconds":        dto.MetricType_GAUGE,
	"leader_leaderless_seconds_total":  dto.MetricType_COUNTER,
	"leader_last_failover_gap_seconds": dto.MetricType_GAUGE,
	"leader_last_leaderless_seconds":   dto.MetricType_GAUGE,
}

func nodeNames(c *cluster) []string {
	var names []string
	for _, n := range c.nodes {
		names = append(names, string(n.Name()))
	}
	return names
}

// leadersAmong returns the nodes of names that report leader_is_leader 1.
func leadersAmong(s scraped, names []string) []string {
	var leaders []string
	for _, node := range names {
		if s.values["leader_is_leader"][node] == 1 {
			leaders = append(leaders, node)
		}
	}
	return leaders
}

// TestMetricsThroughFailover runs three nodes, scrapes /metrics over HTTP
// and checks the figures: one leader, a term all nodes agree on, an
// election won; then the leader's node stops and the survivors count a
// leader change and report how long the failover took.
func TestMetricsThroughFailover(t *testing.T) {
	const clusterID = "metrics-test"
	c, err := startCluster(clusterConfig{Size: 3, Cookie: "metrics-test", Options: testOptions(clusterID), Rediscover: 200 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	handler, _, err := newHandler(NewCollector(c.sources()...))
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(handler)
	defer server.Close()
	url := server.URL + "/metrics"
	names := nodeNames(c)

	s := waitScrape(t, url, "one leader, one term, an election won", func(s scraped) (bool, string) {
		for name := range exported {
			if len(s.values[name]) != len(names) {
				return false, fmt.Sprintf("%s has %d samples, want %d", name, len(s.values[name]), len(names))
			}
		}
		if leaders := leadersAmong(s, names); len(leaders) != 1 {
			return false, fmt.Sprintf("leaders %v", leaders)
		}
		terms := map[float64]bool{}
		won := 0.0
		for _, node := range names {
			terms[s.values["leader_term"][node]] = true
			won += s.values["leader_elections_won_total"][node]
		}
		if len(terms) != 1 {
			return false, fmt.Sprintf("terms differ: %v", s.values["leader_term"])
		}
		if won < 1 {
			return false, "no election won"
		}
		return true, ""
	})

	// Names, types and labels per the exposition.
	for name, kind := range exported {
		f := s.families[name]
		if f.GetType() != kind {
			t.Errorf("%s: type %s, want %s", name, f.GetType(), kind)
		}
		if f.GetHelp() == "" {
			t.Errorf("%s has no help", name)
		}
		for _, node := range names {
			if got := s.clusters[name][node]; got != clusterID {
				t.Errorf("%s{node=%s}: cluster label %q, want %q", name, node, got, clusterID)
			}
		}
	}
	for _, node := range names {
		if v := s.values["leader_view_size"][node]; v != 3 {
			t.Errorf("%s: view size %g, want 3", node, v)
		}
		if v := s.values["leader_quorum"][node]; v != 2 {
			t.Errorf("%s: quorum %g, want 2", node, v)
		}
	}
	if len(s.values["leader_inspect_errors_total"]) != 0 {
		t.Errorf("inspect errors with every actor up: %v", s.values["leader_inspect_errors_total"])
	}

	first := leadersAmong(s, names)[0]
	survivors := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == first })
	changesBefore := map[string]float64{}
	for _, node := range survivors {
		changesBefore[node] = s.values["leader_changes_total"][node]
	}
	termBefore := s.values["leader_term"][first]

	// The failover: the leader's node stops. The survivors elect once
	// their discovery has joined the stopped node again (see electionActor).
	c.stop(slices.Index(names, first))

	waitScrape(t, url, "a new leader among the survivors, counted and timed", func(s scraped) (bool, string) {
		if _, ok := s.values["leader_is_leader"][first]; ok {
			return false, "the stopped node still has samples"
		}
		leaders := leadersAmong(s, survivors)
		if len(leaders) != 1 {
			return false, fmt.Sprintf("survivors leading: %v", leaders)
		}
		timed := false
		for _, node := range survivors {
			if s.values["leader_changes_total"][node] <= changesBefore[node] {
				return false, fmt.Sprintf("%s: leader_changes_total still %g", node, s.values["leader_changes_total"][node])
			}
			if s.values["leader_term"][node] <= termBefore {
				return false, fmt.Sprintf("%s: term still %g", node, s.values["leader_term"][node])
			}
			if s.values["leader_last_failover_gap_seconds"][node] > 0 {
				timed = true
			}
		}
		if timed == false {
			return false, "no survivor reports leader_last_failover_gap_seconds > 0"
		}
		// the stopped node's actor cannot be inspected, and that is counted
		// under the cluster it last reported
		key := first + "/" + ReasonInspect
		if s.values["leader_inspect_errors_total"][key] < 1 || s.clusters["leader_inspect_errors_total"][key] != clusterID {
			return false, "the stopped node's inspect failure is not counted"
		}
		return true, ""
	})
}

// brokenActor is a leader actor whose inspect answer carries values the
// collector cannot parse: its own keys are merged over the election's.
type brokenActor struct {
	leader.Actor
}

func (a *brokenActor) Init(args ...any) (leader.Options, error) {
	return leader.Options{ClusterID: "broken", MinClusterSize: 1}, nil
}
func (a *brokenActor) HandleBecomeLeader() error          { return nil }
func (a *brokenActor) HandleBecomeFollower(gen.PID) error { return nil }
func (a *brokenActor) HandleInspect(gen.PID, ...string) map[string]string {
	return map[string]string{"ergo:term": "not-a-number", "ergo:leaderless_for": "soon"}
}

// TestCollectorTolerates checks the collector's failure modes: an actor
// that is gone (its node stopped, or nothing registered under the name)
// gives no samples, a value that does not parse drops that metric only, and
// both are counted in leader_inspect_errors_total.
func TestCollectorTolerates(t *testing.T) {
	start := func(suffix string) gen.Node {
		node, err := ergo.StartNode(gen.Atom(fmt.Sprintf("metrics-%d-%s@localhost", os.Getpid(), suffix)), gen.NodeOptions{
			Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
			Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(node.Stop)
		return node
	}
	seq := clusterRuns.Add(1)
	broken := start(fmt.Sprintf("%d-broken", seq))
	if _, err := broken.SpawnRegister(actorName, func() gen.ProcessBehavior { return &brokenActor{} }, gen.ProcessOptions{}); err != nil {
		t.Fatal(err)
	}
	gone := start(fmt.Sprintf("%d-gone", seq))
	if _, err := gone.SpawnRegister(actorName, func() gen.ProcessBehavior { return &brokenActor{} }, gen.ProcessOptions{}); err != nil {
		t.Fatal(err)
	}
	gone.Stop()
	empty := start(fmt.Sprintf("%d-empty", seq))

	handler, _, err := newHandler(NewCollector(
		Source{Node: broken, Name: actorName},
		Source{Node: gone, Name: actorName},
		Source{Node: empty, Name: actorName},
	))
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(handler)
	defer server.Close()

	for round := 1; round <= 2; round++ {
		s, err := scrape(server.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b := string(broken.Name())
		for name := range exported {
			_, ok := s.values[name][b]
			want := name != "leader_term" && name != "leader_leaderless_seconds"
			if ok != want {
				t.Errorf("round %d: %s{node=%s} present %v, want %v", round, name, b, ok, want)
			}
			for _, other := range []gen.Node{gone, empty} {
				if _, ok := s.values[name][string(other.Name())]; ok {
					t.Errorf("round %d: %s has a sample from %s, whose actor is not there", round, name, other.Name())
				}
			}
		}
		errs := s.values["leader_inspect_errors_total"]
		want := map[string]float64{
			b + "/" + ReasonParse:                      float64(2 * round),
			string(gone.Name()) + "/" + ReasonInspect:  float64(round),
			string(empty.Name()) + "/" + ReasonInspect: float64(round),
		}
		for key, n := range want {
			if errs[key] != n {
				t.Errorf("round %d: leader_inspect_errors_total{%s} = %g, want %g (all: %v)", round, key, errs[key], n, errs)
			}
		}
		if got := s.clusters["leader_inspect_errors_total"][b+"/"+ReasonParse]; got != "broken" {
			t.Errorf("round %d: parse errors labelled cluster %q, want broken", round, got)
		}
	}
}

// TestRun runs the program as a user would: it prints where /metrics is
// served, the figures are there, and after the failover it names a new
// leader and keeps serving.
func TestRun(t *testing.T) {
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-failover-after", "300ms",
			"-election-min", "150", "-election-max", "300", "-heartbeat", "30", "-rediscover", "200ms", "-cookie", "metrics-run-test"}, out)
	}()

	served := regexp.MustCompile(`served on (http://\S+/metrics)`)
	var url string
	deadline := time.Now().Add(converge)
	for strings.Contains(out.String(), "new leader:") == false {
		select {
		case err := <-done:
			t.Fatalf("run ended early: %v\n%s", err, out)
		case <-time.After(poll):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no failover within %s:\n%s", converge, out)
		}
	}
	if m := served.FindStringSubmatch(out.String()); m != nil {
		url = m[1]
	} else {
		t.Fatalf("the output does not say where /metrics is served:\n%s", out)
	}
	s, err := scrape(url)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.values["leader_is_leader"]) != 2 {
		t.Errorf("after the failover, %d nodes report leader_is_leader, want the 2 survivors:\n%s", len(s.values["leader_is_leader"]), s)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v\n%s", err, out)
		}
	case <-time.After(converge):
		t.Fatalf("run did not return after its context ended:\n%s", out)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// testLog collects the actors' warnings and shows them if the test fails.
func testLog(t *testing.T) io.Writer {
	log := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("actors' log:\n%s", log)
		}
	})
	return log
}
