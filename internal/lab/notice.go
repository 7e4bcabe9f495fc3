package lab

import (
	"bufio"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// connectionEndLine is the framework's log line for a connection that
// ended, as the stand-in writes it (a formatted time, the peer's name
// quoted) or as the framework's v3.2 branch does (the time in unix
// nanoseconds, the peer's name followed by its CRC32).
var connectionEndLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}|\d{16,20}) \[info\] \S+: connection with '?([^' ]+?)'?(?: \([0-9A-Fa-f]+\))? terminated`)

// lineTime parses a log line's time in either format.
func lineTime(text string) (time.Time, error) {
	if ns, err := strconv.ParseInt(text, 10, 64); err == nil {
		return time.Unix(0, ns), nil
	}
	return time.ParseInLocation("2006-01-02 15:04:05.000", text, time.Local)
}

// ConnectionEnds reads node i's log (its current incarnation) for the
// moments its framework reported that its connection with another node
// ended, at or after since: the first such moment per peer node name.
//
// A test uses it to log when each end of a cut noticed it, and to check
// that a one-sided cut (CutAbortOneSided, CutAbortResetLost) really left
// its quiet side unaware. The library's safety does not depend on when
// either end notices (docs/safety.md); only the opt-in
// AssumeSymmetricConnectionLoss assumes both do within
// ElectionTimeoutMin/30. The log has millisecond resolution; lines it
// cannot parse are skipped, and a framework that logs no such line yields
// nothing.
func (c *Cluster) ConnectionEnds(i int, since time.Time) map[string]time.Time {
	ends := make(map[string]time.Time)
	c.scanLog(i, since, func(line string) {
		m := connectionEndLine.FindStringSubmatch(line)
		if m == nil {
			return
		}
		if _, seen := ends[m[2]]; seen {
			return
		}
		if at, err := lineTime(m[1]); err == nil {
			ends[m[2]] = at
		}
	})
	return ends
}

// logLine is the start of every log line of a node process: its time, in
// either format, and its level.
var logLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}|\d{16,20}) \[`)

// LogLines returns the lines of node i's log (its current incarnation),
// written at or after since, that contain text. A test uses it to tell
// why something happened that its assertion did not expect, for example
// that a leader stepped down because its lease ran out rather than
// because it was outranked.
func (c *Cluster) LogLines(i int, since time.Time, text string) []string {
	var out []string
	c.scanLog(i, since, func(line string) {
		if strings.Contains(line, text) {
			out = append(out, line)
		}
	})
	return out
}

// scanLog calls fn with every line of node i's log (its current
// incarnation) written at or after since, in order; a line whose time it
// cannot read is skipped.
func (c *Cluster) scanLog(i int, since time.Time, fn func(line string)) {
	n := c.nodes[i]
	n.mu.Lock()
	path := n.logFile(n.incarnation)
	n.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	floor := since.Truncate(time.Millisecond)
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		m := logLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if at, err := lineTime(m[1]); err == nil && at.Before(floor) == false {
			fn(line)
		}
	}
}
