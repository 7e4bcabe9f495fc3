package node

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

const (
	nodeRunning int32 = iota + 1
	nodeStopping
	nodeStopped
)

const (
	corePIDID  = 1
	firstPIDID = 1000
)

// DefaultShutdownTimeout is used when NodeOptions.ShutdownTimeout is zero.
const DefaultShutdownTimeout = 3 * time.Minute

// nodeCreation is the creation of a node starting now: its start time in
// unix seconds, as the framework takes it (node.Start). Two starts of one
// node name within the same second share a creation.
func nodeCreation() int64 { return time.Now().Unix() }

type node struct {
	name      gen.Atom
	creation  int64
	core      gen.PID
	options   gen.NodeOptions
	version   gen.Version
	framework gen.Version
	started   time.Time

	state   atomic.Int32
	netDown atomic.Bool // the network is stopped: IsAlive is false from here
	done    chan struct{}
	changed chan struct{} // signalled when a process or goroutine ends

	nextPID    atomic.Uint64
	nextRef    atomic.Uint64
	goroutines atomic.Int64

	mu        sync.RWMutex
	processes map[uint64]*process
	names     map[gen.Atom]*process
	aliases   map[gen.Alias]*process

	envStore

	targets *targets
	events  eventTable
	waiters *waiters
	logger  *logger
	log     *plog
	netLog  *plog
	net     stack
	apps    *apps
	netOnce sync.Once
	// netReady is closed once net is set; network callbacks wait for it
	netReady chan struct{}

	ctrlc ctrlc
}

func (n *node) stopNetwork() { n.netOnce.Do(n.net.Stop) }

// Start starts a node. framework is the version reported by FrameworkVersion.
func Start(name gen.Atom, options gen.NodeOptions, framework gen.Version) (gen.Node, error) {
	if len(name) > 255 {
		return nil, gen.ErrAtomTooLong
	}
	if i := strings.IndexByte(string(name), '@'); i < 1 || i == len(name)-1 {
		return nil, gen.ErrIncorrect
	}
	if options.ShutdownTimeout <= 0 {
		options.ShutdownTimeout = DefaultShutdownTimeout
	}
	n := &node{
		name:      name,
		creation:  nodeCreation(),
		options:   options,
		version:   options.Version,
		framework: framework,
		started:   time.Now(),
		done:      make(chan struct{}),
		changed:   make(chan struct{}, 1),
		processes: make(map[uint64]*process),
		names:     make(map[gen.Atom]*process),
		aliases:   make(map[gen.Alias]*process),
		netReady:  make(chan struct{}),
	}
	n.core = gen.PID{Node: name, ID: corePIDID, Creation: n.creation}
	n.nextPID.Store(firstPIDID - 1)
	n.merge(options.Env)
	level := options.Log.Level
	if level == gen.LogLevelDefault {
		level = gen.LogLevelInfo
	}
	n.logger = newLogger(options.Log)
	n.log = newLog(n.logger, level, func() any {
		return gen.MessageLogNode{Node: n.name, Creation: n.creation}
	})
	n.netLog = newLog(n.logger, level, func() any {
		return gen.MessageLogNetwork{Node: n.name, Creation: n.creation}
	})
	n.targets = newTargets()
	n.events.m = make(map[gen.Atom]*eventOwner)
	// every node produces the core event (framework: node.Start)
	n.registerEvent(gen.CoreEvent, n.core, gen.EventOptions{})
	n.waiters = newWaiters()
	n.apps = newApps()
	n.state.Store(nodeRunning)

	if options.Network.Mode == gen.NetworkModeDisabled {
		n.net = disabledNetwork{}
	} else {
		s, err := startStack(netstack.Options{
			Name:     name,
			Creation: n.creation,
			Network:  options.Network,
			Log:      n.netLog,
			Handler:  n,
			Events:   n,
			Node:     n,
		})
		if err != nil {
			n.net = disabledNetwork{}
			close(n.netReady)
			n.state.Store(nodeStopped)
			n.logger.terminate()
			return nil, err
		}
		n.net = s
	}
	close(n.netReady)

	for _, a := range options.Applications {
		appName, err := n.ApplicationLoad(a)
		if err == nil {
			err = n.ApplicationStart(appName, gen.ApplicationOptions{})
		}
		if err != nil {
			n.StopForce()
			return nil, err
		}
	}
	n.log.Trace("node started")
	// framework (node.Start): SIGTERM and Interrupt stop the node gracefully
	// unless the user calls SetCTRLC(false)
	n.SetCTRLC(true)
	return n, nil
}

// signal wakes whoever waits for processes or goroutines to end.
func (n *node) signal() {
	select {
	case n.changed <- struct{}{}:
	default:
	}
}

// goStart accounts a goroutine the node waits for when stopping.
func (n *node) goStart() { n.goroutines.Add(1) }

func (n *node) goDone() {
	n.goroutines.Add(-1)
	n.signal()
}

// waitUntil polls cond on every change signal until it holds or the
// deadline passes.
func (n *node) waitUntil(cond func() bool, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-n.changed:
		case <-tick.C:
		case <-t.C:
			return cond()
		}
	}
	return true
}

func (n *node) processCount() int {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return len(n.processes)
}

func (n *node) snapshot() []*process {
	n.mu.RLock()
	defer n.mu.RUnlock()
	list := make([]*process, 0, len(n.processes))
	for _, p := range n.processes {
		list = append(list, p)
	}
	return list
}

func (n *node) Name() gen.Atom { return n.name }

// IsAlive reports whether the node runs: true from its start until its
// network is down, through a graceful Stop (framework: the creation is
// cleared only after NetworkStop). So a process may still be spawned while
// the node stops; Stop sent it no exit, and waits for it up to
// ShutdownTimeout, as the framework does before it escalates to a kill.
func (n *node) IsAlive() bool {
	s := n.state.Load()
	return (s == nodeRunning || s == nodeStopping) && n.netDown.Load() == false
}
func (n *node) PID() gen.PID { return n.core }

// Creation is the node's start time in unix seconds, and 0 once its
// network is down (framework: Stop clears it after NetworkStop), so code
// that reads it from a stopped node learns nothing of its past run.
func (n *node) Creation() int64 {
	if n.netDown.Load() {
		return 0
	}
	return n.creation
}
func (n *node) Uptime() int64                 { return int64(time.Since(n.started).Seconds()) }
func (n *node) Version() gen.Version          { return n.version }
func (n *node) FrameworkVersion() gen.Version { return n.framework }
func (n *node) Network() gen.Network          { return n.net }
func (n *node) Log() gen.Log                  { return n.log }

// MakeRef returns a node-unique reference without a deadline.
func (n *node) MakeRef() gen.Ref {
	return gen.Ref{
		Node:     n.name,
		Creation: n.creation,
		ID:       [3]uint64{n.nextRef.Add(1), uint64(time.Now().UnixNano()), 0},
	}
}

// MakeRefWithDeadline returns a reference that expires at deadline (unix s).
func (n *node) MakeRefWithDeadline(deadline int64) (gen.Ref, error) {
	if deadline <= time.Now().Unix() {
		return gen.Ref{}, gen.ErrIncorrect
	}
	ref := n.MakeRef()
	ref.ID[2] = uint64(deadline)
	return ref, nil
}

func (n *node) LoggerAdd(name string, logger gen.LoggerBehavior, filter ...gen.LogLevel) error {
	return n.logger.add(name, logger, filter)
}

func (n *node) LoggerDelete(name string) {
	if b := n.logger.remove(name); b != nil {
		b.Terminate()
	}
}

func (n *node) Loggers() []string { return n.logger.names() }

// Stop stops the node gracefully within NodeOptions.ShutdownTimeout.
func (n *node) Stop() { n.StopWithTimeout(n.options.ShutdownTimeout) }

// StopWithTimeout sends a shutdown exit to every process (from its parent,
// so an actor does not trap it: framework node.stop) and waits, up to
// timeout, until every process has terminated (its ProcessTerminate
// returned) and every application's Terminate has returned, as v3.3.0 does
// before it takes the network and the loggers down; then it kills the
// rest and stops the network.
func (n *node) StopWithTimeout(timeout time.Duration) {
	if !n.state.CompareAndSwap(nodeRunning, nodeStopping) {
		n.WaitWithTimeout(timeout)
		return
	}
	deadline := time.Now().Add(timeout)
	for _, p := range n.snapshot() {
		n.deliverExit(p, p.parent, gen.MessageExitPID{PID: p.parent, Reason: gen.TerminateReasonShutdown})
	}
	n.waitUntil(func() bool { return n.processCount() == 0 && n.goroutines.Load() == 0 }, deadline)
	n.finish(deadline)
}

// StopForce kills every process and then stops the network (framework:
// node.stop(force)): a sleeping process is unregistered at once, so its
// remote consumers get their downs with TerminateReasonKill before the
// connections drop; a process inside a callback is unregistered only when
// the callback returns, by then usually after the network is gone (its
// remote consumers then see ErrNoConnection).
func (n *node) StopForce() {
	if !n.state.CompareAndSwap(nodeRunning, nodeStopping) {
		n.WaitWithTimeout(n.options.ShutdownTimeout)
		return
	}
	n.finish(time.Now().Add(n.options.ShutdownTimeout))
}

// finish kills what is left, stops the network, ends the requests still
// waiting (their callers are processes of this node) and waits for the
// node's goroutines up to deadline.
func (n *node) finish(deadline time.Time) {
	n.ctrlc.disable()
	for _, p := range n.snapshot() {
		n.Kill(p.pid)
	}
	n.stopNetwork()
	n.netDown.Store(true)
	n.waiters.failAll(gen.ErrNodeTerminated)
	n.waitUntil(func() bool { return n.goroutines.Load() == 0 }, deadline)
	n.log.Trace("node stopped")
	n.logger.terminate()
	n.state.Store(nodeStopped)
	close(n.done)
}

// Wait blocks until the node is stopped.
func (n *node) Wait() { <-n.done }

// WaitWithTimeout blocks until the node is stopped or timeout passes.
func (n *node) WaitWithTimeout(timeout time.Duration) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-n.done:
		return nil
	case <-t.C:
		return gen.ErrTimeout
	}
}
