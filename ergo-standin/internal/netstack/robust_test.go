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
		"truncated":  append(header(100), []byte("ESH1 and then nothing")...),
		"oversize":   header(1 << 30),
		"empty":      header(0),
		"bad magic":  append(header(8), []byte("XXXXXXXX")...),
		"bad hello":  append(header(6), []byte("ESH1\xff\xff")...),
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

// rawPeer completes a real handshake by hand and returns the socket, so the
// test can misbehave afterwards.
func rawPeer(t *testing.T, n *node) (net.Conn, gen.Atom) {
	t.Helper()
	c := rawDial(t, n)
	name := uniqueName("raw")
	me := intro{name: name, creation: 1, start: time.Now().Unix(), version: nodeVersion}
	_, verdict, err := dialHandshake(newHSConn(c, 0), me, n.name, "secret", 5*time.Second)
	if err != nil || verdict != hsOK {
		t.Fatalf("handshake: %v %d", err, verdict)
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
	unknown, err := encodeFrame(sender, Frame{Kind: FrameSend, Message: unregistered{1}})
	if err != nil {
		t.Fatal(err)
	}
	valid, _ := encodeFrame(b.reg, Frame{Kind: FrameSend, Message: 1})
	cases := map[string][]byte{
		"unknown type":   unknown,
		"garbage":        append(header(5), 1, 2, 3, 4, 5),
		"unknown kind":   append(header(2), msgData, 99),
		"trailing":       append(header(uint32(len(valid)-3)), append(valid[4:], 0)...),
		"oversize":       header(DefaultMaxMessageSize + 1),
		"truncated":      valid[:len(valid)-1],
		"unknown msg":    append(header(1), 77),
		"zero length":    header(0),
		"bad varint":     append(header(12), msgData, byte(FrameSend), 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff),
		"huge string":    append(header(8), msgData, byte(FrameSend), 0xff, 0xff, 0xff, 0xff, 0x0f, 0),
		"deep nesting":   deepFrame(),
		"valid then eof": valid,
	}
	for name, data := range cases {
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
	if !b.log.has("unknown type") {
		t.Error("the unknown type was not logged")
	}
	if b.rec.count() != 1 { // only "valid then eof" delivers its frame
		t.Errorf("%d frames delivered from misbehaving peers", b.rec.count())
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

func TestUnknownTypeDisconnectsBothSides(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	a.routeTo(t, b)
	if err := a.RegisterType(unregistered{}); err != nil {
		t.Fatal(err)
	}
	// encodes fine on a; b cannot decode it
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: unregistered{1}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "both disconnected", func() bool {
		_, da := a.rec.ups(b.name)
		_, db := b.rec.ups(a.name)
		return da == 1 && db == 1
	})
	if !b.log.has("unknown type") {
		t.Error("not logged")
	}
	if b.rec.count() != 0 {
		t.Error("frame delivered")
	}
}
