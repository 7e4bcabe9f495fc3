package handshake

import (
	"fmt"
	"net"

	"ergo.services/ergo/gen"
)

// Start runs the dialing side: hello (salt + digest), the acceptor's hello,
// introduce, then the acceptor's accept and introduce, and a final accept.
// The caller sets deadlines on conn. The result's Peer is whoever answered;
// the caller checks it is the node it meant to reach.
func (h *handshake) Start(node gen.NodeHandshake, nc net.Conn, options gen.HandshakeOptions) (gen.HandshakeResult, error) {
	result := gen.HandshakeResult{HandshakeVersion: h.Version()}
	c := newConn(nc)

	hello := msgHello{salt: randomString(64)}
	hello.digest = digest(hello.salt, options.Cookie)
	if err := c.writeHello(hello); err != nil {
		return result, err
	}

	r, err := c.expect(kindHello, "Hello")
	if err != nil {
		return result, err
	}
	hello2, err := readHello(r)
	if err != nil {
		return result, fmt.Errorf("malformed handshake Hello message: %w", err)
	}
	if hello2.digest != digest(hello2.salt, hello.digest, options.Cookie) {
		return result, fmt.Errorf("incorrect digest (cookie mismatch)")
	}

	force := false
	if f, ok := node.(forcer); ok {
		force = f.StandinForce()
	}
	intro := msgIntroduce{
		node:     node.Name(),
		version:  node.Version(),
		flags:    options.Flags,
		creation: node.Creation(),
		maxMsg:   options.MaxMessageSize,
		force:    force,
		digest:   digest(hello2.salt, options.Cookie),
	}
	if err := c.writeIntroduce(intro); err != nil {
		return result, err
	}

	if r, err = c.expect(kindAccept, "Accept"); err != nil {
		return result, err
	}
	accept, err := readAccept(r)
	if err != nil {
		return result, fmt.Errorf("malformed handshake Accept message: %w", err)
	}
	switch accept.status {
	case statusOK:
	case statusKeepOwn:
		return result, errKeepOwn
	default:
		return result, fmt.Errorf("rejected: %s", accept.reason)
	}

	if r, err = c.expect(kindIntroduce, "Introduce"); err != nil {
		return result, err
	}
	intro2, err := readIntroduce(r)
	if err != nil {
		return result, fmt.Errorf("malformed handshake Introduce message: %w", err)
	}
	if intro2.node == node.Name() {
		return result, fmt.Errorf("malformed handshake Introduce message (same name)")
	}

	if err := c.writeAccept(msgAccept{}); err != nil {
		return result, err
	}

	result.ConnectionID = accept.id
	result.Peer = intro2.node
	result.PeerVersion = intro2.version
	result.PeerCreation = intro2.creation
	result.PeerFlags = intro2.flags
	result.PeerMaxMessageSize = intro2.maxMsg
	result.NodeFlags = options.Flags
	result.NodeMaxMessageSize = options.MaxMessageSize
	result.Tail = c.tail()
	result.Custom = ConnectionOptions{PoolSize: accept.poolSize, PoolDSN: accept.poolDSN}
	result.AtomMapping = h.atomMapping()
	return result, nil
}
