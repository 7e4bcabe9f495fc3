package main

import (
	"fmt"
	"io"
	"sync"

	"ergo.services/ergo/gen"
)

// logSink counts the nodes' warnings and errors and keeps the last few,
// which explain a run that went wrong.
type logSink struct {
	mu       sync.Mutex
	warnings int
	last     []string
	echo     io.Writer // also write each line here (a node process's stderr); nil: keep only
}

func (l *logSink) Log(m gen.MessageLog) {
	if m.Level < gen.LogLevelWarning {
		return
	}
	line := fmt.Sprintf("%s %s", m.Time.Format("15:04:05.000"), fmt.Sprintf(m.Format, m.Args...))
	if source, ok := m.Source.(gen.MessageLogProcess); ok {
		line = fmt.Sprintf("%s %s: %s", m.Time.Format("15:04:05.000"), source.Node, fmt.Sprintf(m.Format, m.Args...))
	}
	l.mu.Lock()
	if l.echo != nil {
		fmt.Fprintln(l.echo, line)
	}
	l.warnings++
	l.last = append(l.last, line)
	if len(l.last) > 20 {
		l.last = l.last[len(l.last)-20:]
	}
	l.mu.Unlock()
}

func (l *logSink) Terminate() {}

func (l *logSink) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.warnings
}

func (l *logSink) lastLines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.last...)
}
