package gen

import "time"

// LogLevel is the severity of a log message.
type LogLevel int

// Log levels.
const (
	LogLevelSystem   LogLevel = -100
	LogLevelTrace    LogLevel = -2
	LogLevelDebug    LogLevel = -1
	LogLevelDefault  LogLevel = 0 // inherit from node/app/parent
	LogLevelInfo     LogLevel = 1
	LogLevelWarning  LogLevel = 2
	LogLevelError    LogLevel = 3
	LogLevelPanic    LogLevel = 4
	LogLevelDisabled LogLevel = 5
)

// String returns the level name used in log lines.
func (l LogLevel) String() string {
	switch l {
	case LogLevelSystem:
		return "system"
	case LogLevelTrace:
		return "trace"
	case LogLevelDebug:
		return "debug"
	case LogLevelDefault:
		return "default"
	case LogLevelInfo:
		return "info"
	case LogLevelWarning:
		return "warning"
	case LogLevelError:
		return "error"
	case LogLevelPanic:
		return "panic"
	case LogLevelDisabled:
		return "disabled"
	}
	return "unknown"
}

// Log is the leveled logger of a node, process or meta process.
type Log interface {
	Level() LogLevel
	SetLevel(level LogLevel) error
	Logger() string
	SetLogger(name string)
	Fields() []LogField
	AddFields(fields ...LogField)
	DeleteFields(fields ...string)
	PushFields() int
	PopFields() int
	Trace(format string, args ...any)
	Debug(format string, args ...any)
	Info(format string, args ...any)
	Warning(format string, args ...any)
	Error(format string, args ...any)
	Panic(format string, args ...any)
}

// LogField is a named value attached to log messages.
type LogField struct {
	Name  string
	Value any
}

// LoggerBehavior receives log messages.
type LoggerBehavior interface {
	Log(message MessageLog)
	Terminate()
}

// LogOptions configure the logging of a node.
type LogOptions struct {
	Level         LogLevel
	DefaultLogger DefaultLoggerOptions
	Loggers       []Logger
}

// Logger is an additional logger of a node.
type Logger struct {
	Name   string
	Logger LoggerBehavior
	Filter []LogLevel
}

// MessageLog is one log message as delivered to loggers.
type MessageLog struct {
	Time       time.Time
	Level      LogLevel
	Source     any // MessageLogProcess | MessageLogNode | MessageLogNetwork | MessageLogMeta
	Format     string
	Args       []any
	Fields     []LogField
	StackTrace []string
}

// MessageLogProcess is the Source of a process log message.
type MessageLogProcess struct {
	Node     Atom
	PID      PID
	Name     Atom
	Behavior string
}

// MessageLogNode is the Source of a node log message.
type MessageLogNode struct {
	Node     Atom
	Creation int64
}

// MessageLogNetwork is the Source of a network log message.
type MessageLogNetwork struct {
	Node     Atom
	Peer     Atom
	Creation int64
}

// MessageLogMeta is the Source of a meta process log message.
type MessageLogMeta struct {
	Node     Atom
	Parent   PID
	Meta     Alias
	Behavior string
}
