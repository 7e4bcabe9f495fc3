#!/usr/bin/env bash
# The whole test suite: vet and race-enabled tests of every module in the
# workspace (the library, the framework stand-in, the examples), then the
# library's simulator tests again without the race detector, at their full
# seed counts. Arguments, if any, replace that list of packages and skip the
# second pass: ./test.sh ./ergo-standin/...
#
# go test prints a package's result only once every package before it in
# the list has finished, so the root package (about 3 minutes) would hold
# back every other line. Instead the tests report through go test -json and
# a small formatter below prints one line per package as it finishes, and
# the output of every failed test in full. Any failure fails the script.
set -euo pipefail
cd "$(dirname "$0")"
if [ $# -gt 0 ]; then
	modules=("$@")
else
	modules=(./... ./ergo-standin/... ./examples/...)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/testfmt.go" <<'GO'
// testfmt turns the events of go test -json into one line per package as it
// finishes, and prints the output of every failed test, build and package
// in full. Lines that are not events pass through unchanged.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

type event struct {
	Action      string
	Package     string
	Test        string
	Elapsed     float64
	Output      string
	ImportPath  string
	FailedBuild string
}

func main() {
	tests := make(map[string][]string) // package and top-level test -> its output, subtests included
	packages := make(map[string][]string)
	builds := make(map[string][]string)
	failed := false
	// top-level tests whose skip fails the run (LEADER_FAIL_ON_SKIP)
	var mustRun *regexp.Regexp
	if v := os.Getenv("LEADER_FAIL_ON_SKIP"); v != "" {
		mustRun = regexp.MustCompile(v)
	}
	// measurements and comparisons that run only when asked to
	mayskip := regexp.MustCompile(`^TestPerf|Comparison|Compare|OptIn$`)
	skipped := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<26)
	for in.Scan() {
		line := in.Text()
		var e event
		if strings.HasPrefix(line, "{") == false || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Println(line)
			continue
		}
		top, _, sub := strings.Cut(e.Test, "/")
		key := e.Package + " " + top
		switch {
		case e.Action == "build-output":
			builds[e.ImportPath] = append(builds[e.ImportPath], e.Output)
		case e.Action == "build-fail":
			failed = true
			fmt.Print(strings.Join(builds[e.ImportPath], ""))
			delete(builds, e.ImportPath)
		case e.Action == "output" && e.Test != "":
			if framing(e.Output) == false {
				tests[key] = append(tests[key], e.Output)
			}
		case e.Action == "output":
			packages[e.Package] = append(packages[e.Package], e.Output)
		case e.Test != "" && sub:
			// a subtest's result: its output is printed with its parent's
		case e.Test != "" && e.Action == "fail":
			failed = true
			fmt.Print(strings.Join(tests[key], ""))
			delete(tests, key)
		case e.Test != "" && e.Action == "skip" && mustRun != nil && mustRun.MatchString(top) && mayskip.MatchString(top) == false:
			failed = true
			skipped++
			fmt.Printf("SKIPPED, which LEADER_FAIL_ON_SKIP forbids: %s %s\n", e.Package, e.Test)
			fmt.Print(strings.Join(tests[key], ""))
			delete(tests, key)
		case e.Test != "" && (e.Action == "pass" || e.Action == "skip"):
			delete(tests, key)
		case e.Test == "" && e.Action == "pass":
			fmt.Printf("ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
		case e.Test == "" && e.Action == "skip":
			fmt.Printf("?   \t%s\t[no test files]\n", e.Package)
		case e.Test == "" && e.Action == "fail":
			failed = true
			// tests that never finished (a panic, a timeout) and what the
			// package printed outside its tests
			for k, lines := range tests {
				if strings.HasPrefix(k, e.Package+" ") {
					fmt.Print(strings.Join(lines, ""))
					delete(tests, k)
				}
			}
			for _, l := range packages[e.Package] {
				if l != "PASS\n" && l != "FAIL\n" && strings.HasPrefix(l, "FAIL\t"+e.Package+"\t") == false && strings.HasPrefix(l, "FAIL\t"+e.Package+" ") == false {
					fmt.Print(l)
				}
			}
			if e.FailedBuild != "" {
				fmt.Printf("FAIL\t%s [build failed]\n", e.Package)
			} else {
				fmt.Printf("FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
			}
		}
		if e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip") {
			delete(packages, e.Package)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "test.sh: reading the output of go test:", err)
		os.Exit(2)
	}
	if skipped > 0 {
		fmt.Printf("%d tests skipped that must run (LEADER_FAIL_ON_SKIP=%s)\n", skipped, os.Getenv("LEADER_FAIL_ON_SKIP"))
	}
	if failed {
		os.Exit(1)
	}
}

// framing reports the lines that go test -json adds to what plain go test
// prints: the start, pause and resumption of every test and the passes of
// subtests.
func framing(line string) bool {
	line = strings.TrimLeft(line, " ")
	for _, prefix := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS"} {
		if strings.HasPrefix(line, prefix) {
			return true
		}
	}
	return false
}
GO
(cd "$tmp" && GOWORK=off GOFLAGS= go build -o testfmt testfmt.go)

echo "go vet ${modules[*]}"
go vet "${modules[@]}"
echo "go test -race ${modules[*]}"
go test -race -count=1 -timeout 30m -json "${modules[@]}" 2>&1 | "$tmp/testfmt"
if [ $# -eq 0 ]; then
	# Under the race detector the simulator runs an eighth of its seeds
	# (seedCount): it looks for data races there. The full count runs here,
	# without it, about ten times faster.
	echo "go test -run '^(TestSimulation|TestNemesis)' . (every seed, no race detector)"
	go test -count=1 -timeout 30m -json -run '^(TestSimulation|TestNemesis)' . 2>&1 | "$tmp/testfmt"
fi
