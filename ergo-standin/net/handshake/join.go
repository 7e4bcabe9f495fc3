package handshake

import (
	"fmt"
	"net"

	"ergo.services/ergo/gen"
)

// Join adds conn as a link to the connection id: it proves the cookie over
// a fresh salt and checks the acceptor's answer. It returns the bytes read
// past the answer.
func (h *handshake) Join(node gen.NodeHandshake, nc net.Conn, id string, options gen.HandshakeOptions) ([]byte, error) {
	c := newConn(nc)
	join := msgJoin{node: node.Name(), id: id, salt: randomString(64)}
	join.digest = digest(join.id, join.salt, options.Cookie)
	if err := c.writeJoin(join); err != nil {
		nc.Close()
		return nil, err
	}
	r, err := c.expect(kindAccept, "Accept")
	if err != nil {
		nc.Close()
		return nil, err
	}
	accept, err := readAccept(r)
	if err != nil {
		return nil, fmt.Errorf("malformed handshake Accept message: %w", err)
	}
	if accept.digest != digest(join.digest, options.Cookie) {
		return nil, fmt.Errorf("incorrect digest (join)")
	}
	return c.tail(), nil
}
