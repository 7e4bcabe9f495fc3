package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

type logLevel int

const (
	levelDebug logLevel = iota
	levelInfo
	levelWarning
	levelError
)

// framework is the framework's level of the same name.
func (l logLevel) framework() gen.LogLevel {
	switch l {
	case levelDebug:
		return gen.LogLevelDebug
	case levelInfo:
		return gen.LogLevelInfo
	case levelWarning:
		return gen.LogLevelWarning
	}
	return gen.LogLevelError
}

// logf writes through the process logger, which already prefixes the node
// and the process; the cluster id tells elections on one process apart.
func (e *election) logf(level logLevel, format string, args ...any) {
	if e.log == nil || logsBelow(e.log, level) {
		return
	}
	format = "leader %q: " + format
	args = append([]any{e.cfg.clusterID}, args...)
	switch level {
	case levelDebug:
		e.log.Debug(format, args...)
	case levelInfo:
		e.log.Info(format, args...)
	case levelWarning:
		e.log.Warning(format, args...)
	default:
		e.log.Error(format, args...)
	}
}

// logsBelow reports whether log drops messages of level: the line is
// then not built at all. A crash under many elections logs a line in each
// of them, and building each one cost a tenth of a survivor's CPU there
// while the node's level dropped them. A log at LogLevelDefault inherits a
// level it does not say, so it gets every line.
func logsBelow(log gen.Log, level logLevel) bool {
	have := log.Level()
	return have != gen.LogLevelDefault && have > level.framework()
}

// maxWarnedKeys bounds the rate limits warnEvery keeps.
const maxWarnedKeys = 256

// warnEvery logs a warning at most once per every for the same key: a
// condition a timer or a peer can repeat is reported, not flooded.
// mismatchWarnEvery is how often a ClusterID mismatch with one peer is
// warned of: once, in practice (the table of warnings is bounded, so a
// node that misspells for days may be warned of again).
const mismatchWarnEvery = 24 * time.Hour

func (e *election) warnEvery(key string, every time.Duration, format string, args ...any) {
	if last, ok := e.warned[key]; ok && e.now.Sub(last) < every {
		return
	}
	if e.warned == nil {
		e.warned = make(map[string]time.Time)
	}
	if len(e.warned) >= maxWarnedKeys {
		// keys name peers: bounded, the rate limits of long-quiet ones go
		for k, at := range e.warned {
			if e.now.Sub(at) >= time.Hour {
				delete(e.warned, k)
			}
		}
		if len(e.warned) >= maxWarnedKeys {
			clear(e.warned)
		}
	}
	e.warned[key] = e.now
	e.logf(levelWarning, format, args...)
}
