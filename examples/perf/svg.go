package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

// failoverSVG plots the crash failover of each cluster size as an empirical
// CDF: for a time t, the share of failovers that were over by t. A CDF
// shows the whole distribution, tail included, and distributions of
// different sizes overlay without hiding each other. Beside each size it
// draws, dashed, the same crash with fast failover off (section 1b) where
// the report has it. Each curve carries its samples (data-samples-ms), so
// that -replot can draw the figure again without measuring.
func failoverSVG(results []crashResult, off []offCurve) []byte {
	const (
		left, top, width, height = 72.0, 40.0, 640.0, 300.0
		right, bottom            = 250.0, 74.0
	)
	colors := []string{"#1565c0", "#2e7d32", "#c62828", "#6a1b9a", "#ef6c00"}

	// A logarithmic time axis: the fast path takes milliseconds, the
	// election timeouts it is compared with take hundreds, and a tail can
	// take seconds; on a linear axis one of them is always a smudge. It
	// runs from 1 ms to a decade boundary at or above the largest sample,
	// ElectionTimeoutMax and the slowest failover without the fast path.
	var hi, lo, top2 time.Duration
	for _, r := range results {
		hi = max(hi, r.all.max())
		lo = max(lo, r.lo)
		top2 = max(top2, r.hi)
	}
	for _, o := range off {
		hi = max(hi, o.max)
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
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" data-election-ms="%s %s">`+"\n",
		left+width+right, top+height+bottom, left+width+right, top+height+bottom, ms(lo), ms(top2))
	b.WriteString("<title>Crash failover: share of failovers complete by time t</title>\n")
	b.WriteString(`<style>text{font-family:sans-serif;font-size:12px;fill:#222}.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}</style>` + "\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#fff"/>`+"\n", left+width+right, top+height+bottom)
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-weight="bold">Crash failover (every link of the leader's node cut, the node stopped) until all survivors follow one new leader</text>`+"\n", left)

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
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">milliseconds after the crash (logarithmic)</text>`+"\n", left+width/2, top+height+38)
	fmt.Fprintf(&b, `<text x="18" y="%.1f" text-anchor="middle" transform="rotate(-90 18 %.1f)">failovers complete (share of runs)</text>`+"\n",
		top+height/2, top+height/2)

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

	// legend entries, two lines each, in the margin on the right
	entry := 0
	legendEntry := func(color string, dashed bool, title, detail string) {
		ly := top + 14 + float64(entry)*34
		entry++
		dash := ""
		if dashed {
			dash = ` stroke-dasharray="6,4"`
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", left+width+12, ly, left+width+34, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+width+40, ly+4, html.EscapeString(title))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11">%s</text>`+"\n", left+width+40, ly+18, html.EscapeString(detail))
	}
	colorOf := make(map[int]string)
	for i, r := range results {
		if r.all.n() == 0 {
			continue
		}
		color := colors[i%len(colors)]
		colorOf[r.nodes] = color
		var path, samples bytes.Buffer
		n := float64(r.all.n())
		fmt.Fprintf(&path, "M%.1f,%.1f", x(msOf(r.all.sorted[0])), y(0))
		for k, s := range r.all.sorted {
			v := msOf(s)
			fmt.Fprintf(&path, " L%.1f,%.1f L%.1f,%.1f", x(v), y(float64(k)/n), x(v), y(float64(k+1)/n))
			fmt.Fprintf(&samples, " %.3f", v)
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2" data-nodes="%d" data-samples-ms="%s"><title>%s</title></path>`+"\n",
			path.String(), color, r.nodes, strings.TrimSpace(samples.String()), html.EscapeString(legend(r)))
		legendEntry(color, false, fmt.Sprintf("%d nodes (%d runs)", r.nodes, r.all.n()),
			fmt.Sprintf("p50 %s, p99 %s ms", ms(r.all.pct(50)), ms(r.all.pct(99))))
	}

	// fast failover off: only its percentiles are known, so the curve is
	// drawn through them, from p50 up, and no further down than that
	for i, o := range off {
		color, ok := colorOf[o.nodes]
		if ok == false {
			color = colors[(len(results)+i)%len(colors)]
		}
		points := []struct {
			at    time.Duration
			share float64
		}{{o.p50, 0.5}, {o.p90, 0.9}, {o.p99, 0.99}, {o.max, 1}}
		var path bytes.Buffer
		for k, pt := range points {
			cmd := " L"
			if k == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f,%.1f", cmd, x(msOf(pt.at)), y(pt.share))
		}
		title := fmt.Sprintf("%d nodes, fast failover off: p50 %s, p90 %s, p99 %s, max %s ms over %d runs (section 1b)",
			o.nodes, ms(o.p50), ms(o.p90), ms(o.p99), ms(o.max), o.runs)
		fmt.Fprintf(&b, `<path class="off" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="6,4"><title>%s</title></path>`+"\n",
			strings.TrimSpace(path.String()), color, html.EscapeString(title))
		for _, pt := range points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(msOf(pt.at)), y(pt.share), color)
		}
		legendEntry(color, true, fmt.Sprintf("%d nodes, fast failover off", o.nodes),
			fmt.Sprintf("p50 %s, p99 %s ms", ms(o.p50), ms(o.p99)))
	}
	if len(off) > 0 {
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="11" fill="#555">Dashed: fast failover off, through the p50, p90, p99 and max of section 1b (process lab, a crash is SIGKILL).</text>`+"\n",
			left, top+height+60)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// offCurve is the crash failover of one cluster size with fast failover
// off, as section 1b reports it. That comparison is a test of package
// leader (the switch is unexported) and writes a table, not samples, so
// only these percentiles are known.
type offCurve struct {
	nodes, runs        int
	p50, p90, p99, max time.Duration
}

// offCurves reads the "off" rows of the compare section of a report:
// | off | nodes | runs | p50 ms | p90 ms | p99 ms | max ms | ...
func offCurves(report string) []offCurve {
	var curves []offCurve
	for _, line := range strings.Split(readSections(report)["compare"], "\n") {
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 7 || strings.TrimSpace(cells[0]) != "off" {
			continue
		}
		var c offCurve
		var values [4]float64
		_, err1 := fmt.Sscan(cells[1], &c.nodes)
		_, err2 := fmt.Sscan(cells[2], &c.runs)
		_, err3 := fmt.Sscan(strings.Join(cells[3:7], " "), &values[0], &values[1], &values[2], &values[3])
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		c.p50, c.p90, c.p99, c.max = msDuration(values[0]), msDuration(values[1]), msDuration(values[2]), msDuration(values[3])
		curves = append(curves, c)
	}
	return curves
}

func msDuration(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// replotResults reads the samples back from a plot failoverSVG wrote.
func replotResults(svg []byte) ([]crashResult, error) {
	var doc struct {
		Election string `xml:"data-election-ms,attr"`
		Paths    []struct {
			Nodes   int    `xml:"data-nodes,attr"`
			Samples string `xml:"data-samples-ms,attr"`
		} `xml:"path"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		return nil, err
	}
	var lo, hi float64
	fmt.Sscan(doc.Election, &lo, &hi)
	var results []crashResult
	for _, p := range doc.Paths {
		if p.Samples == "" {
			continue // a curve without samples: fast failover off
		}
		var samples []time.Duration
		for _, f := range strings.Fields(p.Samples) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return nil, fmt.Errorf("data-samples-ms: %w", err)
			}
			samples = append(samples, msDuration(v))
		}
		results = append(results, crashResult{nodes: p.Nodes, all: newDist(samples), lo: msDuration(lo), hi: msDuration(hi)})
	}
	if len(results) == 0 {
		return nil, errors.New("no curve with samples (data-samples-ms) in it")
	}
	return results, nil
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
