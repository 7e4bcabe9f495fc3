//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used so far:
// every node, proxy and goroutine of the run, since they share the process.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
