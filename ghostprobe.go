package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// Probing a dead node once per node, not once per election.
//
// Every election that lost a member's connection says Hello to it every
// ghost probe spacing until GhostTTL (sweepGhosts). While the node is
// down, each such Hello is a dial that another election of this node made
// a moment ago and that failed (the dials are shared, connectionBoard.dial),
// so it costs nothing on the network but a step of the election's actor. At
// 10,000 elections a crashed node's survivors each spent about 14,000 steps
// a second on them until GhostTTL, after the failovers were done.
//
// So an election whose Hello to a ghost finds that another election of this
// node dialed the ghost's node and failed within the dial's sharing
// window, or is dialing it now, stops probing on its own spacing: it waits
// on the board for that node (awaitPeer) and probes next at a backstop
// (parkedProbeBackstop), or when GhostTTL drops the member, whichever comes
// first. The elections whose Hello dialed keep the ghost spacing; the
// sharing window being much shorter than the spacing, a handful of them
// per node pair keep dialing, and each dial answers for the others. The
// waiters are told (sharedDialResult with Spread) when a dial of that node
// by any election of this node connects, or when an election of this node
// sends a Hello over a connection it finds up (the peer dialed); each then
// probes at a random moment within one ghost probe spacing, as the elections
// probed before, so that a heal brings the same spread of Hellos, not a
// burst. A restarted peer's elections say Hello on their own, which brings
// each member back whether or not its election here was told.
//
// Nothing here decides anything safety rests on: a probe only says Hello,
// and the view keeps the ghost for GhostTTL from its loss as before.

// ghostWaiters are the elections of one node that wait for a connection to
// a peer, and when the newest of them joined.
type ghostWaiters struct {
	since time.Time
	pids  map[gen.PID]struct{}
}

// awaitPeer records that the election pid waits for node's connection to
// peer.
func (b *connectionBoard) awaitPeer(node gen.Node, peer gen.Atom, pid gen.PID, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sweepLocked(now)
	key := connectionKey{node: node, peer: peer}
	w := b.ghosts[key]
	if w == nil {
		if b.ghosts == nil {
			b.ghosts = make(map[connectionKey]*ghostWaiters)
		}
		w = &ghostWaiters{pids: make(map[gen.PID]struct{})}
		b.ghosts[key] = w
	}
	w.since = now
	w.pids[pid] = struct{}{}
}

// peerBack returns the elections that wait for node's connection to peer,
// and forgets them: the connection is up.
func (b *connectionBoard) peerBack(node gen.Node, peer gen.Atom) []gen.PID {
	b.mu.Lock()
	defer b.mu.Unlock()
	key := connectionKey{node: node, peer: peer}
	w := b.ghosts[key]
	if w == nil {
		return nil
	}
	delete(b.ghosts, key)
	pids := make([]gen.PID, 0, len(w.pids))
	for pid := range w.pids {
		pids = append(pids, pid)
	}
	return pids
}

// tellPeerBack tells the elections of the node that wait for its
// connection to peer that it is up.
func tellPeerBack(process gen.Process, peer gen.Atom) {
	for _, pid := range connectionResets.peerBack(process.Node(), peer) {
		process.Send(pid, sharedDialResult{Node: peer, Spread: true})
	}
}

// parkProbe is called for a message that could not go to node because
// another election's dial of it failed a moment ago or is under way: a
// Hello to a ghost waits on the board from now on (probeParked).
func (a *Actor) parkProbe(node gen.Atom, message any) {
	if _, hello := message.(msgHello); hello == false {
		return
	}
	if a.state.probeParked(a.clock(), node) {
		connectionResets.awaitPeer(a.Node(), node, a.PID(), a.clock())
	}
}

// probeParked moves the next probe of the ghost on node to the backstop,
// its election now waiting on the board for the node's connection; false
// if node's member is not a ghost whose process is unknown.
func (e *election) probeParked(now time.Time, node gen.Atom) bool {
	e.now = now
	m, ok := e.members[node]
	if ok == false || m.pid != (gen.PID{}) || m.unreachableSince.IsZero() {
		return false
	}
	m.nextProbe = now.Add(parkedProbeBackstop(e.cfg))
	e.armGhostTimer()
	return true
}

// peerBack handles the board's word that node's connection is up: the
// ghost there is probed at a random moment within one ghost probe spacing.
func (e *election) peerBack(now time.Time, node gen.Atom) {
	e.now = now
	m, ok := e.members[node]
	if ok == false || m.pid != (gen.PID{}) {
		return
	}
	m.nameFailures, m.nameBackoffUntil = 0, time.Time{}
	m.nextProbe = now.Add(time.Duration(e.rng.Int64N(int64(e.ghostProbeSpacing()) + 1)))
	e.armGhostTimer()
}
