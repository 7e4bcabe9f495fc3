package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNotATerminal: a buffer, a file (go run ./cluster > out.txt) and a pipe
// are not terminals, so the demo prints plain lines to them.
func TestNotATerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for name, out := range map[string]io.Writer{"buffer": &bytes.Buffer{}, "file": file, "pipe": w} {
		if _, _, ok := terminalSize(out); ok {
			t.Errorf("%s taken for a terminal", name)
		}
	}
}

// TestFrameFits: a frame of the live screen is never taller or wider than
// the window, keeps the whole table on an 80x24 one, and still shows the
// table rows on a tiny one.
func TestFrameFits(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	d := newDemo(cfg, io.Discard)
	d.start = time.Now()
	for i, name := range d.names {
		d.obs.record(name, status{Up: true, State: "follower", Term: 2, Leader: d.names[0], View: 5, Quorum: 3,
			Unreachable: d.names[:i], At: time.Now()})
		d.obs.roleChanged(roleChange{Node: name, Leader: d.names[0], Term: 2, At: time.Now()})
		d.logs = append(d.logs, "A "+strings.Repeat("a long log line ", 10))
	}
	d.say("(c) %s", strings.Repeat("a caption that is far too long for one line ", 4))
	d.say("    %s", strings.Repeat("and a second one ", 8))
	for range 6 {
		d.finish(stepResult{Key: "b'", Title: "leader A killed (StopForce)", Leader: "A -> B", Term: 2, OK: true,
			Measured: strings.Repeat("failover 7ms ", 10), Took: time.Second})
	}
	for _, size := range [][2]int{{80, 24}, {40, 10}, {120, 50}} {
		width, height := size[0]-1, size[1]
		lines := d.frame(width, height)
		if len(lines) > height {
			t.Errorf("%dx%d: %d lines", size[0], size[1], len(lines))
		}
		for _, line := range lines {
			if w := visibleWidth(line); w > width {
				t.Errorf("%dx%d: a line of %d characters: %q", size[0], size[1], w, line)
			}
		}
		rows := 0
		for _, line := range lines {
			if strings.Contains(line, " follower ") {
				rows++
			}
		}
		if rows != len(d.names) {
			t.Errorf("%dx%d: %d of the %d table rows shown:\n%s", size[0], size[1], rows, len(d.names), strings.Join(lines, "\n"))
		}
	}
}

// TestClip keeps colours out of the count and closes them when it cuts.
func TestClip(t *testing.T) {
	colored := ansiBold + "leader" + ansiReset + " of term 12"
	if got := clip(colored, 17); got != colored {
		t.Errorf("clip to its own width changed it: %q", got)
	}
	got := clip(colored, 8)
	if visibleWidth(got) != 8 || strings.HasSuffix(got, ansiReset+"...") == false {
		t.Errorf("clip(%q, 8) = %q", colored, got)
	}
}
