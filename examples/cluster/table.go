package main

import (
	"fmt"
	"strings"

	"ergo.services/ergo/gen"
)

// ANSI escapes for the redrawn screen; plain output uses none of them.
const (
	ansiHome       = "\x1b[H" // cursor to the top left: a frame overwrites the last one
	ansiClearLine  = "\x1b[K" // clear to the end of the line
	ansiClearBelow = "\x1b[J" // clear to the end of the screen
	ansiHideCursor = "\x1b[?25l"
	ansiShowCursor = "\x1b[?25h"
	ansiReset      = "\x1b[0m"
	ansiBold       = "\x1b[1m"
	ansiDim        = "\x1b[2m"
)

var verdictColor = map[string]string{"ok": "\x1b[32m", "SLOW": "\x1b[1;33m", "FAILED": "\x1b[1;31m"}

var roleColor = map[string]string{
	"leader":      "\x1b[1;32m",
	"candidate":   "\x1b[33m",
	"follower":    "",
	"unclustered": "\x1b[2m",
	"down":        "\x1b[31m",
	"starting":    "\x1b[2m",
}

// renderTable draws one row per node. letter maps node names to the short
// names the demo shows.
func renderTable(names []gen.Atom, latest map[gen.Atom]status, letter func(gen.Atom) string, color bool) string {
	var b strings.Builder
	header := fmt.Sprintf("  %-5s %-12s %5s  %-7s %5s %7s  %-12s %9s", "NODE", "ROLE", "TERM", "LEADER", "VIEW", "QUORUM", "UNREACHABLE", "PRE-VOTES")
	if color {
		header = ansiBold + header + ansiReset
	}
	b.WriteString(header + "\n")
	for _, name := range names {
		s, seen := latest[name]
		if seen == false {
			s = status{State: "starting"}
		}
		role := fmt.Sprintf("%-12s", s.State)
		if color {
			role = roleColor[s.State] + role + ansiReset
		}
		if s.Up == false {
			fmt.Fprintf(&b, "  %-5s %s\n", letter(name), role)
			continue
		}
		leaderName := "-"
		if s.Leader != "" {
			leaderName = letter(s.Leader)
		}
		var unreachable []string
		for _, u := range s.Unreachable {
			unreachable = append(unreachable, letter(u))
		}
		preVotes := s.PreVotes
		if preVotes == "" {
			preVotes = "-"
		}
		fmt.Fprintf(&b, "  %-5s %s %5d  %-7s %5d %7d  %-12s %9s\n",
			letter(name), role, s.Term, leaderName, s.View, s.Quorum, dash(strings.Join(unreachable, ",")), preVotes)
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// describe turns a leadership callback into a line of the event list.
func describe(c roleChange, letter func(gen.Atom) string) string {
	switch {
	case c.Leading:
		return fmt.Sprintf("%s  became leader at term %d", letter(c.Node), c.Term)
	case c.Leader == "":
		return fmt.Sprintf("%s  knows no leader (term %d)", letter(c.Node), c.Term)
	}
	return fmt.Sprintf("%s  follows %s (term %d)", letter(c.Node), letter(c.Leader), c.Term)
}
