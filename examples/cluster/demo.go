package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/demokit"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// demo is the in-process story: the nodes, what is observed of them, and
// the narrative shown around the table.
type demo struct {
	cfg     config
	out     io.Writer
	outMu   sync.Mutex
	cluster *lab.Cluster
	obs     *observer
	names   []gen.Atom
	letters map[gen.Atom]string
	pattern string // the names at a glance: "A..E = leader-demo-1234-1-{a..e}@localhost"
	start   time.Time

	mu      sync.Mutex
	caption []string     // what the current step is doing
	steps   []stepResult // finished steps
	phases  []phase      // the story's steps on the timeline
	marks   []mark       // what the story did to the nodes, for the timeline
	logs    []string     // recent log lines of the nodes
	over    atomic.Bool  // the story has ended; the nodes are being stopped
}

// stepResult is one line of the summary.
type stepResult struct {
	Key      string
	Title    string
	Leader   string // "C", or "C -> A" when leadership moved
	Term     uint64
	Measured string
	OK       bool
	Kept     bool // the leader held its term through the step (partition)

	// Took is the figure the step is judged by (0: none), Extra what it
	// includes besides the election; Slow is set when Took is far above
	// the election timeout (demokit.Slow).
	Took  time.Duration
	Extra time.Duration
	Slow  bool
}

// phase is a step's span on the timeline.
type phase struct {
	Key        string
	Label      string
	Start, End time.Time
}

// mark is something the story did to the nodes - a kill, a stop, a restart,
// a cut, a heal - with what it measured, drawn on the timeline apart from
// the promotions it caused.
type mark struct {
	Kind  string // "kill", "stop", "restart", "cut", "heal"
	At    time.Time
	Label string // "kill C: failover 7 ms"
}

// addMark records a mark for the timeline.
func (d *demo) addMark(kind string, at time.Time, format string, args ...any) {
	d.mu.Lock()
	d.marks = append(d.marks, mark{Kind: kind, At: at, Label: fmt.Sprintf(format, args...)})
	d.mu.Unlock()
}

// report is what a run of the story produced, for the tests.
type report struct {
	Steps    []stepResult
	Elapsed  time.Duration
	Timeline string // path of the SVG written, if any
}

// rediscover is how often a member re-runs Join for its peers; the restart
// and the heal wait on it.
const rediscover = time.Second

// runs tells apart demos started by one process (the tests run several).
var runs atomic.Int64

func newDemo(cfg config, out io.Writer) *demo {
	d := &demo{cfg: cfg, out: out, obs: newObserver(), letters: make(map[gen.Atom]string)}
	run := runs.Add(1)
	for i := 0; i < cfg.nodes; i++ {
		// Unique per process and per run, since test binaries run in
		// parallel; and of the shape a static route pattern matches as is.
		name := gen.Atom(fmt.Sprintf("leader-demo-%d-%d-%c@localhost", os.Getpid(), run, 'a'+i))
		d.names = append(d.names, name)
		d.letters[name] = string(rune('A' + i))
	}
	last := 'a' + cfg.nodes - 1
	d.pattern = fmt.Sprintf("A..%c = leader-demo-%d-%d-{a..%c}@localhost", last-'a'+'A', os.Getpid(), run, last)
	return d
}

func (d *demo) letter(name gen.Atom) string {
	if l, ok := d.letters[name]; ok {
		return l
	}
	return string(name)
}

func (d *demo) letterList(names []gen.Atom) string {
	var list []string
	for _, name := range names {
		list = append(list, d.letter(name))
	}
	return "{" + strings.Join(list, ",") + "}"
}

// options are the leader options every node of the story uses.
func (d *demo) options() leader.Options {
	return leader.Options{
		ClusterID:          "demo",
		MinClusterSize:     d.cfg.minSize,
		ElectionTimeoutMin: d.cfg.electionMin,
		ElectionTimeoutMax: d.cfg.electionMax,
		HeartbeatInterval:  d.cfg.heartbeat,
	}
}

// nodeOptions keeps the framework's log off the screen: the table owns the
// terminal, and the log lines are shown in a panel under it instead. The
// nodes reach each other only through the lab's static routes, so they use
// no registrar (see demokit.NoRegistrar).
func (d *demo) nodeOptions(name gen.Atom) gen.NodeOptions {
	return gen.NodeOptions{
		Network: gen.NetworkOptions{Registrar: demokit.NoRegistrar()},
		Log: gen.LogOptions{
			DefaultLogger: gen.DefaultLoggerOptions{Disable: true},
			Loggers:       []gen.Logger{{Name: "demo", Logger: logSink{d}}},
		},
	}
}

// setup registers the protocol and spawns the member; the lab runs it before
// the node's peers can reach it. The framework's type registry is one per OS
// process, so every node but the first gets gen.ErrTaken: already there.
func (d *demo) setup(node gen.Node) error {
	if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		return err
	}
	if err := node.Network().RegisterErrors(leader.ErrorTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		return err
	}
	var peers []gen.ProcessID
	for _, name := range d.names {
		if name != node.Name() {
			peers = append(peers, gen.ProcessID{Name: processName, Node: name})
		}
	}
	spec := memberSpec{
		Options:    d.options(),
		Peers:      peers,
		Rediscover: rediscover,
		OnRole:     d.roleChanged,
	}
	_, err := node.SpawnRegister(processName, factoryMember, gen.ProcessOptions{}, spec)
	return err
}

func (d *demo) roleChanged(c roleChange) {
	d.obs.roleChanged(c)
	// The teardown after the story stops every node; that is not news.
	if d.cfg.plain && d.over.Load() == false {
		d.printf("%s   %s", d.stamp(c.At), describe(c, d.letter))
	}
}

// logSink receives the nodes' log messages.
type logSink struct{ d *demo }

func (l logSink) Log(m gen.MessageLog) {
	// Only the actors' own lines: the election explains itself there, while
	// the network's lines are mostly the refused dials of a cut link.
	source, ok := m.Source.(gen.MessageLogProcess)
	if ok == false {
		return
	}
	text := l.d.shorten(fmt.Sprintf(m.Format, m.Args...))
	if m.Level >= gen.LogLevelWarning {
		text = levelName(m.Level) + ": " + text
	}
	line := l.d.letter(source.Node) + " " + text
	l.d.mu.Lock()
	l.d.logs = append(l.d.logs, line)
	if len(l.d.logs) > 100 {
		l.d.logs = l.d.logs[len(l.d.logs)-100:]
	}
	l.d.mu.Unlock()
	if l.d.cfg.plain && l.d.cfg.verbose {
		l.d.printf("%s   log %s", l.d.stamp(m.Time), line)
	}
}

func (logSink) Terminate() {}

// shorten makes a log message fit a line: node names become the table's
// letters, and the election's prefix, the same on every line, goes.
func (d *demo) shorten(message string) string {
	message = strings.TrimPrefix(message, `leader "demo": `)
	for _, name := range d.names {
		message = strings.ReplaceAll(message, "'"+string(name)+"'", d.letter(name))
		message = strings.ReplaceAll(message, string(name), d.letter(name))
	}
	return message
}

func levelName(level gen.LogLevel) string {
	switch level {
	case gen.LogLevelTrace:
		return "trace"
	case gen.LogLevelDebug:
		return "debug"
	case gen.LogLevelInfo:
		return "info"
	case gen.LogLevelWarning:
		return "warning"
	case gen.LogLevelError:
		return "error"
	case gen.LogLevelPanic:
		return "panic"
	}
	return "log"
}

// stamp is a time relative to the start of the story.
func (d *demo) stamp(t time.Time) string {
	return fmt.Sprintf("[%6.2fs]", t.Sub(d.start).Seconds())
}

func (d *demo) printf(format string, args ...any) {
	d.outMu.Lock()
	defer d.outMu.Unlock()
	fmt.Fprintf(d.out, format+"\n", args...)
}

// say sets the caption of the current step; in plain mode it is printed.
func (d *demo) say(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	d.mu.Lock()
	d.caption = append(d.caption, line)
	d.mu.Unlock()
	if d.cfg.plain {
		d.printf("%s %s", d.stamp(time.Now()), line)
	}
}

// begin starts a step: a new caption and a new phase on the timeline.
func (d *demo) begin(key, label, format string, args ...any) {
	now := time.Now()
	d.mu.Lock()
	if n := len(d.phases); n > 0 && d.phases[n-1].End.IsZero() {
		d.phases[n-1].End = now
	}
	d.phases = append(d.phases, phase{Key: key, Label: label, Start: now})
	d.caption = nil
	d.mu.Unlock()
	d.say("(%s) %s", key, fmt.Sprintf(format, args...))
}

// finish judges and records a step's result.
func (d *demo) finish(r stepResult) {
	r.Slow = demokit.Slow(r.Took, d.cfg.electionMax, r.Extra)
	d.mu.Lock()
	d.steps = append(d.steps, r)
	d.mu.Unlock()
	d.say("(%s) %s: %s - leader %s, term %d, %s", r.Key, verdict(r), r.Title, r.Leader, r.Term, r.Measured)
	if d.cfg.plain {
		d.printf("%s", renderTable(d.names, d.obs.snapshot(), d.letter, false))
	}
}

// linger keeps the screen on a finished step long enough to read it.
func (d *demo) linger(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(d.cfg.pause):
	}
}
