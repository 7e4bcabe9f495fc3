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
	notes := 0
	for _, line := range strings.Split(summary, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		if fields[1] == "SLOW:" {
			notes++
			if fields[0] != "b." {
				t.Errorf("note on step %s: %s", fields[0], line)
			}
			continue
		}
		if w, ok := want[fields[0]]; ok && strings.Contains(line, " "+w+" ") == false {
			t.Errorf("step %s: want %s in %q", fields[0], w, line)
		}
	}
	if notes != 1 {
		t.Errorf("%d notes on slow figures, want 1:\n%s", notes, summary)
	}
}
