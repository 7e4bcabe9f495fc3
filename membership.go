package leader

import (
	"errors"
	"slices"
	"time"

	"ergo.services/ergo/gen"
)

// member is one peer in the view. The view is keyed by node: Join is
// idempotent per node, and a restarted process on the same node replaces its
// predecessor rather than adding a second member.
type member struct {
	node     gen.Atom
	name     gen.Atom      // registered name, to reach the peer when its PID is unknown
	pid      gen.PID       // zero until the peer has sent us something, and after a connection loss
	knownPID gen.PID       // the last PID ever seen, kept across connection losses
	declared bool          // came through Join or Bootstrap rather than through the protocol
	rtt      time.Duration // the last round trip of a heartbeat round to it (leader: roundFresh)
	// the newest answered ping that counts as its ack of this term (leader,
	// pings.go): sent then, with F pongFresh
	pongSent  time.Time
	pongFresh time.Duration
	// incarnation of its process, from its Hello or Hello reply
	incarnation uint64
	processSeen time.Time // when this node first heard its current process

	lastHeard        time.Time // last valid protocol message received from it
	lastAck          time.Time // last acknowledgement of this node's leadership (ack or grant)
	unreachableSince time.Time // zero while reachable; set by a down with ErrNoConnection
	nextProbe        time.Time // earliest next Hello by name; spaces out dials to a gone node
	lostAt           time.Time // the last loss of contact that was logged and probed (lostContact)
	probesUnanswered int       // Hellos sent before it was ever heard from (probeSpacing)
	sendErr          error     // last send failure, cleared by the next success
	sendFailingSince time.Time // first of the failures in a row; zero while sends get through
	nameFailures     int       // consecutive failed sends by name
	nameBackoffUntil time.Time // no send by name before this (see election.send)
	ackTerm          uint64    // term of its last heartbeat ack: up to date for a handover
	ackRound         uint64    // newest round of this leader's term it acknowledged (lease.go)
	predecessor      bool      // its current process replaced one this node knew (a restart)
	// replaced: a Hello named a new incarnation for the PID this node
	// monitors before that PID's old process's down came (replacedDown)
	replaced bool
	// greeted: its current process sent a Hello or a Hello reply, which
	// says whether it knew an earlier process of this node (lease.go)
	greeted       bool
	awaitingSince time.Time // first request sent since it last answered anything (silence.go)
	// otherCluster: its node's last protocol message carried another
	// ClusterID; it owes no answer, and its silence is no reason to reset
	// a connection (silence.go)
	otherCluster     bool
	lastReset        time.Time // when its connection was last reset for silence
	inboundSampledAt time.Time // when the actor last noted its connection's inbound count (silence.go)
	watchAskedAt     time.Time // when its current PID was handed to the watcher; zero once monitored
}

// address returns how to reach the member: its PID when known, its name
// otherwise. Vote requests go to everyone declared, so a member whose PID is
// unknown is still addressed, by name, which makes the framework connect.
func (m *member) address(fallbackName gen.Atom) any {
	if m.pid != (gen.PID{}) {
		return m.pid
	}
	name := m.name
	if name == "" {
		name = fallbackName
	}
	return gen.ProcessID{Name: name, Node: m.node}
}

// newMember adds node to the view. A node that left the view and comes
// back keeps its history: a new process of it is a restart
// (msgHelloReply.Restarted).
func (e *election) newMember(node gen.Atom) *member {
	d := e.departed[node]
	m := &member{node: node, knownPID: d.pid, incarnation: d.incarnation}
	e.members[node] = m
	delete(e.seats, node) // back in the view: its seat is its own again
	delete(e.gone, node)  // back: watched as a member from now on
	return m
}

// departedMember is what a node keeps of a member that left the view: its last
// process and that process's incarnation, to recognise a restart.
type departedMember struct {
	pid         gen.PID
	incarnation uint64
}

// maxDeparted bounds how many departed nodes' last processes are kept.
const maxDeparted = 4096

// viewSize counts this node plus every member.
func (e *election) viewSize() int { return 1 + len(e.members) }

// quorum is a majority of the current view, counting this node.
func (e *election) quorum() int { return e.viewSize()/2 + 1 }

// belowFloor reports whether the view is too small to have a leader at all.
// A member that stopped gracefully keeps its seat for it (seats.go).
func (e *election) belowFloor() bool { return e.floorSize() < e.cfg.minClusterSize }

// floorSize is the view with the seats kept for members that stopped
// gracefully: what MinClusterSize is compared with, here and by the voters
// a campaign asks (msgPreVote.ViewSize, msgVote.ViewSize).
func (e *election) floorSize() int { return e.viewSize() + e.keptSeats() }

// join declares a peer. It counts at once, before it has answered, which is
// what lets a node reach MinClusterSize without campaign traffic.
func (e *election) join(peer gen.ProcessID) {
	if peer.Node == e.self.Node {
		return
	}
	if err := checkPeer(peer); err != nil {
		// counting it would inflate the view with a member nobody can be
		e.logf(levelWarning, "Join(%s) ignored: %s; the view is unchanged (%d). Pass the peer's node name as the framework prints it, for example \"node1@host\"", peer, err, e.viewSize())
		return
	}
	// An explicit Join overrides an earlier Leave: the stickiness only keeps
	// in-flight traffic from re-admitting a withdrawn node, not its owner.
	delete(e.withdrawn, peer.Node)
	m, known := e.members[peer.Node]
	if known == false {
		m = e.newMember(peer.Node)
		e.viewGrew()
	}
	m.declared = true
	if m.name == "" {
		m.name = peer.Name
	}
	if m.pid == (gen.PID{}) && e.now.Before(m.nextProbe) == false {
		e.probe(m)
	}
}

// probe sends Join's Hello by name and spaces out the next one, so that a
// discovery loop calling Join on a gone node does not dial it on every tick.
func (e *election) probe(m *member) {
	m.nextProbe = e.now.Add(e.probeSpacing(m))
	e.send(m, e.helloTo(m.node))
}

// helloTo is the Hello for node, naming the incarnation of its actor that
// this node last knew (msgHello.Knew).
func (e *election) helloTo(node gen.Atom) msgHello {
	knew := e.departed[node].incarnation
	if m, ok := e.members[node]; ok {
		knew = m.incarnation
	}
	return msgHello{ClusterID: e.cfg.clusterID, Term: e.term, Name: e.selfName, ViewSize: e.viewSize(), Incarnation: e.incarnation, Knew: knew}
}

// maxProbeBackoff caps the doubling of the Hello spacing for a member never
// met: eight times ElectionTimeoutMax (2.4 s at the defaults).
const maxProbeBackoff = 3

// probeSpacing is the time to the next Hello to m: ElectionTimeoutMax for a
// member this actor has met before (a ghost must come back within one
// election timeout of a heal), and for one never met a spacing that doubles
// with every unanswered Hello, up to 8×ElectionTimeoutMax, with a quarter of
// jitter.
//
// Why. A Hello to a process that does not exist yet is dropped by the other
// node without an answer. When thousands of elections start on the same
// nodes at once, each of them says Hello to every peer that has not spawned
// its member yet, every ElectionTimeoutMax: tens of thousands of messages a
// second that keep the nodes too busy to answer the Hellos that could be
// answered, and the cold start never ends. Backing off keeps that load
// falling while the peers start.
func (e *election) probeSpacing(m *member) time.Duration {
	if m.knownPID != (gen.PID{}) {
		return probeEvery(e.cfg)
	}
	spacing := probeEvery(e.cfg) << min(m.probesUnanswered, maxProbeBackoff)
	m.probesUnanswered++
	return spacing + time.Duration(e.rng.Int64N(int64(spacing)/4+1))
}

// leave withdraws a peer from the view and from every quorum computed
// afterwards. The withdrawal is sticky for one (maximum) election timeout so
// that traffic already in flight cannot re-admit it.
func (e *election) leave(node gen.Atom) {
	if node == "" || node == e.self.Node {
		return
	}
	e.withdrawn[node] = e.now.Add(withdrawalHold(e.cfg))
	delete(e.gone, node)
	if m, ok := e.members[node]; ok {
		delete(e.seats, node)
		wasLeader := m.pid != (gen.PID{}) && m.pid == e.leader
		e.remove(m, "withdrawn by Leave")
		if wasLeader {
			e.leaderWithdrawn(m.pid)
		}
	} else if _, seated := e.seats[node]; seated {
		delete(e.seats, node)
		e.viewChanged() // its seat may have held the floor
	}
}

// isWithdrawn reports whether traffic from node must be ignored because the
// user withdrew it recently.
func (e *election) isWithdrawn(node gen.Atom) bool {
	until, ok := e.withdrawn[node]
	if ok == false {
		return false
	}
	if e.now.Before(until) {
		return true
	}
	delete(e.withdrawn, node)
	return false
}

// isDead reports whether pid belongs to a process whose termination was
// reported. Entries are forgotten after GhostTTL: by then nothing the
// process sent can still be in flight.
func (e *election) isDead(pid gen.PID) bool {
	at, ok := e.dead[pid]
	if ok == false {
		return false
	}
	if e.now.Sub(at) < e.cfg.ghostTTL {
		return true
	}
	delete(e.dead, pid)
	return false
}

// remove drops a member from the view and re-evaluates everything that
// depends on its size.
func (e *election) remove(m *member, why string) {
	delete(e.members, m.node)
	if m.knownPID != (gen.PID{}) {
		if len(e.departed) >= maxDeparted {
			clear(e.departed) // a bound, not a cache policy: forgetting only weakens a restart's floor
		}
		e.departed[m.node] = departedMember{pid: m.knownPID, incarnation: m.incarnation}
	}
	// its grants belong to a view that no longer exists
	delete(e.votes, m.node)
	delete(e.preVotes, m.node)
	delete(e.pledges, m.node)
	if m.knownPID != (gen.PID{}) {
		e.out.left = append(e.out.left, m.knownPID)
	} else {
		e.out.left = append(e.out.left, gen.PID{Node: m.node})
	}
	e.logf(levelInfo, "peer %s left the view (%s); view %d, quorum %d", m.node, why, e.viewSize(), e.quorum())
	if m.pid != (gen.PID{}) && m.pid == e.leader {
		e.leader = gen.PID{}
	}
	e.viewChanged()
}

// heard registers a valid protocol message from pid: the sender becomes a
// member if it was not one, its PID becomes known, and the contact time that
// the leader's quorum check and a handover rely on is refreshed.
func (e *election) heard(from gen.PID, name gen.Atom) *member {
	m, known := e.members[from.Node]
	if known == false {
		m = e.newMember(from.Node)
	}
	if name != "" {
		m.name = name
	}
	if m.pid != from {
		m.replaced = false // a new PID: a new monitor, whose down is its own
		// The predecessor's monitor is not removed: a remote Demonitor is a
		// request that can block for seconds, and the old process's down,
		// when it comes, no longer matches the member and is dropped.
		m.pid = from
		m.ackRound, m.pongSent = 0, time.Time{}
		m.watchAskedAt = e.now
		e.out.monitor = append(e.out.monitor, from)
		if m.knownPID != from {
			// a new member, or a restarted process: news for the behavior;
			// the same process coming back after a blip is not
			m.predecessor = m.knownPID != (gen.PID{})
			m.greeted = false
			m.knownPID = from
			m.processSeen = e.now
			e.out.joined = append(e.out.joined, from)
		}
	}
	m.unreachableSince = time.Time{}
	m.nameFailures, m.nameBackoffUntil = 0, time.Time{}
	m.lastHeard = e.now
	m.awaitingSince, m.otherCluster = time.Time{}, false
	if known == false {
		e.logf(levelInfo, "peer %s joined the view through the protocol; view %d, quorum %d", from.Node, e.viewSize(), e.quorum())
		e.viewGrew()
	}
	return m
}

// isMemberPID reports whether pid is, or was, a member's process.
func (e *election) isMemberPID(pid gen.PID) bool {
	m, ok := e.members[pid.Node]
	return ok && (m.pid == pid || m.knownPID == pid)
}

// staleIncarnation reports whether from is an earlier incarnation of a
// member whose current process is known: its messages were queued before
// its successor started (after a stall, say), and accepting one would make
// this node monitor a process that no longer exists. A PID of an earlier
// node start (lower Creation) is earlier; within one node start, process
// IDs only grow. While no live PID is known, nothing is stale: a node
// restarted within the same second reuses its Creation and may hand out
// lower IDs, and must be accepted once its predecessor's connection is gone.
func (e *election) staleIncarnation(from gen.PID) bool {
	m, ok := e.members[from.Node]
	if ok == false || m.pid == (gen.PID{}) || m.pid == from {
		return false
	}
	if from.Creation != m.pid.Creation {
		return from.Creation < m.pid.Creation
	}
	return from.ID < m.pid.ID
}

// monitorFailed handles the framework's refusal to monitor pid. When the
// process is gone (an earlier incarnation, or it terminated before the
// monitor reached it), pid is marked dead so its late messages are ignored;
// the member stays, unreachable under GhostTTL, because the refusal says
// nothing about the member's current process: a stale message must never
// remove a live member. Any other failure is a connection problem.
func (e *election) monitorFailed(now time.Time, pid gen.PID, err error) {
	e.now = now
	gone := errors.Is(err, gen.ErrProcessUnknown) || errors.Is(err, gen.ErrProcessIncarnation) || errors.Is(err, gen.ErrProcessTerminated)
	if gone {
		e.markDead(pid)
	}
	m, ok := e.members[pid.Node]
	if ok == false || m.pid != pid {
		return
	}
	// Only a process known to be gone is an observed failure. Any other
	// refusal (a timeout, a refused request) says nothing about the
	// member's end, and a leader's lease built on this node's acks may still
	// run there: no promise is released and no fast failover starts.
	e.lostContact(m, pid, gen.ErrNoConnection, gone, gone, e.now)
}

// markDead remembers that pid terminated, for GhostTTL.
func (e *election) markDead(pid gen.PID) {
	for old, at := range e.dead {
		if e.now.Sub(at) >= e.cfg.ghostTTL {
			delete(e.dead, old)
			delete(e.deadIncarnations, old)
		}
	}
	e.dead[pid] = e.now
	if m, ok := e.members[pid.Node]; ok && m.incarnation != 0 && m.knownPID == pid {
		if e.deadIncarnations == nil {
			e.deadIncarnations = make(map[gen.PID]uint64)
		}
		e.deadIncarnations[pid] = m.incarnation
	}
}

// heardIncarnation records the incarnation m's process named. Another one
// than this node knew, from the same PID, is a restart within the
// framework's one-second creation resolution: a new process, news for the
// behavior, and a restart for the HelloReply's Restarted. When the PID
// was m's before this message (watched), its monitor was asked for the
// earlier process, whose down may still come (replacedDown).
func (e *election) heardIncarnation(m *member, from gen.PID, watched bool, incarnation uint64) {
	if incarnation == 0 {
		return
	}
	if m.incarnation != 0 && m.incarnation != incarnation && m.knownPID == from {
		m.predecessor = true
		m.replaced = watched
		m.greeted = false
		m.processSeen = e.now
		e.out.joined = append(e.out.joined, from)
	}
	m.incarnation = incarnation
}

// reincarnated reports whether message, from a PID marked dead, comes from
// a new process that got the same PID: a node restarted within the
// framework's one-second creation resolution starts its processes with the
// IDs the old ones had. Its Hello or Hello reply names another incarnation
// than the dead process's; the mark goes, and the new process is heard.
// The dead process's own late messages are dropped as before.
func (e *election) reincarnated(from gen.PID, message any) bool {
	var incarnation uint64
	switch m := message.(type) {
	case msgHello:
		incarnation = m.Incarnation
	case msgHelloReply:
		incarnation = m.Incarnation
	}
	if incarnation == 0 || incarnation == e.deadIncarnations[from] {
		return false
	}
	delete(e.dead, from)
	delete(e.deadIncarnations, from)
	return true
}

// down handles a monitor's down for pid. It reports false when pid is not a
// member's, so the actor passes the message on to the user.
//
// A drop reported as ErrNoConnection keeps the member: a blip and a departure
// look the same from here, and shrinking the view would lower quorum and let
// a fragment elect. Only the PID is forgotten, and GhostTTL bounds the wait.
// Any other reason means the process really terminated, so it leaves at once.
func (e *election) down(now time.Time, pid gen.PID, reason error) bool {
	return e.downAt(now, now, pid, reason)
}

// downAt is down for a down this node's framework reported at at (the
// watcher's receipt, peerDown.At), which may be earlier than now; a zero
// or future at is now.
func (e *election) downAt(now, at time.Time, pid gen.PID, reason error) bool {
	return e.downReported(now, at, pid, reason, false)
}

// downReported is downAt for a down that came while the framework has a
// connection to pid's node again (reconnected: true), when the reason is
// ErrNoConnection. The connection that ended is then an older one that a
// newer connection replaced, such as a half-open one that outlived a
// silent partition while the other end had closed it seconds before.
// That end noticed nothing now: its leader, if pid is one, may be leading
// over the newer connection, with this node's acknowledgements in its
// lease. So the end is no observed failure of the leader, as for a
// connection this node reset itself: the member is probed again at once
// and no fast failover releases the promise. A leader that did die has no
// connection, and its down is observed as before.
func (e *election) downReported(now, at time.Time, pid gen.PID, reason error, reconnected bool) bool {
	e.now = now
	if at.IsZero() || at.After(now) {
		at = now
	}
	m, ok := e.members[pid.Node]
	if ok == false {
		return false
	}
	if m.replaced && m.knownPID == pid {
		if errors.Is(reason, gen.ErrNoConnection) == false {
			e.replacedDown(m, pid, at)
			return true
		}
		m.replaced = false // the monitor of the old process ended with its connection
	}
	if m.pid != pid {
		if m.pid == (gen.PID{}) && m.knownPID == pid && errors.Is(reason, gen.ErrNoConnection) == false {
			// the member's process, whose connection dropped just before
			// it terminated: a real termination all the same
			if graceful(reason) {
				e.keepSeat(m.node)
			}
			e.markDead(pid) // while it is a member: its incarnation is kept
			e.remove(m, "its process terminated: "+reasonText(reason))
			e.watchGone(m)
			return true
		}
		return false
	}
	// A down this node caused by resetting a silent connection is not an
	// observed failure of the leader: no fast failover (silence.go); nor is
	// the end of a connection that a newer one replaced (reconnected).
	observed := (e.resetting(m) == false && reconnected == false) || errors.Is(reason, gen.ErrNoConnection) == false
	e.lostContact(m, pid, reason, observed, errors.Is(reason, gen.ErrNoConnection) == false, at)
	return true
}

// lostContact handles the end of contact with member m's process pid: for
// ErrNoConnection the member stays, unreachable under GhostTTL, and is
// probed at once; any other reason removes it. Only an observed failure of
// the leader (a down the framework delivered, or the end of the connection
// to the leader's node that the framework reported to the watcher, which
// the leader's end sees too) starts a fast failover, timed from reported,
// when this node's framework reported the failure. proof says pid's process
// is known to have ended (leaderLost).
func (e *election) lostContact(m *member, pid gen.PID, reason error, observed, proof bool, reported time.Time) {
	wasLeader := pid == e.leader
	if errors.Is(reason, gen.ErrNoConnection) {
		m.pid = gen.PID{}
		if m.unreachableSince.IsZero() {
			m.unreachableSince = e.now
		}
		// Say Hello soon: the framework may have another connection to
		// the node, or make one (this node reset the connection, or two
		// dials crossed and the loser was dropped), and a member with no
		// reason to write to this node (a follower, to a follower) would
		// otherwise stay a ghost and leave the view although it is alive.
		// If the node is gone, the dialer finds out, off the actor. The
		// sweeps probe again until GhostTTL (sweepGhosts).
		//
		// Not in a loop, though: on the v320 branch a monitor can fail at
		// once, again and again, while Hellos get through (a crossed
		// connection), and a Hello at every failure made a leader log this
		// loss hundreds of times in a third of a second and starve its
		// heartbeats. A loss within ElectionTimeoutMin of the last one
		// handled here (lostAt) waits for the next probe.
		//
		// Soon, not at once, for a loss the framework reported (observed):
		// the first Hello waits lazyDownPause and a random part of
		// ElectionTimeoutMax (firstProbeAfterLoss). When a node crashes,
		// each survivor's elections all lose a member there at once, and a
		// Hello to a node with no connection is a dial, through each
		// election's dialer, in the very milliseconds the elections that
		// lost their leader fail over; at the same instant for all of them,
		// thousands of elections' Hellos were a burst of their own. A connection that is back by then is found by that Hello
		// as well; one this node reset itself (silence.go) is dialed again
		// at once, as it was.
		if m.lostAt.IsZero() || e.now.Sub(m.lostAt) >= lossRepeatWindow(e.cfg) {
			m.lostAt = e.now
			e.logf(levelInfo, "lost the connection to peer %s; it stays in the view for GhostTTL (%s) unless it comes back", pid.Node, e.cfg.ghostTTL)
			if observed {
				m.nextProbe = e.now.Add(firstProbeAfterLoss(e.cfg, e.rng))
			} else {
				m.nextProbe = time.Time{}
				e.probe(m)
			}
		} else {
			e.drop("lost_again")
		}
		e.armGhostTimer()
		// A leader whose remaining connections cannot form a quorum ends its
		// lease now: the other end saw the same loss and may fail over fast.
		e.renewLease()
		e.checkLease(e.now)
	} else {
		if graceful(reason) {
			e.keepSeat(m.node)
		}
		// A down travels ahead of the dead process's last messages (downs
		// are high priority); those must not re-admit it. Marked while it
		// is a member, so that its incarnation is kept (reincarnated).
		e.markDead(pid)
		e.remove(m, "its process terminated: "+reasonText(reason))
		e.watchGone(m)
	}
	if wasLeader && observed {
		e.leaderLost(pid, reported, proof)
	} else if wasLeader {
		// the end of a connection a newer one replaced: a sign at most,
		// and the callbacks keep naming the leader (recognisedLeader)
		e.leader = gen.PID{}
		if errors.Is(reason, gen.ErrNoConnection) {
			e.signLost, e.signTerm = pid, e.term
		}
	}
}

// replacedDown handles the termination down of a process whose PID a new
// process already has: a node restarted within the framework's one-second
// creation resolution gives its new actor the old one's PID, and when the
// new actor's Hello (another incarnation, heardIncarnation) comes before
// the old actor's down, the down is about the process that Hello replaced.
// Handled as the member's end, it would remove the live member and mark
// its PID dead under the new incarnation: every later message of the new
// actor, its Hellos included, would be dropped (dead_sender), and two
// followers, which have nothing else to say to each other, would keep a
// view a member short. So the member stays; the monitor that fired was
// the old process's, so the PID is monitored again, now the new one's;
// and a leader's down is a termination, its proof, as for any member: the
// follower fails over.
func (e *election) replacedDown(m *member, pid gen.PID, at time.Time) {
	m.replaced = false
	e.drop("replaced_process_down")
	m.watchAskedAt = e.now
	e.out.monitor = append(e.out.monitor, pid)
	if pid == e.leader {
		e.leaderLost(pid, at, true)
	}
}

// sweepGhosts drops every member that has been unreachable for GhostTTL,
// and says Hello again to those still inside the window.
//
// Why probe. A ghost comes back only through a message, and a member with
// no reason to write (a follower, to a follower; any member of an
// unclustered view, which sends nothing) never sends one. Without a probe,
// two followers whose connection dropped for a moment would drop each other
// after GhostTTL although the link healed long before, and a view that fell
// below MinClusterSize that way would stay leaderless until the user's
// discovery loop joined the peers again: with a fixed Bootstrap list and no
// loop, for good. Leaders probe on their own heartbeat ticks; this covers
// every other role. Probes are spaced by ghostProbeSpacing, so a node that
// is really gone costs each election a few failed sends by name (which the
// dialer answers from one shared dial) before it is dropped.
func (e *election) sweepGhosts() {
	e.askFloor()
	if len(e.seats) > 0 {
		kept := len(e.seats)
		if e.keptSeats() < kept {
			e.viewChanged() // a seat ran out: the floor may not hold any more
		}
	}
	for _, m := range e.sortedMembers() {
		if m.unreachableSince.IsZero() {
			continue
		}
		if e.now.Sub(m.unreachableSince) >= e.cfg.ghostTTL {
			e.remove(m, "unreachable for longer than GhostTTL "+e.cfg.ghostTTL.String())
			e.watchGone(m) // its probes may have gone into a connection that outlived it
			continue
		}
		if m.pid == (gen.PID{}) && e.now.Before(m.nextProbe) == false {
			e.probe(m)
			m.nextProbe = e.now.Add(e.ghostProbeSpacing())
		}
	}
	// A ghost whose probes go unanswered over a connection the framework
	// calls up is the simultaneous-connect bug's silent connection
	// (silence.go). A follower with a hub looks for those only every chore
	// interval (twenty ElectionTimeoutMin), which can be longer than
	// GhostTTL: two followers that lost each other for a moment would drop
	// each other with the connection back, as the lab found on the v320
	// branch and on the stand-in with that bug on. The sweeps already
	// wake the election while it has ghosts, so they look too.
	e.sweepGone()
	if e.hasGhosts() || len(e.gone) > 0 {
		e.findSilentConnections()
	}
	e.armGhostTimer()
}

// hasGhosts reports whether a member of the view is unreachable.
func (e *election) hasGhosts() bool {
	for _, m := range e.members {
		if m.unreachableSince.IsZero() == false {
			return true
		}
	}
	return false
}

// backdateLoss moves the start of node's member's unreachability back to
// at, when the down reached the actor late (downHints): GhostTTL counts
// from the loss, not from when the actor got to it.
func (e *election) backdateLoss(node gen.Atom, at time.Time) {
	m, ok := e.members[node]
	if ok == false || m.unreachableSince.After(at) == false {
		return
	}
	m.unreachableSince = at
	e.armGhostTimer()
}

// armGhostTimer schedules the next sweep: the earliest ghost expiry or the
// earliest probe of a ghost, whichever comes first.
func (e *election) armGhostTimer() {
	var next time.Time
	for _, m := range e.members {
		if m.unreachableSince.IsZero() {
			continue
		}
		at := m.unreachableSince.Add(e.cfg.ghostTTL)
		if m.pid == (gen.PID{}) && m.nextProbe.Before(at) {
			at = later(m.nextProbe, e.now) // a zero nextProbe means "probe now"
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if at := e.nextGoneWake(); at.IsZero() == false && (next.IsZero() || at.Before(next)) {
		next = at
	}
	if at := e.nextSeatExpiry(); at.IsZero() == false && (next.IsZero() || at.Before(next)) {
		next = at
	}
	if e.floorKnown == false {
		// settle the term floor when the quiet period ends, and ask again
		// every ElectionTimeoutMin until it is: a follower whose leader's
		// rounds come through the hub hears no other member's term
		at := e.startedAt.Add(e.quietPeriod())
		if e.now.Before(at) == false {
			at = e.now.Add(floorAskEvery(e.cfg))
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() {
		e.cancelTimer(timerGhost)
		return
	}
	e.armTimer(timerGhost, max(next.Sub(e.now), 0))
}

// sortedMembers returns the members ordered by node name, so that every loop
// that sends or logs is deterministic (the simulator replays from a seed).
func (e *election) sortedMembers() []*member { return sortedByNode(e.members) }

// sortedByNode returns the members of a map ordered by node name.
func sortedByNode(members map[gen.Atom]*member) []*member {
	return sortedWhere(members, nil)
}

// sortedWhere returns the members of a map that keep accepts (all of them
// when keep is nil), ordered by node name. Filtering first spares the sort
// in the usual case of a periodic check that finds nothing.
func sortedWhere(members map[gen.Atom]*member, keep func(*member) bool) []*member {
	var list []*member
	if keep == nil {
		list = make([]*member, 0, len(members))
	}
	for _, m := range members {
		if keep == nil || keep(m) {
			list = append(list, m)
		}
	}
	slices.SortFunc(list, func(a, b *member) int {
		switch {
		case a.node < b.node:
			return -1
		case a.node > b.node:
			return 1
		}
		return 0
	})
	return list
}

// peers returns the PIDs of members whose PID is known, ordered by node.
func (e *election) peers() []gen.PID {
	var list []gen.PID
	for _, m := range e.sortedMembers() {
		if m.pid != (gen.PID{}) {
			list = append(list, m.pid)
		}
	}
	return list
}

// dialed applies the outcome of connecting to a member's node: connected,
// it is probed at once (by name, now without blocking); not, its sends by
// name back off as after any failed send.
//
// A member whose process is known but whose node can no longer be reached
// lost its connection although no down came: the watcher's monitor may be
// waiting on a request that went over that connection, which no answer will
// end before the framework's request timeout. It becomes unreachable now,
// under GhostTTL, as after a down; it is not an observed failure (no
// promise released, no fast failover).
func (e *election) dialed(now time.Time, node gen.Atom, err error) {
	e.now = now
	m, ok := e.members[node]
	if ok == false {
		return
	}
	if m.pid != (gen.PID{}) {
		if err != nil {
			e.lostContact(m, m.pid, gen.ErrNoConnection, false, false, e.now)
		}
		return
	}
	if err != nil {
		e.sendResult(node, err)
		return
	}
	e.probe(m)
}

// sharedDialConnected handles another election's dial that connected to
// node while this one's send there failed for it (errDialShared): the
// back-off of that send is over, and the member is probed at once. With
// spread, the word came from the board to a ghost's probe that waited
// there (ghostprobe.go), and the probe comes within a spacing.
func (e *election) sharedDialConnected(now time.Time, node gen.Atom, spread bool) {
	if spread {
		e.peerBack(now, node)
		return
	}
	if m, ok := e.members[node]; ok {
		m.nameFailures, m.nameBackoffUntil = 0, time.Time{}
	}
	e.dialed(now, node, nil)
}

// sendResult records what the framework said about a send to a member.
func (e *election) sendResult(node gen.Atom, err error) {
	m, ok := e.members[node]
	if ok == false {
		return
	}
	if err != nil {
		m.sendErr = err
		if m.sendFailingSince.IsZero() {
			m.sendFailingSince = e.now
			e.armHealthCheck()
		}
		if m.pid == (gen.PID{}) {
			m.nameFailures++
			m.nameBackoffUntil = e.now.Add(probeEvery(e.cfg) << min(m.nameFailures-1, 1))
		}
		return
	}
	m.sendErr = nil
	m.sendFailingSince = time.Time{}
	m.nameFailures = 0
	m.nameBackoffUntil = time.Time{}
}

func reasonText(reason error) string {
	if reason == nil {
		return "nil"
	}
	return reason.Error()
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
