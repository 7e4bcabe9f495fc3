package node

import (
	"errors"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

func relationKind(link bool) (add, remove netstack.FrameKind) {
	if link {
		return netstack.FrameLink, netstack.FrameUnlink
	}
	return netstack.FrameMonitor, netstack.FrameDemonitor
}

// addRelation makes consumer monitor (link == false) or link target:
// gen.PID, gen.ProcessID, gen.Alias (local or remote) or gen.Atom (a node).
func (n *node) addRelation(consumer gen.PID, target any, link bool) error {
	if peer, isNode := target.(gen.Atom); isNode {
		return n.addNodeRelation(consumer, peer, link)
	}
	if pid, ok := target.(gen.ProcessID); ok && pid.Node == "" {
		pid.Node = n.name
		target = pid
	}
	if peer := targetNode(target); peer != n.name {
		return n.addRemoteRelation(consumer, peer, target, link)
	}
	return n.addLocalRelation(consumer, target, link)
}

// addLocalRelation registers a relation on a local target. The target is
// checked under the targets lock, so a concurrent termination either fails
// the call or finds (and notifies) the new relation.
func (n *node) addLocalRelation(consumer gen.PID, target any, link bool) error {
	n.targets.mu.Lock()
	defer n.targets.mu.Unlock()
	p, err := n.lookupTarget(target)
	if err != nil {
		return err
	}
	if !p.alive() {
		return gen.ErrProcessUnknown
	}
	if p.pid == consumer {
		return gen.ErrNotAllowed
	}
	return n.targets.addLocked(consumer, target, link)
}

// addRemoteRelation asks the target's node to register the relation and
// waits for its reply. The relation is recorded locally first so a down
// racing with the reply is not lost.
func (n *node) addRemoteRelation(consumer gen.PID, peer gen.Atom, target any, link bool) error {
	rn, err := n.net.GetNode(peer)
	if err != nil {
		return err
	}
	if pid, ok := target.(gen.PID); ok && pid.Creation != rn.Creation() {
		return gen.ErrProcessIncarnation
	}
	if err := n.targets.add(consumer, target, link); err != nil {
		return err
	}
	addKind, removeKind := relationKind(link)
	ref := n.MakeRef()
	w := n.waiters.add(ref, consumer, peer)
	err = n.net.SendFrame(peer, netstack.Frame{Kind: addKind, From: consumer, To: target, Ref: ref})
	if err != nil {
		n.waiters.remove(ref)
		n.targets.remove(consumer, target, link)
		return err
	}
	_, err = n.waiters.wait(ref, w, gen.DefaultRequestTimeout)
	if err == nil {
		return nil
	}
	if !n.targets.remove(consumer, target, link) {
		// a down/exit for it has been delivered already
		return nil
	}
	if errors.Is(err, gen.ErrTimeout) {
		n.remoteIfConnected(peer, netstack.Frame{Kind: removeKind, From: consumer, To: target})
	}
	return err
}

// addNodeRelation monitors or links a connection to a node.
func (n *node) addNodeRelation(consumer gen.PID, peer gen.Atom, link bool) error {
	if peer == n.name {
		return gen.ErrNotAllowed
	}
	if _, err := n.net.GetNode(peer); err != nil {
		return err
	}
	if err := n.targets.add(consumer, peer, link); err != nil {
		return err
	}
	if _, err := n.net.Node(peer); err != nil && n.targets.remove(consumer, peer, link) {
		n.notifyLocal(consumer, n.core, peer, link, gen.ErrNoConnection)
	}
	return nil
}

// removeRelation drops a monitor or link.
func (n *node) removeRelation(consumer gen.PID, target any, link bool) error {
	if pid, ok := target.(gen.ProcessID); ok && pid.Node == "" {
		pid.Node = n.name
		target = pid
	}
	if !n.targets.remove(consumer, target, link) {
		return gen.ErrTargetUnknown
	}
	if _, isNode := target.(gen.Atom); isNode {
		return nil
	}
	if peer := targetNode(target); peer != n.name {
		_, removeKind := relationKind(link)
		n.remoteIfConnected(peer, netstack.Frame{Kind: removeKind, From: consumer, To: target})
	}
	return nil
}
