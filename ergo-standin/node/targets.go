package node

import (
	"sync"

	"ergo.services/ergo/gen"
)

// relation is one monitor (link == false) or link of a consumer on a
// target: gen.PID, gen.ProcessID, gen.Alias or gen.Atom (a node).
type relation struct {
	target any
	link   bool
}

// notice is a down or exit to hand to a consumer.
type notice struct {
	consumer gen.PID
	target   any
	link     bool
}

// targets keeps every link and monitor known to the node, local and remote
// consumers alike.
type targets struct {
	mu       sync.Mutex
	monitors map[any]map[gen.PID]struct{}
	links    map[any]map[gen.PID]struct{}
	owned    map[gen.PID]map[relation]struct{}
}

func newTargets() *targets {
	return &targets{
		monitors: make(map[any]map[gen.PID]struct{}),
		links:    make(map[any]map[gen.PID]struct{}),
		owned:    make(map[gen.PID]map[relation]struct{}),
	}
}

func (t *targets) table(link bool) map[any]map[gen.PID]struct{} {
	if link {
		return t.links
	}
	return t.monitors
}

// addLocked records a relation; the caller holds t.mu.
func (t *targets) addLocked(consumer gen.PID, target any, link bool) error {
	tbl := t.table(link)
	set := tbl[target]
	if set == nil {
		set = make(map[gen.PID]struct{})
		tbl[target] = set
	}
	if _, exist := set[consumer]; exist {
		return gen.ErrTargetExist
	}
	set[consumer] = struct{}{}
	own := t.owned[consumer]
	if own == nil {
		own = make(map[relation]struct{})
		t.owned[consumer] = own
	}
	own[relation{target, link}] = struct{}{}
	return nil
}

func (t *targets) add(consumer gen.PID, target any, link bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.addLocked(consumer, target, link)
}

func (t *targets) removeLocked(consumer gen.PID, target any, link bool) bool {
	tbl := t.table(link)
	set := tbl[target]
	if _, exist := set[consumer]; !exist {
		return false
	}
	delete(set, consumer)
	if len(set) == 0 {
		delete(tbl, target)
	}
	if own := t.owned[consumer]; own != nil {
		delete(own, relation{target, link})
		if len(own) == 0 {
			delete(t.owned, consumer)
		}
	}
	return true
}

// remove drops a relation; false if it did not exist.
func (t *targets) remove(consumer gen.PID, target any, link bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removeLocked(consumer, target, link)
}

// takeTarget removes every relation on target and returns them.
func (t *targets) takeTarget(target any) []notice {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.takeTargetLocked(target, nil)
}

func (t *targets) takeTargetLocked(target any, out []notice) []notice {
	for _, link := range []bool{false, true} {
		for consumer := range t.table(link)[target] {
			out = append(out, notice{consumer: consumer, target: target, link: link})
		}
	}
	for _, nt := range out {
		t.removeLocked(nt.consumer, nt.target, nt.link)
	}
	return out
}

// takeConsumer removes every relation owned by consumer and returns them.
func (t *targets) takeConsumer(consumer gen.PID) []relation {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []relation
	for r := range t.owned[consumer] {
		out = append(out, r)
	}
	for _, r := range out {
		t.removeLocked(consumer, r.target, r.link)
	}
	return out
}

// targetNode returns the node a target lives on.
func targetNode(target any) gen.Atom {
	switch t := target.(type) {
	case gen.PID:
		return t.Node
	case gen.ProcessID:
		return t.Node
	case gen.Alias:
		return t.Node
	case gen.Event:
		return t.Node
	case gen.Atom:
		return t
	}
	return ""
}

// takePeer removes every relation on a target of peer (returned) and every
// relation whose consumer lives on peer (dropped).
func (t *targets) takePeer(peer gen.Atom) []notice {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []notice
	for _, link := range []bool{false, true} {
		var onPeer []any
		for target := range t.table(link) {
			if targetNode(target) == peer {
				onPeer = append(onPeer, target)
			}
		}
		for _, target := range onPeer {
			for consumer := range t.table(link)[target] {
				out = append(out, notice{consumer: consumer, target: target, link: link})
			}
		}
	}
	for _, nt := range out {
		t.removeLocked(nt.consumer, nt.target, nt.link)
	}
	var remote []gen.PID
	for consumer := range t.owned {
		if consumer.Node == peer {
			remote = append(remote, consumer)
		}
	}
	for _, consumer := range remote {
		for r := range t.owned[consumer] {
			t.removeLocked(consumer, r.target, r.link)
		}
	}
	return out
}

// list returns the targets a consumer monitors or links.
func (t *targets) list(consumer gen.PID) []relation {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []relation
	for r := range t.owned[consumer] {
		out = append(out, r)
	}
	return out
}

func downMessage(target any, reason error) any {
	switch t := target.(type) {
	case gen.PID:
		return gen.MessageDownPID{PID: t, Reason: reason}
	case gen.ProcessID:
		return gen.MessageDownProcessID{ProcessID: t, Reason: reason}
	case gen.Alias:
		return gen.MessageDownAlias{Alias: t, Reason: reason}
	case gen.Event:
		return gen.MessageDownEvent{Event: t, Reason: reason}
	case gen.Atom:
		return gen.MessageDownNode{Name: t}
	}
	return nil
}

func exitMessage(target any, reason error) any {
	switch t := target.(type) {
	case gen.PID:
		return gen.MessageExitPID{PID: t, Reason: reason}
	case gen.ProcessID:
		return gen.MessageExitProcessID{ProcessID: t, Reason: reason}
	case gen.Alias:
		return gen.MessageExitAlias{Alias: t, Reason: reason}
	case gen.Event:
		return gen.MessageExitEvent{Event: t, Reason: reason}
	case gen.Atom:
		return gen.MessageExitNode{Name: t}
	}
	return nil
}
