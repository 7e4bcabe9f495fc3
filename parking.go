package leader

import (
	"math"
	"time"

	"ergo.services/ergo/gen"
)

// Parked timers: a follower whose leader is alive, and a leader whose lease
// the hub keeps renewing, need not wake at all.
//
// Without them, every follower wakes at each election timeout only to find
// that its hub answered its leader in the meantime and to arm the timer
// again, and every leader wakes at each lease check only to find the lease
// renewed: at the defaults, about ten wake-ups a second per election for
// nothing, which with a thousand elections on a node is most of the idle
// cost. Instead the actor hands those two timers to its node's hub (it
// "parks" them in its slot), and the hub, which ticks anyway and sees every
// heartbeat it carries, fires them itself, and only when they are due by
// what it saw:
//
//   - a follower's election timer is due at its deadline, moved on by every
//     round of the leader the hub answered for it (as the follower would
//     move it). A follower sleeps until its leader goes quiet; its chores,
//     when it has any, run on a chore timer of its own (followerChore).
//     With a thousand elections on three nodes the election timers' wake-
//     ups were two thirds of the actors' idle steps (about 400 a second),
//     each finding nothing to do. (The timer used to carry a chore
//     deadline too, a chore interval after the step that parked it: every
//     step moved it, and a follower that stepped more often for anything
//     else never reached it);
//   - a leader's lease timer is due when the lease the hub can prove from
//     its own rounds and the acknowledgements they got runs out. The hub
//     counts a subset of what the leader counts (only its own rounds, only
//     the followers the leader shares), so its estimate is never later than
//     the leader's own: the leader is woken no later than it would wake
//     itself, give or take the hub's tick (see parkHorizon).
//
// A parked timer is withdrawn at the start of every step, with the hub's
// other permissions, and parked again at its end if the state still allows
// it; a timer due within parkHorizon is never parked. When the hub fires a
// timer, it sends the actor hubWake, which the actor handles as the timer
// itself (the state's generation check drops superseded ones). Without a
// hub, or when the hub stops, the actor arms the framework's timer again.

// parkKinds are the timers an actor may park: their index in slot.parked.
var parkKinds = [...]timerKind{timerElection, timerLease}

// parkedTimer is a timer of the actor's that its hub fires.
type parkedTimer struct {
	active     bool // false while the actor runs a step, or nothing parked
	generation uint64
	at         time.Time     // when the actor's own timer would fire
	slack      time.Duration // follower: its deadline is this long after its leader's newest round
	lease      time.Duration // leader: how long an acknowledged round holds the lease
	need       int           // leader: follower nodes whose acknowledgements a lease needs
	sent       bool          // the hub has fired this generation
	// follower: how long after a lost connection to its leader's node the
	// timer waits for the leader's down (pacing.go, owed downs); 0: no down
	// is owed for that leader
	owedWait time.Duration
}

// hubWake is a parked timer the hub fired (local only, never encoded).
type hubWake struct {
	Kind       timerKind
	Generation uint64
}

// actorTimer is a timer the actor armed for its state: with the framework
// (cancel set), or parked with its hub.
type actorTimer struct {
	armed      bool
	generation uint64
	at         time.Time
	parked     bool
	cancel     gen.CancelFunc
}

// parkHorizon is how soon a parked timer must be due for the hub to fire it
// at its tick: one and a half intervals, so that a tick late by up to half
// an interval still fires it on time, and a leader's lease, which the
// previous round renews to about two intervals ahead, is not fired while
// the hub keeps renewing it.
func parkHorizon(interval time.Duration) time.Duration { return interval + interval/2 }

// parkIndex returns the slot index of a parkable kind.
func parkIndex(kind timerKind) (int, bool) {
	for i, k := range parkKinds {
		if k == kind {
			return i, true
		}
	}
	return 0, false
}

// park installs or refreshes the actor's parked timer of kind, unless it
// is due, by what the hub saw, within horizon of now: then it is removed,
// and park returns false and when the actor must arm it with the
// framework. A timer parked again with the same generation and the same
// terms keeps its sent mark, so the hub fires it once.
func (s *slot) park(kind timerKind, p parkedTimer, now time.Time, horizon time.Duration) (time.Time, bool) {
	i, ok := parkIndex(kind)
	if ok == false {
		return p.at, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.visitSoon()
	old := s.parked[i]
	p.active = true
	p.sent = old.sent && old.generation == p.generation && old.at.Equal(p.at) && old.need == p.need && old.lease == p.lease && old.slack == p.slack && old.owedWait == p.owedWait
	s.parked[i] = p
	if p.sent {
		return time.Time{}, true // on its way
	}
	if at := s.dueAt(i); at.Sub(now) < horizon {
		s.parked[i] = parkedTimer{}
		return at, false
	}
	return time.Time{}, true
}

// unpark removes the actor's parked timer of kind.
func (s *slot) unpark(kind timerKind) {
	if i, ok := parkIndex(kind); ok {
		s.mu.Lock()
		s.parked[i] = parkedTimer{}
		s.mu.Unlock()
	}
}

// dueAt is when the parked timer i is due by what the hub saw; s.mu is
// held.
func (s *slot) dueAt(i int) time.Time {
	p := &s.parked[i]
	at := p.at
	switch parkKinds[i] {
	case timerElection:
		if s.follow != (gen.PID{}) && s.beatAt.IsZero() == false {
			if t := s.beatAt.Add(p.slack); t.After(at) {
				at = t
			}
		}
		heard := s.beatAt
		if v := s.vouchedAt(); v.IsZero() == false {
			if t := v.Add(p.slack); t.After(at) {
				at = t
			}
			heard = later(heard, v)
		}
		if t := s.owedDownUntil(p.owedWait, heard); t.After(at) {
			at = t
		}
	case timerLease:
		if t := s.hubLease(p.lease, p.need); t.After(at) {
			at = t
		}
	}
	return at
}

// dueParked appends the parked timers that fall due before now+horizon to
// wakes, and marks them fired; s.mu is held.
func (s *slot) dueParked(now time.Time, horizon time.Duration, wakes []parkedWake) []parkedWake {
	for i := range s.parked {
		p := &s.parked[i]
		if p.active == false || p.sent {
			continue
		}
		at := s.dueAt(i)
		if at.Sub(now) >= horizon {
			continue
		}
		p.sent = true
		wakes = append(wakes, parkedWake{actor: s.actor, kind: parkKinds[i], generation: p.generation, after: max(at.Sub(now), 0)})
	}
	return wakes
}

// hubLease is the end of the lease that the rounds this hub opened, the
// acknowledgements they got and the answered pings that count as acks
// prove: the need-th latest of the followers' newest evidence, plus
// lease; zero when there is not enough. s.mu is
// held. It counts only what the leader counts too (coalesce.go imports the
// same rounds and acks), so it is never later than the leader's own.
//
// Each link keeps the send time of the round it acknowledged (ackSent, set
// when the ack came), so this runs every tick for every leader without
// looking rounds up; the quorum is counted as the election counts it
// (latestReachedBy).
func (s *slot) hubLease(lease time.Duration, need int) time.Time {
	var buffer [8]time.Time
	sent := buffer[:0]
	for i := range s.links {
		l := &s.links[i]
		var at time.Time
		if l.ack != 0 {
			at = l.ackSent
		}
		// an answered ping that counts as its ack renews the lease as the
		// election counts it (lease.go, holdingEvidence)
		if p, ok := s.pongOf(l); ok && p.sent.After(at) {
			at = p.sent
		}
		if at.IsZero() == false {
			sent = append(sent, at)
		}
	}
	at, ok := latestReachedBy(sent, need)
	if ok == false {
		return time.Time{}
	}
	return at.Add(lease)
}

// stampOf returns when the hub sent round n of leadTerm, zero if it is no
// longer among the stamps it keeps; s.mu is held.
func (s *slot) stampOf(n uint64) time.Time {
	for _, r := range s.stamps {
		if r.round == n {
			return r.at
		}
	}
	return time.Time{}
}

// quietFor returns until when the hub's ticks have nothing to do for a
// slot that neither leads nor is in the middle of a step as a leader: the
// moment its earliest parked timer that has not fired comes within
// horizon; the far future if it has none. s.mu is held.
func (s *slot) quietFor(horizon time.Duration) int64 {
	until := int64(math.MaxInt64)
	for i := range s.parked {
		if p := &s.parked[i]; p.active && p.sent == false {
			until = min(until, s.dueAt(i).Add(-horizon).UnixNano())
		}
	}
	return until
}

// parkedWake is a parked timer the hub is about to fire.
type parkedWake struct {
	actor      gen.PID
	kind       timerKind
	generation uint64
	after      time.Duration
}

// fire sends the wake-ups the hub's tick found due.
func (h *hub) fire(wakes []parkedWake) {
	for _, w := range wakes {
		message := hubWake{Kind: w.kind, Generation: w.generation}
		if w.after <= 0 {
			h.process.Send(w.actor, message)
			continue
		}
		if _, err := h.process.SendAfter(w.actor, message, w.after); err != nil {
			h.process.Send(w.actor, message) // early is harmless: the actor arms again
		}
	}
}

// --- the actor's side ---

// parkable reports whether the timer of kind may be parked with the hub
// now: a follower's election timer while the hub answers its leader for
// it, a leader's lease timer while the hub opens its rounds.
func (a *Actor) parkable(kind timerKind) bool {
	if a.hub == (gen.PID{}) || a.slot == nil || a.state.coalesced == false {
		return false
	}
	switch kind {
	case timerElection:
		return a.state.role == roleFollower && a.state.grantedFollow != (gen.PID{})
	case timerLease:
		return a.state.role == roleLeader && a.state.grantedLead == a.state.term && a.state.grantedLead != 0
	}
	return false
}

// armTimer records a timer the state asked for. Parkable kinds are armed
// with the framework only at the end of the step (syncTimers), once the
// step's grants to the hub are known.
func (a *Actor) armTimer(t timerRequest) {
	a.disarm(t.kind)
	if t.after < 0 {
		return
	}
	rec := &a.timers[t.kind]
	rec.armed, rec.generation, rec.at = true, t.generation, a.clock().Add(t.after)
	if _, parkable := parkIndex(t.kind); parkable == false {
		a.schedule(t.kind, rec.at)
	}
}

// disarm cancels the timer of kind, wherever it is armed.
func (a *Actor) disarm(kind timerKind) {
	rec := &a.timers[kind]
	if rec.cancel != nil {
		rec.cancel()
	}
	if rec.parked && a.slot != nil {
		a.slot.unpark(kind)
	}
	*rec = actorTimer{}
}

// schedule arms the recorded timer of kind with the framework, to go off
// at at.
func (a *Actor) schedule(kind timerKind, at time.Time) {
	rec := &a.timers[kind]
	after := max(at.Sub(a.clock()), 0)
	cancel, err := a.SendAfter(a.PID(), timerFired{Kind: kind, Generation: rec.generation}, after)
	if err != nil {
		a.Log().Error("leader: cannot arm a timer (%s); the election stalls until the next message", err)
		return
	}
	rec.cancel = cancel
}

// syncTimers is the end of a step: each parkable timer goes to the hub if
// the state now allows it and it is not due soon, and to the framework
// otherwise. A timer the hub has been postponing (its leader's rounds keep
// coming) may be long past the time it was armed for: what counts is when
// it is due by what the hub saw.
func (a *Actor) syncTimers() {
	now := a.clock()
	horizon := parkHorizon(livenessInterval(a.state.cfg))
	for _, kind := range parkKinds {
		rec := &a.timers[kind]
		if rec.armed == false {
			continue
		}
		if a.parkable(kind) {
			if rec.parked == false && rec.at.Sub(now) < horizon {
				if rec.cancel == nil {
					a.schedule(kind, rec.at)
				}
				continue
			}
			at, parked := a.slot.park(kind, a.parkTerms(kind, rec), now, horizon)
			if parked {
				if rec.cancel != nil {
					rec.cancel()
					rec.cancel = nil
				}
				rec.parked = true
				continue
			}
			rec.parked = false
			if rec.cancel == nil {
				a.schedule(kind, a.notBeforeDeadline(kind, at))
			}
			continue
		}
		at := rec.at
		if rec.parked {
			if a.slot != nil {
				a.slot.unpark(kind)
			}
			rec.parked = false
			at = a.notBeforeDeadline(kind, at)
		}
		if rec.cancel == nil {
			a.schedule(kind, at)
		}
	}
}

// notBeforeDeadline is when a parked election timer that goes back to the
// framework should fire: not before the state's own deadline. The hub
// moved the deadline on while the timer was parked (its leader's rounds
// kept coming), and the state read that in at the start of this step, but
// the timer still carries the time it was first parked with, long past.
// Armed for that time it would fire at once only to be armed again. After
// a node crash that was a wasted wake-up, in the middle of the failover,
// for every election that lost its leader (the timer leaves the hub) and
// for every follower whose hub no longer has its leader's rounds to judge
// by (the park is refused): about 330 of each survivor's 1,000 actors.
func (a *Actor) notBeforeDeadline(kind timerKind, at time.Time) time.Time {
	if kind == timerElection && a.state.electionDeadline.After(at) {
		return a.state.electionDeadline
	}
	return at
}

// parkTerms is what the hub needs to fire the timer of kind no later than
// the state would want it.
func (a *Actor) parkTerms(kind timerKind, rec *actorTimer) parkedTimer {
	p := parkedTimer{generation: rec.generation, at: rec.at}
	switch kind {
	case timerElection:
		p.slack = a.state.randomTimeout()
		p.owedWait = a.state.owedDownHold()
	case timerLease:
		p.lease, p.need = a.state.leaseDuration(), a.state.quorum()-1
	}
	return p
}

// fired clears the record of a timer that went off, from the framework or
// the hub; false if it was superseded. A framework timer cancelled too late
// to stop its message counts as the timer, like the hub's wake-up of the
// same generation.
func (a *Actor) fired(kind timerKind, generation uint64) bool {
	if kind < 0 || kind >= numTimers {
		return false
	}
	rec := &a.timers[kind]
	if rec.armed == false || rec.generation != generation {
		return false
	}
	if rec.cancel != nil {
		rec.cancel()
	}
	if rec.parked && a.slot != nil {
		a.slot.unpark(kind)
	}
	*rec = actorTimer{}
	return true
}

// unparkAll takes the parked timers back from a hub that is gone: the
// next syncTimers arms them with the framework.
func (a *Actor) unparkAll() {
	for _, kind := range parkKinds {
		a.timers[kind].parked = false
	}
}
