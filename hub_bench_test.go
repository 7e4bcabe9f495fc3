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
	b := &hubBench{now: t0, hubs: make(map[gen.Atom]*hub), procs: make(map[gen.Atom]*scriptedProcess)}
	for _, name := range []string{"a", "b", "c"} {
		n := node(name)
		b.nodes = append(b.nodes, n)
		p := &scriptedProcess{self: gen.PID{Node: n, ID: 3, Creation: 1}}
		h := &hub{process: p, clock: func() time.Time { return b.now }}
		h.init()
		b.hubs[n], b.procs[n] = h, p
	}
	interval := 50 * time.Millisecond
	for i := range elections {
		cluster := fmt.Sprintf("c%d", i)
		members := make(map[gen.Atom]gen.PID)
		for _, n := range b.nodes {
			members[n] = gen.PID{Node: n, ID: uint64(1000 + i), Creation: 1}
		}
		lead := b.nodes[i%len(b.nodes)]
		for _, n := range b.nodes {
			s := &slot{cluster: cluster, actor: members[n], interval: interval}
			if n == lead {
				followers := make(map[gen.Atom]gen.PID)
				for _, f := range b.nodes {
					if f != lead {
						followers[f] = members[f]
					}
				}
				s.share(grant{lead: true, leadTerm: 1, followers: followers})
				s.park(timerLease, parkedTimer{generation: 1, at: b.now.Add(140 * time.Millisecond), lease: 140 * time.Millisecond, need: 1}, b.now, parkHorizon(interval))
			} else {
				s.share(grant{follow: members[lead], followTerm: 1})
				s.park(timerElection, parkedTimer{generation: 1, at: b.now.Add(200 * time.Millisecond), slack: 200 * time.Millisecond}, b.now, parkHorizon(interval))
			}
			b.hubs[n].add(s)
		}
	}
	return b
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
