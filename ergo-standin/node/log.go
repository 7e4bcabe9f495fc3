package node

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
)

const defaultTimeFormat = "2006-01-02 15:04:05.000"

// logger fans log messages out to the default writer and added loggers.
type logger struct {
	defDisabled   bool
	defOut        io.Writer
	defMu         sync.Mutex
	timeFormat    string
	defFilter     map[gen.LogLevel]bool
	includeFields bool
	includeBeh    bool
	json          bool

	mu      sync.RWMutex
	loggers []*extLogger
}

type extLogger struct {
	name   string
	b      gen.LoggerBehavior
	filter map[gen.LogLevel]bool
	mu     sync.Mutex
}

func levelSet(levels []gen.LogLevel) map[gen.LogLevel]bool {
	if len(levels) == 0 {
		return nil
	}
	m := make(map[gen.LogLevel]bool, len(levels))
	for _, l := range levels {
		m[l] = true
	}
	return m
}

func newLogger(opts gen.LogOptions) *logger {
	d := opts.DefaultLogger
	l := &logger{
		defDisabled:   d.Disable,
		defOut:        d.Output,
		timeFormat:    d.TimeFormat,
		defFilter:     levelSet(d.Filter),
		includeFields: d.IncludeFields,
		includeBeh:    d.IncludeBehavior,
		json:          d.EnableJSON,
	}
	if l.defOut == nil {
		l.defOut = os.Stderr
	}
	if l.timeFormat == "" {
		l.timeFormat = defaultTimeFormat
	}
	for _, lg := range opts.Loggers {
		if lg.Logger != nil {
			l.loggers = append(l.loggers, &extLogger{name: lg.Name, b: lg.Logger, filter: levelSet(lg.Filter)})
		}
	}
	return l
}

func (l *logger) add(name string, b gen.LoggerBehavior, filter []gen.LogLevel) error {
	if b == nil || name == "" {
		return gen.ErrIncorrect
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.loggers {
		if e.name == name {
			return gen.ErrTaken
		}
	}
	l.loggers = append(l.loggers, &extLogger{name: name, b: b, filter: levelSet(filter)})
	return nil
}

func (l *logger) remove(name string) gen.LoggerBehavior {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, e := range l.loggers {
		if e.name == name {
			l.loggers = append(l.loggers[:i:i], l.loggers[i+1:]...)
			return e.b
		}
	}
	return nil
}

func (l *logger) names() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	names := []string{}
	if !l.defDisabled {
		names = append(names, "default")
	}
	for _, e := range l.loggers {
		names = append(names, e.name)
	}
	return names
}

// terminate calls Terminate of every added logger and drops them.
func (l *logger) terminate() {
	l.mu.Lock()
	loggers := l.loggers
	l.loggers = nil
	l.mu.Unlock()
	for _, e := range loggers {
		e.mu.Lock()
		e.b.Terminate()
		e.mu.Unlock()
	}
}

// write delivers m; only restricts it to one logger name ("" = all).
func (l *logger) write(m gen.MessageLog, only string) {
	if !l.defDisabled && (only == "" || only == "default") && (l.defFilter == nil || l.defFilter[m.Level]) {
		line := l.format(m)
		l.defMu.Lock()
		io.WriteString(l.defOut, line)
		l.defMu.Unlock()
	}
	l.mu.RLock()
	loggers := l.loggers
	l.mu.RUnlock()
	for _, e := range loggers {
		if only != "" && e.name != only {
			continue
		}
		if e.filter != nil && !e.filter[m.Level] {
			continue
		}
		e.mu.Lock()
		e.b.Log(m)
		e.mu.Unlock()
	}
}

func logText(m gen.MessageLog) string {
	if len(m.Args) == 0 {
		return m.Format
	}
	return fmt.Sprintf(m.Format, m.Args...)
}

func (l *logger) format(m gen.MessageLog) string {
	var src, beh string
	switch s := m.Source.(type) {
	case gen.MessageLogProcess:
		src = string(s.Node) + " " + s.PID.String()
		if s.Name != "" {
			src += " " + s.Name.String()
		}
		beh = s.Behavior
	case gen.MessageLogNode:
		src = string(s.Node)
	case gen.MessageLogNetwork:
		src = string(s.Node)
		if s.Peer != "" {
			src += " [" + string(s.Peer) + "]"
		}
	case gen.MessageLogMeta:
		src = string(s.Node) + " " + s.Meta.String()
		beh = s.Behavior
	}
	if l.json {
		rec := map[string]any{
			"time": m.Time.Format(l.timeFormat), "level": m.Level.String(),
			"source": src, "message": logText(m),
		}
		for _, f := range m.Fields {
			rec[f.Name] = fmt.Sprint(f.Value)
		}
		b, _ := json.Marshal(rec)
		return string(b) + "\n"
	}
	var sb strings.Builder
	sb.WriteString(m.Time.Format(l.timeFormat))
	sb.WriteString(" [")
	sb.WriteString(m.Level.String())
	sb.WriteString("] ")
	sb.WriteString(src)
	if l.includeBeh && beh != "" {
		sb.WriteString(" " + beh)
	}
	sb.WriteString(": ")
	sb.WriteString(logText(m))
	if l.includeFields && len(m.Fields) > 0 {
		sb.WriteString(" {")
		for i, f := range m.Fields {
			if i > 0 {
				sb.WriteByte(' ')
			}
			fmt.Fprintf(&sb, "%s:%v", f.Name, f.Value)
		}
		sb.WriteByte('}')
	}
	sb.WriteByte('\n')
	return sb.String()
}

// plog implements gen.Log for a node, a process or the network.
type plog struct {
	out    *logger
	level  atomic.Int32
	source func() any

	mu     sync.Mutex
	only   string
	fields []gen.LogField
	stack  [][]gen.LogField
}

func newLog(out *logger, level gen.LogLevel, source func() any) *plog {
	l := &plog{out: out, source: source}
	l.level.Store(int32(level))
	return l
}

func validLevel(level gen.LogLevel) bool {
	switch level {
	case gen.LogLevelSystem, gen.LogLevelTrace, gen.LogLevelDebug, gen.LogLevelInfo,
		gen.LogLevelWarning, gen.LogLevelError, gen.LogLevelPanic, gen.LogLevelDisabled:
		return true
	}
	return false
}

func (l *plog) Level() gen.LogLevel { return gen.LogLevel(l.level.Load()) }

func (l *plog) SetLevel(level gen.LogLevel) error {
	if !validLevel(level) {
		return gen.ErrIncorrect
	}
	l.level.Store(int32(level))
	return nil
}

func (l *plog) Logger() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.only
}

func (l *plog) SetLogger(name string) {
	l.mu.Lock()
	l.only = name
	l.mu.Unlock()
}

func (l *plog) Fields() []gen.LogField {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]gen.LogField(nil), l.fields...)
}

func (l *plog) AddFields(fields ...gen.LogField) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range fields {
		replaced := false
		for i := range l.fields {
			if l.fields[i].Name == f.Name {
				l.fields[i] = f
				replaced = true
			}
		}
		if !replaced {
			l.fields = append(l.fields, f)
		}
	}
}

func (l *plog) DeleteFields(names ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.fields[:0:0]
	for _, f := range l.fields {
		drop := false
		for _, n := range names {
			if f.Name == n {
				drop = true
			}
		}
		if !drop {
			kept = append(kept, f)
		}
	}
	l.fields = kept
}

func (l *plog) PushFields() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stack = append(l.stack, append([]gen.LogField(nil), l.fields...))
	return len(l.stack)
}

func (l *plog) PopFields() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.stack) == 0 {
		return 0
	}
	l.fields = l.stack[len(l.stack)-1]
	l.stack = l.stack[:len(l.stack)-1]
	return len(l.stack)
}

func (l *plog) emit(level gen.LogLevel, format string, args []any) {
	current := l.Level()
	if current == gen.LogLevelDisabled || level < current {
		return
	}
	l.mu.Lock()
	only := l.only
	var fields []gen.LogField
	if len(l.fields) > 0 {
		fields = append(fields, l.fields...)
	}
	l.mu.Unlock()
	m := gen.MessageLog{
		Time:   time.Now(),
		Level:  level,
		Source: l.source(),
		Format: format,
		Args:   args,
		Fields: fields,
	}
	l.out.write(m, only)
}

func (l *plog) Trace(format string, args ...any)   { l.emit(gen.LogLevelTrace, format, args) }
func (l *plog) Debug(format string, args ...any)   { l.emit(gen.LogLevelDebug, format, args) }
func (l *plog) Info(format string, args ...any)    { l.emit(gen.LogLevelInfo, format, args) }
func (l *plog) Warning(format string, args ...any) { l.emit(gen.LogLevelWarning, format, args) }
func (l *plog) Error(format string, args ...any)   { l.emit(gen.LogLevelError, format, args) }
func (l *plog) Panic(format string, args ...any)   { l.emit(gen.LogLevelPanic, format, args) }
