package node

import (
	"errors"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

const defaultAppStopTimeout = 5 * time.Second

// apps is the registry of loaded applications.
type apps struct {
	mu sync.RWMutex
	m  map[gen.Atom]*application
}

func newApps() *apps { return &apps{m: make(map[gen.Atom]*application)} }

func (a *apps) get(name gen.Atom) (*application, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	app, ok := a.m[name]
	if !ok {
		return nil, gen.ErrApplicationUnknown
	}
	return app, nil
}

// application is a loaded application; it implements gen.Application.
type application struct {
	node     *node
	behavior gen.ApplicationBehavior
	spec     gen.ApplicationSpec
	log      *plog
	state    atomic.Int32

	mu       sync.Mutex
	mode     gen.ApplicationMode
	logLevel gen.LogLevel
	env      map[gen.Env]any
	tags     []gen.Atom
	weight   int
	ref      gen.Ref
	started  time.Time
	group    []gen.PID
	members  map[gen.PID]struct{}
	// ending: members unregistered whose ProcessTerminate still runs; the
	// application's Terminate waits for them (v3.3.0)
	ending  map[gen.PID]struct{}
	reason  error
	stopped chan struct{} // closed when the last member is gone while stopping
}

var _ gen.Application = (*application)(nil)

func (a *application) Name() gen.Atom { return a.spec.Name }

func (a *application) Mode() gen.ApplicationMode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode
}

func (a *application) State() gen.ApplicationState { return gen.ApplicationState(a.state.Load()) }
func (a *application) Node() gen.Node              { return a.node }
func (a *application) Log() gen.Log                { return a.log }
func (a *application) Behavior() gen.ApplicationBehavior {
	return a.behavior
}

func (a *application) Env(key gen.Env) (any, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.env[envKey(key)]
	return v, ok
}

func (a *application) EnvList() map[gen.Env]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := make(map[gen.Env]any, len(a.env))
	for k, v := range a.env {
		m[k] = v
	}
	return m
}

func (a *application) Tags() []gen.Atom {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]gen.Atom(nil), a.tags...)
}

func (a *application) AddTag(tag gen.Atom) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, t := range a.tags {
		if t == tag {
			return gen.ErrTaken
		}
	}
	a.tags = append(a.tags, tag)
	return nil
}

func (a *application) RemoveTag(tag gen.Atom) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, t := range a.tags {
		if t == tag {
			a.tags = append(a.tags[:i:i], a.tags[i+1:]...)
			return nil
		}
	}
	return gen.ErrUnknown
}

func (a *application) SetTags(tags []gen.Atom) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tags = append([]gen.Atom(nil), tags...)
	return nil
}

func (a *application) Weight() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.weight
}

func (a *application) SetWeight(w int) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.weight = w
	return nil
}

func (a *application) addMember(pid gen.PID) {
	a.mu.Lock()
	a.members[pid] = struct{}{}
	a.group = append(a.group, pid)
	a.mu.Unlock()
}

// memberTerminated applies the application mode when a member ends;
// terminating: its ProcessTerminate runs next (memberDone follows).
func (a *application) memberTerminated(pid gen.PID, reason error, terminating bool) {
	a.mu.Lock()
	if _, ok := a.members[pid]; !ok {
		a.mu.Unlock()
		return
	}
	delete(a.members, pid)
	if terminating {
		if a.ending == nil {
			a.ending = make(map[gen.PID]struct{})
		}
		a.ending[pid] = struct{}{}
	}
	left := len(a.members)
	state := a.State()
	if state == gen.ApplicationStateRunning {
		abnormal := !errors.Is(reason, gen.TerminateReasonNormal) && !errors.Is(reason, gen.TerminateReasonShutdown)
		switch {
		case a.mode == gen.ApplicationModePermanent,
			a.mode == gen.ApplicationModeTransient && abnormal:
			a.beginStopLocked(reason)
			a.mu.Unlock()
			a.exitMembers(reason)
			if a.mode == gen.ApplicationModePermanent && a.node.IsAlive() {
				go a.node.Stop()
			}
			a.mu.Lock()
		case left == 0:
			a.beginStopLocked(reason)
		}
		state = a.State()
	}
	if state == gen.ApplicationStateStopping && a.idleLocked() {
		a.finishLocked()
	}
	a.mu.Unlock()
}

// memberDone: the ProcessTerminate of a member returned.
func (a *application) memberDone(pid gen.PID) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.ending[pid]; !ok {
		return
	}
	delete(a.ending, pid)
	if a.State() == gen.ApplicationStateStopping && a.idleLocked() {
		a.finishLocked()
	}
}

// idleLocked: no member is alive or still in its ProcessTerminate.
func (a *application) idleLocked() bool { return len(a.members) == 0 && len(a.ending) == 0 }

// beginStopLocked switches to Stopping; the caller holds a.mu.
func (a *application) beginStopLocked(reason error) bool {
	if !a.state.CompareAndSwap(int32(gen.ApplicationStateRunning), int32(gen.ApplicationStateStopping)) {
		return false
	}
	a.reason = reason
	a.stopped = make(chan struct{})
	return true
}

// finishLocked completes a stop once every member is gone.
func (a *application) finishLocked() {
	if !a.state.CompareAndSwap(int32(gen.ApplicationStateStopping), int32(gen.ApplicationStateLoaded)) {
		return
	}
	a.group = nil
	close(a.stopped)
	reason := a.reason
	b := a.behavior
	a.node.goStart()
	go func() {
		defer a.node.goDone()
		safe(func() { b.Terminate(reason) })
	}()
}

func (a *application) memberList() []gen.PID {
	a.mu.Lock()
	defer a.mu.Unlock()
	list := make([]gen.PID, 0, len(a.members))
	for _, pid := range a.group {
		if _, ok := a.members[pid]; ok {
			list = append(list, pid)
		}
	}
	return list
}

// exitMembers sends an exit signal from the node core to every member, in
// reverse start order.
func (a *application) exitMembers(reason error) {
	list := a.memberList()
	for i := len(list) - 1; i >= 0; i-- {
		a.node.routeSendExit(a.node.core, list[i], reason)
	}
}

func safe(fn func()) (panicked bool) {
	if lib.Recover() {
		defer func() {
			if r := recover(); r != nil {
				panicked = true
			}
		}()
	}
	fn()
	return false
}

// ApplicationLoad calls PreLoad/Load, registers the spec's network types,
// errors and atoms and records the application as loaded.
func (n *node) ApplicationLoad(ab gen.ApplicationBehavior, args ...any) (gen.Atom, error) {
	if !n.IsAlive() {
		return "", gen.ErrNodeTerminated
	}
	if ab == nil {
		return "", gen.ErrIncorrect
	}
	a := &application{node: n, behavior: ab, members: make(map[gen.PID]struct{})}
	a.log = newLog(n.logger, n.log.Level(), func() any {
		return gen.MessageLogNode{Node: n.name, Creation: n.creation}
	})
	var spec gen.ApplicationSpec
	var err error
	if safe(func() { spec, err = ab.PreLoad(a, args...) }) {
		return "", gen.ErrApplicationLoadPanic
	}
	if err != nil {
		return "", err
	}
	if spec.Name == "" {
		return "", gen.ErrApplicationName
	}
	if len(spec.Group) == 0 {
		return "", gen.ErrApplicationEmpty
	}
	a.spec = spec
	a.mode = spec.Mode
	if a.mode == 0 {
		a.mode = gen.ApplicationModeTemporary
	}
	a.weight = spec.Weight
	a.tags = append([]gen.Atom(nil), spec.Tags...)
	a.logLevel = spec.LogLevel
	if a.logLevel != gen.LogLevelDefault {
		a.log.SetLevel(a.logLevel)
	}
	a.env = make(map[gen.Env]any)
	for k, v := range spec.Env {
		a.env[envKey(k)] = v
	}

	n.apps.mu.Lock()
	defer n.apps.mu.Unlock()
	if _, exist := n.apps.m[spec.Name]; exist {
		return "", gen.ErrTaken
	}
	if err := n.registerAppNetwork(spec.Network); err != nil {
		return "", err
	}
	a.state.Store(int32(gen.ApplicationStateLoaded))
	n.apps.m[spec.Name] = a
	return spec.Name, nil
}

// registerAppNetwork applies ApplicationSpec.Network; what the node has
// registered already (ErrTaken) is skipped.
func (n *node) registerAppNetwork(an gen.ApplicationNetwork) error {
	if n.net.Mode() == gen.NetworkModeDisabled {
		return nil
	}
	if len(an.RegisterAtoms) > 0 {
		for _, atom := range an.RegisterAtoms {
			if err := n.net.RegisterAtom(atom); err != nil && !errors.Is(err, gen.ErrTaken) {
				return err
			}
		}
	}
	if len(an.RegisterErrors) > 0 {
		for _, e := range an.RegisterErrors {
			if err := n.net.RegisterError(e); err != nil && !errors.Is(err, gen.ErrTaken) {
				return err
			}
		}
	}
	if len(an.RegisterTypes) > 0 {
		err := n.net.RegisterTypes(an.RegisterTypes)
		if errors.Is(err, gen.ErrTaken) {
			var rest []any
			for _, v := range an.RegisterTypes {
				if !n.typeRegistered(v) {
					rest = append(rest, v)
				}
			}
			err = nil
			if len(rest) > 0 {
				err = n.net.RegisterTypes(rest)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (n *node) typeRegistered(v any) bool {
	t := reflect.TypeOf(v)
	if t == nil {
		return false
	}
	_, ok := n.net.LookupType("#" + t.PkgPath() + "/" + t.Name())
	return ok
}

func (n *node) ApplicationUnload(name gen.Atom) error {
	n.apps.mu.Lock()
	defer n.apps.mu.Unlock()
	a, ok := n.apps.m[name]
	if !ok {
		return gen.ErrApplicationUnknown
	}
	if a.State() != gen.ApplicationStateLoaded {
		return gen.ErrApplicationRunning
	}
	delete(n.apps.m, name)
	return nil
}

func (n *node) ApplicationStart(name gen.Atom, options gen.ApplicationOptions) error {
	return n.applicationStart(name, 0, options)
}

func (n *node) ApplicationStartTemporary(name gen.Atom, options gen.ApplicationOptions) error {
	return n.applicationStart(name, gen.ApplicationModeTemporary, options)
}

func (n *node) ApplicationStartTransient(name gen.Atom, options gen.ApplicationOptions) error {
	return n.applicationStart(name, gen.ApplicationModeTransient, options)
}

func (n *node) ApplicationStartPermanent(name gen.Atom, options gen.ApplicationOptions) error {
	return n.applicationStart(name, gen.ApplicationModePermanent, options)
}

func (n *node) applicationStart(name gen.Atom, mode gen.ApplicationMode, options gen.ApplicationOptions) error {
	if !n.IsAlive() {
		return gen.ErrNodeTerminated
	}
	a, err := n.apps.get(name)
	if err != nil {
		return err
	}
	for _, dep := range a.spec.Depends.Applications {
		d, err := n.apps.get(dep)
		if err != nil || d.State() != gen.ApplicationStateRunning {
			return gen.ErrApplicationDepends
		}
	}
	if a.spec.Depends.Network && n.net.Mode() == gen.NetworkModeDisabled {
		return gen.ErrApplicationDepends
	}
	if !a.state.CompareAndSwap(int32(gen.ApplicationStateLoaded), int32(gen.ApplicationStateInitializing)) {
		return gen.ErrApplicationState
	}
	a.mu.Lock()
	if mode != 0 {
		a.mode = mode
	}
	for k, v := range options.Env {
		a.env[envKey(k)] = v
	}
	if options.LogLevel != gen.LogLevelDefault {
		a.logLevel = options.LogLevel
		a.log.SetLevel(options.LogLevel)
	}
	a.ref = n.MakeRef()
	a.started = time.Now()
	a.reason = nil
	mode, ref := a.mode, a.ref
	a.mu.Unlock()

	var initErr error
	if safe(func() { initErr = a.behavior.Init(ref, mode) }) {
		initErr = gen.TerminateReasonPanic
	}
	if initErr != nil {
		a.state.Store(int32(gen.ApplicationStateLoaded))
		return initErr
	}
	for _, m := range a.spec.Group {
		_, err := n.spawn(spawnSpec{register: m.Name, factory: m.Factory, options: m.Options, args: m.Args, app: a})
		if err != nil {
			for _, pid := range a.memberList() {
				n.Kill(pid)
			}
			a.mu.Lock()
			a.group = nil
			a.members = make(map[gen.PID]struct{})
			a.mu.Unlock()
			a.state.Store(int32(gen.ApplicationStateLoaded))
			return err
		}
	}
	a.mu.Lock()
	a.state.Store(int32(gen.ApplicationStateRunning))
	if len(a.members) == 0 {
		// every member ended already (Terminate once the last one's
		// ProcessTerminate returned: memberDone)
		a.beginStopLocked(gen.TerminateReasonNormal)
		if a.idleLocked() {
			a.finishLocked()
		}
	}
	a.mu.Unlock()
	safe(func() { a.behavior.Start(ref, mode) })
	return nil
}

func (n *node) ApplicationStop(name gen.Atom) error {
	a, err := n.apps.get(name)
	if err != nil {
		return err
	}
	timeout := a.spec.StopTimeout
	if timeout <= 0 {
		timeout = defaultAppStopTimeout
	}
	return n.applicationStop(a, timeout, false)
}

func (n *node) ApplicationStopForce(name gen.Atom) error {
	a, err := n.apps.get(name)
	if err != nil {
		return err
	}
	return n.applicationStop(a, defaultAppStopTimeout, true)
}

func (n *node) ApplicationStopWithTimeout(name gen.Atom, timeout time.Duration) error {
	a, err := n.apps.get(name)
	if err != nil {
		return err
	}
	return n.applicationStop(a, timeout, false)
}

func (n *node) applicationStop(a *application, timeout time.Duration, force bool) error {
	a.mu.Lock()
	switch a.State() {
	case gen.ApplicationStateStopping:
		a.mu.Unlock()
		return gen.ErrApplicationStopping
	case gen.ApplicationStateRunning:
	default:
		a.mu.Unlock()
		return gen.ErrApplicationState
	}
	a.beginStopLocked(gen.TerminateReasonShutdown)
	stopped, ref := a.stopped, a.ref
	a.mu.Unlock()

	safe(func() { a.behavior.Stop(ref, gen.TerminateReasonShutdown) })
	if force {
		for _, pid := range a.memberList() {
			n.Kill(pid)
		}
	} else {
		a.exitMembers(gen.TerminateReasonShutdown)
	}
	a.mu.Lock()
	if a.idleLocked() {
		a.finishLocked()
	}
	a.mu.Unlock()

	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-stopped:
		return nil
	case <-t.C:
		return gen.ErrTimeout
	}
}

func (n *node) ApplicationInfo(name gen.Atom) (gen.ApplicationInfo, error) {
	a, err := n.apps.get(name)
	if err != nil {
		return gen.ApplicationInfo{}, err
	}
	info := gen.ApplicationInfo{
		Name:        a.spec.Name,
		Description: a.spec.Description,
		Version:     a.spec.Version,
		Depends:     a.spec.Depends,
		Map:         a.spec.Map,
		State:       a.State(),
		Env:         a.EnvList(),
		Tags:        a.Tags(),
		Weight:      a.Weight(),
		Mode:        a.Mode(),
		Group:       a.memberList(),
	}
	a.mu.Lock()
	if info.State == gen.ApplicationStateRunning {
		info.Uptime = int64(time.Since(a.started).Seconds())
	}
	a.mu.Unlock()
	return info, nil
}

func (n *node) appNames(running bool) []gen.Atom {
	n.apps.mu.RLock()
	defer n.apps.mu.RUnlock()
	var names []gen.Atom
	for name, a := range n.apps.m {
		if !running || a.State() == gen.ApplicationStateRunning {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

func (n *node) Applications() []gen.Atom        { return n.appNames(false) }
func (n *node) ApplicationsRunning() []gen.Atom { return n.appNames(true) }
