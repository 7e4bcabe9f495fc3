package leader

import (
	"time"

	"ergo.services/ergo/gen"
)

// The actor's inputs to the election that are not protocol messages, timer
// fires or downs (those are receive, timer and down): the API's calls, the
// hub coming and going, and the actor's own bookkeeping. The actor changes
// the election only through these methods and the entry points they sit
// beside; it assigns none of its fields (TestTheActorAssignsNoElectionField),
// so every change of the state is a step the simulator can drive too.

// configure sets the campaign gate, once, before start.
func (e *election) configure(turns turnGate) {
	e.turns = turns
}

// joinPeer is Actor.Join at now.
func (e *election) joinPeer(now time.Time, peer gen.ProcessID) {
	e.now = now
	e.join(peer)
}

// leaveNode is Actor.Leave at now.
func (e *election) leaveNode(now time.Time, node gen.Atom) {
	e.now = now
	e.leave(node)
}

// rewatching notes at now that node's member is monitored anew (monitoring).
func (e *election) rewatching(now time.Time, node gen.Atom) {
	e.now = now
	e.monitoring(node)
}

// stepStarts is the start of a step at now: what the hub did meanwhile,
// read from the slot by the actor (hubView), is taken in (settleShared).
func (e *election) stepStarts(now time.Time, hub sharedView) {
	e.now = now
	e.settleShared(hub)
}

// stepTook records how long the step just finished took (ergo:longest_step).
func (e *election) stepTook(d time.Duration) {
	e.longestStep = max(e.longestStep, d)
}

// hubAttached is the node's hub taking this election in: its records
// arrive in the views of the actor's steps from now on, and its fast
// failovers count in the node's wave.
func (e *election) hubAttached(wave *failoverWave, hub gen.PID) {
	e.coalesced, e.wave, e.hubPID = true, wave, hub
}

// hubDetached is the end of the hub, once what it did up to its end was
// taken in (stepStarts): the election sends and answers its own heartbeats
// again.
func (e *election) hubDetached() {
	e.coalesced, e.wave, e.carried, e.hubPID = false, nil, nil, gen.PID{}
}

// departs marks an actor that handed over before it stops: it grants
// nothing more (grantRefusal, "outgoing").
func (e *election) departs() { e.outgoing = true }

// successorRefusalAt is successorRefusal at now (Actor.StepDownTo).
func (e *election) successorRefusalAt(now time.Time, m *member, connected func(gen.Atom) bool) string {
	e.now = now
	return e.successorRefusal(m, connected)
}
