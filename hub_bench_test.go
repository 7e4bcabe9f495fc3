package leader

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/require"
)

// hubBench is three hubs carrying elections elections between them, each
// led on one node and followed on the other two, with the actors parked as
// they are when the elections are idle: the per-interval work of section 6b
// of docs/performance.md without the runtime around it.
type hubBench struct {
	nodes []gen.Atom
	hubs  map[gen.Atom]*hub
	procs map[gen.Atom]*scriptedProcess
	now   time.Time
}

func newHubBench(elections int) *hubBench {
	return newTimedHubBench(elections, 50*time.Millisecond, 0)
}

// newTimedHubBench is newHubBench with the hubs ticking every interval and
// the leaders' records going every beat (0: at every tick).
func newTimedHubBench(elections int, interval, beat time.Duration) *hubBench {
	b := &hubBench{now: t0, hubs: make(map[gen.Atom]*hub), procs: make(map[gen.Atom]*scriptedProcess)}
	for _, name := range []string{"a", "b", "c"} {
		n := node(name)
		b.nodes = append(b.nodes, n)
		p := &scriptedProcess{self: gen.PID{Node: n, ID: 3, Creation: 1}}
		h := &hub{process: benchProcess{p}, clock: func() time.Time { return b.now }}
		h.init()
		b.hubs[n], b.procs[n] = h, p
	}
	for i := range elections {
		cluster := fmt.Sprintf("c%d", i)
		members := make(map[gen.Atom]gen.PID)
		for _, n := range b.nodes {
			members[n] = gen.PID{Node: n, ID: uint64(1000 + i), Creation: 1}
		}
		lead := b.nodes[i%len(b.nodes)]
		for _, n := range b.nodes {
			s := &slot{cluster: cluster, actor: members[n], interval: interval, beatEvery: beat, board: b.hubs[n].board}
			if n == lead {
				followers := make(map[gen.Atom]gen.PID)
				for _, f := range b.nodes {
					if f != lead {
						followers[f] = members[f]
					}
				}
				s.share(grant{lead: true, leadTerm: 1, followers: followers})
				s.park(timerLease, parkedTimer{generation: 1, at: b.now.Add(140 * time.Millisecond), lease: 140 * time.Millisecond, need: 1}, b.now, parkHorizon(interval))
				s.fresh = 3 * interval
			} else {
				s.share(grant{follow: members[lead], followTerm: 1})
				s.park(timerElection, parkedTimer{generation: 1, at: b.now.Add(200 * time.Millisecond), slack: 200 * time.Millisecond}, b.now, parkHorizon(interval))
			}
			b.hubs[n].add(s)
		}
	}
	return b
}

// benchProcess is a hub's process in the benchmarks: what it sends later
// (its next tick, a parked timer's wake) is kept with its addressee, as
// what it sends now, so that deliver can tell them apart.
type benchProcess struct{ *scriptedProcess }

func (p benchProcess) SendAfter(to any, message any, after time.Duration) (gen.CancelFunc, error) {
	return nil, p.Send(to, message)
}

// interval runs one tick on every hub and delivers what they send to each
// other: the rounds, then the acknowledgements.
func (b *hubBench) interval() {
	b.now = b.now.Add(50 * time.Millisecond)
	for _, n := range b.nodes {
		b.hubs[n].openRounds(b.hubs[n].order, true, true, true)
	}
	b.deliver()
	b.deliver()
}

// deliver hands every message the hubs sent to its addressee.
func (b *hubBench) deliver() {
	for _, from := range b.nodes {
		p := b.procs[from]
		sent, to := p.sent, p.sentTo
		p.sent, p.sentTo = p.sent[:0:0], p.sentTo[:0:0]
		for i, m := range sent {
			var target gen.Atom
			switch dest := to[i].(type) {
			case gen.ProcessID:
				target = dest.Node
			case gen.PID:
				target = dest.Node
			}
			h := b.hubs[target]
			if h == nil {
				continue
			}
			switch message := m.(type) {
			case msgBeats:
				h.beats(p.self, message)
			case msgBeatAcks:
				h.acks(p.self, message)
			}
		}
	}
}

// BenchmarkHubInterval is one heartbeat interval of 1,000 idle elections
// on three nodes, all hubs together. In a running node the hubs' tables
// are cold at every tick (fifty milliseconds of other work went through
// the caches since), which is what the cold case imitates: it walks a
// buffer larger than the caches between intervals, outside the timing.
func BenchmarkHubInterval(b *testing.B) {
	for _, cold := range []bool{false, true} {
		b.Run(map[bool]string{false: "warm", true: "cold"}[cold], func(b *testing.B) {
			bench := newHubBench(1000)
			for range 5 {
				bench.interval() // the keys get known
			}
			var evict []byte
			if cold {
				evict = make([]byte, 64<<20)
			}
			b.ResetTimer()
			for range b.N {
				if cold {
					b.StopTimer()
					for i := 0; i < len(evict); i += 64 {
						evict[i]++
					}
					b.StartTimer()
				}
				bench.interval()
			}
		})
	}
}

// BenchmarkHubIdleTick is one liveness interval of 10,000 idle elections
// on three nodes at the default timings (the hubs tick every 5 ms, the
// records go at the refresh), all hubs together: the ticks, their pings
// and answers, as in a node process of section 6c between refreshes. The
// tables are cold, as in BenchmarkHubInterval. It reports the slots each
// tick of a hub visited (took the lock of) and passed by on the pings.
func BenchmarkHubIdleTick(b *testing.B) {
	bench := newTimedHubBench(10000, 5*time.Millisecond, 50*time.Millisecond)
	tick := func() {
		bench.now = bench.now.Add(5 * time.Millisecond)
		for _, n := range bench.nodes {
			bench.hubs[n].tick()
		}
		bench.deliver()
		bench.deliver()
	}
	for range 400 {
		tick() // past the first refresh: the pings carry the followers
	}
	evict := make([]byte, 64<<20)
	var visits, passed uint64
	for _, h := range bench.hubs {
		visits, passed = visits-h.visits, passed-h.passed
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		for i := 0; i < len(evict); i += 64 {
			evict[i]++
		}
		b.StartTimer()
		tick()
	}
	for _, h := range bench.hubs {
		visits, passed = visits+h.visits, passed+h.passed
	}
	ticks := float64(b.N * len(bench.hubs))
	b.ReportMetric(float64(visits)/ticks, "visits/tick")
	b.ReportMetric(float64(passed)/ticks, "passes/tick")
}

// The benchmark's hubs do carry every round: the elections' leases stay
// renewed from the hubs' records alone.
func TestHubBenchCarriesEveryRound(t *testing.T) {
	bench := newHubBench(30)
	for range 5 {
		bench.interval()
	}
	for _, n := range bench.nodes {
		for _, s := range bench.hubs[n].order {
			if s.lead == false {
				continue
			}
			if got := s.hubLease(140*time.Millisecond, 1); got.Before(bench.now) {
				t.Fatalf("%s on %s: lease %v is over at %v", s.cluster, n, got, bench.now)
			}
		}
	}
}

// BenchmarkHubAnswerNamingLeadersThatStoodDown is the leaders' side of an
// answer that names the same 700 elections as the answer before, whose
// leader here stood down (their followers there left for another leader,
// as after a cold start at 10,000 elections): an idle node reads two
// hundred such answers a second from each other node.
func BenchmarkHubAnswerNamingLeadersThatStoodDown(b *testing.B) {
	bench := newHubBench(10000)
	for range 3 {
		bench.interval()
	}
	h, peer := bench.hubs[bench.nodes[0]], bench.nodes[1]
	var named []uint64
	for _, s := range h.order {
		if s.leading == false && len(named) < 700 {
			named = append(named, s.key)
		}
	}
	epoch := h.board.epochOf(peer)
	for range 2 {
		h.board.answered(peer, epoch, pingStamp{at: bench.now}, slices.Clone(named))
	}
	require.Len(b, h.board.namedAgain(peer, named), len(named), "named in the last two answers")
	b.ResetTimer()
	for range b.N {
		h.resendNamed(peer, named, bench.now)
	}
}

// BenchmarkHubAnswerNamingElectionsThatLeft is one answer, both sides, from
// a node whose board names 6,000 elections that left a leader of the
// pinging node (as after a cold start at 10,000 elections; pings.go,
// pingPeer.left) and named the same ones in the answer before: the
// answering hub builds and sends it, the leaders' hub reads it. An idle
// node gives and reads about two hundred such answers a second per peer.
func BenchmarkHubAnswerNamingElectionsThatLeft(b *testing.B) {
	bench := newHubBench(10000)
	for range 3 {
		bench.interval()
	}
	leaders, answering := bench.nodes[0], bench.nodes[1]
	lh, ah := bench.hubs[leaders], bench.hubs[answering]
	from := lh.process.PID()
	var named int
	for _, s := range lh.order {
		if s.leading || named == 6000 {
			continue
		}
		key := stepKey{hub: from, key: s.key}
		ah.board.unbind(leaders, key)
		ah.board.rebind(leaders, key, uint64(named), true)
		named++
	}
	answer := func() {
		ah.sendAnswer(leaders, &pendingAnswer{to: from, at: bench.now, ping: lh.pings.next(bench.now)})
		bench.deliver()
	}
	answer()
	answer()
	b.ResetTimer()
	for range b.N {
		answer()
	}
}

// BenchmarkWatcherLateDowns hands a crash's late downs over (6,000
// followers of living leaders, due alike) lateBatch at a time, as the
// shared watcher's reminders do: the cost of the whole list's delivery.
func BenchmarkWatcherLateDowns(b *testing.B) {
	w, p, _, _ := newSharedWatcher()
	now := t0.Add(time.Second)
	const downs = 6000
	list := make([]lateDown, downs)
	for b.Loop() {
		for i := range list {
			list[i] = lateDown{to: gen.PID{Node: node("a"), ID: uint64(1000 + i), Creation: 1}, due: now}
		}
		rest := list[:downs]
		for len(rest) > 0 {
			rest, _ = w.deliverLate(rest, now, lateBatch)
		}
		p.sent, p.sentTo = p.sent[:0], p.sentTo[:0]
	}
}
