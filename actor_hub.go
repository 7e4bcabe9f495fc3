package leader

import (
	"errors"

	"ergo.services/ergo/gen"
)

// The actor's side of the node's liveness hub (hub.go, coalesce.go).

// hubRetry reminds the actor to join a hub again after its hub failed.
type hubRetry struct{}

// joinHub offers this actor's slot to the node's hub, starting the hub if
// the node has none. Without a hub the actor works per election, as if
// coalescing were disabled.
func (a *Actor) joinHub() {
	if a.noCoalescing || a.departing != nil {
		// an outgoing leader must not start a hub: on a stopping node it
		// would be a process the node's Stop never told to end, which
		// keeps the Stop waiting for helperLinger (linger.go)
		return
	}
	if a.slot == nil {
		a.slot = &slot{cluster: a.state.cfg.clusterID, actor: a.PID(), interval: livenessInterval(a.state.cfg), peerSilence: hubPeerSilence(a.state.cfg), stepGrace: leaderStepGrace(a.state.cfg),
			beatEvery: a.state.cfg.heartbeatInterval, freshCap: maxFresh(a.state.cfg), board: boardOf(a.Node()),
			everyBeat: a.state.cfg.assumeSymmetricLoss, losses: a.losses}
	}
	// until the hub confirms, ask again now and then: it may have failed
	// between the join and the answer, or could not be started
	a.SendAfter(a.PID(), hubRetry{}, hubRetryPause(a.state.cfg))
	to := gen.ProcessID{Name: hubName, Node: a.Node().Name()}
	err := a.Send(to, hubJoin{Slot: a.slot})
	if err == nil {
		return
	}
	_, spawnErr := a.Node().SpawnRegister(hubName, factoryHub, gen.ProcessOptions{}, a.clock)
	if spawnErr != nil && errors.Is(spawnErr, gen.ErrTaken) == false {
		a.Log().Warning("leader %q: cannot start the node's liveness hub (%s); this election sends its own heartbeats, which costs more when many elections share the nodes", a.state.cfg.clusterID, spawnErr)
		return
	}
	if err := a.Send(to, hubJoin{Slot: a.slot}); err != nil {
		a.Log().Warning("leader %q: cannot reach the node's liveness hub (%s); this election sends its own heartbeats", a.state.cfg.clusterID, err)
	}
}

// handleHub handles the hub's messages; false if message is not one.
func (a *Actor) handleHub(from gen.PID, message any) bool {
	switch m := message.(type) {
	case hubJoined:
		if from.Node != a.Node().Name() || a.slot == nil || from == a.hub {
			return true
		}
		if err := a.Monitor(from); err != nil {
			return true // it is gone again; its down is on the way
		}
		a.hub = from
		a.state.hubAttached(a.slot.waveOf(), from)
	case hubBeat:
		if from != a.hub || from == (gen.PID{}) {
			a.state.drop("foreign_hub_message")
			return true
		}
		a.state.receive(a.clock(), m.Leader, msgHeartbeat{ClusterID: m.ClusterID, Term: m.Term, Leader: m.Leader, Round: m.Round})
	case hubCarryLost:
		if from != a.hub || from == (gen.PID{}) {
			a.state.drop("foreign_hub_message")
			return true
		}
		a.state.heartbeatNow()
	case hubRetry:
		if from == a.PID() && a.hub == (gen.PID{}) {
			a.joinHub()
		}
	case hubWake:
		if from != a.hub || from == (gen.PID{}) {
			a.state.drop("foreign_hub_message")
			return true
		}
		if a.fired(m.Kind, m.Generation) == false {
			a.state.drop("stale_timer")
			return true
		}
		a.fireTimer(a.clock(), m.Kind, m.Generation)
	default:
		return false
	}
	return true
}

// hubDown handles the down of the hub: back to per-election messages, and
// a new hub a moment later.
func (a *Actor) hubDown(pid gen.PID, reason error) bool {
	if pid != a.hub || pid == (gen.PID{}) {
		return false
	}
	a.hub = gen.PID{}
	a.state.stepStarts(a.clock(), a.hubView())
	var board *pingBoard
	if a.slot != nil {
		board = a.slot.board
		// granted nothing from here on: no answer to a ping counts for
		// this actor while it works without a hub (pings.go)
		a.slot.share(grant{})
	}
	a.state.hubDetached()
	a.slot = nil
	a.unparkAll() // the end of the step arms them with the framework
	a.state.heartbeatNow()
	if a.departing != nil {
		// the node stops (its Stop ends the hub with every process), and
		// so does this actor in a moment: nothing to warn of or retry
		return true
	}
	a.SendAfter(a.PID(), hubRetry{}, hubRejoinPause(a.state.cfg))
	// The node's Stop sent every process its exit, this actor's own is on
	// its way, and the operator asked for it; any other end is the same
	// event for every election of the node. One warning for the node, not
	// thousands.
	if errors.Is(reason, gen.TerminateReasonShutdown) || (board != nil && board.firstToSeeHubEnd(pid) == false) {
		a.Log().Debug("leader %q: the node's liveness hub stopped (%s)", a.state.cfg.clusterID, reason)
		return true
	}
	a.Log().Warning("leader %q: the node's liveness hub stopped (%s); its elections send their own heartbeats until a new hub takes over (warned once for the node)", a.state.cfg.clusterID, reason)
	return true
}

// stepBegins withdraws what the actor shares with its hub, as the start of
// a step does (the simulator calls it when it stalls the actor mid-step).
func (a *Actor) stepBegins() {
	if a.state != nil {
		a.state.stepStarts(a.clock(), a.hubView())
	}
}

// The actor carries what the election and the hub share between the slot
// and the election (coalesce.go): the election never touches the slot, so
// the hub's records reach it only as the inputs below.

// hubView takes the hub's permissions back at the start of a step and
// returns what the hub recorded for the election since the last one; the
// zero view while the election works without a hub.
func (a *Actor) hubView() sharedView { return settleFrom(a.slot, a.state) }

// shareWithHub ends a step: the slot gets what the election now allows its
// hub to do for it.
func (a *Actor) shareWithHub() { shareTo(a.slot, a.state) }

// hubPeek is what the hub recorded for this node's leadership since the
// last step, for IsLeader and LeaseExpiry between steps; nil when it
// records nothing for it.
func (a *Actor) hubPeek() *leadShare { return peekFrom(a.slot, a.state) }

func settleFrom(s *slot, e *election) sharedView {
	if s == nil || e == nil || e.coalesced == false {
		return sharedView{}
	}
	return s.settle(e.acksSeen, e.carriedSeen)
}

func shareTo(s *slot, e *election) {
	if s == nil || e == nil {
		return
	}
	if g, ok := e.shareState(); ok {
		s.share(g)
	}
}

func peekFrom(s *slot, e *election) *leadShare {
	if s == nil || e == nil {
		return nil
	}
	seen, ok := e.peekWanted()
	if ok == false {
		return nil
	}
	u := e.leadShare(s.peek(seen))
	return &u
}
