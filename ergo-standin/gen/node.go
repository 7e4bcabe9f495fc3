package gen

import (
	"io"
	"time"
)

// Node is a running node: the process registry, the network and the logger.
type Node interface {
	Name() Atom
	IsAlive() bool
	// SetCTRLC turns the graceful stop on SIGTERM and Interrupt on or off
	// (ergo.StartNode turns it on).
	SetCTRLC(enable bool)
	PID() PID
	Creation() int64
	Uptime() int64
	Version() Version
	FrameworkVersion() Version

	Spawn(factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)
	SpawnRegister(register Atom, factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)

	Send(to any, message any) error
	SendWithPriority(to any, message any, priority MessagePriority) error
	Call(to any, request any) (any, error)
	CallWithTimeout(to any, request any, timeout int) (any, error)
	CallWithPriority(to any, request any, priority MessagePriority) (any, error)
	CallImportant(to any, request any) (any, error)
	CallPID(to PID, request any, timeout int) (any, error)
	CallProcessID(to ProcessID, request any, timeout int) (any, error)
	CallAlias(to Alias, request any, timeout int) (any, error)
	Inspect(target PID, item ...string) (map[string]string, error)
	SendExit(pid PID, reason error) error
	Kill(pid PID) error

	// SendEvent publishes message to the subscribers of an event the node
	// registered (sender: the node core PID); token is the one
	// RegisterEvent returned.
	SendEvent(name Atom, token Ref, options MessageOptions, message any) error
	// RegisterEvent registers an event produced by the node itself.
	RegisterEvent(name Atom, options EventOptions) (Ref, error)
	// UnregisterEvent unregisters an event the node registered.
	UnregisterEvent(name Atom) error

	ProcessInfo(pid PID) (ProcessInfo, error)
	ProcessPID(name Atom) (PID, error)
	ProcessName(pid PID) (Atom, error)
	ProcessState(pid PID) (ProcessState, error)
	ProcessList() ([]PID, error)
	ProcessListShortInfo(start, limit int, filter ...func(ProcessShortInfo) bool) ([]ProcessShortInfo, error)
	ProcessRangeShortInfo(fn func(ProcessShortInfo) bool) error
	SetProcessLogLevel(pid PID, level LogLevel) error
	RegisterName(name Atom, pid PID) error
	UnregisterName(name Atom) (PID, error)

	EnvList() map[Env]any
	SetEnv(name Env, value any)
	Env(name Env) (any, bool)
	EnvDefault(name Env, def any) any

	ApplicationLoad(app ApplicationBehavior, args ...any) (Atom, error)
	ApplicationInfo(name Atom) (ApplicationInfo, error)
	ApplicationUnload(name Atom) error
	ApplicationStart(name Atom, options ApplicationOptions) error
	ApplicationStartTemporary(name Atom, options ApplicationOptions) error
	ApplicationStartTransient(name Atom, options ApplicationOptions) error
	ApplicationStartPermanent(name Atom, options ApplicationOptions) error
	ApplicationStop(name Atom) error
	ApplicationStopForce(name Atom) error
	ApplicationStopWithTimeout(name Atom, timeout time.Duration) error
	Applications() []Atom
	ApplicationsRunning() []Atom

	Network() Network
	Log() Log
	LoggerAdd(name string, logger LoggerBehavior, filter ...LogLevel) error
	LoggerDelete(name string)
	Loggers() []string
	MakeRef() Ref
	MakeRefWithDeadline(deadline int64) (Ref, error)

	Stop()
	StopForce()
	StopWithTimeout(timeout time.Duration)
	Wait()
	WaitWithTimeout(timeout time.Duration) error
}

// NodeOptions configure StartNode.
type NodeOptions struct {
	ShutdownTimeout time.Duration // default 3 minutes
	Applications    []ApplicationBehavior
	Env             map[Env]any
	Network         NetworkOptions
	Cron            CronOptions
	CertManager     CertManager
	TargetManager   TargetManager
	Security        SecurityOptions
	Log             LogOptions
	Version         Version
	Tracing         TracingOptions
	Events          []NodeEventSpec
}

// NodeEventSpec declares an event registered at node start.
type NodeEventSpec struct {
	Name   Atom
	Buffer int
}

// SecurityOptions control what remote nodes may see and do.
type SecurityOptions struct {
	ExposeEnvInfo                   bool
	ExposeEnvRemoteSpawn            bool
	ExposeEnvRemoteApplicationStart bool
}

// DefaultLoggerOptions configure the built-in logger.
type DefaultLoggerOptions struct {
	Disable         bool
	TimeFormat      string
	IncludeBehavior bool
	IncludeName     bool
	IncludeFields   bool
	Filter          []LogLevel
	Output          io.Writer // default os.Stderr
	EnableJSON      bool
}

// CronOptions configure the node cron (not supported by the stand-in).
type CronOptions struct {
	Disable bool
}

// CertManager provides TLS certificates (not supported by the stand-in).
type CertManager interface {
	Update(cert any)
}

// TargetManager tracks links and monitors (the stand-in uses its own).
type TargetManager interface {
	Info() (any, error)
}

// EventInfo describes a registered event.
type EventInfo struct {
	Event         Event
	Producer      PID
	BufferSize    int
	CurrentBuffer int
	Notify        bool
	Subscribers   int64
}

// NodeShortInfo is a short snapshot of a node.
type NodeShortInfo struct {
	Name      Atom
	Creation  int64
	Uptime    int64
	Version   Version
	Framework Version
	Processes int64
	Running   int64
}
