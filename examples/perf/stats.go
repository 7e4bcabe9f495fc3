package main

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// dist is a sample of durations and its order statistics.
type dist struct {
	samples []time.Duration // in the order measured
	sorted  []time.Duration
}

func newDist(samples []time.Duration) dist {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return dist{samples: samples, sorted: sorted}
}

func (d dist) n() int { return len(d.sorted) }

// pct is the p-th percentile (0..100) by the nearest-rank method: with 50
// samples p99 is the largest one, which is the honest reading of a small
// sample rather than an interpolation beyond it.
func (d dist) pct(p float64) time.Duration {
	if len(d.sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(d.sorted))))
	rank = min(max(rank, 1), len(d.sorted))
	return d.sorted[rank-1]
}

func (d dist) max() time.Duration {
	if len(d.sorted) == 0 {
		return 0
	}
	return d.sorted[len(d.sorted)-1]
}

func (d dist) min() time.Duration {
	if len(d.sorted) == 0 {
		return 0
	}
	return d.sorted[0]
}

func (d dist) mean() time.Duration {
	if len(d.sorted) == 0 {
		return 0
	}
	var sum time.Duration
	for _, s := range d.sorted {
		sum += s
	}
	return sum / time.Duration(len(d.sorted))
}

// ms formats a duration in milliseconds with a precision that suits it.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	switch {
	case v == 0:
		return "0"
	case v < 10:
		return fmt.Sprintf("%.2f", v)
	case v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio formats a/b.
func ratio(a, b time.Duration) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// bytesText formats a byte count.
func bytesText(b float64) string {
	switch {
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", b/(1<<10))
	}
	return fmt.Sprintf("%.0f B", b)
}
