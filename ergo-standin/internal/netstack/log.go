package netstack

import (
	"fmt"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

// logger tolerates a nil gen.Log (tests and tools run stacks without one).
type logger struct{ l gen.Log }

func (l logger) trace(format string, args ...any) {
	if l.l != nil {
		l.l.Trace(format, args...)
	}
}

func (l logger) debug(format string, args ...any) {
	if l.l != nil {
		l.l.Debug(format, args...)
	}
}

func (l logger) info(format string, args ...any) {
	if l.l != nil {
		l.l.Info(format, args...)
	}
}

func (l logger) warning(format string, args ...any) {
	if l.l != nil {
		l.l.Warning(format, args...)
	}
}

func (l logger) error(format string, args ...any) {
	if l.l != nil {
		l.l.Error(format, args...)
	}
}

// catch turns a panic in a connection goroutine into an error, so one bad
// peer (or a bug it triggers) cannot take the node down. Built with the
// norecover tag, panics propagate.
func catch(err *error) {
	if !lib.Recover() {
		return
	}
	if r := recover(); r != nil {
		*err = fmt.Errorf("panic: %v", r)
	}
}
