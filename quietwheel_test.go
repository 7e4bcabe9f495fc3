package leader

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wheelModel drives a quiet wheel as the hub and its actors do, and keeps
// the cells it files so that a test can read all of them, as the ticks did
// before there was a wheel.
type wheelModel struct {
	t     *testing.T
	w     *quietWheel
	cells []*quietCell
	now   time.Time
}

func newWheelModel(t *testing.T, cells int) *wheelModel {
	m := &wheelModel{t: t, w: &quietWheel{}, now: t0}
	for range cells {
		c := &quietCell{wheel: m.w}
		m.cells = append(m.cells, c)
		m.w.file(c, 0) // a new slot: visited at the first tick (hub.add)
	}
	return m
}

// set gives a cell a quiet time as a visit or a pass does (hub.setQuiet,
// hub.moveQuiet).
func (m *wheelModel) set(c *quietCell, until int64) {
	c.until.Store(until)
	m.w.file(c, until)
}

// wake clears a cell's quiet time as its actor does (slot.visitSoon).
func (m *wheelModel) wake(c *quietCell) {
	if c.until.Swap(0) != 0 {
		m.w.wake(c)
	}
}

// scan is what reading every cell finds due at now.
func (m *wheelModel) scan() []*quietCell {
	var due []*quietCell
	for _, c := range m.cells {
		if u := c.until.Load(); c.gone == false && u != math.MaxInt64 && u <= m.now.UnixNano() {
			due = append(due, c)
		}
	}
	return due
}

// sameCells fails unless got holds each cell of want once, and no other.
func sameCells(t *testing.T, want, got []*quietCell, msg string, args ...any) {
	t.Helper()
	count := make(map[*quietCell]int)
	for _, c := range want {
		count[c]++
	}
	for _, c := range got {
		count[c]--
	}
	for c, n := range count {
		require.Zero(t, n, "%s: a cell (until %d) %d times too few", fmt.Sprintf(msg, args...), c.until.Load(), n)
	}
}

// Under random quiet times, wakes, departures and ticks that come late (up
// to more than a lap of the wheel) or early, each read of the wheel returns
// exactly the cells that reading every cell would find due, each once.
// Breaks: an entry dropped that was not stale (a cell never visited again:
// its parked timer never fires), a later lap's entry taken early, a wake
// lost between two reads, or a cell returned twice (filed twice with the
// same time).
func TestTheWheelFindsWhatReadingEveryCellFinds(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		m := newWheelModel(t, 64)
		var due []*quietCell
		for step := range 400 {
			// the actors between two ticks
			for range rng.IntN(4) {
				m.wake(m.cells[rng.IntN(len(m.cells))])
			}
			if rng.IntN(50) == 0 {
				c := m.cells[rng.IntN(len(m.cells))]
				c.gone = true // its slot left (hub.leave)
			}
			if rng.IntN(3) == 0 {
				// a visit by a tick that read every cell, which found
				// the same quiet time again: a second entry, equal
				c := m.cells[rng.IntN(len(m.cells))]
				if u := c.until.Load(); u != 0 {
					m.set(c, u)
				}
			}
			if rng.IntN(30) == 0 {
				c := &quietCell{wheel: m.w}
				m.cells = append(m.cells, c)
				m.w.file(c, 0)
			}
			// the next tick: mostly an interval later, sometimes late
			// past a lap of the wheel, sometimes early
			switch r := rng.IntN(100); {
			case r < 3:
				m.now = m.now.Add(time.Duration(wheelSpokes+rng.IntN(3*wheelSpokes)) * wheelWidth)
			case r < 10:
				m.now = m.now.Add(time.Duration(rng.IntN(int(wheelWidth))))
			default:
				m.now = m.now.Add(5*time.Millisecond + time.Duration(rng.IntN(3000))*time.Microsecond)
			}
			want := m.scan()
			due = m.w.due(m.now, due)
			sameCells(t, want, due, "seed %d, step %d", seed, step)
			// the visits: each cell due gets a new quiet time, a past
			// one, none (nothing parked), or a time laps ahead
			for _, c := range due {
				switch r := rng.IntN(20); {
				case r == 0:
					m.set(c, math.MaxInt64)
				case r == 1:
					m.set(c, m.now.Add(-time.Millisecond).UnixNano())
				case r == 2:
					m.set(c, m.now.Add(time.Duration(rng.IntN(4*wheelSpokes))*wheelWidth).UnixNano())
				case r == 3:
					m.set(c, m.now.UnixNano()) // again at the next tick
				default:
					m.set(c, m.now.Add(time.Duration(rng.IntN(300_000))*time.Microsecond).UnixNano())
				}
			}
		}
	}
}

// A tick that reads every cell itself reads the wheel first and drops what
// it returned (openRounds): a cell woken after that read is returned by
// the next one, though the first took the wakes before it.
func TestTheWheelKeepsAWakeThatCameAfterADroppedRead(t *testing.T) {
	m := newWheelModel(t, 2)
	m.now = m.now.Add(time.Millisecond)
	m.w.due(m.now, nil) // dropped: the tick reads every cell
	for _, c := range m.cells {
		m.set(c, m.now.Add(time.Second).UnixNano())
	}
	m.wake(m.cells[1])
	m.now = m.now.Add(5 * time.Millisecond)
	got := m.w.due(m.now, nil)
	sameCells(t, []*quietCell{m.cells[1]}, got, "the wake after the skip")
}

// The wheel holds no more entries than the quiet times given within about
// a lap: stale entries go when their spoke is read, and the cells of slots
// that left go with them.
func TestTheWheelForgetsStaleEntriesAndCellsThatLeft(t *testing.T) {
	m := newWheelModel(t, 100)
	var due []*quietCell
	for range 2000 {
		m.now = m.now.Add(5 * time.Millisecond)
		due = m.w.due(m.now, due)
		for _, c := range due {
			m.set(c, m.now.Add(20*time.Millisecond).UnixNano())
		}
		for _, c := range m.cells[:10] {
			m.set(c, m.now.Add(40*time.Millisecond).UnixNano()) // filed anew every tick
		}
	}
	entries := func() int {
		n := 0
		for _, s := range m.w.spokes {
			n += len(s)
		}
		return n
	}
	assert.LessOrEqual(t, entries(), 100+10*(40/5+1), "about one entry per quiet time still to come")
	for _, c := range m.cells {
		c.gone = true
	}
	for range wheelSpokes/5 + 2 {
		m.now = m.now.Add(5 * time.Millisecond)
		require.Empty(t, m.w.due(m.now, nil))
	}
	assert.Zero(t, entries(), "a lap after every slot left")
}

// The ping waiters' lists let a follower go at the first tick at which its
// leader's node's pings no longer vouch for it (the newest is older than
// its slack less the horizon, or of another lead epoch, or gone from the
// board), exactly when moving its quiet time on to the newest ping did,
// under random pings, slacks, wakes and departures; a list is read only
// when one of its followers may be due, and holds no more than its
// followers and as many stale entries. Breaks: a list passed by on its
// newest ping although a follower's slack ran out (a timer that never
// fires), a follower let go early, a woken follower let go again, or
// stale entries kept.
func TestPingWaitersLetAFollowerGoWhenItsPingsStop(t *testing.T) {
	horizon := parkHorizon(5 * time.Millisecond)
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 11))
		h := &hub{process: &scriptedProcess{self: pid("h")}, clock: func() time.Time { return t0 }}
		h.init()
		peers := []*pingPeer{{}, {}}
		epoch := map[*pingPeer]uint64{peers[0]: 1, peers[1]: 1}
		last := map[*pingPeer]time.Time{peers[0]: t0, peers[1]: t0}
		silent := make(map[*pingPeer]time.Time)
		now := t0
		type follower struct {
			cell  *quietCell
			waits vouchedDue
		}
		var followers []*follower
		for range 40 {
			followers = append(followers, &follower{cell: &quietCell{wheel: &h.wheel}})
		}
		// onList reports whether a follower is on a list by its quiet time
		onList := func(f *follower) bool { return f.cell.until.Load() == waitingOnPings }
		for step := range 300 {
			now = now.Add(5 * time.Millisecond)
			for _, p := range peers {
				if now.Before(silent[p]) {
					continue // its node's pings stopped for a while
				}
				switch r := rng.IntN(100); {
				case r < 85:
					last[p] = now.Add(-time.Duration(rng.IntN(3)) * time.Millisecond) // a ping
				case r < 88:
					epoch[p]++ // a raise
				case r < 92:
					silent[p] = now.Add(time.Duration(50+rng.IntN(350)) * time.Millisecond)
				}
			}
			clear(h.vouchSeen)
			for _, p := range peers {
				if rng.IntN(200) > 0 { // now and then the board has lost it
					h.vouchSeen[p] = vouchSeen{epoch: epoch[p], last: last[p]}
				}
			}
			// who must go: those on a list whose pings stopped vouching
			want := make(map[*quietCell]bool)
			for _, f := range followers {
				if f.cell.gone || onList(f) == false {
					continue
				}
				seen, ok := h.vouchSeen[f.waits.peer]
				if ok == false || seen.epoch != f.waits.epoch || seen.last.Add(f.waits.slack).Add(-horizon).After(now) == false {
					want[f.cell] = true
				}
			}
			h.wheel.round++
			got := h.releaseWaiters(now, horizon, nil)
			require.Len(t, got, len(want), "seed %d, step %d", seed, step)
			for _, c := range got {
				require.True(t, want[c], "seed %d, step %d: let go early", seed, step)
				require.Zero(t, c.until.Load(), "its quiet time cleared for the visit")
			}
			for _, list := range h.waitOrder {
				live := 0
				for _, f := range followers {
					if f.cell.waiting == list {
						live++
					}
				}
				require.Equal(t, len(list.cells)-list.stale, live, "seed %d, step %d: the stale count", seed, step)
				require.LessOrEqual(t, len(list.cells), 2*live, "seed %d, step %d: stale entries pile up", seed, step)
			}
			// the visits of those let go, and the others' steps: some
			// go on a list (a pass), some are woken by their actor, some
			// leave
			for _, f := range followers {
				c := f.cell
				switch r := rng.IntN(100); {
				case c.gone:
				case r < 2:
					c.gone = true
					h.unwait(c)
				case r < 6 && onList(f):
					c.until.Store(0) // the actor (visitSoon); the visit follows
					h.unwait(c)
				case c.until.Load() != waitingOnPings:
					// a visit, then a pass on pings that vouch for it
					h.unwait(c)
					p := peers[rng.IntN(len(peers))]
					seen, ok := h.vouchSeen[p]
					if ok == false {
						continue
					}
					f.waits = vouchedDue{peer: p, epoch: seen.epoch, slack: time.Duration(100+rng.IntN(200)) * time.Millisecond}
					if seen.last.Add(f.waits.slack).Add(-horizon).After(now) {
						quiet := now.Add(-time.Millisecond).UnixNano()
						c.until.Store(quiet)
						require.True(t, h.wait(c, quiet, f.waits))
					}
				}
			}
		}
	}
}
