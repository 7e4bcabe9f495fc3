package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"time"
)

// The timeline is an SVG: a title, the story's steps as bands along the
// top, one lane per node coloured by role over time, the promotions as
// dashed lines labelled above the lanes, and what the story did to the
// nodes (kills, stops, restarts, the cut and the heal) as solid lines
// labelled below them, with the failover and handover gaps written out in
// milliseconds: on an axis of many seconds a gap of a few milliseconds is
// narrower than a pixel. It is drawn from the observer's samples, the
// leadership callbacks and the story's marks after the story has ended.

var laneColor = map[string]string{
	"leader":      "#2e7d32",
	"follower":    "#90caf9",
	"no leader":   "#f48fb1", // a follower that knows no leader
	"candidate":   "#ffb300",
	"unclustered": "#9e9e9e",
	"down":        "#37474f",
	"starting":    "#e0e0e0",
}

var markColor = map[string]string{
	"kill":    "#c62828",
	"stop":    "#6a1b9a",
	"restart": "#546e7a",
	"cut":     "#d84315",
	"heal":    "#1565c0",
}

const (
	tlLeft     = 40.0   // room for the lane labels
	tlWidth    = 1000.0 // the time axis
	tlTop      = 92.0   // title, step bands, promotion labels
	tlLane     = 26.0
	tlLaneGap  = 8.0
	tlBottom   = 130.0 // mark labels, axis, legend
	tlMinWidth = 0.5   // a shorter segment would not render
)

func writeTimeline(path string, d *demo) error {
	return os.WriteFile(path, timelineSVG(d), 0o644)
}

func timelineSVG(d *demo) []byte {
	d.mu.Lock()
	phases := append([]phase(nil), d.phases...)
	marks := append([]mark(nil), d.marks...)
	d.mu.Unlock()
	history := d.obs.allHistory()
	events := d.obs.allEvents()

	start := d.start
	end := time.Now()
	if n := len(phases); n > 0 && phases[n-1].End.IsZero() == false {
		end = phases[n-1].End
	}
	span := max(end.Sub(start), time.Millisecond)
	x := func(t time.Time) float64 {
		offset := min(max(t.Sub(start), 0), span)
		return tlLeft + tlWidth*float64(offset)/float64(span)
	}
	lanesHeight := float64(len(d.names))*(tlLane+tlLaneGap) - tlLaneGap
	lanesBottom := tlTop + lanesHeight
	height := lanesBottom + tlBottom
	width := tlLeft + tlWidth + 30

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", width, height, width, height)
	b.WriteString("<title>Leader election timeline</title>\n")
	b.WriteString(`<style>text{font-family:sans-serif;font-size:13px;fill:#222}.small{font-size:12px}.title{font-size:16px;font-weight:bold}</style>` + "\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text class="title" x="%.0f" y="22">Leader election: %d nodes, election timeout %d-%d ms, heartbeat %d ms, MinClusterSize %d</text>`+"\n",
		tlLeft, len(d.names), d.cfg.electionMin, d.cfg.electionMax, d.cfg.heartbeat, d.cfg.minSize)

	// the story's steps
	b.WriteString(`<g class="phases">` + "\n")
	for i, p := range phases {
		fill := "#f5f5f5"
		if i%2 == 1 {
			fill = "#e8eaf6"
		}
		x0, x1 := x(p.Start), x(p.End)
		fmt.Fprintf(&b, `<rect x="%.1f" y="32" width="%.1f" height="%.0f" fill="%s"><title>%s</title></rect>`+"\n",
			x0, max(x1-x0, tlMinWidth), lanesBottom-32, fill, esc("("+p.Key+") "+p.Label))
		label := "(" + p.Key + ")"
		if full := label + " " + p.Label; float64(len(full))*7.5 < x1-x0 {
			label = full // wide enough for the whole caption
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="48">%s</text>`+"\n", x0+4, esc(label))
	}
	b.WriteString("</g>\n")

	// the partition, shaded over every lane while its links are cut
	for i, m := range marks {
		if m.Kind != "cut" {
			continue
		}
		healed := end
		for _, later := range marks[i+1:] {
			if later.Kind == "heal" {
				healed = later.At
				break
			}
		}
		fmt.Fprintf(&b, `<rect class="partition" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.12"/>`+"\n",
			x(m.At), tlTop-4, max(x(healed)-x(m.At), tlMinWidth), lanesHeight+8, markColor["cut"])
	}

	// one lane per node
	for i, name := range d.names {
		y := tlTop + float64(i)*(tlLane+tlLaneGap)
		fmt.Fprintf(&b, `<g class="lane" data-node="%s">`+"\n", esc(d.letter(name)))
		fmt.Fprintf(&b, `<text x="12" y="%.1f" font-weight="bold">%s</text>`+"\n", y+tlLane/2+5, esc(d.letter(name)))
		h := history[name]
		for j, s := range h {
			segEnd := end
			if j+1 < len(h) {
				segEnd = h[j+1].At
			}
			x0, x1 := x(s.At), x(segEnd)
			if x1 <= x0 {
				continue
			}
			state := s.State
			if s.State == "follower" && s.Leader == "" {
				state = "no leader"
			}
			leaderText := ""
			if s.Leader != "" {
				leaderText = ", leader " + d.letter(s.Leader)
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" stroke="#ffffff" stroke-width="0.3"><title>%s</title></rect>`+"\n",
				x0, y, max(x1-x0, tlMinWidth), tlLane, laneColor[state],
				esc(fmt.Sprintf("%s %s, term %d%s, %.2fs-%.2fs", d.letter(name), state, s.Term, leaderText,
					s.At.Sub(start).Seconds(), segEnd.Sub(start).Seconds())))
		}
		b.WriteString("</g>\n")
	}

	// promotions: dashed lines, labelled above the lanes with term and node
	b.WriteString(`<g class="leader-changes">` + "\n")
	promotions := 0
	for _, e := range events {
		if e.Leading == false {
			continue
		}
		labelY := 68 + float64(promotions%2)*15 // two rows, so two quick promotions stay readable
		promotions++
		ex := x(e.At)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#1b5e20" stroke-width="1.2" stroke-dasharray="4,3"/>`+"\n",
			ex, labelY+3, ex, lanesBottom)
		label := fmt.Sprintf("%s leads, term %d", d.letter(e.Node), e.Term)
		fmt.Fprintf(&b, `<text class="small" %s y="%.0f" fill="#1b5e20">%s</text>`+"\n", labelAt(ex, label, 6.5), labelY, esc(label))
	}
	b.WriteString("</g>\n")

	// what the story did: solid lines, labelled below the lanes
	b.WriteString(`<g class="marks">` + "\n")
	for i, m := range marks {
		mx := x(m.At)
		labelY := lanesBottom + 18 + float64(i%2)*16
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n",
			mx, tlTop-4, mx, labelY-11, markColor[m.Kind])
		fmt.Fprintf(&b, `<text %s y="%.1f" fill="%s" font-weight="bold">%s</text>`+"\n", labelAt(mx, m.Label, 7.5), labelY, markColor[m.Kind], esc(m.Label))
	}
	b.WriteString("</g>\n")

	// time axis, one tick per second (or per ten when the story is long)
	axisY := lanesBottom + 52
	b.WriteString(`<g class="axis">` + "\n")
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", tlLeft, axisY, tlLeft+tlWidth, axisY)
	step := time.Second
	if span > 60*time.Second {
		step = 10 * time.Second
	}
	for t := time.Duration(0); t <= span; t += step {
		tx := x(start.Add(t))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", tx, axisY, tx, axisY+4)
		fmt.Fprintf(&b, `<text class="small" x="%.1f" y="%.1f" text-anchor="middle">%ds</text>`+"\n", tx, axisY+17, int(t.Seconds()))
	}
	b.WriteString("</g>\n")

	// legend
	b.WriteString(`<g class="legend">` + "\n")
	lx, ly := tlLeft, axisY+40
	for _, state := range []string{"leader", "follower", "no leader", "candidate", "unclustered", "starting", "down"} {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="14" height="14" fill="%s" stroke="#999" stroke-width="0.5"/>`+"\n", lx, ly-11, laneColor[state])
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">%s</text>`+"\n", lx+18, ly, state)
		lx += 30 + 8*float64(len(state))
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#1b5e20" stroke-width="1.2" stroke-dasharray="4,3"/>`+"\n", lx, ly-4, lx+16, ly-4)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">promotion</text>`+"\n", lx+20, ly)
	lx += 100
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", lx, ly-4, lx+16, ly-4, markColor["kill"])
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">kill, stop, restart, cut, heal</text>`+"\n", lx+20, ly)
	b.WriteString("</g>\n</svg>\n")
	return b.Bytes()
}

// labelAt places a label just right of a line at x, or just left of it
// when it would run off the right edge; perChar is its rough width.
func labelAt(x float64, label string, perChar float64) string {
	if x+3+perChar*float64(len(label)) > tlLeft+tlWidth+25 {
		return fmt.Sprintf(`x="%.1f" text-anchor="end"`, x-3)
	}
	return fmt.Sprintf(`x="%.1f"`, x+3)
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
