package main

import (
	"runtime"
	"time"

	"ergo.services/ergo/gen"
)

// snapshot is every counter the cost figures are differences of.
type snapshot struct {
	at         time.Time
	wire       uint64 // bytes through the proxies, both directions
	msgs       uint64 // messages sent, by the framework's per-connection counters
	fwBytes    uint64 // bytes sent, by the same counters
	leaderMsgs uint64 // messages the leader's node sent: its heartbeats
	cpu        time.Duration
	cpuOK      bool
	mallocs    uint64
	allocBytes uint64
	gcs        uint32
}

// snap reads the counters. The framework's counters are read per node and
// per connection (gen.RemoteNodeInfo's traffic counters); leaderNode may be
// empty.
func (h *harness) snap(leaderNode gen.Atom) snapshot {
	s := snapshot{}
	for _, name := range h.names {
		node := h.cl.Node(name)
		if node == nil {
			continue
		}
		for _, peer := range node.Network().Nodes() {
			remote, err := node.Network().Node(peer)
			if err != nil {
				continue
			}
			info := remote.Info()
			s.msgs += info.MessagesOut
			s.fwBytes += info.BytesOut
			if name == leaderNode {
				s.leaderMsgs += info.MessagesOut
			}
		}
	}
	s.wire = h.meter.Bytes()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	s.mallocs, s.allocBytes, s.gcs = m.Mallocs, m.TotalAlloc, m.NumGC
	s.cpu, s.cpuOK = cpuTime()
	s.at = time.Now()
	return s
}

// cost is what a cluster spent between two snapshots.
type cost struct {
	nodes      int
	elapsed    time.Duration
	rounds     float64 // heartbeat rounds: the leader's messages / (nodes-1)
	msgs       float64
	wire       float64
	fwBytes    float64
	cpu        time.Duration
	cpuOK      bool
	mallocs    float64
	allocBytes float64
	gcs        uint32
}

func costBetween(nodes int, a, b snapshot) cost {
	c := cost{
		nodes:      nodes,
		elapsed:    b.at.Sub(a.at),
		msgs:       float64(b.msgs - a.msgs),
		wire:       float64(b.wire - a.wire),
		fwBytes:    float64(b.fwBytes - a.fwBytes),
		cpu:        b.cpu - a.cpu,
		cpuOK:      a.cpuOK && b.cpuOK,
		mallocs:    float64(b.mallocs - a.mallocs),
		allocBytes: float64(b.allocBytes - a.allocBytes),
		gcs:        b.gcs - a.gcs,
	}
	if nodes > 1 {
		c.rounds = float64(b.leaderMsgs-a.leaderMsgs) / float64(nodes-1)
	}
	return c
}

func (c cost) perSecond(v float64) float64 { return v / c.elapsed.Seconds() }

func (c cost) perRound(v float64) float64 {
	if c.rounds == 0 {
		return 0
	}
	return v / c.rounds
}

// cpuShare is the CPU used as a share of one core.
func (c cost) cpuShare() float64 { return float64(c.cpu) / float64(c.elapsed) }

func (c cost) cpuPerRound() time.Duration {
	if c.rounds == 0 {
		return 0
	}
	return time.Duration(float64(c.cpu) / c.rounds)
}
