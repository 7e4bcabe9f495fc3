package lab

import (
	"net"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/net/handshake"
)

// proxied is the handshake lab nodes dial their peers with: the framework's
// own, except for one thing. A connection is a pool of TCP links; the
// acceptor advertises its own address for the extra links and for re-dials
// of lost ones, and a dialer that used it would go around the proxy - a cut
// would then break only the first link, and the rest of the traffic would
// flow on unseen. proxied makes every link go to the address the first one
// dialled: the proxy.
type proxied struct {
	gen.NetworkHandshake
}

// viaProxy is stateless; every lab node registers the same one.
var viaProxy = proxied{handshake.Create(handshake.Options{})}

// Version differs from the built-in handshake's, so that a route can choose
// this one (the wire format is the same).
func (h proxied) Version() gen.Version {
	v := h.NetworkHandshake.Version()
	v.Name = "lab proxied " + v.Name
	return v
}

func (h proxied) Start(node gen.NodeHandshake, nc net.Conn, options gen.HandshakeOptions) (gen.HandshakeResult, error) {
	result, err := h.NetworkHandshake.Start(node, nc, options)
	if pool, ok := result.Custom.(handshake.ConnectionOptions); ok && err == nil {
		pool.PoolDSN = []string{nc.RemoteAddr().String()}
		result.Custom = pool
	}
	return result, err
}
