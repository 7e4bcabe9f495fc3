package lab

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The leader-only work log: every node's actor runs a frequent tick and,
// only while IsLeader() is true, appends one record to a file all nodes
// share. Two nodes doing leader-only work at overlapping times show up as
// interleaved records of different nodes.
//
// A record is one line "#<unix ns> <term> <node>\n" written with a single
// write(2) on an O_APPEND descriptor, so lines of concurrent writers never
// interleave (a local file system appends each such write atomically). A
// line "#<unix ns> <term> <node> end" says that the node's leader-only work
// stopped at that instant (WorkLog.End).
//
// Atomic, but not always whole: Linux cuts a write short when the writer
// gets SIGKILL while the write crosses a page of the file, and the lab
// kills leaders in the middle of their work. The torn start of a record is
// then followed, on the same line, by the next writer's record; the "#"
// that opens each record (node names have none) tells where that one
// begins, and a record counts only if its own newline ends it. A torn
// record is dropped: it is the last unit of work of a node killed while
// writing it, which leaves out at most one tick of that node's work.

// WorkLog appends records to the shared file for one node.
type WorkLog struct {
	f    *os.File
	node string
}

// OpenWorkLog opens (creating it if needed) the shared log for node.
func OpenWorkLog(path, node string) (*WorkLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lab: open the work log: %w", err)
	}
	return &WorkLog{f: f, node: node}, nil
}

// Record appends one unit of leader-only work done at "at" in term. Read
// the clock before checking leadership and pass that reading here:
//
//	at := time.Now()
//	if a.IsLeader() { w.Record(a.Term(), at) }
//
// so that a process stopped between the check and the write cannot stamp
// an old decision with a late time, and a process stopped between the
// clock read and the check re-checks leadership after it resumes.
func (w *WorkLog) Record(term uint64, at time.Time) error { return w.write(term, at, "") }

// End records that the node's leader-only work stopped at "at": its
// HandleBecomeFollower or Terminate ran, so none of its work runs after it.
// It ends the node's last unit of work early (FindOverlaps): a graceful
// handover runs HandleBecomeFollower before it tells the successor, and
// can then be faster than one tick.
func (w *WorkLog) End(term uint64, at time.Time) error { return w.write(term, at, " end") }

// write appends one line, with suffix before its end, in a single write(2).
func (w *WorkLog) write(term uint64, at time.Time, suffix string) error {
	if w == nil {
		return nil
	}
	line := "#" + strconv.FormatInt(at.UnixNano(), 10) + " " + strconv.FormatUint(term, 10) + " " + w.node + suffix + "\n"
	_, err := w.f.WriteString(line)
	return err
}

// WorkRecord is one line of the work log.
type WorkRecord struct {
	At   time.Time
	Term uint64
	Node string
	End  bool // the node's work stopped at At (WorkLog.End)
}

// ReadWorkLog reads the whole records of a work log, ordered by time; torn
// ones (their writer was killed while writing them) are left out.
func ReadWorkLog(path string) ([]WorkRecord, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	lines := strings.Split(string(data), "\n")
	// after the last newline: nothing, or a record torn at the end
	lines = lines[:len(lines)-1]
	var records []WorkRecord
	for i, text := range lines {
		if strings.HasPrefix(text, "#") == false {
			return nil, fmt.Errorf("lab: work log line %d: %q is not \"#<ns> <term> <node>\"", i+1, text)
		}
		// what comes before the last "#" is torn
		fields := strings.Fields(text[strings.LastIndexByte(text, '#')+1:])
		if len(fields) != 3 && (len(fields) != 4 || fields[3] != "end") {
			return nil, fmt.Errorf("lab: work log line %d: %q is not \"#<ns> <term> <node>\"", i+1, text)
		}
		ns, err1 := strconv.ParseInt(fields[0], 10, 64)
		term, err2 := strconv.ParseUint(fields[1], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("lab: work log line %d: %q is not \"#<ns> <term> <node>\"", i+1, text)
		}
		records = append(records, WorkRecord{At: time.Unix(0, ns), Term: term, Node: fields[2], End: len(fields) == 4})
	}
	slices.SortStableFunc(records, func(a, b WorkRecord) int { return a.At.Compare(b.At) })
	return records, nil
}

// DefaultMargin is the clock-comparison margin of the overlap analysis.
// Every node process reads the same machine clock (CLOCK_REALTIME through
// the vDSO), so there is no skew between them to allow for; what remains
// is the distance between the moment a node decided it leads and the
// clock reading it recorded, which is a few microseconds unless the
// process is preempted in between, and a wall-clock step (NTP slews by
// microseconds per second). One millisecond covers that on a loaded box
// while staying far below any election timeout, so it cannot hide a real
// overlap of interest; the margin widens intervals, so it errs toward
// reporting.
const DefaultMargin = time.Millisecond

// Overlap is a time during which two nodes both did leader-only work.
type Overlap struct {
	A, B         string
	TermA, TermB uint64 // the terms of the two nodes' records in it
	Start, End   time.Time
}

// Duration is how long both nodes did leader-only work.
func (o Overlap) Duration() time.Duration { return o.End.Sub(o.Start) }

func (o Overlap) String() string {
	return fmt.Sprintf("%s (term %d) and %s (term %d) both led for %.1f ms from %s",
		o.A, o.TermA, o.B, o.TermB, float64(o.Duration())/float64(time.Millisecond), o.Start.Format("15:04:05.000000"))
}

// FindOverlaps reports the times at which two different nodes both did
// leader-only work. A record at t stands for the unit of work of one tick,
// [t, t+tick], unless the node's end record (WorkLog.End) at e comes
// first: then it lasts until e; each interval is widened by margin at its
// end (see DefaultMargin); a node's intervals are merged, and every
// intersection of two nodes' merged intervals is an Overlap, ordered by
// start. A handover faster than one tick counts unless the old leader's
// work had stopped before the new one started; a process that dies writes
// no end record, and its last unit of work runs its full tick.
func FindOverlaps(records []WorkRecord, tick, margin time.Duration) []Overlap {
	type span struct {
		start, end  time.Time
		lastAt      time.Time // the last record's
		first, last uint64    // terms
	}
	spans := map[string][]span{}
	sorted := slices.Clone(records)
	slices.SortStableFunc(sorted, func(a, b WorkRecord) int { return a.At.Compare(b.At) })
	for _, r := range sorted {
		end := r.At.Add(tick + margin)
		list := spans[r.Node]
		if r.End {
			// never before the node's last record: an end record only
			// shortens the unit of work that record began
			if n := len(list); n > 0 {
				if stop := later(r.At, list[n-1].lastAt).Add(margin); stop.Before(list[n-1].end) {
					list[n-1].end = stop
				}
			}
			continue
		}
		if n := len(list); n > 0 && r.At.After(list[n-1].end) == false {
			if end.After(list[n-1].end) {
				list[n-1].end = end
			}
			list[n-1].last, list[n-1].lastAt = r.Term, r.At
			spans[r.Node] = list
			continue
		}
		spans[r.Node] = append(list, span{start: r.At, end: end, lastAt: r.At, first: r.Term, last: r.Term})
	}
	nodes := make([]string, 0, len(spans))
	for node := range spans {
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	var overlaps []Overlap
	for x := 0; x < len(nodes); x++ {
		for y := x + 1; y < len(nodes); y++ {
			a, b := spans[nodes[x]], spans[nodes[y]]
			for i, j := 0, 0; i < len(a) && j < len(b); {
				start, end := later(a[i].start, b[j].start), earlier(a[i].end, b[j].end)
				if start.Before(end) {
					overlaps = append(overlaps, Overlap{
						A: nodes[x], B: nodes[y], TermA: a[i].last, TermB: b[j].first,
						Start: start, End: end,
					})
				}
				if a[i].end.Before(b[j].end) {
					i++
				} else {
					j++
				}
			}
		}
	}
	slices.SortFunc(overlaps, func(p, q Overlap) int { return p.Start.Compare(q.Start) })
	return overlaps
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// WorkSummary describes the records per node and term, for logs.
func WorkSummary(records []WorkRecord) string {
	type key struct {
		node string
		term uint64
	}
	type run struct {
		key         key
		count       int
		first, last time.Time
	}
	var runs []run
	for _, r := range records {
		if r.End {
			continue
		}
		k := key{r.Node, r.Term}
		if n := len(runs); n > 0 && runs[n-1].key == k {
			runs[n-1].count++
			runs[n-1].last = r.At
			continue
		}
		runs = append(runs, run{key: k, count: 1, first: r.At, last: r.At})
	}
	var b strings.Builder
	for _, r := range runs {
		fmt.Fprintf(&b, "%s term %d: %d records %s .. %s\n", r.key.node, r.key.term, r.count,
			r.first.Format("15:04:05.000000"), r.last.Format("15:04:05.000000"))
	}
	return b.String()
}
