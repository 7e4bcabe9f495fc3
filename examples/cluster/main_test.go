package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer that the demo's goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestStory plays the whole in-process story and checks that every step
// ends with one leader that all live nodes follow, and that the SVG
// timeline is well-formed with one lane per node. It does not ask for
// -plain: writing to a buffer, not a terminal, the demo must fall back to
// plain lines by itself, without a single escape sequence.
func TestStory(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "timeline.svg")
	var out syncBuffer
	// Wider timings than the defaults, as the spec advises wherever a pause
	// can exceed a couple of hundred milliseconds: a 2-core CI box running
	// -race, compiling and testing other packages at once, is such a place,
	// and a stalled heartbeat there would be an election the story does not
	// expect.
	cfg, err := parseConfig([]string{
		"-pause", "0", "-timeline", svg,
		"-election-min", "500", "-election-max", "1000", "-heartbeat", "100",
	}, &out)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	r, err := runDemo(ctx, cfg, &out)
	if err != nil {
		t.Fatalf("story failed: %v\noutput:\n%s", err, out.String())
	}

	var keys []string
	for _, s := range r.Steps {
		keys = append(keys, s.Key)
		if s.OK == false || s.Leader == "" || s.Term == 0 {
			t.Errorf("step %s (%s): ok=%v leader=%q term=%d", s.Key, s.Title, s.OK, s.Leader, s.Term)
		}
	}
	if want := []string{"a", "b", "b'", "c", "d", "e"}; slices.Equal(keys, want) == false {
		t.Errorf("steps %v, want %v", keys, want)
	}
	// Leadership moved when the leader was killed and when it was stopped,
	// and stayed put through the partition and the heal.
	for _, i := range []int{1, 5} {
		if strings.Contains(r.Steps[i].Leader, " -> ") == false {
			t.Errorf("step %s: leader %q did not move", r.Steps[i].Key, r.Steps[i].Leader)
		}
	}
	// The story's claim: the leader keeps its term through the partition.
	// A leader that stalls for a whole election timeout loses it within the
	// majority, which is safe and reported; a CI box that stalls like that
	// is not the election's fault, so it is logged rather than failed.
	if p := r.Steps[3]; p.Kept == false {
		t.Logf("partition: the leader did not keep its term (%s, term %d): a stall on this machine", p.Leader, p.Term)
	} else if p.Leader != r.Steps[2].Leader || p.Term != r.Steps[2].Term {
		t.Errorf("partition: leader %s term %d, before it %s term %d", p.Leader, p.Term, r.Steps[2].Leader, r.Steps[2].Term)
	}
	if strings.Contains(out.String(), "Summary:") == false {
		t.Errorf("no summary in the output:\n%s", out.String())
	}
	if i := strings.IndexByte(out.String(), '\x1b'); i >= 0 {
		t.Errorf("escape sequence in the output to a buffer, at byte %d: %q", i, out.String()[max(0, i-40):i+10])
	}

	checkTimeline(t, svg, cfg.nodes)
}

// svgDoc is as much of the timeline as the test reads.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Groups  []struct {
		Class string `xml:"class,attr"`
		Node  string `xml:"data-node,attr"`
		Rects []struct {
			Fill string `xml:"fill,attr"`
		} `xml:"rect"`
	} `xml:"g"`
}

func checkTimeline(t *testing.T, path string, nodes int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("timeline is not valid XML: %v", err)
	}
	var lanes []string
	leaderSegments := 0
	for _, g := range doc.Groups {
		if g.Class != "lane" {
			continue
		}
		lanes = append(lanes, g.Node)
		if len(g.Rects) == 0 {
			t.Errorf("lane %s has no segments", g.Node)
		}
		for _, r := range g.Rects {
			if r.Fill == laneColor["leader"] {
				leaderSegments++
			}
		}
	}
	// three leaders in the story: the first, the failover, the handover
	if leaderSegments < 3 {
		t.Errorf("timeline shows %d leader segments, want at least 3", leaderSegments)
	}
	if len(lanes) != nodes {
		t.Errorf("timeline has %d lanes (%v), want %d", len(lanes), lanes, nodes)
	}
	slices.Sort(lanes)
	if len(slices.Compact(slices.Clone(lanes))) != len(lanes) {
		t.Errorf("duplicate lanes: %v", lanes)
	}
}

// TestFlags rejects what the story cannot play.
func TestFlags(t *testing.T) {
	var out syncBuffer
	for _, args := range [][]string{{"-nodes", "2"}, {"-join", "a@localhost"}, {"extra"}, {"-cut", "hang"}} {
		if _, err := parseConfig(args, &out); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}

// TestSeparateNodes runs the multi-process mode three times in this
// process: the nodes find each other through the built-in registrar, elect
// one leader, and elect another when the leader's node is stopped.
func TestSeparateNodes(t *testing.T) {
	names := make([]string, 3)
	for i := range names {
		names[i] = fmt.Sprintf("leader-single-%d-%d@localhost", os.Getpid(), i)
	}
	type running struct {
		out    *syncBuffer
		cancel context.CancelFunc
		done   chan error
	}
	nodes := make(map[string]*running)
	for _, name := range names {
		var join []string
		for _, other := range names {
			if other != name {
				join = append(join, other)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		r := &running{out: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
		nodes[name] = r
		go func() {
			r.done <- run(ctx, []string{"-name", name, "-join", strings.Join(join, ","), "-election-min", "500", "-election-max", "1000", "-heartbeat", "100"}, r.out)
		}()
	}
	t.Cleanup(func() {
		for _, r := range nodes {
			r.cancel()
			<-r.done
		}
	})

	// agreed waits until the last line of every named node reports the same
	// leader, which is one of them.
	agreed := func(alive []string) string {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			leaders := make(map[string]bool)
			for _, name := range alive {
				leaders[lastLeader(nodes[name].out.String())] = true
			}
			if len(leaders) == 1 {
				for l := range leaders {
					if slices.Contains(alive, l) {
						return l
					}
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, name := range alive {
			t.Logf("%s:\n%s", name, nodes[name].out.String())
		}
		t.Fatalf("nodes %v did not agree on a leader", alive)
		return ""
	}

	first := agreed(names)
	nodes[first].cancel() // Ctrl-C: a graceful stop with handover
	if err := <-nodes[first].done; err != nil {
		t.Fatalf("%s: %v", first, err)
	}
	nodes[first].done <- nil // for the cleanup
	second := agreed(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == first }))
	if second == first {
		t.Fatalf("leadership did not move from %s", first)
	}
}

// lastLeader returns the leader named by the last status line of a node's
// output: "15:04:05.000 leader      term 1   leader n1@localhost   view 3 quorum 2".
func lastLeader(output string) string {
	lines := strings.Split(strings.TrimSpace(output), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		fields := strings.Fields(lines[i])
		if len(fields) >= 6 && fields[2] == "term" && fields[4] == "leader" {
			return fields[5]
		}
	}
	return ""
}
