package leader

import (
	"testing"

	"ergo.services/ergo/gen"
)

// levelLog is a log at a fixed level that counts the lines it is given.
type levelLog struct {
	testLog
	level gen.LogLevel
	lines int
}

func (l *levelLog) Level() gen.LogLevel                { return l.level }
func (l *levelLog) Debug(format string, args ...any)   { l.lines++ }
func (l *levelLog) Info(format string, args ...any)    { l.lines++ }
func (l *levelLog) Warning(format string, args ...any) { l.lines++ }
func (l *levelLog) Error(format string, args ...any)   { l.lines++ }

func TestALineBelowTheLogsLevelIsNotHandedToIt(t *testing.T) {
	for _, c := range []struct {
		have  gen.LogLevel
		level logLevel
		wants bool
	}{
		{gen.LogLevelWarning, levelInfo, false},
		{gen.LogLevelWarning, levelDebug, false},
		{gen.LogLevelWarning, levelWarning, true},
		{gen.LogLevelWarning, levelError, true},
		{gen.LogLevelInfo, levelInfo, true},
		{gen.LogLevelInfo, levelDebug, false},
		{gen.LogLevelDebug, levelDebug, true},
		{gen.LogLevelTrace, levelDebug, true},
		{gen.LogLevelError, levelWarning, false},
		{gen.LogLevelDisabled, levelError, false},
		// a level it does not say: every line goes to it
		{gen.LogLevelDefault, levelDebug, true},
	} {
		log := &levelLog{level: c.have}
		h := newStateHarness(t, Options{}, "b", "c")
		h.e.log = log
		h.e.logf(c.level, "a line")
		if got := log.lines == 1; got != c.wants {
			t.Errorf("a log at %s given a line at %d: handed %d lines, want one: %v", c.have, c.level, log.lines, c.wants)
		}
	}
}
