package main

import (
	"bytes"
	"fmt"
	"html"
	"math"
	"time"
)

// failoverSVG plots the crash failover of each cluster size as an empirical
// CDF: for a time t, the share of failovers that were over by t. A CDF
// shows the whole distribution, tail included, and distributions of
// different sizes overlay without hiding each other.
func failoverSVG(results []crashResult) []byte {
	const (
		left, top, width, height = 64.0, 40.0, 640.0, 300.0
		right, bottom            = 200.0, 56.0
	)
	colors := []string{"#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00"}

	// A logarithmic time axis: the fast path takes milliseconds, the
	// election timeouts it is compared with take hundreds, and a tail can
	// take seconds; on a linear axis one of them is always a smudge. It
	// runs from 1 ms to a decade boundary at or above both the largest
	// sample and ElectionTimeoutMax.
	var hi, lo, top2 time.Duration
	for _, r := range results {
		hi = max(hi, r.all.max())
		lo = max(lo, r.lo)
		top2 = max(top2, r.hi)
	}
	msOf := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	xMin := 1.0
	xMax := math.Pow(10, math.Ceil(math.Log10(max(msOf(hi), msOf(top2), 10))))
	x := func(v float64) float64 {
		v = min(max(v, xMin), xMax)
		return left + width*math.Log10(v/xMin)/math.Log10(xMax/xMin)
	}
	y := func(share float64) float64 { return top + height*(1-share) }

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n",
		left+width+right, top+height+bottom, left+width+right, top+height+bottom)
	b.WriteString("<title>Crash failover: share of failovers complete by time t</title>\n")
	b.WriteString(`<style>text{font-family:sans-serif;font-size:12px;fill:#222}.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}</style>` + "\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#fff"/>`+"\n", left+width+right, top+height+bottom)
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-weight="bold">Crash failover (leader node StopForce) until all survivors follow one new leader</text>`+"\n", left)

	// grid and axes: 1, 2, 5 per decade
	for decade := xMin; decade < xMax; decade *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := decade * m
			fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", x(v), top, x(v), top+height)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(v), top+height+16, trimFloat(v))
		}
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(xMax), top+height+16, trimFloat(xMax))
	for i := 0; i <= 4; i++ {
		share := float64(i) / 4
		fmt.Fprintf(&b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", left, y(share), left+width, y(share))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", left-6, y(share)+4, share*100)
	}
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", left, top+height, left+width, top+height)
	fmt.Fprintf(&b, `<line class="axis" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", left, top, left, top+height)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">milliseconds after StopForce (logarithmic)</text>`+"\n", left+width/2, top+height+38)

	// the election timeouts: what a failover without the fast path waits
	for _, ref := range []struct {
		label string
		at    time.Duration
	}{{"ElectionTimeoutMin", lo}, {"ElectionTimeoutMax", top2}} {
		if ref.at <= 0 {
			continue
		}
		lx := x(msOf(ref.at))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888" stroke-dasharray="5,4"/>`+"\n", lx, top, lx, top+height)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555" transform="rotate(-90 %.1f %.1f)" text-anchor="end">%s</text>`+"\n", lx-4, top+4, lx-4, top+4, ref.label)
	}

	for i, r := range results {
		if r.all.n() == 0 {
			continue
		}
		color := colors[i%len(colors)]
		var path bytes.Buffer
		n := float64(r.all.n())
		fmt.Fprintf(&path, "M%.1f,%.1f", x(msOf(r.all.sorted[0])), y(0))
		for k, s := range r.all.sorted {
			v := msOf(s)
			fmt.Fprintf(&path, " L%.1f,%.1f L%.1f,%.1f", x(v), y(float64(k)/n), x(v), y(float64(k+1)/n))
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"><title>%s</title></path>`+"\n",
			path.String(), color, html.EscapeString(legend(r)))
		ly := top + 20 + float64(i)*36
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", left+width+12, ly, left+width+34, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%d nodes (%d runs)</text>`+"\n", left+width+40, ly+4, r.nodes, r.all.n())
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">p50 %s, p99 %s ms</text>`+"\n", left+width+40, ly+18, ms(r.all.pct(50)), ms(r.all.pct(99)))
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

func legend(r crashResult) string {
	return fmt.Sprintf("%d nodes: p50 %s ms, p90 %s ms, p99 %s ms, max %s ms over %d runs",
		r.nodes, ms(r.all.pct(50)), ms(r.all.pct(90)), ms(r.all.pct(99)), ms(r.all.max()), r.all.n())
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%g", v)
}
