package leader

import (
	"math/rand/v2"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzElectionMessages feeds arbitrary sequences of protocol messages from
// arbitrary senders, timers and downs into one election state. Nothing a
// peer can send may panic it, move its term backwards, make it vote twice
// in a term, or make it lead below the floor.
func FuzzElectionMessages(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{4, 1, 1, 5, 1, 1, 5, 2, 1, 9, 0, 0, 6, 1, 1})
	f.Add([]byte{2, 0, 1, 3, 1, 1, 3, 2, 1, 10, 0, 0, 11, 0, 0, 7, 3, 255})
	f.Fuzz(func(t *testing.T, data []byte) {
		options := Options{ClusterID: "c", Bootstrap: []gen.ProcessID{procID("b"), procID("c")}}
		cfg, _, _ := options.resolve()
		e := newElection(cfg, pid("a"), "leader", rand.New(rand.NewPCG(1, 2)), nil)
		now := t0
		e.start(now)
		votes := map[uint64]gen.PID{}
		peers := []string{"b", "c", "d", "e"}
		for i := 0; i+2 < len(data) && i < 3*300; i += 3 {
			kind, who, arg := data[i]%14, peers[int(data[i+1])%len(peers)], data[i+2]
			term := uint64(arg % 8)
			if arg == 255 {
				term = ^uint64(0)
			}
			cluster := "c"
			if arg == 254 {
				cluster = "x"
			}
			now = now.Add(time.Duration(arg) * time.Millisecond)
			from := pid(who)
			before, believed := e.term, e.farTermsBelieved
			switch kind {
			case 0:
				e.receive(now, from, msgHello{ClusterID: cluster, Term: term})
			case 1:
				e.receive(now, from, msgHelloReply{ClusterID: cluster, Term: term})
			case 2:
				e.receive(now, from, msgPreVote{ClusterID: cluster, Term: term, ViewSize: int(arg % 6), Pledge: arg%4 < 2})
			case 3:
				// a pledge for the next term, for another, or none
				pledged := []uint64{0, term + 1, term, ^uint64(0)}[arg/2%4]
				e.receive(now, from, msgPreVoteReply{ClusterID: cluster, Term: term, Granted: arg%2 == 0, Pledged: pledged})
			case 4:
				e.receive(now, from, msgVote{ClusterID: cluster, Term: term, ViewSize: int(arg % 6)})
			case 5:
				e.receive(now, from, msgVoteReply{ClusterID: cluster, Term: term, Granted: arg%3 != 0})
			case 6:
				leader := from
				if arg%5 == 0 {
					leader = pid("z")
				}
				e.receive(now, from, msgHeartbeat{ClusterID: cluster, Term: term, Leader: leader})
			case 7:
				e.receive(now, from, msgHeartbeatAck{ClusterID: cluster, Term: term})
			case 8:
				e.receive(now, from, msgTimeoutNow{ClusterID: cluster, Term: term})
			case 9:
				k := timerKind(arg % uint8(numTimers+1))
				generation := uint64(0)
				if k < numTimers {
					generation = e.timers[k].generation
				}
				e.timer(now, k, generation)
			case 10:
				reason := gen.ErrNoConnection
				if arg%2 == 0 {
					reason = gen.TerminateReasonShutdown
				}
				e.down(now, from, reason)
			case 11:
				e.join(procID(who))
			case 12:
				e.now = now
				e.leave(from.Node)
			case 13:
				e.handover(now, "fuzz", nil)
			}
			if e.confirming {
				e.confirmResult(now, arg%4 != 0, nil)
			}
			if e.role == roleLeader && e.unpublished {
				e.published(now)
			}
			vote := func(term uint64, to gen.PID) {
				if v, ok := votes[term]; ok && v != to {
					t.Fatalf("voted for %s and %s in term %d", v, to, term)
				}
				votes[term] = to
			}
			for _, sent := range e.takeEffects().sends {
				if reply, ok := sent.message.(msgPreVoteReply); ok && reply.Pledged != 0 {
					vote(reply.Pledged, sent.to.(gen.PID)) // a pledge is a vote
				}
			}

			if e.term < before {
				t.Fatalf("term went back from %d to %d", before, e.term)
			}
			if e.term-before > maxTermAhead+1 && e.farTermsBelieved == believed {
				// beyond the bound only when a quorum corroborated it
				t.Fatalf("one step (kind %d from %s, arg %d) moved the term from %d to %d, beyond the bound %d", kind, who, arg, before, e.term, uint64(maxTermAhead))
			}
			if e.votedFor != (gen.PID{}) {
				vote(e.term, e.votedFor)
			}
			if e.role == roleLeader && e.belowFloor() {
				t.Fatalf("leads with view %d below the floor", e.viewSize())
			}
		}
		e.inspect(now)
	})
}

// FuzzHubWire feeds arbitrary bytes to a hub as another node's beats and
// acknowledgements. Nothing may panic it, a follower's round is answered
// only when its record parsed, and a message whose records do not all
// parse is counted as malformed.
func FuzzHubWire(f *testing.F) {
	f.Add(packBeats(named(1, "c", 4, pid("b").ID, 7), keyed(1, 4, pid("b").ID, 8)).Beats)
	f.Add(packAcks([]wireAck{{key: 2, term: 2, round: 1, followerID: pid("b").ID}}, nil, nil).Acks)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x04, 'c'})
	f.Fuzz(func(t *testing.T, data []byte) {
		follower := &slot{cluster: "c", actor: pid("a"), follow: pid("b"), followTerm: 4}
		leader := &slot{cluster: "c", actor: pid("a"), lead: true, leadTerm: 2, round: 3,
			followers: map[gen.Atom]gen.PID{node("b"): pid("b")}}
		h, _ := newTestHub(follower, leader)
		peerHub := gen.PID{Node: node("b"), ID: 3, Creation: 1}
		h.beats(peerHub, msgBeats{Beats: data})
		h.acks(peerHub, msgBeatAcks{Acks: data, Unserved: data, Unknown: data})
		_, beatsMalformed := unpackBeats(msgBeats{Beats: data})
		_, acksMalformed := unpackAcks(msgBeatAcks{Acks: data})
		_, keysMalformed := unpackKeys(data)
		want := uint64(0)
		if beatsMalformed {
			want++
		}
		if acksMalformed || keysMalformed {
			want++ // one msgBeatAcks
		}
		if h.malformed != want {
			t.Fatalf("malformed counted %d times, want %d", h.malformed, want)
		}
		if ack := leader.link(node("b")).ack; ack > leader.round {
			t.Fatalf("an ack for round %d, never opened (newest %d)", ack, leader.round)
		}
	})
}

// Bad input: an answer whose list of named elections is malformed, or
// names more than maxBusyKeys, counts for no leader, since whom it names
// cannot be known; the next well-formed answer counts again. Breaks: a
// garbled answer counts for a follower that was in a step when it was
// given.
func TestAnAnswerWhoseNamesCannotBeReadCountsForNobody(t *testing.T) {
	for _, c := range []struct {
		name string
		busy []byte
	}{
		{"malformed", []byte{0xff}},
		{"too many", func() []byte {
			var buf []byte
			for k := range uint64(maxBusyKeys + 1) {
				buf = appendKeys(buf, k+1000)
			}
			return buf
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPingPair(t)
			p.tick()
			p.now = p.now.Add(5 * time.Millisecond)
			p.tick()
			good := p.now
			require.Equal(t, good, p.counted())

			// the next ping's answer arrives garbled
			p.now = p.now.Add(5 * time.Millisecond)
			p.a.tick()
			for _, m := range p.pa.sent {
				if beats, ok := m.(msgBeats); ok {
					p.b.beats(p.pa.self, beats)
				}
			}
			p.pa.sent, p.pa.sentTo = nil, nil
			for _, m := range p.pb.sent {
				if acks, ok := m.(msgBeatAcks); ok {
					acks.Busy = c.busy
					p.a.acks(p.pb.self, acks)
				}
			}
			p.pb.sent, p.pb.sentTo = nil, nil
			assert.Equal(t, good, p.counted(), "the garbled answer counts for nobody")

			p.now = p.now.Add(5 * time.Millisecond)
			p.tick()
			assert.Equal(t, p.now, p.counted(), "a well-formed one counts again")
		})
	}
}
