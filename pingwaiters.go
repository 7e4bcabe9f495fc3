package leader

import (
	"math"
	"time"
)

// Followers waiting on their leader's node's pings, in one list per node
// and lead epoch.
//
// A follower whose parked election timer waits on nothing but its leader's
// node's pings (quietCell.waits) is due only when those pings stop
// vouching for it: a ping of another lead epoch, or none for its timer's
// slack less the horizon. Moved on one by one (its quiet time set to the
// newest ping's plus the slack), each such follower cost its hub a look,
// a move and a filing every election timeout: about 30,000 a second per
// node at 10,000 elections. Kept in a list per node and epoch instead, a
// tick checks each list against the newest ping once, and reads a list
// only when its node's pings came later than its shortest slack allows
// (or under another epoch): at a tick with pings coming in, a handful of
// comparisons for all of a node's followers.
//
// A follower on a list has the quiet time waitingOnPings, which a tick
// that reads every cell passes by (passFollower) and the wheel files
// nowhere; its actor clearing it (visitSoon) takes it off the list, as the
// hub's visit that follows does. A follower let go from its list has its
// quiet time cleared and is visited at that tick, as it was when its moved
// quiet time came with no newer ping: the same visits, at the same ticks.

// waitingOnPings is the quiet time of a follower on a ping waiters' list:
// later than any clock, and not math.MaxInt64 (nothing parked).
const waitingOnPings = math.MaxInt64 - 1

// pingWaiters are the followers of one lead epoch of one node's hub whose
// timers wait on its pings.
type pingWaiters struct {
	peer  *pingPeer
	epoch uint64
	cells []waitingCell
	// the shortest slack of the list, stale entries included: no follower
	// of the list is due while the newest ping is younger than it less
	// the horizon
	shortest time.Duration
	stale    int // entries whose follower left the list since it was read
}

// waitingCell is a follower's entry on a list: live while the cell still
// names the list and the entry (quietCell.waiting, waitSeq).
type waitingCell struct {
	cell  *quietCell
	slack time.Duration
	seq   uint64
}

// waitKey finds a node's list of one lead epoch.
type waitKey struct {
	peer  *pingPeer
	epoch uint64
}

// wait puts a follower's cell, passed by at quiet time quiet on pings that
// vouch for it, on its leader's node's list. It reports false when the
// actor cleared the quiet time meanwhile: the cell is visited instead.
func (h *hub) wait(cell *quietCell, quiet int64, w vouchedDue) bool {
	if cell.until.CompareAndSwap(quiet, waitingOnPings) == false {
		return false
	}
	key := waitKey{peer: w.peer, epoch: w.epoch}
	list := h.waitLists[key]
	if list == nil {
		list = &pingWaiters{peer: w.peer, epoch: w.epoch, shortest: w.slack}
		h.waitLists[key] = list
		h.waitOrder = append(h.waitOrder, list)
	}
	h.waitSeq++
	cell.waiting, cell.waitSeq = list, h.waitSeq
	list.cells = append(list.cells, waitingCell{cell: cell, slack: w.slack, seq: h.waitSeq})
	list.shortest = min(list.shortest, w.slack)
	h.passed++
	return true
}

// unwait takes a cell off its list, if it is on one: the hub visits it, or
// its slot left.
func (h *hub) unwait(cell *quietCell) {
	if list := cell.waiting; list != nil {
		list.stale++
		cell.waiting = nil
	}
}

// releaseWaiters lets go, at a tick, the followers whose leader's node's
// pings no longer vouch for them, by the board as the tick began
// (vouchSeen): their quiet time cleared, they are added to into for a
// visit. A list is read only then, or when more than half of it is stale;
// a list left empty is dropped.
func (h *hub) releaseWaiters(now time.Time, horizon time.Duration, into []*quietCell) []*quietCell {
	kept := h.waitOrder[:0]
	for _, list := range h.waitOrder {
		seen, ok := h.vouchSeen[list.peer]
		all := ok == false || seen.epoch != list.epoch
		if all == false && now.Sub(seen.last)+horizon < list.shortest && list.stale <= len(list.cells)/2 {
			kept = append(kept, list)
			continue // none due
		}
		live := list.cells[:0]
		shortest := time.Duration(math.MaxInt64)
		for _, e := range list.cells {
			cell := e.cell
			if cell.waiting != list || cell.waitSeq != e.seq || cell.gone {
				continue // left the list
			}
			if all == false && seen.last.Add(e.slack).Add(-horizon).After(now) {
				live = append(live, e)
				shortest = min(shortest, e.slack)
				continue
			}
			cell.waiting = nil
			// when the actor cleared it meanwhile, the wheel has it
			if cell.until.CompareAndSwap(waitingOnPings, 0) {
				into = h.wheel.take(cell, into)
			}
		}
		clear(list.cells[len(live):])
		list.cells, list.stale, list.shortest = live, 0, shortest
		if len(live) == 0 {
			delete(h.waitLists, waitKey{peer: list.peer, epoch: list.epoch})
			continue
		}
		kept = append(kept, list)
	}
	clear(h.waitOrder[len(kept):])
	h.waitOrder = kept
	return into
}
