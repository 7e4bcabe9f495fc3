package lab

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"ergo.services/ergo"
	"ergo.services/ergo/act"
	"ergo.services/ergo/gen"
)

// Program is what a node process runs: the test package supplies it, since
// only the test package knows its actor. The lab starts the node (name,
// cookie, acceptor on the namespace's address, static routes to every peer,
// the lab's probe processes), registers Types and Errors before anything
// connects, then calls Start.
type Program struct {
	// Types and Errors are registered on the node (for example
	// leader.NetworkTypes() and leader.ErrorTypes()).
	Types  []any
	Errors []error
	// Start spawns the process the lab watches: its Inspect keys
	// (InspectKeys) are what Status reports.
	Start func(c *Child) (gen.PID, error)
	// Go runs when the test says go, once every node of the cluster is
	// ready (registered, so nothing connects too early): typically the
	// actor joins its peers here.
	Go func(c *Child) error
	// Handle answers every operation that is not built in (OpStatus,
	// OpStop, OpGo), for example "join", "stepdown" or "leave". Its result
	// is returned to the caller of Node.Do.
	Handle func(c *Child, op string, args []string) (string, error)
}

// Main is the test binary's TestMain hook: in a node process (EnvNode set)
// it runs program and exits; otherwise it runs the tests.
//
//	func TestMain(m *testing.M) { lab.Main(m, program) }
func Main(m *testing.M, program Program) {
	if config := os.Getenv(EnvNode); config != "" {
		os.Exit(runChild(config, program))
	}
	os.Exit(m.Run())
}

// ProbeName is the registered name of the process that counts probe
// messages on every node.
const ProbeName gen.Atom = "lab_probe"

// Probe is the message the probe senders exchange (Config.Pingers).
type Probe struct {
	From string
	Lane int
}

// Child is a running node process's side of the lab.
type Child struct {
	cfg     childConfig
	program Program
	node    gen.Node
	watched gen.PID
	worklog *WorkLog

	outMu sync.Mutex
	out   *bufio.Writer
	outF  *os.File

	recvMu   sync.Mutex
	received map[string]uint64

	stallMu sync.Mutex
	stalls  []Stall

	goOnce sync.Once
}

// Node is the running ergo node.
func (c *Child) Node() gen.Node { return c.node }

// Name is the node's name.
func (c *Child) Name() gen.Atom { return gen.Atom(c.cfg.Name) }

// Index is the node's position in the cluster (0-based).
func (c *Child) Index() int { return c.cfg.Index }

// Peers are the names of the other nodes of the cluster.
func (c *Child) Peers() []gen.Atom {
	var peers []gen.Atom
	for _, p := range c.cfg.Peers {
		peers = append(peers, gen.Atom(p.Name))
	}
	return peers
}

// Param returns a parameter of Config.Params.
func (c *Child) Param(key string) string { return c.cfg.Params[key] }

// ParamInt returns a parameter as an int, or def when unset or malformed.
func (c *Child) ParamInt(key string, def int) int {
	if v, err := strconv.Atoi(c.cfg.Params[key]); err == nil {
		return v
	}
	return def
}

// WorkLog is the cluster's shared leader-only work log.
func (c *Child) WorkLog() *WorkLog { return c.worklog }

// Logf writes to the node's log file.
func (c *Child) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000000")+" lab: "+format+"\n", args...)
}

// Emit reports an event to the test at once. Node and At are filled in
// when empty. Safe from any goroutine.
func (c *Child) Emit(e Event) {
	if e.Node == "" {
		e.Node = c.cfg.Name
	}
	if e.At == 0 {
		e.At = time.Now().UnixNano()
	}
	c.send(report{Kind: "event", Event: &e})
}

func (c *Child) send(r report) {
	line, err := json.Marshal(r)
	if err != nil {
		c.Logf("cannot encode a report: %v", err)
		return
	}
	c.outMu.Lock()
	defer c.outMu.Unlock()
	c.out.Write(line)
	c.out.WriteByte('\n')
	if err := c.out.Flush(); err != nil {
		// the test is gone
		os.Exit(3)
	}
}

// Status takes a fresh status.
func (c *Child) Status() Status {
	s := Status{Node: c.cfg.Name}
	if c.watched != (gen.PID{}) {
		inspect, err := c.node.Inspect(c.watched, InspectKeys...)
		if err != nil {
			s.Err = err.Error()
		}
		s.Inspect = inspect
	}
	c.recvMu.Lock()
	if len(c.received) > 0 {
		s.Received = make(map[string]uint64, len(c.received))
		for k, v := range c.received {
			s.Received[k] = v
		}
	}
	c.recvMu.Unlock()
	s.Links = make(map[string]Link)
	for _, p := range c.cfg.Peers {
		var l Link
		if remote, err := c.node.Network().Node(gen.Atom(p.Name)); err == nil {
			info := remote.Info()
			l = Link{Connected: true, PoolSize: info.PoolSize, PoolLen: info.PoolLen}
		}
		s.Links[p.Name] = l
	}
	s.At = time.Now().UnixNano()
	return s
}

func runChild(config string, program Program) int {
	c := &Child{program: program, received: make(map[string]uint64)}
	if err := json.Unmarshal([]byte(config), &c.cfg); err != nil {
		fmt.Fprintf(os.Stderr, "lab: bad %s: %v\n", EnvNode, err)
		return 2
	}
	in := os.NewFile(3, "lab-commands")
	c.outF = os.NewFile(4, "lab-reports")
	c.out = bufio.NewWriter(c.outF)
	if c.cfg.WorkLog != "" {
		w, err := OpenWorkLog(c.cfg.WorkLog, c.cfg.Name)
		if err != nil {
			c.Logf("%v", err)
			return 2
		}
		c.worklog = w
	}
	if err := c.start(); err != nil {
		c.Logf("cannot start: %v", err)
		c.send(report{Kind: "ready", Err: err.Error()})
		return 2
	}
	go c.watchStalls()
	s := c.Status()
	c.send(report{Kind: "ready", Status: &s})
	go c.watch()
	// A node that stops on its own (SIGTERM or Interrupt, which
	// ergo.StartNode handles with a graceful Stop) ends the program, as
	// node.Wait() at the end of a user's main does.
	go func() {
		c.node.Wait()
		c.Logf("the node stopped; exiting")
		os.Exit(0)
	}()

	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 64*1024), 1024*1024)
	for scanner.Scan() {
		var cmd command
		if err := json.Unmarshal(scanner.Bytes(), &cmd); err != nil {
			c.Logf("bad command %q: %v", scanner.Text(), err)
			continue
		}
		go c.handle(cmd)
	}
	// the test is gone: do not linger in its namespace
	c.Logf("command channel closed; exiting")
	return 0
}

// ShutdownTimeout is the ShutdownTimeout of every lab node: how long a
// graceful Stop waits for the node's processes before it kills them.
const ShutdownTimeout = 10 * time.Second

func (c *Child) start() error {
	level := gen.LogLevelInfo
	if c.cfg.Params["log"] == "debug" {
		level = gen.LogLevelDebug
	}
	options := gen.NodeOptions{
		ShutdownTimeout: ShutdownTimeout,
		Network: gen.NetworkOptions{
			Cookie: c.cfg.Cookie,
			Acceptors: []gen.AcceptorOptions{
				{Host: c.cfg.IP, Port: c.cfg.Port, PortRange: 1},
			},
		},
		Log: gen.LogOptions{
			Level:         level,
			DefaultLogger: gen.DefaultLoggerOptions{Output: os.Stderr},
		},
	}
	node, err := ergo.StartNode(gen.Atom(c.cfg.Name), options)
	if err != nil {
		return fmt.Errorf("start node %s: %w", c.cfg.Name, err)
	}
	c.node = node
	// Register before anyone is told about this node: the peers learn its
	// name only when the test sends them "join" after every node is ready.
	types := append([]any{Probe{}}, c.program.Types...)
	if err := node.Network().RegisterTypes(types); err != nil {
		return fmt.Errorf("register types: %w", err)
	}
	if len(c.program.Errors) > 0 {
		if err := node.Network().RegisterErrors(c.program.Errors); err != nil {
			return fmt.Errorf("register errors: %w", err)
		}
	}
	// Static routes, not the registrar: every peer's address is known, a
	// matching static route is final (no registrar lookup behind a cut, no
	// UDP resolve that waits out its deadline toward a blackholed host), and
	// nothing depends on which process serves port 4499.
	for _, p := range c.cfg.Peers {
		route := gen.NetworkRoute{Route: gen.Route{Host: p.IP, Port: p.Port}, Cookie: c.cfg.Cookie}
		// by host: a peer's namespace may come back under a new node name
		// (Node.RestartAs), as a rescheduled pod does
		if err := node.Network().AddRoute("^[^@]+@"+regexp.QuoteMeta(p.IP)+"$", route, 100); err != nil {
			return fmt.Errorf("route to %s: %w", p.Name, err)
		}
	}
	if _, err := node.SpawnRegister(ProbeName, func() gen.ProcessBehavior { return &probeCounter{child: c} }, gen.ProcessOptions{}); err != nil {
		return fmt.Errorf("spawn the probe counter: %w", err)
	}
	if c.program.Start != nil {
		pid, err := c.program.Start(c)
		if err != nil {
			return fmt.Errorf("program start: %w", err)
		}
		c.watched = pid
	}
	return nil
}

// watch pushes a status whenever its summary changes.
func (c *Child) watch() {
	poll := c.cfg.Poll
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	last := ""
	for {
		time.Sleep(poll)
		s := c.Status()
		if sum := s.summary(); sum != last {
			last = sum
			c.send(report{Kind: "status", Status: &s})
		}
	}
}

func (c *Child) handle(cmd command) {
	r := report{Kind: "reply", ID: cmd.ID}
	switch cmd.Op {
	case OpStatus:
	case OpStalls:
		c.stallMu.Lock()
		out, err := json.Marshal(c.stalls)
		c.stallMu.Unlock()
		r.Result = string(out)
		if err != nil {
			r.Err = err.Error()
		}
	case OpStop:
		c.Logf("stopping gracefully")
		c.node.Stop()
		c.Logf("stopped")
		os.Exit(0)
	case OpGo:
		var err error
		c.goOnce.Do(func() {
			c.startProbes()
			if c.program.Go != nil {
				err = c.program.Go(c)
			}
		})
		if err != nil {
			r.Err = err.Error()
		}
	default:
		if c.program.Handle == nil {
			r.Err = "unknown operation " + strconv.Quote(cmd.Op)
			break
		}
		result, err := c.program.Handle(c, cmd.Op, cmd.Args)
		r.Result = result
		if err != nil {
			r.Err = err.Error()
		}
	}
	s := c.Status()
	r.Status = &s
	c.send(r)
}

// stallTick is the period of the stall watch; a tick more than
// 4*stallTick late is a stall.
const stallTick = 5 * time.Millisecond

// watchStalls records the times this process was not scheduled (the last
// 256 of them).
func (c *Child) watchStalls() {
	ticker := time.NewTicker(stallTick)
	defer ticker.Stop()
	last := time.Now()
	for range ticker.C {
		now := time.Now()
		if gap := now.Sub(last); gap > 4*stallTick {
			c.stallMu.Lock()
			c.stalls = append(c.stalls, Stall{End: now.UnixNano(), Gap: gap})
			if len(c.stalls) > 256 {
				c.stalls = c.stalls[len(c.stalls)-256:]
			}
			c.stallMu.Unlock()
		}
		last = now
	}
}

// startProbes spawns the probe senders. A sender always uses one link of a
// pooled connection, so several of them cover every link.
func (c *Child) startProbes() {
	every := time.Duration(c.ParamInt("probe_every_ms", 20)) * time.Millisecond
	var peers []gen.ProcessID
	for _, p := range c.Peers() {
		peers = append(peers, gen.ProcessID{Name: ProbeName, Node: p})
	}
	for lane := 0; lane < c.cfg.Pingers; lane++ {
		sender := &probeSender{from: c.cfg.Name, lane: lane, peers: slices.Clone(peers), every: every}
		if _, err := c.node.Spawn(func() gen.ProcessBehavior { return sender }, gen.ProcessOptions{}); err != nil {
			c.Logf("spawn probe sender %d: %v", lane, err)
		}
	}
}

type probeTick struct{}

// probeSender sends a Probe to every peer's counter every few
// milliseconds, over the connection the node has to the peer: it never
// dials. The election's own processes make and remake connections; probe
// senders that dialed by name, eight per node every 20 ms, would turn every
// reconnect into a simultaneous connect from both sides, which on a
// framework with the simultaneous-connect bug (ERGO_STANDIN_BUGS) leaves
// the pair dead over and over, whatever the election does.
type probeSender struct {
	act.Actor
	from  string
	lane  int
	peers []gen.ProcessID
	every time.Duration
}

func (p *probeSender) Init(args ...any) error {
	_, err := p.SendAfter(p.PID(), probeTick{}, p.every)
	return err
}

func (p *probeSender) HandleMessage(from gen.PID, message any) error {
	if _, ok := message.(probeTick); ok {
		for _, peer := range p.peers {
			if _, err := p.Node().Network().Node(peer.Node); err == nil {
				p.Send(peer, Probe{From: p.from, Lane: p.lane})
			}
		}
		_, err := p.SendAfter(p.PID(), probeTick{}, p.every)
		return err
	}
	return nil
}

// probeCounter counts the probes received, per sending node.
type probeCounter struct {
	act.Actor
	child *Child
}

func (p *probeCounter) Init(args ...any) error { return nil }

func (p *probeCounter) HandleMessage(from gen.PID, message any) error {
	if m, ok := message.(Probe); ok {
		p.child.recvMu.Lock()
		p.child.received[m.From]++
		p.child.recvMu.Unlock()
	}
	return nil
}
