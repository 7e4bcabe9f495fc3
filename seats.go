package leader

import (
	"errors"
	"time"

	"ergo.services/ergo/gen"
)

// Kept seats: rolling restarts at MinClusterSize.
//
// A member whose process terminated with a real reason leaves the view, as
// the specification says, and quorums are counted over what remains. With
// three nodes and MinClusterSize 3, stopping one node for a restart would
// then leave a view of two, below the floor: no leader until discovery
// joined the node again, while a kill -9 of the same node (a lost
// connection: the member stays, a ghost) cost nothing.
//
// So a member that terminated gracefully (reason normal or shutdown: a
// node's Stop, a rolling restart, an orchestrator's SIGTERM) keeps its seat
// for the MinClusterSize floor, and only for it, for GhostTTL or until it
// comes back or Leave is called for it. It is not in the view, not in any
// quorum and not in Peers. Safety is untouched: every vote and every lease
// still needs a majority of the view, and the floor, which keeps disjoint
// groups from both electing, still needs MinClusterSize nodes that were
// members of this one: the stopped node told its peers that it stops, it
// did not vanish behind a partition.

// keepSeat records that the member on node terminated gracefully.
func (e *election) keepSeat(node gen.Atom) {
	if e.seats == nil {
		e.seats = make(map[gen.Atom]time.Time)
	}
	e.seats[node] = e.now.Add(e.cfg.ghostTTL)
	e.armGhostTimer() // the floor is checked again when the seat runs out
}

// keptSeats counts the seats still kept, forgetting expired ones.
func (e *election) keptSeats() int {
	for node, until := range e.seats {
		if e.now.Before(until) == false {
			delete(e.seats, node)
		}
	}
	return len(e.seats)
}

// nextSeatExpiry is when the first kept seat runs out, zero for none.
func (e *election) nextSeatExpiry() time.Time {
	var next time.Time
	for _, until := range e.seats {
		if next.IsZero() || until.Before(next) {
			next = until
		}
	}
	return next
}

// graceful reports whether a process that terminated with reason meant to
// stop: a normal end or a shutdown.
func graceful(reason error) bool {
	return errors.Is(reason, gen.TerminateReasonNormal) || errors.Is(reason, gen.TerminateReasonShutdown)
}
