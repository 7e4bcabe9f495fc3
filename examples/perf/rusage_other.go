//go:build !unix

package main

import "time"

// cpuTime is not available here; the CPU columns then read "n/a".
func cpuTime() (time.Duration, bool) { return 0, false }
