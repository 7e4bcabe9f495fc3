package main

import (
	"testing"
	"time"
)

// TEMPORARY probe of the canary alone.
func TestZZCanaryAlone(t *testing.T) {
	c, err := startCanary()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	time.Sleep(5 * time.Second)
	c.mu.Lock()
	for _, s := range c.stalls {
		t.Logf("stall %s .. %s (%s)", s.from.Format("15:04:05.000"), s.to.Format("15:04:05.000"), s.to.Sub(s.from))
	}
	c.mu.Unlock()
	start := time.Now()
	c.node.Network().GetNode("perf-x-nobody@localhost")
	t.Logf("one lookup: %s", time.Since(start))
}
