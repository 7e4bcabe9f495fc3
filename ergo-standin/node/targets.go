package node

import (
	"sync"

	"ergo.services/ergo/gen"
)

// relation is one monitor (link == false) or link of a consumer on a
// target: gen.PID, gen.ProcessID, gen.Alias, gen.Event or gen.Atom (a node).
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
	// pending holds the relations on a remote target whose request is still
	// waiting for the peer's answer (see addRemoteRelation).
	pending map[pendingKey]*held
}

type pendingKey struct {
	consumer gen.PID
	relation
}

// held is a down or exit that arrived while its relation was pending.
type held struct {
	set    bool
	from   gen.PID
	reason error
}

func newTargets() *targets {
	return &targets{
		monitors: make(map[any]map[gen.PID]struct{}),
		links:    make(map[any]map[gen.PID]struct{}),
		owned:    make(map[gen.PID]map[relation]struct{}),
		pending:  make(map[pendingKey]*held),
	}
}

// has reports whether consumer has the relation (a pending one does not
// count: the framework records a remote relation only once the peer
// accepted it).
func (t *targets) has(consumer gen.PID, target any, link bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, pending := t.pending[pendingKey{consumer, relation{target, link}}]; pending {
		return false
	}
	_, exist := t.table(link)[target][consumer]
	return exist
}

// addPending records a relation on a remote target before its request is
// sent and marks it pending.
func (t *targets) addPending(consumer gen.PID, target any, link bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.addLocked(consumer, target, link); err != nil {
		return err
	}
	t.pending[pendingKey{consumer, relation{target, link}}] = &held{}
	return nil
}

// settle ends the pending state of a relation. With accepted == false the
// relation is dropped along with any held notice. With accepted == true a
// held notice (if any) is returned for delivery; otherwise the relation
// stays.
func (t *targets) settle(consumer gen.PID, target any, link bool, accepted bool) (held, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := pendingKey{consumer, relation{target, link}}
	h := t.pending[key]
	delete(t.pending, key)
	if h == nil {
		return held{}, false
	}
	if h.set {
		return *h, accepted
	}
	if !accepted {
		t.removeLocked(consumer, target, link)
	}
	return held{}, false
}

// holdLocked keeps the notice of a pending relation instead of delivering
// it; false if the relation is not pending. The relation itself is removed.
func (t *targets) holdLocked(consumer gen.PID, target any, link bool, from gen.PID, reason error) bool {
	h := t.pending[pendingKey{consumer, relation{target, link}}]
	if h == nil {
		return false
	}
	if !h.set {
		*h = held{set: true, from: from, reason: reason}
	}
	t.removeLocked(consumer, target, link)
	return true
}

// takeNotice removes a relation a down or exit arrived for. deliver is
// false if the relation is unknown, or pending (the notice is then held).
func (t *targets) takeNotice(consumer gen.PID, target any, link bool, from gen.PID, reason error) (deliver bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.holdLocked(consumer, target, link, from, reason) {
		return false
	}
	return t.removeLocked(consumer, target, link)
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
// relation whose consumer lives on peer (dropped). A pending relation is
// left alone: the framework records a remote relation only once the peer
// accepted it, so a connection lost while the request waits (an older
// connection to the same peer, say, replaced by the one the request went
// over) does not touch it, and the relation stands if the answer is yes.
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
	deliver := out[:0]
	for _, nt := range out {
		if _, pending := t.pending[pendingKey{nt.consumer, relation{nt.target, nt.link}}]; pending {
			continue
		}
		t.removeLocked(nt.consumer, nt.target, nt.link)
		deliver = append(deliver, nt)
	}
	out = deliver
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
		if _, pending := t.pending[pendingKey{consumer, r}]; !pending {
			out = append(out, r)
		}
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
