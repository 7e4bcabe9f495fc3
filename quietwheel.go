package leader

import (
	"sync"
	"time"
)

// The quiet wheel: which slots a tick must look at, found without looking
// at the others.
//
// A hub ticks every liveness interval (5 ms at the default timings), and
// most of its slots have nothing due for tens of ticks: a follower's
// election timer waits on its leader's pings, a leader's lease timer on its
// followers' answers (hub_tick.go). Reading every slot's quiet time at every
// tick cost a node 1 to 1.5% of a core at 10,000 elections, nearly all of it
// cache misses. The wheel files each quiet time under the millisecond it
// ends in; a tick reads the milliseconds since the last tick and the slots
// the actors woke (slot.visitSoon), nothing else.
//
// It is a lookup, not the truth: the truth is each cell's until, which the
// wheel's entries are checked against when read. An entry whose cell has
// been given another quiet time since, or has left, is dropped; an entry
// whose time has not come (a later lap, or later in the same millisecond)
// stays. So a tick visits exactly the slots whose quiet time has come or
// whose actor woke them, the slots reading every cell would find, and the
// ticks that look at every leader (a resync, the refresh, a node found
// alive or gone) still read every cell.

const (
	// wheelWidth is the time one spoke of the wheel holds: the shortest
	// liveness interval, so that a tick never has to split a spoke finer
	wheelWidth = time.Millisecond
	// wheelSpokes is how many spokes the wheel has: about a second, past
	// the quiet times of the default timings (a holding lease, an election
	// timeout); a quiet time further ahead is read once a lap and kept
	wheelSpokes = 1024
)

// wheelEntry is a cell filed under its quiet time.
type wheelEntry struct {
	cell  *quietCell
	until int64 // the quiet time it was filed with: stale when the cell's differs
}

// quietWheel is a hub's wheel of quiet times. The spokes and next belong to
// the hub's goroutine; woken is shared with the actors, under mu.
type quietWheel struct {
	spokes [wheelSpokes][]wheelEntry
	// next is the first spoke (in wheelWidth since the Unix epoch) not yet
	// read to its end: the one the last tick ended in, which may still
	// hold quiet times after that tick
	next  int64
	round uint64 // numbers the reads: a cell read twice in one is visited once

	mu    sync.Mutex
	woken []*quietCell // cells whose actor cleared the quiet time since the last read
	spare []*quietCell // the list read last, reused
}

// file enters cell under quiet time until, which it was just given; the
// hub's goroutine. A cell with no time (0: visit at the next tick) goes
// with the woken ones; a cell with nothing parked (math.MaxInt64) is
// filed nowhere: no time brings it nearer, only a wake or a tick that
// reads every cell; nor is a follower waiting on its leader's pings
// (waitingOnPings), which its list lets go.
func (w *quietWheel) file(cell *quietCell, until int64) {
	switch {
	case until == 0:
		w.wake(cell)
	case until >= waitingOnPings: // nothing parked, or on a ping waiters' list
	default:
		at := max(until/int64(wheelWidth), w.next)
		spoke := &w.spokes[at%wheelSpokes]
		*spoke = append(*spoke, wheelEntry{cell: cell, until: until})
	}
}

// wake queues a cell whose quiet time was just cleared for the next tick.
func (w *quietWheel) wake(cell *quietCell) {
	w.mu.Lock()
	w.woken = append(w.woken, cell)
	w.mu.Unlock()
}

// due returns the cells of slots still joined whose quiet time is 0 or has
// come by now, each once, in the order the actors woke them and then of
// their quiet times; the list is reused by the next call. The spokes from
// the last read to now are emptied of what they return and of stale
// entries.
func (w *quietWheel) due(now time.Time, into []*quietCell) []*quietCell {
	w.round++
	w.mu.Lock()
	woken := w.woken
	w.woken = w.spare[:0]
	w.mu.Unlock()
	into = into[:0]
	for _, cell := range woken {
		into = w.take(cell, into)
	}
	clear(woken) // no pointers kept to cells that may leave
	w.spare = woken[:0]
	at := now.UnixNano()
	last := at / int64(wheelWidth)
	first := max(w.next, last-wheelSpokes+1) // a late tick reads each spoke once
	for n := first; n <= last; n++ {
		spoke := &w.spokes[n%wheelSpokes]
		kept := (*spoke)[:0]
		for _, e := range *spoke {
			if e.cell.gone || e.cell.until.Load() != e.until {
				continue // left, or filed anew (or woken) since
			}
			if e.until > at {
				kept = append(kept, e) // a later lap, or later in this spoke
				continue
			}
			into = w.take(e.cell, into)
		}
		clear((*spoke)[len(kept):])
		*spoke = kept
	}
	w.next = last
	return into
}

// take adds cell to the cells due, unless it left or is there already.
func (w *quietWheel) take(cell *quietCell, into []*quietCell) []*quietCell {
	if cell.gone || cell.read == w.round {
		return into
	}
	cell.read = w.round
	return append(into, cell)
}
