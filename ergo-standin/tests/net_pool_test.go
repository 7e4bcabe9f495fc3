package tests

import (
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/net/handshake"
)

// proxy forwards what it accepts to target until cut.
type proxy struct {
	ln     net.Listener
	target string
	holdIn atomic.Bool // keep the dialer's sockets open for now
	mu     sync.Mutex
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp4", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					io.Copy(pair[1], pair[0])
					out.Close()
					if !p.holdIn.Load() {
						in.Close()
					}
				}()
			}
		}
	}()
	t.Cleanup(p.cut)
	return p
}

// cutAcceptorFirst closes the sockets to the acceptor only; cut closes the
// rest. (After a plain cut the dialer's re-dial may reach the acceptor
// before it noticed its link end, and join the still existing connection:
// a race the framework has too.)
func (p *proxy) cutAcceptorFirst() {
	p.holdIn.Store(true)
	p.ln.Close()
	p.mu.Lock()
	for i := 1; i < len(p.conns); i += 2 {
		p.conns[i].Close()
	}
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// proxied starts a and b; a reaches b through a proxy. hs is b's acceptor
// handshake (nil: the default, pool of 3).
func proxied(t *testing.T, hs gen.NetworkHandshake) (a, b gen.Node, p *proxy) {
	b = startNode(t, "b", gen.NodeOptions{Network: gen.NetworkOptions{
		Cookie:    testCookie,
		Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1", Handshake: hs}},
	}})
	if err := b.Network().RegisterTypes([]any{Ping{}, Pong{}}); err != nil && !errors.Is(err, gen.ErrTaken) {
		t.Fatal(err)
	}
	a = netNode(t, "a", testCookie)
	p = startProxy(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port(t, b)))))
	route := gen.NetworkRoute{Route: gen.Route{Host: "127.0.0.1", Port: uint16(p.ln.Addr().(*net.TCPAddr).Port)}}
	if err := a.Network().AddRoute(string(b.Name()), route, 1); err != nil {
		t.Fatal(err)
	}
	return a, b, p
}

// A test picks the pool size as on the framework: handshake.Create in the
// accepting node's AcceptorOptions.Handshake. With PoolSize 1 the proxy
// carries the whole connection, and cutting it makes the accepting node
// lose it: its monitor of a process on the dialing node gets
// ErrNoConnection.
func TestPoolSizeOneHandshake(t *testing.T) {
	a, b, p := proxied(t, handshake.Create(handshake.Options{PoolSize: 1}))
	outB := make(chan any, 10)
	pb, _ := b.Spawn(newProbe(outB), gen.ProcessOptions{})
	pa, _ := a.Spawn(newProbe(make(chan any, 10)), gen.ProcessOptions{})
	if err := a.Send(pb, Ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	recv(t, outB)
	_, out := watch(t, b, pa)
	p.cutAcceptorFirst()
	switch m := recv(t, out).(type) {
	case gen.MessageDownPID:
		if m.PID != pa || !errors.Is(m.Reason, gen.ErrNoConnection) {
			t.Fatalf("down %#v", m)
		}
	default:
		t.Fatalf("unexpected %#v", m)
	}
	p.cut()
}

// With the default pool (3 links) the proxy carries the first link only:
// the extra links and the re-dial of the first go to the acceptor
// directly, and cutting the proxy loses nothing once they are in. (Cut
// before the extra links joined, the proxy carries the only link, and the
// connection may end: the test waits for the full pool on both ends.)
func TestDefaultPoolSurvivesProxyCut(t *testing.T) {
	a, b, p := proxied(t, nil)
	outA, outB := make(chan any, 10), make(chan any, 10)
	pb, _ := b.Spawn(newProbe(outB), gen.ProcessOptions{})
	pa, _ := a.Spawn(newProbe(outA), gen.ProcessOptions{})
	if err := a.Send(pb, Ping{N: 1}); err != nil {
		t.Fatal(err)
	}
	recv(t, outB)
	fullPool(t, a, b.Name())
	fullPool(t, b, a.Name())
	_, out := watch(t, b, pa)
	p.cut()
	select {
	case m := <-out:
		t.Fatalf("the connection was lost: %#v", m)
	case <-time.After(500 * time.Millisecond):
	}
	if err := b.Send(pa, Pong{N: 2}); err != nil {
		t.Fatal(err)
	}
	if v := recv(t, outA); v != (Pong{N: 2}) {
		t.Fatalf("got %#v", v)
	}
}

// fullPool waits until n's connection to peer has all the links its pool
// was agreed to have.
func fullPool(t testing.TB, n gen.Node, peer gen.Atom) {
	t.Helper()
	eventually(t, "a full pool from "+string(n.Name())+" to "+string(peer), func() bool {
		remote, err := n.Network().Node(peer)
		if err != nil {
			return false
		}
		info := remote.Info()
		return info.PoolSize > 1 && info.PoolLen == info.PoolSize
	})
}
