package main

import (
	"slices"
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

type eventKind int

const (
	evStarted    eventKind = iota // Init ran: a new incarnation, no leader known
	evLeading                     // HandleBecomeLeader
	evFollowing                   // HandleBecomeFollower (leader may be empty)
	evTerminated                  // Terminate
)

// event is one callback of one member, stamped on the member's goroutine
// when it ran: the times below come from the callbacks themselves, not from
// polling, so they are as precise as the clock.
type event struct {
	kind    eventKind
	cluster string
	node    gen.Atom
	pid     gen.PID
	leader  gen.PID // the recognised leader (evFollowing), the member itself (evLeading)
	term    uint64
	at      time.Time
}

type memberKey struct {
	cluster string
	node    gen.Atom
}

// recorder collects the callbacks of every member in the process.
type recorder struct {
	mu     sync.Mutex
	events []event
	latest map[memberKey]event
	keep   bool // keep the full history (off for the thousand-cluster run)
	leads  int  // HandleBecomeLeader calls, history or not
	notify chan struct{}
	// clusters with callbacks since the last takeChanged: a wait for ten
	// thousand elections looks only at those, and does not hold the lock
	// every member's callback needs for ten thousand lookups a pass
	changed map[string]struct{}
	// sink, when set, also gets every event, outside the lock: a node
	// process of section 6c streams them to the harness
	sink func(event)
}

func newRecorder(keepHistory bool) *recorder {
	return &recorder{latest: make(map[memberKey]event), keep: keepHistory, notify: make(chan struct{}, 1), changed: make(map[string]struct{})}
}

func (r *recorder) add(e event) {
	r.mu.Lock()
	if r.keep {
		r.events = append(r.events, e)
	}
	if e.kind == evLeading {
		r.leads++
	}
	r.changed[e.cluster] = struct{}{}
	k := memberKey{e.cluster, e.node}
	// A late callback of a dead incarnation must not overwrite its
	// successor's state.
	if prev, ok := r.latest[k]; ok == false || prev.pid == e.pid || e.kind == evStarted {
		r.latest[k] = e
	}
	r.mu.Unlock()
	if r.sink != nil {
		r.sink(e)
	}
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// takeChanged returns the clusters with callbacks since the last call.
func (r *recorder) takeChanged() map[string]struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := r.changed
	r.changed = make(map[string]struct{})
	return changed
}

// leadings counts the HandleBecomeLeader calls so far.
func (r *recorder) leadings() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leads
}

// since returns the events of cluster at or after t, in order.
func (r *recorder) since(cluster string, t time.Time) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var list []event
	for _, e := range r.events {
		if e.cluster == cluster && e.at.Before(t) == false {
			list = append(list, e)
		}
	}
	return list
}

// agreement is what the callbacks say about a set of members: one of them
// leads, and every other one follows it at the same term.
type agreement struct {
	leader gen.PID
	term   uint64
	at     time.Time // the last callback that made it true
}

// agreed reports the agreement of the members of cluster on nodes, if
// there is one: one of them leads and the others follow it at its term,
// or, when none of them leads, all follow one leader of another node at
// one term (a node in a process of its own, whose callbacks are not
// recorded). A member that is campaigning reports nothing through the
// callbacks, so the caller confirms a candidate agreement with Inspect.
func (r *recorder) agreed(cluster string, nodes []gen.Atom) (agreement, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var a agreement
	found := false
	if len(nodes) == 0 {
		return a, false
	}
	for _, node := range nodes {
		e, ok := r.latest[memberKey{cluster, node}]
		if ok == false {
			return a, false
		}
		if e.kind == evLeading {
			if found {
				return a, false
			}
			a.leader, a.term, found = e.pid, e.term, true
		}
	}
	if found == false {
		// none of nodes leads: they agree if all follow one leader of
		// another node (one that runs in a process of its own, say)
		e := r.latest[memberKey{cluster, nodes[0]}]
		if e.kind != evFollowing || e.leader == (gen.PID{}) || slices.Contains(nodes, e.leader.Node) {
			return a, false
		}
		a.leader, a.term = e.leader, e.term
	}
	for _, node := range nodes {
		e := r.latest[memberKey{cluster, node}]
		switch {
		case e.kind == evLeading:
		case e.kind != evFollowing || e.leader != a.leader || e.term != a.term:
			return agreement{}, false
		}
		if e.at.After(a.at) {
			a.at = e.at
		}
	}
	return a, true
}

// pid returns the current incarnation of the member of cluster on node.
func (r *recorder) pid(cluster string, node gen.Atom) gen.PID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.latest[memberKey{cluster, node}].pid
}

// wait blocks until something is recorded or d passes.
func (r *recorder) wait(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.notify:
	case <-t.C:
	}
}
