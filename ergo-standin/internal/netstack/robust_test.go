package netstack

import (
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
	"ergo.services/ergo/net/handshake"
)

// rawDial opens a plain TCP connection to n's acceptor.
func rawDial(t *testing.T, n *node) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(int(n.Port())))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByPeer reports whether the peer closed c within a few seconds.
func closedByPeer(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, c)
	return err == nil // EOF: closed by the peer; a timeout is an error
}

// openAfter reports whether c is still open after d (nothing to read).
func openAfter(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func header(n uint32) []byte {
	return binary.BigEndian.AppendUint32(nil, n)
}

// checkServing proves the node still serves a well-behaved peer.
func checkServing(t *testing.T, n *node) {
	t.Helper()
	good := startNode(t, "good")
	good.routeTo(t, n)
	before := n.rec.count()
	if err := good.SendFrame(n.name, Frame{Kind: FrameSend, Message: "still here"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a good frame", func() bool { return n.rec.count() == before+1 })
}

func TestGarbageBeforeHandshake(t *testing.T) {
	b := startNode(t, "b")
	cases := map[string][]byte{
		"garbage":    []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
		"truncated":  append(header(100), []byte("S\x02 and then nothing")...),
		"oversize":   header(1 << 30),
		"empty":      header(0),
		"bad magic":  append(header(8), []byte("XXXXXXXX")...),
		"bad hello":  append(header(5), []byte("S\x02\x01\xff\xff")...),
		"bad kind":   append(header(3), []byte("S\x02\x09")...),
		"zero bytes": nil,
	}
	for name, data := range cases {
		c := rawDial(t, b)
		c.Write(data)
		if name == "truncated" || name == "zero bytes" {
			c.(*net.TCPConn).CloseWrite() // the acceptor sees EOF mid-frame
		}
		if !closedByPeer(c) {
			t.Errorf("%s: connection not closed by the acceptor", name)
		}
	}
	checkServing(t, b)
	if !b.log.has("handshake") {
		t.Error("no log line about the failed handshakes")
	}
	if b.rec.count() != 1 || len(b.Nodes()) != 1 {
		t.Error("garbage got through")
	}
}

func TestHandshakeTimeout(t *testing.T) {
	b := startNode(t, "b", func(o *Options) { o.Network.HandshakeTimeout = 200 * time.Millisecond })
	c := rawDial(t, b) // says nothing
	if !closedByPeer(c) {
		t.Fatal("silent peer not dropped")
	}
	checkServing(t, b)
}

// rawNode is a gen.NodeHandshake for a hand-made peer.
type rawNode struct{ name gen.Atom }

func (r rawNode) Name() gen.Atom       { return r.name }
func (r rawNode) Creation() int64      { return 1 }
func (r rawNode) Version() gen.Version { return nodeVersion }

// rawPeer completes a handshake by hand and returns the socket (the first
// and only link of its connection), so the test can misbehave afterwards.
func rawPeer(t *testing.T, n *node) (net.Conn, gen.Atom) {
	t.Helper()
	c := rawDial(t, n)
	name := uniqueName("raw")
	res, err := handshake.Create(handshake.Options{}).Start(rawNode{name}, c, gen.HandshakeOptions{Cookie: "secret"})
	if err != nil || res.Peer != n.name {
		t.Fatalf("handshake: %v %s", err, res.Peer)
	}
	eventually(t, "the raw peer connected", func() bool { c, _ := n.rec.ups(name); return c == 1 })
	return c, name
}

func TestGarbageAfterHandshake(t *testing.T) {
	b := startNode(t, "b")
	// a frame of a type b does not know
	sender := edf.NewRegistry()
	if err := sender.RegisterType(unregistered{}); err != nil {
		t.Fatal(err)
	}
	unknown, err := encodeFrame(sender, sender.Errors(), Frame{Kind: FrameSend, Message: unregistered{1}})
	if err != nil {
		t.Fatal(err)
	}
	valid, _ := encodeFrame(b.reg, b.reg.Errors(), Frame{Kind: FrameSend, Message: 1})
	// Broken framing ends the link (the framework's serve/read) ...
	closing := map[string][]byte{
		"oversize":       header(DefaultMaxMessageSize + 1),
		"truncated":      valid[:len(valid)-1],
		"unknown msg":    append(header(1), 77),
		"zero length":    header(0),
		"valid then eof": valid,
	}
	for name, data := range closing {
		c, peer := rawPeer(t, b)
		c.Write(data)
		if name == "truncated" || name == "valid then eof" {
			c.(*net.TCPConn).CloseWrite()
		}
		if !closedByPeer(c) {
			t.Errorf("%s: connection not closed", name)
		}
		eventually(t, name+": HandleDisconnected", func() bool { _, d := b.rec.ups(peer); return d == 1 })
	}
	if b.rec.count() != 1 { // only "valid then eof" delivers its frame
		t.Fatalf("%d frames delivered from misbehaving peers", b.rec.count())
	}
	// ... a message that does not decode is logged and dropped, and the
	// link goes on (the framework's handleRecvQueue).
	dropped := map[string][]byte{
		"unknown type": unknown,
		"garbage":      append(header(5), 1, 2, 3, 4, 5),
		"unknown kind": append(header(2), msgData, 99),
		"bad varint":   append(header(12), msgData, byte(FrameSend), 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"huge string":  append(header(8), msgData, byte(FrameSend), 0xff, 0xff, 0xff, 0xff, 0x0f, 0),
		"deep nesting": deepFrame(),
	}
	for name, data := range dropped {
		c, peer := rawPeer(t, b)
		before := b.rec.count()
		c.Write(data)
		c.Write(valid)
		eventually(t, name+": the valid frame after it", func() bool { return b.rec.count() == before+1 })
		if _, d := b.rec.ups(peer); d != 0 {
			t.Errorf("%s: disconnected", name)
		}
		c.Close()
	}
	if !b.log.has("unknown type") || !b.log.has("unable to decode") {
		t.Error("the undecodable messages were not logged")
	}
	// trailing bytes: delivered with a warning
	c, _ := rawPeer(t, b)
	before := b.rec.count()
	c.Write(append(header(uint32(len(valid)-3)), append(valid[4:], 0)...))
	eventually(t, "the frame with trailing bytes", func() bool { return b.rec.count() == before+1 })
	if !b.log.has("extra bytes") {
		t.Error("trailing bytes not logged")
	}
	checkServing(t, b)
}

// deepFrame nests slices far beyond the codec's depth limit.
func deepFrame() []byte {
	// From, To, Target, Ref and Priority, all zero, then a Message of nested slices
	payload := []byte{msgData, byte(FrameSend), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	for i := 0; i < 10000; i++ {
		payload = append(payload, 25) // tSlice
	}
	return append(header(uint32(len(payload))), payload...)
}
