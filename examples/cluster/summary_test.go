package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestSummaryFlagsSlowFigures: a figure far above the election timeout is
// reported as SLOW with a note, never as ok; a failure stays FAILED.
func TestSummaryFlagsSlowFigures(t *testing.T) {
	cfg, err := parseConfig(nil, io.Discard) // ElectionTimeoutMax 300 ms: the limit is 900 ms
	if err != nil {
		t.Fatal(err)
	}
	d := newDemo(cfg, io.Discard)
	for _, s := range []stepResult{
		{Key: "a", Title: "first election", OK: true, Took: 190 * time.Millisecond},
		{Key: "b", Title: "leader killed", OK: true, Took: 3 * time.Second},
		{Key: "b'", Title: "restart", OK: true, Took: 1500 * time.Millisecond, Extra: rediscover}, // within 900 ms + 1 s
		{Key: "c", Title: "partition", OK: true},                                                  // no figure
		{Key: "e", Title: "graceful stop", OK: false, Took: 20 * time.Second},
	} {
		d.finish(s)
	}
	summary := d.summary(time.Minute)
	want := map[string]string{"a.": "ok", "b.": "SLOW", "b'.": "ok", "c.": "ok", "e.": "FAILED"}
	var notes []string // the step each note on a slow figure follows
	step := ""
	for _, line := range summary {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
		case fields[0] == "SLOW:":
			notes = append(notes, step)
		case want[fields[0]] != "":
			step = fields[0]
			if fields[1] != want[step] {
				t.Errorf("step %s: %s, want %s", step, fields[1], want[step])
			}
		}
	}
	if len(notes) != 1 || notes[0] != "b." {
		t.Errorf("notes on slow figures after steps %v, want [b.]:\n%s", notes, strings.Join(summary, "\n"))
	}
}
