package lab

import (
	"bufio"
	"os"
	"regexp"
	"time"
)

// connectionEndLine is the framework's log line for a connection that
// ended, with the default logger's time format.
var connectionEndLine = regexp.MustCompile(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \[info\] \S+: connection with '([^']+)' terminated`)

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
	n := c.nodes[i]
	n.mu.Lock()
	path := n.logFile(n.incarnation)
	n.mu.Unlock()
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	ends := make(map[string]time.Time)
	floor := since.Truncate(time.Millisecond)
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 64<<10), 1<<20)
	for lines.Scan() {
		m := connectionEndLine.FindStringSubmatch(lines.Text())
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000", m[1], time.Local)
		if err != nil || at.Before(floor) {
			continue
		}
		if _, seen := ends[m[2]]; seen == false {
			ends[m[2]] = at
		}
	}
	return ends
}
