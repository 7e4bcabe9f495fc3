package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// machine describes where the figures were taken.
func machine() string {
	return fmt.Sprintf("Go %s, %s/%s, %d cores (GOMAXPROCS %d)%s",
		strings.TrimPrefix(runtime.Version(), "go"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel())
}

// cpuModel reads the processor's name where the OS tells it (Linux).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if name, ok := strings.CutPrefix(s.Text(), "model name"); ok {
			return ", " + strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
		}
	}
	return ""
}

// loadAvg is the 1-minute load average (Linux): how busy the machine was,
// this command included; "" where unknown.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// loadWatch brackets a section with load averages, so the report says how
// contended the machine was while it ran.
type loadWatch struct {
	start time.Time
	first string
}

func watchLoad() loadWatch { return loadWatch{start: time.Now(), first: loadAvg()} }

func (w loadWatch) String() string {
	if w.first == "" {
		return fmt.Sprintf("took %s", time.Since(w.start).Round(time.Second))
	}
	return fmt.Sprintf("took %s; 1-min load average %s at the start, %s at the end",
		time.Since(w.start).Round(time.Second), w.first, loadAvg())
}

// builtFrom names the source of a binary built outside this checkout
// (go build -ldflags "-X main.builtFrom=commit abc1234"); revision then
// reports it instead of the working tree's state.
var builtFrom string

// revision names the code measured: the git commit, and whether the
// working tree differed from it. Unknown outside a git checkout.
func revision() string {
	if builtFrom != "" {
		return builtFrom
	}
	head, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "revision unknown"
	}
	text := "commit " + strings.TrimSpace(string(head))
	if status, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(status))) > 0 {
		text += " with uncommitted changes"
	}
	return text
}
