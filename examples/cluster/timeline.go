package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"time"
)

// The timeline is an SVG: one lane per node, coloured by role over time,
// a dashed line where a node became leader, and the story's steps as bands
// along the top. It is drawn from the observer's samples and the
// leadership callbacks after the story has ended.

var laneColor = map[string]string{
	"leader":      "#2e7d32",
	"follower":    "#90caf9",
	"no leader":   "#ffe0b2", // a follower that knows no leader
	"candidate":   "#ffb300",
	"unclustered": "#bdbdbd",
	"down":        "#ffebee",
	"starting":    "#eeeeee",
}

const (
	tlLeft     = 70.0  // room for the lane labels
	tlWidth    = 960.0 // the time axis
	tlTop      = 64.0  // room for the step bands and leader labels
	tlLane     = 26.0
	tlLaneGap  = 8.0
	tlBottom   = 70.0 // axis and legend
	tlMinWidth = 0.5  // a shorter segment would not render
)

func writeTimeline(path string, d *demo) error {
	return os.WriteFile(path, timelineSVG(d), 0o644)
}

func timelineSVG(d *demo) []byte {
	d.mu.Lock()
	phases := append([]phase(nil), d.phases...)
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
	height := tlTop + lanesHeight + tlBottom
	width := tlLeft + tlWidth + 20

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f">`+"\n", width, height, width, height)
	b.WriteString("<title>Leader election timeline</title>\n")
	b.WriteString(`<style>text{font-family:sans-serif;font-size:11px;fill:#222}.small{font-size:9px}</style>` + "\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%.0f" height="%.0f" fill="#ffffff"/>`+"\n", width, height)

	// the story's steps
	b.WriteString(`<g class="phases">` + "\n")
	for i, p := range phases {
		fill := "#f5f5f5"
		if i%2 == 1 {
			fill = "#e8eaf6"
		}
		x0, x1 := x(p.Start), x(p.End)
		fmt.Fprintf(&b, `<rect x="%.1f" y="4" width="%.1f" height="%.0f" fill="%s"><title>%s</title></rect>`+"\n",
			x0, max(x1-x0, tlMinWidth), tlTop+lanesHeight-4, fill, esc("("+p.Key+") "+p.Label))
		label := "(" + p.Key + ")"
		if full := label + " " + p.Label; float64(len(full))*6 < x1-x0 {
			label = full // wide enough for the whole caption
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="16">%s</text>`+"\n", x0+3, esc(label))
	}
	b.WriteString("</g>\n")

	// one lane per node
	for i, name := range d.names {
		y := tlTop + float64(i)*(tlLane+tlLaneGap)
		fmt.Fprintf(&b, `<g class="lane" data-node="%s">`+"\n", esc(d.letter(name)))
		fmt.Fprintf(&b, `<text x="8" y="%.1f">%s</text>`+"\n", y+tlLane/2+4, esc(d.letter(name)))
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
			leaderText := ""
			if s.Leader != "" {
				leaderText = ", leader " + d.letter(s.Leader)
			}
			fill := laneColor[s.State]
			if s.State == "follower" && s.Leader == "" {
				fill = laneColor["no leader"]
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" stroke="#ffffff" stroke-width="0.3"><title>%s</title></rect>`+"\n",
				x0, y, max(x1-x0, tlMinWidth), tlLane, fill,
				esc(fmt.Sprintf("%s %s, term %d%s, %.2fs-%.2fs", d.letter(name), s.State, s.Term, leaderText,
					s.At.Sub(start).Seconds(), segEnd.Sub(start).Seconds())))
		}
		b.WriteString("</g>\n")
	}

	// leader changes: every promotion, labelled with term and node
	b.WriteString(`<g class="leader-changes">` + "\n")
	promotions := 0
	for _, e := range events {
		if e.Leading == false {
			continue
		}
		// alternate label rows, so two quick promotions stay readable
		labelY := 32 + float64(promotions%2)*10
		promotions++
		ex := x(e.At)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="22" x2="%.1f" y2="%.1f" stroke="#1b5e20" stroke-width="1" stroke-dasharray="3,2"/>`+"\n",
			ex, ex, tlTop+lanesHeight)
		fmt.Fprintf(&b, `<text class="small" x="%.1f" y="%.0f" fill="#1b5e20">T%d %s</text>`+"\n",
			ex+2, labelY, e.Term, esc(d.letter(e.Node)))
	}
	b.WriteString("</g>\n")

	// time axis, one tick per second (or per ten when the story is long)
	axisY := tlTop + lanesHeight + 14
	b.WriteString(`<g class="axis">` + "\n")
	step := time.Second
	if span > 60*time.Second {
		step = 10 * time.Second
	}
	for t := time.Duration(0); t <= span; t += step {
		tx := x(start.Add(t))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#888"/>`+"\n", tx, axisY-4, tx, axisY)
		fmt.Fprintf(&b, `<text class="small" x="%.1f" y="%.1f">%ds</text>`+"\n", tx-4, axisY+10, int(t.Seconds()))
	}
	b.WriteString("</g>\n")

	// legend
	b.WriteString(`<g class="legend">` + "\n")
	lx := tlLeft
	for _, state := range []string{"leader", "follower", "no leader", "candidate", "unclustered", "down"} {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="12" height="12" fill="%s" stroke="#999" stroke-width="0.5"/>`+"\n", lx, axisY+24, laneColor[state])
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">%s</text>`+"\n", lx+16, axisY+34, state)
		lx += 95
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#1b5e20" stroke-dasharray="3,2"/>`+"\n", lx, axisY+30, lx+14, axisY+30)
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">became leader (term, node)</text>`+"\n", lx+18, axisY+34)
	b.WriteString("</g>\n</svg>\n")
	return b.Bytes()
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
