package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The live screen is a frame of lines redrawn in place every 100 ms. It is
// sized to the terminal on every redraw (the window may be resized): no line
// may wrap and the frame may not be taller than the window, or the terminal
// scrolls and the table is torn apart. What does not fit is dropped, the
// table last.

// terminalSize reports the size of the terminal w writes to; ok is false
// when w is not one (a file, a pipe, a buffer): the demo then prints plain
// lines instead of redrawing.
func terminalSize(w io.Writer) (cols, rows int, ok bool) {
	f, isFile := w.(*os.File)
	if isFile == false {
		return 0, 0, false
	}
	return fileTerminalSize(f)
}

// fallbackSize is the size of a terminal that does not tell it: the shell's
// COLUMNS and LINES, else what stty reads from it, else 80x24.
func fallbackSize(f *os.File) (cols, rows int) {
	cols, _ = strconv.Atoi(os.Getenv("COLUMNS"))
	rows, _ = strconv.Atoi(os.Getenv("LINES"))
	if cols > 0 && rows > 0 {
		return cols, rows
	}
	stty := exec.Command("stty", "size") // prints "rows cols" for its stdin
	stty.Stdin = f
	if out, err := stty.Output(); err == nil {
		if _, err := fmt.Sscan(string(out), &rows, &cols); err == nil && cols > 0 && rows > 0 {
			return cols, rows
		}
	}
	return 80, 24
}

// screen redraws the terminal until ctx is done.
func (d *demo) screen(ctx context.Context) *sync.WaitGroup {
	var wg sync.WaitGroup
	if d.cfg.plain {
		return &wg
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			d.draw(0)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return &wg
}

// draw writes one frame over the previous one, leaving reserve rows free
// below it. Each line clears what is left of the old one; the rest of the
// old frame is cleared after the last line, which ends without a newline
// so that a frame as tall as the window does not scroll it.
func (d *demo) draw(reserve int) {
	cols, rows, ok := terminalSize(d.out)
	if ok == false {
		cols, rows = 80, 24
	}
	var b strings.Builder
	b.WriteString(ansiHideCursor + ansiHome)
	for i, line := range d.frame(cols-1, rows-reserve) {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(line + ansiClearLine)
	}
	b.WriteString(ansiClearBelow)
	d.outMu.Lock()
	io.WriteString(d.out, b.String())
	d.outMu.Unlock()
}

// frame lays out at most height lines of at most width characters: the
// title, the current step's caption, the table, then as much of the results,
// the leadership callbacks and the nodes' log as fits. A line of exactly the
// window's width would make some terminals wrap, so width is one less.
func (d *demo) frame(width, height int) []string {
	d.mu.Lock()
	caption := append([]string(nil), d.caption...)
	steps := append([]stepResult(nil), d.steps...)
	logs := append([]string(nil), d.logs...)
	d.mu.Unlock()

	table := strings.Split(strings.TrimSuffix(renderTable(d.names, d.obs.snapshot(), d.letter, true), "\n"), "\n")
	budget := height - len(table)
	var top []string
	if budget > 0 {
		top = append(top, fmt.Sprintf("%sLeader election%s %s  %s", ansiBold, ansiReset, d.stamp(time.Now()), d.pattern))
		budget--
	}
	if budget > 3 {
		top = append(top, fmt.Sprintf("%selection timeout %d-%d ms, heartbeat %d ms, MinClusterSize %d, TCP proxies%s",
			ansiDim, d.cfg.electionMin, d.cfg.electionMax, d.cfg.heartbeat, d.cfg.minSize, ansiReset))
		budget--
	}
	// The caption wrapped, or one line per sentence when that is too tall;
	// a blank line sets it apart from the table.
	if lines := wrapAll(caption, width); budget > 1 {
		if len(lines) > min(budget-1, 4) {
			lines = caption[max(0, len(caption)-min(budget-1, 4)):]
		}
		top = append(top, lines...)
		top = append(top, "")
		budget -= len(lines) + 1
	}
	lines := append(top, table...)

	var results, callbacks []string
	for _, s := range steps {
		results = append(results, fmt.Sprintf("%-3s %s%-6s%s %s: %s", s.Key+".", verdictColor[verdict(s)], verdict(s), ansiReset, s.Title, s.Measured))
	}
	for _, e := range d.obs.allEvents() {
		callbacks = append(callbacks, d.stamp(e.At)+" "+describe(e, d.letter))
	}
	lines = append(lines, fitSections(max(budget, 0), []section{
		{"results", results},
		{"leadership callbacks", callbacks},
		{"log", logs},
	})...)
	for i := range lines {
		lines[i] = clip(lines[i], width)
	}
	return lines[:min(len(lines), max(height, 0))]
}

// section is a titled list under the table; its newest lines are last.
type section struct {
	title string
	lines []string
}

// fitSections shows as many of each section's newest lines as fit in
// height, sharing the rows out one at a time so that every section keeps
// some; a section shown at all costs a row more for its title.
func fitSections(height int, sections []section) []string {
	shown := make([]int, len(sections))
	for progress := true; progress; {
		progress = false
		for i, s := range sections {
			cost := 1
			if shown[i] == 0 {
				cost = 2
			}
			if shown[i] < len(s.lines) && cost <= height {
				shown[i]++
				height -= cost
				progress = true
			}
		}
	}
	var lines []string
	for i, s := range sections {
		if shown[i] > 0 {
			lines = append(lines, ansiBold+s.title+ansiReset)
			for _, line := range s.lines[len(s.lines)-shown[i]:] {
				lines = append(lines, "  "+line)
			}
		}
	}
	return lines
}

// clip cuts s to width visible characters, ending it with "..." when it
// was longer. ANSI escape sequences take no room and are kept, and a cut
// line ends with a reset so that no colour runs on.
func clip(s string, width int) string {
	if visibleWidth(s) <= width {
		return s
	}
	cut, visible := 0, 0
	for i := 0; i < len(s); {
		if n := escapeLen(s[i:]); n > 0 {
			i += n
			continue
		}
		if visible == max(width-3, 0) {
			cut = i
			break
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		visible++
	}
	return s[:cut] + ansiReset + "..."[:min(3, max(width, 0))]
}

func visibleWidth(s string) int {
	visible := 0
	for i := 0; i < len(s); {
		if n := escapeLen(s[i:]); n > 0 {
			i += n
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		visible++
	}
	return visible
}

// escapeLen is the length of the CSI sequence (ESC [ parameters, a final
// byte) that s starts with, or 0.
func escapeLen(s string) int {
	if len(s) < 2 || s[0] != '\x1b' || s[1] != '[' {
		return 0
	}
	for i := 2; i < len(s); i++ {
		if s[i] >= 0x40 && s[i] <= 0x7e {
			return i + 1
		}
	}
	return len(s)
}

// wrap breaks plain text into lines of at most width characters at spaces,
// keeping its indentation on every line.
func wrap(s string, width int) []string {
	if utf8.RuneCountInString(s) <= width {
		return []string{s} // as it is, spacing and all
	}
	indent := s[:len(s)-len(strings.TrimLeft(s, " "))]
	var lines []string
	line := indent
	for _, word := range strings.Fields(s) {
		switch {
		case line == indent:
			line += word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = indent + "  " + word
		}
	}
	return append(lines, line)
}

func wrapAll(texts []string, width int) []string {
	var lines []string
	for _, s := range texts {
		lines = append(lines, wrap(s, width)...)
	}
	return lines
}
