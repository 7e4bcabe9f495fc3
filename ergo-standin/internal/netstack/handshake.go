package netstack

import (
	"ergo.services/ergo/gen"
	"ergo.services/ergo/net/handshake"
)

// The handshake itself lives in ergo.services/ergo/net/handshake (the
// framework's package name and API); the stack calls it through
// gen.NetworkHandshake, as the framework's network does.

var (
	// HandshakeVersion is the version of the built-in handshake, reported in
	// RemoteNodeInfo and NetworkInfo.
	HandshakeVersion = handshake.Create(handshake.Options{}).Version()
	// ProtoVersion is reported in RemoteNodeInfo and NetworkInfo.
	ProtoVersion = gen.Version{Name: "ENP/EDF (stand-in)", Release: "1.0", License: gen.LicenseMIT}
	// nodeVersion is what a stack announces as the node version: Options
	// does not carry the node's own Version.
	nodeVersion = gen.Version{Name: "Ergo Framework", Release: "3.3.0", License: gen.LicenseMIT}
)

// intro is what a peer told about itself in the handshake.
type intro struct {
	name     gen.Atom
	creation int64
	start    int64 // unix seconds: the framework takes the creation for it
	maxMsg   int   // 0 = DefaultMaxMessageSize
	version  gen.Version
	flags    gen.NetworkFlags
}

func introFrom(r gen.HandshakeResult) intro {
	return intro{
		name:     r.Peer,
		creation: r.PeerCreation,
		start:    r.PeerCreation,
		maxMsg:   r.PeerMaxMessageSize,
		version:  r.PeerVersion,
		flags:    r.PeerFlags,
	}
}

// hsNode is the gen.NodeHandshake a stack hands to a handshake. Its
// Standin* methods let the stand-in's handshake settle simultaneous
// connects before it accepts (see admit).
type hsNode struct {
	s     *Stack
	force bool // this dial lost a simultaneous connect and retries
}

func (n hsNode) Name() gen.Atom       { return n.s.name }
func (n hsNode) Creation() int64      { return n.s.opts.Creation }
func (n hsNode) Version() gen.Version { return nodeVersion }
func (n hsNode) StandinForce() bool   { return n.force }

// StandinAdmit is asked by the accepting side once a peer dialing with a
// full handshake has proved the cookie.
func (n hsNode) StandinAdmit(peer gen.Atom, force, settle bool) bool {
	return n.s.admit(peer, force || !settle)
}

// admit settles a simultaneous connect: the connection dialed by the
// lexically smaller node name wins on both sides. A node refuses the
// peer's dial while it has a dial of its own in progress, or a connection
// it dialed, and its name is the smaller one; the refused peer waits for
// that connection. If it does not arrive (the refusing node's connection
// is stale: its peer dropped it), the peer dials again with force, and
// force is admitted, and so is every dial when either end does not
// advertise EnableSimultaneousConnect (v3.3.0 detects collisions only when
// both do). With the v320 switch every dial is admitted here.
func (s *Stack) admit(peer gen.Atom, force bool) bool {
	if s.bugSimultaneous || force {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.name > peer || s.stopped {
		return true
	}
	old := s.conns[peer]
	if old != nil && old.dialer {
		s.log.debug("simultaneous connect with %s: keeping the connection this node dialed", peer)
		return false
	}
	if _, dialing := s.dials[peer]; dialing && old == nil {
		s.log.debug("simultaneous connect with %s: this node's dial wins", peer)
		return false
	}
	return true
}
