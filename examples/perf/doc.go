package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// section is one part of the report, between markers that let a later run
// replace it alone: a rerun of one noisy measurement (-only) keeps every
// other section as it was, and so does a section written by someone else
// (the fast-failover comparison comes from a test of package leader, the
// analysis is written by hand).
type section struct {
	id    string
	title string
	body  string
}

// summaryRow is one line of the targets table. Its key starts with the
// number of its section ("1. ", "5b. "): a section measured again replaces
// all of its rows, and the rows of the other sections stay.
type summaryRow struct {
	key, target, result, verdict string
}

// rowPrefix is the key prefix of a section's summary rows: its title's
// number.
func rowPrefix(id string) string {
	for _, d := range docOrder {
		if d.id == id {
			if number, _, ok := strings.Cut(d.title, " "); ok {
				return number + " "
			}
		}
	}
	return ""
}

// docOrder is the layout of the report. Sections that this command does not
// measure are kept from the existing file, or get a placeholder.
var docOrder = []struct{ id, title, placeholder string }{
	{"header", "", ""},
	{"overview", "Summary", "written by hand: the figures that matter most, and how to reproduce them"},
	{"summary", "Targets", ""},
	{"real", "0. Crash failover and handover on separate processes: the stand-in and the real framework", "not measured yet: `LEADER_LAB=require LEADER_LAB_ROUNDS=30 go test -run TestLabLeaderKilled -v .` (package leader, as root: every node its own OS process), quote its figures here"},
	{"crash", "1. Crash failover", "not measured yet: `go run ./examples/perf -only crash -out docs/performance.md`"},
	{"compare", "1b. Fast failover on and off", "not measured yet: `LEADER_PERF=1 LEADER_PERF_DOC=docs/performance.md go test -run TestPerfFastFailoverComparison -v .` (package leader: the switch is unexported)"},
	{"handover", "2. Graceful handover", "not measured yet: `go run ./examples/perf -only handover -out docs/performance.md`"},
	{"rolling", "2b. Rolling restart, three nodes at the defaults", "not measured yet: `LEADER_PERF=1 LEADER_PERF_DOC=docs/performance.md go test -run TestPerfRollingRestart -v .` (package leader: the switch that turns kept seats off is unexported)"},
	{"coldstart", "3. Cold start", "not measured yet: `go run ./examples/perf -only coldstart -out docs/performance.md`"},
	{"heal", "4. Partition heal", "not measured yet: `go run ./examples/perf -only heal -out docs/performance.md`"},
	{"steady", "5. Steady-state cost", "not measured yet: `go run ./examples/perf -only steady -out docs/performance.md`"},
	{"long", "5b. Steady state over ten minutes", "not measured yet: `go run ./examples/perf -only long -long -out docs/performance.md`"},
	{"scale", "6. Scale", "not measured yet: `go run ./examples/perf -only scale -out docs/performance.md`"},
	{"coalesce", coalesceTitle, "not measured yet: `go run ./examples/perf -only coalesce -out docs/performance.md`"},
	{"procs", procsTitle, "not measured yet: `go run ./examples/perf -only coalesce,procs -out docs/performance.md`"},
	{"stability", "7. Stability under CPU load", "not measured yet: `go run ./examples/perf -only stability -out docs/performance.md`"},
	{"simulator", "8. Simulator throughput", "not measured yet: `LEADER_SIM_SEEDS=2000 go test -run TestSimulationRandomSeeds -v .`, quote its log line here"},
	{"analysis", "Analysis", "written by hand after a full run"},
}

func beginMarker(id string) string { return "<!-- perf:begin " + id + " -->" }
func endMarker(id string) string   { return "<!-- perf:end " + id + " -->" }

// readSections returns the sections of an existing report, by id.
func readSections(text string) map[string]string {
	found := make(map[string]string)
	for _, d := range docOrder {
		begin, end := beginMarker(d.id), endMarker(d.id)
		i := strings.Index(text, begin)
		if i < 0 {
			continue
		}
		rest := text[i+len(begin):]
		j := strings.Index(rest, end)
		if j < 0 {
			continue
		}
		found[d.id] = strings.Trim(rest[:j], "\n")
	}
	return found
}

// renderDoc lays out the report from the sections measured now and, for the
// rest, what the existing report had.
func renderDoc(existing string, measured []section, rows []summaryRow) string {
	old := readSections(existing)
	now := make(map[string]section)
	for _, s := range measured {
		now[s.id] = s
	}
	var b strings.Builder
	for _, d := range docOrder {
		var content string
		switch {
		case d.id == "summary":
			var prefixes []string
			for _, m := range measured {
				if prefix := rowPrefix(m.id); prefix != "" {
					prefixes = append(prefixes, prefix)
				}
			}
			content = summaryBody(old["summary"], rows, prefixes)
		case now[d.id].id != "":
			s := now[d.id]
			content = strings.TrimSpace("## " + s.title + "\n\n" + s.body)
			if s.title == "" {
				content = strings.TrimSpace(s.body)
			}
		case old[d.id] != "":
			content = old[d.id]
		default:
			content = "## " + d.title + "\n\n_" + d.placeholder + "._"
		}
		fmt.Fprintf(&b, "%s\n%s\n%s\n\n", beginMarker(d.id), content, endMarker(d.id))
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}

const summaryHead = "| measurement | target | result | verdict |\n|---|---|---|---|\n"

// summaryBody merges the rows measured now into the existing table: the
// old rows of the sections measured now (their key prefixes) go, the rest
// stay in place, and new rows replace old ones with the same key.
func summaryBody(old string, rows []summaryRow, measured []string) string {
	type line struct{ key, text string }
	var lines []line
	for _, l := range strings.Split(old, "\n") {
		if strings.HasPrefix(l, "| ") == false || strings.HasPrefix(l, "| measurement ") {
			continue
		}
		cells := strings.Split(l, "|")
		if len(cells) < 3 {
			continue
		}
		key := strings.TrimSpace(cells[1])
		remeasured := false
		for _, prefix := range measured {
			remeasured = remeasured || strings.HasPrefix(key, prefix)
		}
		if remeasured {
			if i := slices.IndexFunc(rows, func(r summaryRow) bool { return r.key == key }); i >= 0 {
				lines = append(lines, line{key, l}) // keeps its place; replaced below
			}
			continue
		}
		lines = append(lines, line{key, l})
	}
	for _, r := range rows {
		text := fmt.Sprintf("| %s | %s | %s | %s |", r.key, r.target, r.result, r.verdict)
		replaced := false
		for i := range lines {
			if lines[i].key == r.key {
				lines[i].text, replaced = text, true
			}
		}
		if replaced == false {
			lines = append(lines, line{r.key, text})
		}
	}
	// in section order, rows of one section in the order they were made
	rank := func(key string) int {
		for i, d := range docOrder {
			if prefix := rowPrefix(d.id); prefix != "" && strings.HasPrefix(key, prefix) {
				return i
			}
		}
		return len(docOrder)
	}
	slices.SortStableFunc(lines, func(a, b line) int { return rank(a.key) - rank(b.key) })
	var b strings.Builder
	b.WriteString("## Targets\n\nEvery target set for the library, with the figure that decides it; the sections below have the distributions and how each was taken. Where a target is missed, [Analysis](#analysis) says by how much, why, and what would close it.\n\n")
	b.WriteString(summaryHead)
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// writeReport renders the report and writes it to path, keeping what an
// existing file has for the sections not measured now.
func writeReport(path string, measured []section, rows []summaryRow) (string, error) {
	existing, err := os.ReadFile(path)
	if err != nil && errors.Is(err, fs.ErrNotExist) == false {
		return "", err
	}
	text := renderDoc(string(existing), measured, rows)
	return text, os.WriteFile(path, []byte(text), 0o644)
}

// verdict compares a measured value with a target: "met", or "missed by"
// how much.
func verdict(met bool, by string) string {
	if met {
		return "met"
	}
	return "**missed** by " + by
}
