package gen

import (
	"errors"
	"time"
)

// ProcessBehavior is implemented by every process (act.Actor and others).
type ProcessBehavior interface {
	ProcessInit(process Process, args ...any) error
	ProcessRun() error
	ProcessTerminate(reason error)
	ProcessKind() ProcessKind
}

// ProcessFactory makes a new behavior value for a process.
type ProcessFactory func() ProcessBehavior

// CancelFunc cancels a delayed send; true if cancelled before firing.
type CancelFunc func() bool

// ProcessState is the state of a process.
type ProcessState int32

// Process states.
const (
	ProcessStateInit         ProcessState = 1
	ProcessStateSleep        ProcessState = 2
	ProcessStateRunning      ProcessState = 4
	ProcessStateWaitResponse ProcessState = 8
	ProcessStateTerminated   ProcessState = 16
	ProcessStateZombee       ProcessState = 32
)

// String returns the state name.
func (p ProcessState) String() string {
	switch p {
	case ProcessStateInit:
		return "init"
	case ProcessStateSleep:
		return "sleep"
	case ProcessStateRunning:
		return "running"
	case ProcessStateWaitResponse:
		return "wait response"
	case ProcessStateTerminated:
		return "terminated"
	case ProcessStateZombee:
		return "zombee"
	}
	return "unknown"
}

// Termination reasons with a special meaning.
var (
	TerminateReasonNormal   = errors.New("normal")
	TerminateReasonKill     = errors.New("kill")
	TerminateReasonPanic    = errors.New("panic")
	TerminateReasonShutdown = errors.New("shutdown")
)

// ProcessKind is a free-form label of what a process is.
type ProcessKind string

// Well-known process kinds.
const (
	ProcessKindCustom     ProcessKind = "custom"
	ProcessKindActor      ProcessKind = "actor"
	ProcessKindSupervisor ProcessKind = "supervisor"
	ProcessKindPool       ProcessKind = "pool"
	ProcessKindRouter     ProcessKind = "router"
	ProcessKindWeb        ProcessKind = "web"
	ProcessKindLeader     ProcessKind = "leader"
	ProcessKindFollower   ProcessKind = "follower"
	ProcessKindMonitor    ProcessKind = "monitor"
	ProcessKindSession    ProcessKind = "session"
)

// MessagePriority selects the mailbox queue: Main, System or Urgent.
type MessagePriority int

// Message priorities.
const (
	MessagePriorityNormal MessagePriority = 0
	MessagePriorityHigh   MessagePriority = 1
	MessagePriorityMax    MessagePriority = 2
)

// String returns the priority name.
func (mp MessagePriority) String() string {
	switch mp {
	case MessagePriorityNormal:
		return "normal"
	case MessagePriorityHigh:
		return "high"
	case MessagePriorityMax:
		return "max"
	}
	return "unknown"
}

// ProcessOptions configure a spawned process.
type ProcessOptions struct {
	MailboxSize       int64 // 0 = unlimited
	Leader            PID
	Env               map[Env]any
	Compression       Compression
	SendPriority      MessagePriority
	ImportantDelivery bool
	Fallback          ProcessFallback
	LinkParent        bool
	LinkChild         bool
	LogLevel          LogLevel
	InitTimeout       int // seconds, 0 = DefaultRequestTimeout
	PreserveMailbox   bool
}

// ProcessFallback redirects messages that do not fit a full mailbox.
type ProcessFallback struct {
	Enable bool
	Name   Atom
	Tag    string
}

// Compression configures compression of network messages.
type Compression struct {
	Enable    bool
	Type      CompressionType
	Level     CompressionLevel
	Threshold int
}

// CompressionType is the compression algorithm.
type CompressionType string

// Compression types.
const (
	CompressionTypeGZIP CompressionType = "gzip"
	CompressionTypeLZW  CompressionType = "lzw"
	CompressionTypeZLIB CompressionType = "zlib"
)

// CompressionLevel trades speed for size.
type CompressionLevel int

// Compression levels.
const (
	CompressionDefault   CompressionLevel = 0
	CompressionBestSpeed CompressionLevel = 1
	CompressionBestSize  CompressionLevel = 2
)

// MessageOptions configure one message send.
type MessageOptions struct {
	Ref               Ref
	Priority          MessagePriority
	Compression       Compression
	KeepNetworkOrder  bool
	ImportantDelivery bool
	Tracing           Tracing
	TracingAttributes []TracingAttribute
}

// ProcessInfo is a snapshot of a process (partial).
type ProcessInfo struct {
	PID               PID
	Name              Atom
	Application       Atom
	Behavior          string
	Kind              ProcessKind
	MailboxSize       int64
	MailboxQueues     MailboxQueues
	MessagesIn        uint64
	MessagesOut       uint64
	RunningTime       uint64
	Compression       Compression
	MessagePriority   MessagePriority
	Uptime            int64
	State             ProcessState
	Parent            PID
	Leader            PID
	Fields            []LogField
	Env               map[Env]any
	Aliases           []Alias
	Events            []Atom
	Metas             []Alias
	MonitorsPID       []PID
	MonitorsProcessID []ProcessID
	MonitorsEvent     []Event
	MonitorsNode      []Atom
	LinksPID          []PID
	LinksProcessID    []ProcessID
	LinksEvent        []Event
	LinksNode         []Atom
	LogLevel          LogLevel
	KeepNetworkOrder  bool
	ImportantDelivery bool
}

// MailboxQueues are the lengths of the mailbox queues.
type MailboxQueues struct {
	Main   int64
	System int64
	Urgent int64
	Log    int64
}

// ProcessShortInfo is a short snapshot of a process.
type ProcessShortInfo struct {
	PID         PID
	Name        Atom
	Application Atom
	Behavior    string
	Kind        ProcessKind
	MessagesIn  uint64
	MessagesOut uint64
	RunningTime uint64
	Uptime      int64
	State       ProcessState
	Parent      PID
	Leader      PID
	LogLevel    LogLevel
}

// MetaBehavior is the behavior of a meta process.
type MetaBehavior interface {
	Init(process MetaProcess) error
	Start() error
	HandleMessage(from PID, message any) error
	HandleCall(from PID, ref Ref, request any) (any, error)
	Terminate(reason error)
	HandleInspect(from PID, item ...string) map[string]string
}

// MetaProcess is the runtime view of a meta process (partial).
type MetaProcess interface {
	ID() Alias
	Parent() PID
	Send(to any, message any) error
	Log() Log
}

// MetaOptions configure a meta process.
type MetaOptions struct {
	MailboxSize  int64
	SendPriority MessagePriority
	LogLevel     LogLevel
}

// MetaInfo is a snapshot of a meta process (partial).
type MetaInfo struct {
	ID          Alias
	Parent      PID
	Application Atom
	Behavior    string
	MailboxSize int64
	LogLevel    LogLevel
	Uptime      int64
}

// Process is the runtime view of a process, handed to ProcessInit.
type Process interface {
	Node() Node
	Name() Atom
	PID() PID
	Leader() PID
	Parent() PID
	Uptime() int64
	State() ProcessState
	Log() Log
	Mailbox() ProcessMailbox
	Behavior() ProcessBehavior
	BehaviorName() string
	SetProcessKind(kind ProcessKind) error
	Application() Application

	Spawn(factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)
	SpawnRegister(register Atom, factory ProcessFactory, options ProcessOptions, args ...any) (PID, error)
	SpawnMeta(behavior MetaBehavior, options MetaOptions) (Alias, error)
	RemoteSpawn(node Atom, name Atom, options ProcessOptions, args ...any) (PID, error)
	RemoteSpawnRegister(node Atom, name Atom, register Atom, options ProcessOptions, args ...any) (PID, error)

	RegisterName(name Atom) error
	UnregisterName() error

	EnvList() map[Env]any
	SetEnv(name Env, value any)
	Env(name Env) (any, bool)
	EnvDefault(name Env, def any) any

	Compression() bool
	SetCompression(enabled bool) error
	CompressionType() CompressionType
	SetCompressionType(ctype CompressionType) error
	CompressionLevel() CompressionLevel
	SetCompressionLevel(level CompressionLevel) error
	CompressionThreshold() int
	SetCompressionThreshold(threshold int) error
	SendPriority() MessagePriority
	SetSendPriority(priority MessagePriority) error
	SetKeepNetworkOrder(order bool) error
	KeepNetworkOrder() bool
	SetImportantDelivery(important bool) error
	ImportantDelivery() bool

	CreateAlias() (Alias, error)
	DeleteAlias(alias Alias) error
	Aliases() []Alias
	Events() []Atom

	Send(to any, message any) error
	SendPID(to PID, message any) error
	SendProcessID(to ProcessID, message any) error
	SendAlias(to Alias, message any) error
	SendWithPriority(to any, message any, priority MessagePriority) error
	SendImportant(to any, message any) error
	SendAfter(to any, message any, after time.Duration) (CancelFunc, error)
	SendWithPriorityAfter(to any, message any, priority MessagePriority, after time.Duration) (CancelFunc, error)
	SendEvent(name Atom, token Ref, message any) error
	SendExit(to PID, reason error) error
	SendExitAfter(to PID, reason error, after time.Duration) (CancelFunc, error)
	SendExitMeta(meta Alias, reason error) error
	SendExitMetaAfter(meta Alias, reason error, after time.Duration) (CancelFunc, error)
	SendResponse(to PID, ref Ref, message any) error
	SendResponseError(to PID, ref Ref, err error) error
	SendResponseImportant(to PID, ref Ref, message any) error
	SendResponseErrorImportant(to PID, ref Ref, err error) error

	Call(to any, message any) (any, error)
	CallWithTimeout(to any, message any, timeout int) (any, error)
	CallWithPriority(to any, message any, priority MessagePriority) (any, error)
	CallImportant(to any, message any) (any, error)
	CallPID(to PID, message any, timeout int) (any, error)
	CallProcessID(to ProcessID, message any, timeout int) (any, error)
	CallAlias(to Alias, message any, timeout int) (any, error)

	Inspect(target PID, item ...string) (map[string]string, error)
	InspectMeta(meta Alias, item ...string) (map[string]string, error)

	RegisterEvent(name Atom, options EventOptions) (Ref, error)
	UnregisterEvent(name Atom) error

	Link(target any) error
	Unlink(target any) error
	LinkPID(target PID) error
	UnlinkPID(target PID) error
	LinkProcessID(target ProcessID) error
	UnlinkProcessID(target ProcessID) error
	LinkAlias(target Alias) error
	UnlinkAlias(target Alias) error
	LinkEvent(target Event) ([]MessageEvent, error)
	UnlinkEvent(target Event) error
	LinkNode(target Atom) error
	UnlinkNode(target Atom) error

	Monitor(target any) error
	Demonitor(target any) error
	MonitorPID(pid PID) error
	DemonitorPID(pid PID) error
	MonitorProcessID(process ProcessID) error
	DemonitorProcessID(process ProcessID) error
	MonitorAlias(alias Alias) error
	DemonitorAlias(alias Alias) error
	MonitorEvent(event Event) ([]MessageEvent, error)
	DemonitorEvent(event Event) error
	MonitorNode(node Atom) error
	DemonitorNode(node Atom) error

	Info() (ProcessInfo, error)
	MetaInfo(meta Alias) (MetaInfo, error)
	Forward(to PID, message *MailboxMessage, priority MessagePriority) error

	PropagatingTrace() Tracing
	SetPropagatingTrace(t Tracing)
	TracingAttributes() []TracingAttribute
	SendTracingSpan(span TracingSpan)
	CloseTracingSpans()
	ClearTracingSpanAttributes()
	SetTracingSampler(sampler TracingSampler) error
	TracingSampler() TracingSampler
	SetTracingAttribute(key, value string)
	RemoveTracingAttribute(key string)
	SetTracingSpanAttribute(key, value string)
	StartTracingSpan(name string) TracingSpanScope
}
