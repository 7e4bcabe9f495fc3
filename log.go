package leader

type logLevel int

const (
	levelDebug logLevel = iota
	levelInfo
	levelWarning
	levelError
)

// logf writes through the process logger, which already prefixes the node
// and the process; the cluster id tells elections on one process apart.
func (e *election) logf(level logLevel, format string, args ...any) {
	if e.log == nil {
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
