package leader

import (
	"unique"

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
// The table is the standard library's unique package: its entries go when
// nothing holds their handle any more, so it does not grow with every node
// name a long-lived process has ever met (a new pod name per deploy).
// Interning keeps no handle: a name interned again after its entry went
// gets new bytes, which costs a byte-by-byte comparison, never a wrong one.

// intern returns the table's copy of a.
func intern(a gen.Atom) gen.Atom {
	if a == "" {
		return a
	}
	return gen.Atom(unique.Make(string(a)).Value())
}

// internPID returns pid with its node name interned.
func internPID(pid gen.PID) gen.PID {
	pid.Node = intern(pid.Node)
	return pid
}
