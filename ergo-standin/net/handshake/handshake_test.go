package handshake

import (
	"net"
	"testing"

	"ergo.services/ergo/gen"
)

type testNode struct{ name gen.Atom }

func (n testNode) Name() gen.Atom       { return n.name }
func (n testNode) Creation() int64      { return 42 }
func (n testNode) Version() gen.Version { return gen.Version{Name: "test"} }

// pair runs Start on one end of a loopback TCP connection and Accept on
// the other.
func pair(t *testing.T, dialer, acceptor gen.NetworkHandshake, dcookie, acookie string, join string) (gen.HandshakeResult, error, gen.HandshakeResult, error, string) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type acc struct {
		r   gen.HandshakeResult
		err error
	}
	ch := make(chan acc, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			ch <- acc{err: err}
			return
		}
		defer c.Close()
		r, err := acceptor.Accept(testNode{"b@localhost"}, c, gen.HandshakeOptions{Cookie: acookie})
		ch <- acc{r, err}
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var dr gen.HandshakeResult
	var derr error
	if join != "" {
		_, derr = dialer.Join(testNode{"a@localhost"}, c, join, gen.HandshakeOptions{Cookie: dcookie})
	} else {
		dr, derr = dialer.Start(testNode{"a@localhost"}, c, gen.HandshakeOptions{Cookie: dcookie})
	}
	if derr != nil {
		c.Close()
	}
	a := <-ch
	return dr, derr, a.r, a.err, ln.Addr().String()
}

func TestStartAccept(t *testing.T) {
	for _, size := range []int{0, 1, 5} {
		acceptor := Create(Options{PoolSize: size})
		dr, derr, ar, aerr, addr := pair(t, Create(Options{PoolSize: 7}), acceptor, "c", "c", "")
		if derr != nil || aerr != nil {
			t.Fatalf("size %d: %v %v", size, derr, aerr)
		}
		want := size
		if want < 1 {
			want = 3
		}
		do := dr.Custom.(ConnectionOptions)
		ao := ar.Custom.(ConnectionOptions)
		if do.PoolSize != want || ao.PoolSize != want {
			t.Errorf("size %d: pool sizes %d (dialer) %d (acceptor), want the acceptor's %d", size, do.PoolSize, ao.PoolSize, want)
		}
		if len(do.PoolDSN) != 1 || do.PoolDSN[0] != addr || len(ao.PoolDSN) != 0 {
			t.Errorf("PoolDSN %v %v, acceptor at %s", do.PoolDSN, ao.PoolDSN, addr)
		}
		if dr.ConnectionID == "" || dr.ConnectionID != ar.ConnectionID {
			t.Errorf("connection IDs %q %q", dr.ConnectionID, ar.ConnectionID)
		}
		if dr.Peer != "b@localhost" || ar.Peer != "a@localhost" || dr.PeerCreation != 42 || ar.PeerCreation != 42 {
			t.Errorf("results %+v %+v", dr, ar)
		}
	}
}

func TestWrongCookie(t *testing.T) {
	_, derr, _, aerr, _ := pair(t, Create(Options{}), Create(Options{}), "x", "y", "")
	if derr == nil || aerr == nil {
		t.Fatalf("wrong cookie: %v %v", derr, aerr)
	}
	_, derr, _, aerr, _ = pair(t, Create(Options{}), Create(Options{}), "x", "y", "some-id")
	if derr == nil || aerr == nil {
		t.Fatalf("wrong cookie on join: %v %v", derr, aerr)
	}
}

// An acceptor answers a Join before anyone looks for the connection.
func TestJoin(t *testing.T) {
	_, derr, ar, aerr, _ := pair(t, Create(Options{}), Create(Options{}), "c", "c", "some-id")
	if derr != nil || aerr != nil {
		t.Fatalf("join: %v %v", derr, aerr)
	}
	if ar.ConnectionID != "some-id" || ar.Peer != "a@localhost" || ar.PeerCreation != 0 {
		t.Errorf("join result %+v", ar)
	}
}
