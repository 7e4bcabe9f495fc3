package main

import (
	"fmt"
	"os"
	"runtime"
	"time"
)

// TEMPORARY: dump what happened in a slow failover.
func debugRun(p *plan, h *harness, from time.Time, took time.Duration) {
	if os.Getenv("PERF_DEBUG") == "" || took < 100*time.Millisecond {
		return
	}
	p.canary.settle(from.Add(took))
	p.progress("--- slow run %s, canary stalled=%v", took, p.canary.stalled(from, from.Add(took)))
	p.canary.mu.Lock()
	for _, st := range p.canary.stalls {
		if st.to.After(from.Add(-3*time.Second)) && st.from.Before(from.Add(took+3*time.Second)) {
			p.progress("  canary stall %+.0fms .. %+.0fms", float64(st.from.Sub(from))/1e6, float64(st.to.Sub(from))/1e6)
		}
	}
	p.canary.mu.Unlock()
	h.rec.mu.Lock()
	for _, e := range h.rec.events {
		if e.at.After(from.Add(-10*time.Millisecond)) && false {
			p.progress("  +%6.1fms ev kind=%d node=%s leader=%s term=%d", float64(e.at.Sub(from))/1e6, e.kind, e.node[len(e.node)-12:], e.leader.Node, e.term)
		}
	}
	h.rec.mu.Unlock()
	for _, l := range h.logs.lastLines()[:0] {
		p.progress("  log %s", l)
	}
}

// TEMPORARY: dump every goroutine if a failover is still open after 300 ms.
func debugWatch(done chan struct{}) {
	if os.Getenv("PERF_DEBUG") == "" {
		return
	}
	go func() {
		select {
		case <-done:
		case <-time.After(300 * time.Millisecond):
			buf := make([]byte, 64<<20)
			n := runtime.Stack(buf, true)
			os.WriteFile(fmt.Sprintf("/tmp/stall-%d.txt", time.Now().UnixNano()), buf[:n], 0o644)
		}
	}()
}
