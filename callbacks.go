package leader

import "ergo.services/ergo/gen"

// Defaults for every ActorBehavior callback except Init. The ones whose
// absence is almost always a mistake log a warning.

// HandleMessage logs a warning: a message arrived that nothing handles.
func (a *Actor) HandleMessage(from gen.PID, message any) error {
	a.Log().Warning("leader: HandleMessage is not implemented; dropped %T from %s", message, from)
	return nil
}

// HandleCall logs a warning and answers the caller with gen.ErrUnsupported.
func (a *Actor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	a.Log().Warning("leader: HandleCall is not implemented; rejected %T from %s", request, from)
	return nil, gen.ErrUnsupported
}

// Terminate does nothing.
func (a *Actor) Terminate(reason error) {}

// HandleInspect adds nothing to the election's keys.
func (a *Actor) HandleInspect(from gen.PID, item ...string) map[string]string {
	return nil
}

// HandleConfirmLeader allows every won election.
func (a *Actor) HandleConfirmLeader() (bool, error) {
	return true, nil
}

// HandleBecomeLeader logs a warning: winning leadership and doing nothing
// with it is almost always a missing implementation.
func (a *Actor) HandleBecomeLeader() error {
	a.Log().Warning("leader: became leader at term %d, but HandleBecomeLeader is not implemented; implement it to start the work that must run in one place", a.Term())
	return nil
}

// HandleBecomeFollower logs a warning: leadership ended or moved, and
// nothing stops the work.
func (a *Actor) HandleBecomeFollower(leader gen.PID) error {
	a.Log().Warning("leader: now following %s, but HandleBecomeFollower is not implemented; implement it to stop leader-only work", leader)
	return nil
}

// HandlePeerJoined does nothing.
func (a *Actor) HandlePeerJoined(peer gen.PID) error { return nil }

// HandlePeerLeft does nothing.
func (a *Actor) HandlePeerLeft(peer gen.PID) error { return nil }

// HandleEvent logs a warning: an event arrived that nothing handles.
func (a *Actor) HandleEvent(event gen.MessageEvent) error {
	a.Log().Warning("leader: HandleEvent is not implemented; dropped an event of %s", event.Event)
	return nil
}

// HandleSpan logs a warning: a tracing span arrived that nothing handles.
func (a *Actor) HandleSpan(span gen.TracingSpan) error {
	a.Log().Warning("leader: HandleSpan is not implemented; dropped a span of %s", span.Message)
	return nil
}

// HandleLog logs a warning: a log message arrived that nothing handles.
func (a *Actor) HandleLog(message gen.MessageLog) error {
	a.Log().Warning("leader: HandleLog is not implemented; dropped a log message")
	return nil
}
