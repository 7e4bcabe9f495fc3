package main

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

// status is one node's election state as its actor reported it through
// node.Inspect, the same surface an operator or Observer reads.
type status struct {
	Up          bool // the node runs and answered
	State       string
	Term        uint64
	Leader      gen.Atom
	View        int
	Quorum      int
	Unreachable []gen.Atom
	PreVotes    string // pre-vote rounds started, "" if not reported
	At          time.Time
}

// inspectItems are the keys the demo shows. ergo:prevote_rounds is this
// implementation's addition; the table shows "-" where it is unknown.
var inspectItems = []string{
	"ergo:state", "ergo:term", "ergo:leader_node", "ergo:view_size",
	"ergo:quorum", "ergo:unreachable", "ergo:prevote_rounds",
}

// inspect reads one node's status. A node that is down, or whose actor is
// not (yet) running, is reported as not up.
func inspect(node gen.Node) status {
	s := status{At: time.Now(), State: "down"}
	if node == nil || node.IsAlive() == false {
		return s
	}
	pid, err := node.ProcessPID(processName)
	if err != nil {
		s.State = "starting"
		return s
	}
	info, err := node.Inspect(pid, inspectItems...)
	if err != nil {
		s.State = "starting"
		return s
	}
	s.Up = true
	s.State = info["ergo:state"]
	s.Term, _ = strconv.ParseUint(info["ergo:term"], 10, 64)
	s.Leader = gen.Atom(info["ergo:leader_node"])
	s.View, _ = strconv.Atoi(info["ergo:view_size"])
	s.Quorum, _ = strconv.Atoi(info["ergo:quorum"])
	// "node (1.2s ago),node2 (300ms ago)"
	for _, item := range strings.Split(info["ergo:unreachable"], ",") {
		if name, _, _ := strings.Cut(item, " "); name != "" {
			s.Unreachable = append(s.Unreachable, gen.Atom(name))
		}
	}
	if _, err := strconv.ParseUint(info["ergo:prevote_rounds"], 10, 64); err == nil {
		s.PreVotes = info["ergo:prevote_rounds"]
	}
	return s
}

// observer polls every node and keeps the latest status of each, plus the
// history of changes that the SVG timeline is drawn from.
type observer struct {
	mu      sync.Mutex
	latest  map[gen.Atom]status
	history map[gen.Atom][]status // one entry per change of state, term or leader
	events  []roleChange          // every leadership callback, in arrival order
}

func newObserver() *observer {
	return &observer{latest: make(map[gen.Atom]status), history: make(map[gen.Atom][]status)}
}

// run polls each node in its own goroutine, so one busy actor delays only
// its own row. node returns the node currently running under a name.
func (o *observer) run(ctx context.Context, names []gen.Atom, node func(gen.Atom) gen.Node, every time.Duration) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ticker := time.NewTicker(every)
			defer ticker.Stop()
			for {
				o.record(name, inspect(node(name)))
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
				}
			}
		}()
	}
	return &wg
}

func (o *observer) record(name gen.Atom, s status) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.history[name]
	if len(h) == 0 && s.Up == false {
		s.State = "starting" // not down: it has not been up yet
	}
	o.latest[name] = s
	if n := len(h); n > 0 && h[n-1].State == s.State && h[n-1].Term == s.Term && h[n-1].Leader == s.Leader {
		return
	}
	o.history[name] = append(h, s)
}

// roleChanged is the members' OnRole callback.
func (o *observer) roleChanged(c roleChange) {
	o.mu.Lock()
	o.events = append(o.events, c)
	o.mu.Unlock()
}

func (o *observer) snapshot() map[gen.Atom]status {
	o.mu.Lock()
	defer o.mu.Unlock()
	copied := make(map[gen.Atom]status, len(o.latest))
	for name, s := range o.latest {
		copied[name] = s
	}
	return copied
}

func (o *observer) allEvents() []roleChange {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.events)
}

func (o *observer) allHistory() map[gen.Atom][]status {
	o.mu.Lock()
	defer o.mu.Unlock()
	copied := make(map[gen.Atom][]status, len(o.history))
	for name, h := range o.history {
		copied[name] = slices.Clone(h)
	}
	return copied
}

// firstLeader returns the first promotion after since on a node other than
// except ("" for any node).
func (o *observer) firstLeader(since time.Time, except gen.Atom) (roleChange, bool) {
	for _, e := range o.allEvents() {
		if e.Leading && e.At.After(since) && e.Node != except {
			return e, true
		}
	}
	return roleChange{}, false
}

// agreement is the cluster's state over a set of nodes as seen after a moment.
type agreement struct {
	Leader gen.Atom
	Term   uint64
}

// agreed reports whether, in samples taken after since, exactly one of the
// nodes leads and every one of them recognises it at the same term.
func (o *observer) agreed(names []gen.Atom, since time.Time) (agreement, bool) {
	latest := o.snapshot()
	var a agreement
	leaders := 0
	for _, name := range names {
		s := latest[name]
		if s.Up == false || s.At.After(since) == false {
			return a, false
		}
		if s.State == "leader" {
			leaders++
			a = agreement{Leader: name, Term: s.Term}
		}
	}
	if leaders != 1 {
		return agreement{}, false
	}
	for _, name := range names {
		s := latest[name]
		if s.Leader != a.Leader || s.Term != a.Term {
			return agreement{}, false
		}
	}
	return a, true
}

// viewsAre reports whether every named node's view has the given size and
// none of them misses a peer.
func (o *observer) viewsAre(names []gen.Atom, size int, since time.Time) bool {
	latest := o.snapshot()
	for _, name := range names {
		s := latest[name]
		if s.At.After(since) == false || s.View != size || len(s.Unreachable) > 0 {
			return false
		}
	}
	return true
}
