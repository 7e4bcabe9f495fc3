package leader

import (
	"errors"
	"time"

	"ergo.services/ergo/gen"
)

// A leader that stops on purpose (its node's graceful Stop, or a callback
// returning TerminateReasonNormal or TerminateReasonShutdown) hands
// leadership over on the way out: it stands down, runs HandleBecomeFollower
// and tells an up-to-date follower to campaign at once (leadership.go,
// handover). If the process then ended at once, that message could be lost
// or overtaken:
//
//   - The framework stops a node's network as soon as its last process has
//     ended, closing every connection. A frame still in the connection's
//     write buffer (the framework flushes on a timer) or in flight is lost
//     with it, and a socket closed while the peer's bytes wait unread is
//     reset, which can discard what the peer had not read yet.
//   - The process's end reaches the successor as a down, which the
//     framework sends on a link of the connection's pool other than the
//     handover's; it can arrive first, and the successor then ignores a
//     message from a process it knows is dead.
//
// Either way the successor never hears of the handover and the cluster
// fails over as after a crash, several milliseconds later (measured on
// loopback: about 9 ms instead of 1 to 3, in 2 of 5 node Stops).
//
// So the outgoing leader stays a little longer: a follower that takes part
// in the protocol but grants no vote (a grant would leave the view with it
// a moment later, and the new leader's quorum of acknowledgements with
// it), runs none of the behavior's callbacks, and ends as soon as it sees a
// term beyond the one it handed over (the successor's vote request, at
// the latest its first heartbeat), or after departureWait. The node's Stop
// waits for it, as the framework waits for every process, so the
// connections stay up until the successor has the message.

// departure is an outgoing leader's last moments, after its handover.
type departure struct {
	reason error     // what ProcessRun returns in the end
	term   uint64    // the term handed over; a higher one means the successor campaigns
	until  time.Time // the latest end, whatever happens
}

// departureDeadline wakes an outgoing leader at its latest end.
type departureDeadline struct{}

// over reports whether the outgoing leader may end now.
func (d *departure) over(term uint64, now time.Time) bool {
	return term > d.term || now.Before(d.until) == false
}

// depart ends the actor with reason, handing leadership over first when
// it leads and stops on purpose. It reports true when the actor is to stay
// until its successor campaigns (a.departing is set); false when it may end
// at once.
func (a *Actor) depart(reason error) bool {
	if a.state == nil || a.state.role != roleLeader || a.state.unpublished {
		return false
	}
	if isGracefulEnd(reason) == false {
		return false
	}
	successor := a.state.handover(a.clock(), "the actor is stopping ("+reason.Error()+")", a.connected)
	if err := a.flush(); err != nil {
		a.Log().Error("leader: while handing over before stopping: %s", err)
		return false
	}
	if successor == "" {
		return false
	}
	a.state.departs()
	wait := departureWait(a.state.cfg)
	a.departing = &departure{reason: reason, term: a.state.term, until: a.clock().Add(wait)}
	if _, err := a.SendAfter(a.PID(), departureDeadline{}, wait); err != nil {
		a.departing = nil
		return false
	}
	return true
}

// isGracefulEnd reports whether reason is a stop on purpose, after which a
// leader hands over.
func isGracefulEnd(reason error) bool {
	return errors.Is(reason, gen.TerminateReasonNormal) || errors.Is(reason, gen.TerminateReasonShutdown)
}

// dispatchDeparting handles a message while the actor is outgoing: the
// protocol only. The behavior asked to end, so none of its callbacks runs;
// a call is answered as a terminated process would be, and exits are
// moot.
func (a *Actor) dispatchDeparting(message *gen.MailboxMessage) error {
	switch message.Type {
	case gen.MailboxMessageTypeRegular:
		return a.handleRegular(message.From, message.Message)
	case gen.MailboxMessageTypeRequest:
		a.SendResponseError(message.From, message.Ref, gen.ErrProcessTerminated)
	case gen.MailboxMessageTypeInspect:
		items, _ := message.Message.([]string)
		a.SendResponse(message.From, message.Ref, a.state.inspect(a.clock(), items...))
	}
	return nil
}
