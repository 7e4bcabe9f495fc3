package handshake

import (
	"fmt"
	"net"

	"ergo.services/ergo/gen"
)

// Accept runs the accepting side. A Join is answered at once (its result
// has the peer, the ConnectionID and PeerCreation 0); a full handshake ends
// with the peer's final accept.
func (h *handshake) Accept(node gen.NodeHandshake, nc net.Conn, options gen.HandshakeOptions) (gen.HandshakeResult, error) {
	result := gen.HandshakeResult{HandshakeVersion: h.Version()}
	c := newConn(nc)

	kind, r, err := c.read()
	if err != nil {
		return result, err
	}
	var salt string
	switch kind {
	case kindHello:
		m, err := readHello(r)
		if err != nil {
			return result, fmt.Errorf("malformed handshake Hello message: %w", err)
		}
		if m.digest != digest(m.salt, options.Cookie) {
			return result, fmt.Errorf("incorrect digest (cookie mismatch, accept stage 'hello')")
		}
		salt = randomString(64)
		if err := c.writeHello(msgHello{salt: salt, digest: digest(salt, m.digest, options.Cookie)}); err != nil {
			return result, err
		}

	case kindJoin:
		m, err := readJoin(r)
		if err != nil {
			return result, fmt.Errorf("malformed handshake Join message: %w", err)
		}
		result.Peer = m.node
		if m.digest != digest(m.id, m.salt, options.Cookie) {
			return result, fmt.Errorf("incorrect join digest (cookie mismatch)")
		}
		result.ConnectionID = m.id
		result.Custom = ConnectionOptions{}
		if err := c.writeAccept(msgAccept{digest: digest(m.digest, options.Cookie)}); err != nil {
			return result, err
		}
		result.AtomMapping = h.atomMapping()
		result.Tail = c.tail()
		return result, nil

	default:
		return result, fmt.Errorf("malformed handshake Hello/Join message")
	}

	if r, err = c.expect(kindIntroduce, "Introduce"); err != nil {
		return result, err
	}
	intro, err := readIntroduce(r)
	if err != nil {
		return result, fmt.Errorf("malformed handshake Introduce message: %w", err)
	}
	result.Peer = intro.node
	if intro.node == node.Name() || intro.node == "" {
		return result, fmt.Errorf("malformed handshake Introduce message (same name)")
	}
	if intro.digest != digest(salt, options.Cookie) {
		return result, fmt.Errorf("incorrect digest (cookie mismatch, accept stage 'introduce')")
	}

	if a, ok := node.(admitter); ok && !a.StandinAdmit(intro.node, intro.force,
		options.Flags.EnableSimultaneousConnect && intro.flags.EnableSimultaneousConnect) {
		c.writeAccept(msgAccept{status: statusKeepOwn})
		return result, errKeepOwn
	}

	accept := msgAccept{
		id:       randomString(32),
		poolSize: h.poolSize,
		poolDSN:  []string{nc.LocalAddr().String()},
	}
	if err := c.writeAccept(accept); err != nil {
		return result, err
	}
	intro2 := msgIntroduce{
		node:     node.Name(),
		version:  node.Version(),
		flags:    options.Flags,
		creation: node.Creation(),
		maxMsg:   options.MaxMessageSize,
	}
	if err := c.writeIntroduce(intro2); err != nil {
		return result, err
	}

	if _, err = c.expect(kindAccept, "Accept"); err != nil {
		return result, err
	}

	result.ConnectionID = accept.id
	result.PeerVersion = intro.version
	result.PeerCreation = intro.creation
	result.PeerFlags = intro.flags
	result.PeerMaxMessageSize = intro.maxMsg
	result.NodeFlags = options.Flags
	result.NodeMaxMessageSize = options.MaxMessageSize
	result.Tail = c.tail()
	result.Custom = ConnectionOptions{PoolSize: h.poolSize}
	result.AtomMapping = h.atomMapping()
	return result, nil
}
