package demokit

import (
	"fmt"
	"time"
)

// SlowFactor is how many election timeouts a measured figure may take
// before it is flagged. An election normally ends within one
// ElectionTimeoutMax of its cause (a failover or handover within a few
// milliseconds); several times that means the figure measured something
// else - a machine that stalled, or node starts that blocked - and a demo
// must not present it as the election's.
const SlowFactor = 3

// SlowLimit is the longest a figure may take before it is flagged:
// SlowFactor times ElectionTimeoutMax (ms), plus extra for work the figure
// includes besides the election (a job's tick, a rediscovery period).
func SlowLimit(electionMax int, extra time.Duration) time.Duration {
	return SlowFactor*time.Duration(electionMax)*time.Millisecond + extra
}

// Slow reports whether took is above SlowLimit.
func Slow(took time.Duration, electionMax int, extra time.Duration) bool {
	return took > SlowLimit(electionMax, extra)
}

// SlowNote explains a flagged figure in a summary.
func SlowNote(electionMax int, extra time.Duration) string {
	note := fmt.Sprintf("SLOW: above %s = %d x ElectionTimeoutMax", SlowLimit(electionMax, extra), SlowFactor)
	if extra > 0 {
		note += " + " + extra.String()
	}
	return note + ": not the election's time (a stall? a blocked start?)"
}
