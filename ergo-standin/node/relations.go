package node

import (
	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

// Links and monitors, as the framework's node core routes them
// (RouteLink*/RouteMonitor*/RouteUnlink*/RouteDemonitor* in node/core.go):
// a local target is checked and recorded at once; for a remote target the
// caller's goroutine sends a request to the target's node and blocks until
// the answer or gen.DefaultRequestTimeout seconds (connection.waitResult).
// The process-level checks (state, self, already exists) are in
// process_api.go.

func relationKind(link bool) (add, remove netstack.FrameKind) {
	if link {
		return netstack.FrameLink, netstack.FrameUnlink
	}
	return netstack.FrameMonitor, netstack.FrameDemonitor
}

// noticeFrom is the sender of a down or exit about target: the target PID
// itself, or the node core PID for every other kind of target (framework:
// RouteTerminatePID sends from the target, RouteTerminateProcessID/Alias
// and RouteNodeDown from the core).
func (n *node) noticeFrom(target any) gen.PID {
	if pid, ok := target.(gen.PID); ok {
		return pid
	}
	return n.core
}

// addRelation makes consumer monitor (link == false) or link a PID,
// ProcessID or Alias, local or remote.
func (n *node) addRelation(consumer gen.PID, target any, link bool) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	if peer := targetNode(target); peer != n.name {
		_, err := n.addRemoteRelation(consumer, peer, target, link)
		return err
	}
	return n.addLocalRelation(consumer, target, link)
}

// relationLookup finds the local process a relation target names, with the
// framework's errors: a PID or ProcessID that is not registered (or belongs
// to another incarnation) is ErrProcessUnknown, an unknown Alias
// ErrAliasUnknown. A process being unregistered counts as gone.
func (n *node) relationLookup(target any) (*process, error) {
	switch t := target.(type) {
	case gen.PID:
		if t.Creation != n.creation {
			return nil, gen.ErrProcessUnknown
		}
	case gen.ProcessID, gen.Alias:
	default:
		return nil, gen.ErrUnsupported
	}
	p, err := n.lookupTarget(target)
	if err == nil && p.unregistered.Load() {
		err = gen.ErrProcessUnknown
		if _, alias := target.(gen.Alias); alias {
			err = gen.ErrAliasUnknown
		}
	}
	return p, err
}

// addLocalRelation registers a relation on a local target. The target is
// checked under the targets lock, so a concurrent termination either fails
// the call or finds (and notifies) the new relation.
func (n *node) addLocalRelation(consumer gen.PID, target any, link bool) error {
	n.targets.mu.Lock()
	defer n.targets.mu.Unlock()
	p, err := n.relationLookup(target)
	if err != nil {
		return err
	}
	if _, alias := target.(gen.Alias); !link && !alias && p.getState() == gen.ProcessStateTerminated {
		return gen.ErrProcessTerminated
	}
	return n.targets.addLocked(consumer, target, link)
}

// removeLocalRelation drops a relation on a local target; the target must
// still exist (framework: ErrProcessUnknown / ErrAliasUnknown otherwise).
func (n *node) removeLocalRelation(consumer gen.PID, target any, link bool) error {
	if _, err := n.relationLookup(target); err != nil {
		return err
	}
	if !n.targets.remove(consumer, target, link) {
		return gen.ErrTargetUnknown
	}
	return nil
}

// peerFor returns the connection to the target's node, dialing if needed
// (framework: network.GetConnection), and checks the incarnation of a PID
// or Alias target against the peer's creation.
func (n *node) peerFor(peer gen.Atom, target any) error {
	rn, err := n.net.GetNode(peer)
	if err != nil {
		return err
	}
	creation := int64(-1)
	switch t := target.(type) {
	case gen.PID:
		creation = t.Creation
	case gen.Alias:
		creation = t.Creation
	}
	if creation != -1 && creation != rn.Creation() {
		return gen.ErrProcessIncarnation
	}
	return nil
}

// request sends a relation request to peer and blocks for the answer, up
// to gen.DefaultRequestTimeout seconds; the answer's value is what an
// event subscription returns (the event's buffered messages). A connection
// that drops meanwhile does not end the wait (as in the framework, where
// only the timer or the answer ends connection.waitResult).
func (n *node) request(peer gen.Atom, kind netstack.FrameKind, consumer gen.PID, target any) (any, error) {
	ref := n.MakeRef()
	w := n.waiters.add(ref, consumer)
	if err := n.net.SendFrame(peer, netstack.Frame{Kind: kind, From: consumer, To: target, Ref: ref}); err != nil {
		n.waiters.remove(ref)
		return nil, err
	}
	return n.waiters.wait(ref, w, gen.DefaultRequestTimeout)
}

// addRemoteRelation asks the target's node to register the relation and
// waits for the answer. The relation is recorded (pending) before the
// request goes out: a down or exit that arrives before the answer is held
// and delivered once the peer accepted; if the request fails or times out
// the relation and anything held are dropped, so the consumer sees neither
// a relation nor a notice (framework: the relation is recorded only after
// the answer).
// The answer's value is returned (see request).
func (n *node) addRemoteRelation(consumer gen.PID, peer gen.Atom, target any, link bool) (any, error) {
	if err := n.peerFor(peer, target); err != nil {
		return nil, err
	}
	if err := n.targets.addPending(consumer, target, link); err != nil {
		return nil, err
	}
	addKind, _ := relationKind(link)
	v, err := n.request(peer, addKind, consumer, target)
	if h, deliver := n.targets.settle(consumer, target, link, err == nil); deliver {
		n.notifyLocal(consumer, h.from, target, link, h.reason)
	}
	return v, err
}

// removeRelation drops a monitor or link of a PID, ProcessID, Alias or
// remote Event. For a remote target the peer is asked first; if it refuses
// or does not answer in time the local relation stays (and may still
// fire), and the error is returned - except for an Unlink of a PID, which
// returns nil (framework: RouteUnlinkPID ignores the peer's error).
func (n *node) removeRelation(consumer gen.PID, target any, link bool) error {
	if n.state.Load() == nodeStopped {
		return gen.ErrNodeTerminated
	}
	peer := targetNode(target)
	if peer == n.name {
		return n.removeLocalRelation(consumer, target, link)
	}
	if err := n.peerFor(peer, target); err != nil {
		return err
	}
	_, removeKind := relationKind(link)
	if _, err := n.request(peer, removeKind, consumer, target); err != nil {
		if _, isPID := target.(gen.PID); link && isPID {
			return nil
		}
		return err
	}
	if !n.targets.remove(consumer, target, link) {
		return gen.ErrTargetUnknown
	}
	return nil
}

// addNodeRelation monitors or links the connection to a node: the node is
// connected (dialing if needed, framework: Network().GetNode) and the
// relation recorded locally. If the connection is already gone again by
// then, the down/exit is delivered at once.
func (n *node) addNodeRelation(consumer gen.PID, peer gen.Atom, link bool) error {
	if _, err := n.net.GetNode(peer); err != nil {
		return err
	}
	n.targets.add(consumer, peer, link)
	if _, err := n.net.Node(peer); err != nil && n.targets.remove(consumer, peer, link) {
		n.notifyLocal(consumer, n.core, peer, link, gen.ErrNoConnection)
	}
	return nil
}

// removeNodeRelation drops a node monitor or link (local only).
func (n *node) removeNodeRelation(consumer gen.PID, peer gen.Atom, link bool) error {
	if !n.targets.remove(consumer, peer, link) {
		return gen.ErrTargetUnknown
	}
	return nil
}
