package gen

import "time"

// ApplicationMode says what happens when an application member stops.
type ApplicationMode int

// Application modes.
const (
	ApplicationModeTemporary ApplicationMode = 1
	ApplicationModeTransient ApplicationMode = 2
	ApplicationModePermanent ApplicationMode = 3
)

// String returns the mode name.
func (am ApplicationMode) String() string {
	switch am {
	case ApplicationModeTemporary:
		return "temporary"
	case ApplicationModeTransient:
		return "transient"
	case ApplicationModePermanent:
		return "permanent"
	}
	return "undefined"
}

// ApplicationState is the state of a loaded application.
type ApplicationState int32

// Application states.
const (
	ApplicationStateLoaded       ApplicationState = 1
	ApplicationStateRunning      ApplicationState = 2
	ApplicationStateStopping     ApplicationState = 3
	ApplicationStateInitializing ApplicationState = 10
)

// String returns the state name.
func (as ApplicationState) String() string {
	switch as {
	case ApplicationStateLoaded:
		return "loaded"
	case ApplicationStateRunning:
		return "running"
	case ApplicationStateStopping:
		return "stopping"
	case ApplicationStateInitializing:
		return "initializing"
	}
	return "unknown"
}

// ApplicationBehavior is implemented by applications (embed app.Application).
type ApplicationBehavior interface {
	PreLoad(app Application, args ...any) (ApplicationSpec, error)
	Load(args ...any) (ApplicationSpec, error)
	Init(ref Ref, mode ApplicationMode) error
	Start(ref Ref, mode ApplicationMode)
	Stop(ref Ref, reason error)
	Terminate(reason error)
}

// Application is the runtime view of a loaded application.
type Application interface {
	Name() Atom
	Mode() ApplicationMode
	State() ApplicationState
	Node() Node
	Log() Log
	Env(key Env) (any, bool)
	EnvList() map[Env]any
	Tags() []Atom
	AddTag(tag Atom) error
	RemoveTag(tag Atom) error
	SetTags(tags []Atom) error
	Weight() int
	SetWeight(w int) error
	Behavior() ApplicationBehavior
}

// ApplicationOptions configure ApplicationStart.
type ApplicationOptions struct {
	Env          map[Env]any
	LogLevel     LogLevel
	InitTimeout  time.Duration
	StartTimeout time.Duration
	StopTimeout  time.Duration
}

// ApplicationSpec is what Load returns.
type ApplicationSpec struct {
	Name         Atom
	Description  string
	Version      Version
	Depends      ApplicationDepends
	Network      ApplicationNetwork
	Env          map[Env]any
	Group        []ApplicationMemberSpec
	Mode         ApplicationMode
	Weight       int
	Tags         []Atom
	Map          map[string]Atom
	LogLevel     LogLevel
	InitTimeout  time.Duration
	StartTimeout time.Duration
	StopTimeout  time.Duration
}

// ApplicationMemberSpec is one process of an application group.
type ApplicationMemberSpec struct {
	Factory ProcessFactory
	Options ProcessOptions
	Name    Atom
	Args    []any
}

// ApplicationDepends lists what must run before the application starts.
type ApplicationDepends struct {
	Applications []Atom
	Network      bool
}

// ApplicationNetwork lists what is registered in the network at load time.
type ApplicationNetwork struct {
	RegisterTypes  []any
	RegisterErrors []error
	RegisterAtoms  []Atom
}

// ApplicationInfo is a snapshot of an application.
type ApplicationInfo struct {
	Name        Atom
	Weight      int
	Description string
	Version     Version
	Env         map[Env]any
	Depends     ApplicationDepends
	Mode        ApplicationMode
	State       ApplicationState
	Parent      Atom
	Uptime      int64
	Group       []PID
	Tags        []Atom
	Map         map[string]Atom
}

// ApplicationRoute is where an application runs.
type ApplicationRoute struct {
	Node   Atom
	Name   Atom
	Weight int
	Mode   ApplicationMode
	State  ApplicationState
}

// ApplicationRoutes is the answer of ResolveApplication.
type ApplicationRoutes struct {
	Name   Atom
	Routes []ApplicationRoute
}
