package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// syncBuffer collects the progress lines, which several goroutines write.
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

// TestQuickRun runs every measurement in quick mode, one run each, and
// checks the shape of what it writes: every table is there and the plot is
// well-formed SVG. It checks no figure: timing on a shared CI machine says
// nothing about the library.
func TestQuickRun(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "performance.md")
	var log syncBuffer
	p, err := parsePlan([]string{"-quick", "-runs", "1", "-out", out}, &log)
	if err != nil {
		t.Fatal(err)
	}
	r, err := run(p)
	if err != nil {
		t.Fatalf("quick run: %v\nprogress:\n%s", err, log.String())
	}
	written, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if string(written) != r.markdown {
		t.Errorf("the report written differs from the one returned")
	}
	for _, want := range []string{
		"| measurement | target | result | verdict |",
		"| nodes | runs | p50 ms | p90 ms | p99 ms | max ms |",
		"| via | runs | gap p50 ms |",
		"| nodes | runs | p50 ms | p90 ms | p99 ms | max ms | p99 / ElectionTimeoutMax |",
		"| hold | runs | converge p50 ms |",
		"| nodes | rounds/s | msgs/s | msgs/round |",
		"| setup | members | spawning s | all led s |",
		"| load | leader changes | term increments (sum over nodes) |",
		"| figure | coalesced | DisableCoalescing=true | coalesced / uncoalesced |",
		"| node | idle CPU, % of one core | resident set | live heap |", // section 6c, node processes
		"led again by the survivors",                                    // its crash: the dead node's elections were led again
		"## 1b. Fast failover on and off",                               // a placeholder until the leader test fills it
		"## 8. Simulator throughput",
	} {
		if strings.Contains(r.markdown, want) == false {
			t.Errorf("the report has no %q", want)
		}
	}
	if t.Failed() {
		t.Logf("report:\n%s\nprogress:\n%s", r.markdown, log.String())
	}

	svg, err := os.ReadFile(filepath.Join(dir, "failover.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if err := checkSVG(svg); err != nil {
		t.Errorf("failover.svg: %v\n%s", err, svg)
	}
}

// checkSVG parses the whole document and checks that its root is an svg
// element with at least one plotted path.
func checkSVG(doc []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(doc))
	root, paths := "", 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if start, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = start.Name.Local
			}
			if start.Name.Local == "path" {
				paths++
			}
		}
	}
	if root != "svg" {
		return errors.New("the root element is " + root + ", not svg")
	}
	if paths == 0 {
		return errors.New("no distribution is plotted")
	}
	return nil
}

// TestRerunKeepsOtherSections checks the merge that lets one section be
// measured again alone: the new section replaces its predecessor, every
// other section and hand-written part stays, and the section's summary rows
// are replaced as a set (a row it no longer produces goes).
func TestRerunKeepsOtherSections(t *testing.T) {
	first := renderDoc("", []section{
		{id: "heal", title: "4. Partition heal", body: "heal table"},
		{id: "header", body: "# Title"},
		{id: "crash", title: "1. Crash failover", body: "old crash table"},
	}, []summaryRow{
		{key: "4. Heal", target: "0", result: "0", verdict: "met"},
		{key: "1. Crash failover, 5 nodes", target: "p99 < 50 ms", result: "old", verdict: "met"},
		{key: "1. Crash failover, 7 nodes", target: "-", result: "gone", verdict: "reported"},
	})
	edited := strings.Replace(first, "_written by hand after a full run._", "hand-written analysis", 1)
	second := renderDoc(edited, []section{
		{id: "header", body: "# Title"},
		{id: "crash", title: "1. Crash failover", body: "new crash table"},
	}, []summaryRow{{key: "1. Crash failover, 5 nodes", target: "p99 < 50 ms", result: "new", verdict: "met"}})
	for _, want := range []string{"new crash table", "heal table", "hand-written analysis", "| 1. Crash failover, 5 nodes | p99 < 50 ms | new | met |", "| 4. Heal | 0 | 0 | met |"} {
		if strings.Contains(second, want) == false {
			t.Errorf("the rerun lost %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "old crash table") || strings.Contains(second, "| old |") || strings.Contains(second, "7 nodes") {
		t.Errorf("the rerun kept the old crash figures:\n%s", second)
	}
	if strings.Index(second, "| 1. Crash") > strings.Index(second, "| 4. Heal") {
		t.Errorf("the summary is not in section order:\n%s", second)
	}
}

// TestHeaderNamesNoPaths checks that the report quotes its command without
// the directories of the machine it ran on, and carries no notes about the
// machine's other users.
func TestHeaderNamesNoPaths(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "docs", "performance.md")
	p, err := parsePlan([]string{"-only", "coalesce", "-out", out, "-cpuprofile=" + filepath.Join(dir, "cpu.pprof")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	h := headerSection(p).body
	if strings.Contains(h, dir) || strings.Contains(p.command, dir) {
		t.Errorf("the header names a directory of this machine:\n%s", h)
	}
	if strings.Contains(p.command, "-out performance.md") == false || strings.Contains(p.command, "-cpuprofile=cpu.pprof") == false {
		t.Errorf("command quoted as %q", p.command)
	}
	for _, note := range []string{"engineers", "shared", "other users"} {
		if strings.Contains(h, note) {
			t.Errorf("the header has a note about the machine's users (%q):\n%s", note, h)
		}
	}
	doc := renderDoc("", []section{headerSection(p)}, nil)
	for _, want := range []string{"perf:begin real", "perf:begin overview", "perf:begin coalesce", "## 6b. "} {
		if strings.Contains(doc, want) == false {
			t.Errorf("the layout has no %q", want)
		}
	}
}
