package lab

import (
	"fmt"
	"io"
	"sync"

	"ergo.services/ergo/gen"
)

// ActorLog returns node log options that print the processes' messages of
// the given level and above to w, and nothing else. The network's messages
// are left out: in a lab they are mostly the refused dials of links that are
// cut, or not open yet, which is the point of the lab rather than news.
func ActorLog(w io.Writer, level gen.LogLevel) gen.LogOptions {
	return gen.LogOptions{
		DefaultLogger: gen.DefaultLoggerOptions{Disable: true},
		Loggers:       []gen.Logger{{Name: "lab", Logger: &actorLogger{w: w, level: level}}},
	}
}

type actorLogger struct {
	mu    sync.Mutex
	w     io.Writer
	level gen.LogLevel
}

func (l *actorLogger) Log(m gen.MessageLog) {
	source, ok := m.Source.(gen.MessageLogProcess)
	if ok == false || m.Level < l.level {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "%s %s %s: %s\n", m.Time.Format("15:04:05.000"), source.Node, source.Name, fmt.Sprintf(m.Format, m.Args...))
}

func (l *actorLogger) Terminate() {}
