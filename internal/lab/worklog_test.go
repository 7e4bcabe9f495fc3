package lab

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// twoWriters opens one work log for nodes a@x and b@x.
func twoWriters(t *testing.T) (path string, a, b *WorkLog) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "worklog")
	var err error
	if a, err = OpenWorkLog(path, "a@x"); err != nil {
		t.Fatal(err)
	}
	if b, err = OpenWorkLog(path, "b@x"); err != nil {
		t.Fatal(err)
	}
	return path, a, b
}

func TestWorkLogRoundTrip(t *testing.T) {
	path, a, b := twoWriters(t)
	base := time.Unix(1700000000, 0)
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

// A record whose writer was killed in the middle of its write(2) is torn:
// Linux cuts the write short at a page of the file when SIGKILL is
// pending. The next writer's record then follows it on the same line; the
// reader keeps that one and drops the torn one, at the end of the file
// too, and still refuses a line that is not a record at all. Breaks: a
// leader killed while writing made the lab's failover test read
// "17966371796637109976522111 5 n2" as a malformed line and fail.
func TestWorkLogDropsATornRecord(t *testing.T) {
	path, killed, next := twoWriters(t)
	base := time.Unix(1700000000, 0)
	torn := func(term uint64, at time.Time) {
		t.Helper()
		line := "#" + strconv.FormatInt(at.UnixNano(), 10) + " " + strconv.FormatUint(term, 10) + " a@x\n"
		if _, err := killed.f.WriteString(line[:8]); err != nil {
			t.Fatal(err)
		}
	}
	killed.Record(1, base)
	torn(1, base.Add(5*time.Millisecond))
	next.Record(2, base.Add(20*time.Millisecond))
	torn(2, base.Add(25*time.Millisecond))
	records, err := ReadWorkLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 2 || records[0].Node != "a@x" || records[0].At.Equal(base) == false ||
		records[1].Node != "b@x" || records[1].Term != 2 || records[1].At.Equal(base.Add(20*time.Millisecond)) == false {
		t.Fatalf("want the two whole records, got %+v", records)
	}

	if err := os.WriteFile(path, []byte("#1700000000000000000 1 a@x\n1700000000005000000 1 a@x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWorkLog(path); err == nil {
		t.Fatal("a line without the record's mark read as a record")
	}
	if err := os.WriteFile(path, []byte("#1700000000000000000 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadWorkLog(path); err == nil {
		t.Fatal("a record without its node read as a record")
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
