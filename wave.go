package leader

import (
	"sync"
	"time"
)

// Failover waves: when a node crashes, every election it led fails over at
// once on the survivors, a few hundred of them with a thousand elections on
// three nodes. Each of them ranks its survivors (fastFailoverDelay): the
// first pre-votes a step after its down, the second a step later, and the
// second defers as soon as the first one's pre-vote reaches it
// (deferToRanked). In a wave, the survivors' processes queue behind the
// wave's hundreds of downs, so the first one's pre-vote reaches the second
// one tens of milliseconds after it was sent, long after the second one's
// own timer fired: both pre-vote, the first refuses the second
// (fast_failover_rank), and every election of the wave pays for a pre-vote
// round that cannot win, three steps and two messages, in the very
// milliseconds the wave's winning rounds wait for the same two cores. So a
// survivor ranked after the first one waits longer when its node is in a
// wave: long enough, at the default timings, for the first one's pre-vote
// to come. Waiting longer only delays a pre-vote, which is always allowed;
// the first-ranked survivor's wait, the safety margin of a lost connection
// (assumption A2), does not change.

// waveThreshold is how many other fast failovers of the same node must have
// started within waveWindow for an election to count itself in a wave. One
// election, or a handful sharing a node, fail over as before.
const waveThreshold = 8

// failoverWave counts the fast failovers the elections of one node start:
// the node's hub keeps one, and every election that joined the hub shares
// it through its slot.
type failoverWave struct {
	mu    sync.Mutex
	start time.Time // when the current wave's first failover started
	count int       // failovers started since start
}

// join records a fast failover starting at now and returns how many others
// started within window before it.
func (w *failoverWave) join(now time.Time, window time.Duration) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.count == 0 || now.Before(w.start) || now.Sub(w.start) > window {
		w.start, w.count = now, 0
	}
	others := w.count
	w.count++
	return others
}

// joinWave records a fast failover of the slot's election in its node's
// wave; 0 without a hub.
func (s *slot) joinWave(now time.Time, window time.Duration) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	w := s.wave
	s.mu.Unlock()
	if w == nil {
		return 0
	}
	return w.join(now, window)
}
