package leader

import (
	"fmt"
	"slices"
	"time"

	"ergo.services/ergo/gen"
)

// IsLeader reports whether this node holds leadership now: it won the
// election and a quorum acknowledged one of its liveness rounds recently
// enough (LeaseExpiry). It turns false the instant that lease runs out,
// even before the actor has stood down, so guard every leader-only action
// with it; a step that takes long should check LeaseExpiry before it
// starts and again before it commits. A hiccup longer than the acting
// lease (a GC pause or a stalled network of about 10 ms at the defaults)
// makes it false for a moment while the node keeps its role: leader-only
// work skips a tick, which costs availability, never safety.
func (a *Actor) IsLeader() bool {
	if a.state == nil {
		return false
	}
	// what the node's hub recorded for it since its last step counts too
	return a.state.leadingWhere(a.clock(), a.stillConnected, a.hubPeek())
}

// stillConnected reports whether m's acknowledgements may still count: its
// node is connected now, and the connection they came over was not lost
// since (the watcher saw no loss after the newest of them).
func (a *Actor) stillConnected(m *member) bool {
	return a.connected(m.node) && a.losses.since(m.node, m.lastAck) == false
}

// LeaseExpiry returns the instant until which this node's leadership is
// exclusive, on the clock of time.Now (monotonic): no other node of the view
// can lead before it, assuming only clock rates within 2.5% of real time
// (docs/safety.md). It is the end of the acting lease: F (ElectionTimeoutMin/10,
// 15 ms at the defaults) less a drift margin after the send time of the
// newest round a quorum acknowledged, renewed by liveness rounds every
// ElectionTimeoutMin/30; the zero time when this node does not lead. A long
// step compares time.Until(a.LeaseExpiry()) with its own duration before it
// starts, and fences what it commits (HandleConfirmLeader, examples/fencing).
func (a *Actor) LeaseExpiry() time.Time {
	if a.IsLeader() == false {
		return time.Time{}
	}
	if a.state.quorum() <= 1 {
		return a.clock().Add(actingLease(a.state.cfg))
	}
	return a.state.actingUntil(a.stillConnected, a.hubPeek())
}

// Leader returns the PID of the leader this node recognises: its own PID
// when it leads, the zero PID when no leader is known.
func (a *Actor) Leader() gen.PID {
	if a.state == nil {
		return gen.PID{}
	}
	return a.state.leader
}

// Term returns the current term, the election's logical clock.
func (a *Actor) Term() uint64 {
	if a.state == nil {
		return 0
	}
	return a.state.term
}

// ClusterID returns the id of the election this actor takes part in.
func (a *Actor) ClusterID() string {
	if a.state == nil {
		return ""
	}
	return a.state.cfg.clusterID
}

// Peers returns the PIDs of the peers whose PID is known, ordered by node.
// A member that was declared but never answered, or whose connection
// dropped, counts in the view but is not listed: a connection the
// framework no longer has is not listed even before the actor has handled
// its loss.
func (a *Actor) Peers() []gen.PID {
	if a.state == nil {
		return nil
	}
	list := a.state.peers()
	kept := list[:0]
	for _, pid := range list {
		if a.connected(pid.Node) {
			kept = append(kept, pid)
		}
	}
	return kept
}

// PeerCount returns len(Peers()).
func (a *Actor) PeerCount() int {
	return len(a.Peers())
}

// HasPeer reports whether pid is the known PID of a member of the view
// that Peers lists.
func (a *Actor) HasPeer(pid gen.PID) bool {
	if a.state == nil {
		return false
	}
	m, ok := a.state.members[pid.Node]
	return ok && m.pid == pid && a.connected(pid.Node)
}

// Bootstrap returns Options.Bootstrap as configured.
func (a *Actor) Bootstrap() []gen.ProcessID {
	if a.state == nil {
		return nil
	}
	return slices.Clone(a.state.cfg.bootstrap)
}

// Join declares a peer and opens negotiation with it. The peer counts toward
// the view at once, before it has answered. Idempotent per node: calling it
// again for a known node only re-probes one that is not reachable, at most
// once per ElectionTimeoutMax (a peer never heard from: with a spacing that
// doubles up to 8×ElectionTimeoutMax), so it is safe from a discovery loop. Join
// overrides an earlier Leave of the same node. Called from Init, it is
// applied right after the options. This actor's own node is ignored.
//
// Join returns an error wrapping ErrInvalidPeer, and changes nothing, when
// peer's node name is not of the form name@host; the error says what was
// wrong. Calling it as a statement, as the specification does, stays
// valid Go: a discovery loop that wants to know checks the error.
func (a *Actor) Join(peer gen.ProcessID) error {
	if err := checkPeer(peer); err != nil {
		return fmt.Errorf("%w: Join(%s): %s; pass the peer's node name as the framework prints it, for example node1@host", ErrInvalidPeer, peer, err)
	}
	if a.state == nil {
		a.pendingJoins = append(a.pendingJoins, peer)
		return nil
	}
	a.state.joinPeer(a.clock(), peer)
	return nil
}

// Leave withdraws a node from the view and from every quorum computed
// afterwards. Call it when your discovery stops listing the node. The
// withdrawal is sticky for ElectionTimeoutMax: messages from the node
// arriving meanwhile are dropped instead of re-admitting it.
func (a *Actor) Leave(node gen.Atom) {
	if a.state == nil {
		return
	}
	a.state.leaveNode(a.clock(), node)
}

// Broadcast sends message to every peer in the view (not to this actor),
// addressing each by PID where known and by registered name otherwise. It
// does not stop at a failure: it returns how many sends failed and the first
// error.
func (a *Actor) Broadcast(message any) (int, error) {
	if a.state == nil {
		return 0, nil
	}
	failed := 0
	var first error
	for _, m := range a.state.sortedMembers() {
		if err := a.sendConnected(m.node, m.address(a.state.selfName), message); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	return failed, first
}

// StepDown gives up leadership on purpose, for example before a planned
// stop of this node. The leader stands down at once (HandleBecomeFollower
// runs with an empty PID) and tells the most recently heard, up-to-date
// follower to campaign immediately, so the cluster is leaderless for about
// one round trip instead of a full election timeout. This node does not
// campaign again for ElectionTimeoutMax. A leader that stops with a normal
// or shutdown reason does the same by itself. It returns ErrNotLeader when
// this node does not hold the leader's role; a leader whose acting lease is
// between two renewals (IsLeader false for a moment, no callback) still
// hands over: standing down first is always safe.
func (a *Actor) StepDown() error {
	if a.state == nil || a.state.role != roleLeader {
		return ErrNotLeader
	}
	a.state.handover(a.clock(), "StepDown was called", a.connected)
	return nil
}

// StepDownTo hands leadership over to the election's actor on node, as
// StepDown does, but to that node only. It refuses, and this node keeps
// leading, when this node does not lead (ErrNotLeader) or when node cannot
// take over now (an error wrapping ErrNotUpToDate that says why: it is not
// a member, not connected, has not acknowledged a round of the current
// term, or was not heard within ElectionTimeoutMin). Use it to move
// leadership off a node before maintenance, or onto a preferred one.
func (a *Actor) StepDownTo(node gen.Atom) error {
	if a.state == nil || a.state.role != roleLeader {
		return ErrNotLeader // as StepDown: the role, not the acting lease
	}
	m, ok := a.state.members[node]
	if ok == false {
		return fmt.Errorf("%w: %s is not a member of this election's view", ErrNotUpToDate, node)
	}
	if why := a.state.successorRefusalAt(a.clock(), m, a.connected); why != "" {
		return fmt.Errorf("%w: %s cannot take over: %s; this node keeps leading", ErrNotUpToDate, node, why)
	}
	a.state.handoverTo(a.clock(), "StepDownTo("+string(node)+") was called", a.connected, node)
	return nil
}

// SetTrapExit turns exit trapping on or off. Off (the default), any exit
// signal terminates the actor. On, an exit from anyone but the parent
// arrives in HandleMessage as a gen.MessageExit* value; turn it on when the
// actor links to children whose failure should not take this node out of
// the election.
func (a *Actor) SetTrapExit(trap bool) {
	a.trap = trap
}

// TrapExit reports whether exits are trapped.
func (a *Actor) TrapExit() bool {
	return a.trap
}
