package lab

import (
	"path/filepath"
	"testing"
	"time"
)

func TestWorkLogRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "worklog")
	base := time.Unix(1700000000, 0)
	a, err := OpenWorkLog(path, "a@x")
	if err != nil {
		t.Fatal(err)
	}
	b, err := OpenWorkLog(path, "b@x")
	if err != nil {
		t.Fatal(err)
	}
	a.Record(1, base.Add(10*time.Millisecond))
	b.Record(2, base.Add(5*time.Millisecond))
	a.End(1, base.Add(12*time.Millisecond))
	records, err := ReadWorkLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 3 || records[0].Node != "b@x" || records[0].Term != 2 || records[1].Node != "a@x" ||
		records[1].At.Equal(base.Add(10*time.Millisecond)) == false || records[1].End || records[2].End == false {
		t.Fatalf("records %+v", records)
	}
}

func TestFindOverlaps(t *testing.T) {
	base := time.Unix(1700000000, 0)
	ms := func(n float64) time.Time { return base.Add(time.Duration(n * float64(time.Millisecond))) }
	run := func(node string, term uint64, from, to, every float64) []WorkRecord {
		var out []WorkRecord
		for at := from; at <= to; at += every {
			out = append(out, WorkRecord{At: ms(at), Term: term, Node: node})
		}
		return out
	}
	const tick, margin = 5 * time.Millisecond, time.Millisecond
	cases := []struct {
		name    string
		records []WorkRecord
		want    []time.Duration
	}{
		{"one node", run("a", 1, 0, 100, 5), nil},
		// a failover after an election timeout: far apart
		{"clean failover", append(run("a", 1, 0, 100, 5), run("b", 2, 400, 500, 5)...), nil},
		// b's first record 1 ms after a's last unit of work ended (and its margin)
		{"just apart", append(run("a", 1, 0, 100, 5), run("b", 2, 107, 200, 5)...), nil},
		// a's last unit of work [100, 105] (+1) is still running at 103
		{"handover inside a tick", append(run("a", 1, 0, 100, 5), run("b", 2, 103, 200, 5)...), []time.Duration{3 * time.Millisecond}},
		// a handed over at 101 (its end record): its work stopped before
		// b's began
		{"handover after the end", append(append(run("a", 1, 0, 100, 5), WorkRecord{At: ms(101), Term: 1, Node: "a", End: true}), run("b", 2, 103, 200, 5)...), nil},
		// an end record after b began hides nothing: a's work ran until it
		{"end after the successor began", append(append(run("a", 1, 0, 100, 5), WorkRecord{At: ms(104), Term: 1, Node: "a", End: true}), run("b", 2, 103, 200, 5)...),
			[]time.Duration{2 * time.Millisecond}},
		// a late end record changes nothing, nor does one of a node that
		// did no work
		{"late end", append(append(run("a", 1, 0, 100, 5), WorkRecord{At: ms(300), Term: 1, Node: "a", End: true}), run("b", 2, 103, 200, 5)...), []time.Duration{3 * time.Millisecond}},
		// a resumed stalled leader does two more units while b leads
		{"resumed leader", append(append(run("a", 1, 0, 100, 5), run("b", 2, 400, 900, 5)...), run("a", 1, 700, 705, 5)...),
			[]time.Duration{11 * time.Millisecond}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FindOverlaps(tc.records, tick, margin)
			if len(got) != len(tc.want) {
				t.Fatalf("overlaps %v, want durations %v", got, tc.want)
			}
			for i, o := range got {
				if o.Duration() != tc.want[i] || o.A != "a" || o.B != "b" {
					t.Errorf("overlap %d: %s, want %s between a and b", i, o, tc.want[i])
				}
			}
		})
	}
}

// Both runtimes' log lines for a connection's end parse, with their times.
func TestConnectionEndLines(t *testing.T) {
	for line, want := range map[string]string{
		"2026-12-04 20:54:13.643 [info] n5@10.77.2.5: connection with 'n1r2@10.77.2.1' terminated":                 "n1r2@10.77.2.1",
		"1796418442660688439 [info] 883BAFDC: connection with n1@10.77.2.1 (94CF064C) terminated":                  "n1@10.77.2.1",
		"1796418442660688439 [info] 883BAFDC: connection with n1@10.77.2.1 (94CF064C) terminated with reason: EOF": "n1@10.77.2.1",
	} {
		m := connectionEndLine.FindStringSubmatch(line)
		if m == nil || m[2] != want {
			t.Errorf("%q: got %v, want peer %s", line, m, want)
			continue
		}
		if _, err := lineTime(m[1]); err != nil {
			t.Errorf("%q: time %q: %v", line, m[1], err)
		}
	}
}
