package leader

import (
	"sync"

	"ergo.services/ergo/gen"
)

// Interned node names. The liveness hub compares node names for every
// round it receives and every acknowledgement (is this the leader my
// follower follows, is this the follower my leader sent to), a thousand
// times per heartbeat interval and peer. Two equal strings with separate
// bytes are compared byte by byte, and with a thousand elections those
// bytes are a thousand separate allocations, each a cache miss. The names
// the hub compares are interned first, so equal names share their bytes
// and compare by pointer.
//
// The table only grows with the names of nodes this node has heard from
// or joined elections with: a peer cannot choose the name it arrives
// under beyond its own.
var atoms sync.Map // gen.Atom -> the same gen.Atom, the first one stored

// intern returns the table's copy of a.
func intern(a gen.Atom) gen.Atom {
	if a == "" {
		return a
	}
	if v, ok := atoms.Load(a); ok {
		return v.(gen.Atom)
	}
	v, _ := atoms.LoadOrStore(a, a)
	return v.(gen.Atom)
}

// internPID returns pid with its node name interned.
func internPID(pid gen.PID) gen.PID {
	pid.Node = intern(pid.Node)
	return pid
}
