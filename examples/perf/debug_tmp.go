package main

import (
	"os"
	"time"
)

// TEMPORARY: dump what happened in a slow failover.
func debugRun(p *plan, h *harness, from time.Time, took time.Duration) {
	if os.Getenv("PERF_DEBUG") == "" || took < 100*time.Millisecond {
		return
	}
	p.progress("--- slow run %s", took)
	h.rec.mu.Lock()
	for _, e := range h.rec.events {
		if e.at.After(from.Add(-10 * time.Millisecond)) {
			p.progress("  +%6.1fms ev kind=%d node=%s leader=%s term=%d", float64(e.at.Sub(from))/1e6, e.kind, e.node[len(e.node)-12:], e.leader.Node, e.term)
		}
	}
	h.rec.mu.Unlock()
	for _, l := range h.logs.lastLines() {
		p.progress("  log %s", l)
	}
}
