package leader

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A TCP proxy that stands on the path from one node to another, so that a
// test can cut, heal or half-open the link between two real nodes without
// touching the framework. Node X reaches node Y through its own proxy
// P(X->Y) (a static route on X), so each ordered pair of nodes has one.

// proxyDir is one direction of the bytes flowing through a proxy.
type proxyDir int

const (
	// proxyToTarget is from the side that dialed the proxy to the proxied node.
	proxyToTarget proxyDir = iota
	// proxyToSource is from the proxied node back to the side that dialed.
	proxyToSource
)

func (d proxyDir) String() string {
	if d == proxyToTarget {
		return "to-target"
	}
	return "to-source"
}

type tcpProxy struct {
	name   string
	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu        sync.Mutex
	closed    bool
	cut       bool
	blackhole bool
	held      map[net.Conn]struct{} // accepted while blackholed: never answered
	drop      [2]bool
	tainted   bool // bytes were discarded on a live connection since the last Heal
	links     map[*proxyLink]struct{}
	served    int // connections accepted and forwarded
	refused   int // connections accepted and closed at once while cut
}

// proxyLink is one proxied connection: the accepted socket and the socket
// dialed to the target.
type proxyLink struct {
	source, target net.Conn
	once           sync.Once
}

func (l *proxyLink) close() {
	l.once.Do(func() {
		l.source.Close()
		l.target.Close()
	})
}

// startProxy listens on an ephemeral loopback port and forwards every
// connection to target ("host:port").
func startProxy(name, target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{name: name, target: target, ln: ln, links: make(map[*proxyLink]struct{}), held: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Port is the port the proxy listens on.
func (p *tcpProxy) Port() uint16 {
	return uint16(p.ln.Addr().(*net.TCPAddr).Port)
}

func (p *tcpProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		switch {
		case p.closed || p.cut:
			p.refused++
			p.mu.Unlock()
			c.Close()
			continue
		case p.blackhole:
			p.held[c] = struct{}{}
			p.wg.Add(1)
			p.mu.Unlock()
			go p.swallow(c)
			continue
		}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(c)
	}
}

// swallow reads and discards what a blackholed connection sends, and never
// answers, until the proxy lets go of it.
func (p *tcpProxy) swallow(c net.Conn) {
	defer p.wg.Done()
	defer func() {
		c.Close()
		p.mu.Lock()
		delete(p.held, c)
		p.mu.Unlock()
	}()
	io.Copy(io.Discard, c)
}

// releaseHeldLocked empties the set of blackholed connections; the caller
// closes them outside the lock.
func (p *tcpProxy) releaseHeldLocked() []net.Conn {
	list := make([]net.Conn, 0, len(p.held))
	for c := range p.held {
		list = append(list, c)
	}
	clear(p.held)
	return list
}

func (p *tcpProxy) serve(source net.Conn) {
	defer p.wg.Done()
	target, err := net.DialTimeout("tcp4", p.target, 2*time.Second)
	if err != nil {
		source.Close()
		return
	}
	link := &proxyLink{source: source, target: target}
	p.mu.Lock()
	if p.closed || p.cut || p.blackhole {
		p.refused++
		p.mu.Unlock()
		link.close()
		return
	}
	p.links[link] = struct{}{}
	p.served++
	p.wg.Add(2)
	p.mu.Unlock()
	go p.pipe(link, source, target, proxyToTarget)
	go p.pipe(link, target, source, proxyToSource)
}

// pipe copies one direction of a link, discarding the bytes while that
// direction is dropped. Either direction ending ends the whole link: the
// framework's connections are full duplex, half a connection is no use.
func (p *tcpProxy) pipe(link *proxyLink, from, to net.Conn, dir proxyDir) {
	defer p.wg.Done()
	defer func() {
		link.close()
		p.mu.Lock()
		delete(p.links, link)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := from.Read(buf)
		if n > 0 && p.dropping(dir) == false {
			if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *tcpProxy) dropping(dir proxyDir) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drop[dir]
}

// takeLinks empties the set of live links; the caller closes them outside
// the lock.
func (p *tcpProxy) takeLinksLocked() []*proxyLink {
	list := make([]*proxyLink, 0, len(p.links))
	for l := range p.links {
		list = append(list, l)
	}
	clear(p.links)
	return list
}

// Cut closes every live connection and refuses new ones (accepting and
// closing them at once, so a dialer fails fast instead of timing out).
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.blackhole = false
	links := p.takeLinksLocked()
	held := p.releaseHeldLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	for _, c := range held {
		c.Close()
	}
}

// Blackhole closes every live connection and then accepts new ones but
// never answers them: the TCP connection is made, and then nothing, as
// with a host behind a firewall that drops the traffic after the connect,
// or a node too stuck to run a handshake. A dialer waits for its own
// timeout.
func (p *tcpProxy) Blackhole() {
	p.mu.Lock()
	p.cut = false
	p.blackhole = true
	links := p.takeLinksLocked()
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
}

// Heal forwards new connections again and stops dropping. A connection
// that lost bytes while a direction was dropped carries a torn stream, so
// it is closed: the nodes reconnect cleanly, as they would after a real
// half-open link is finally detected.
func (p *tcpProxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.blackhole = false
	held := p.releaseHeldLocked()
	p.drop = [2]bool{}
	var links []*proxyLink
	if p.tainted {
		links = p.takeLinksLocked()
		p.tainted = false
	}
	p.mu.Unlock()
	for _, l := range links {
		l.close()
	}
	for _, c := range held {
		c.Close()
	}
}

// DropDirection keeps the connections open but silently discards every
// byte flowing in one direction: a half-open link.
func (p *tcpProxy) DropDirection(dir proxyDir) {
	p.mu.Lock()
	p.drop[dir] = true
	p.tainted = true
	p.mu.Unlock()
}

// LiveLinks is the number of connections currently forwarded.
func (p *tcpProxy) LiveLinks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.links)
}

// Stats returns how many connections were forwarded and refused so far.
func (p *tcpProxy) Stats() (served, refused int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served, p.refused
}

// Close stops the proxy and every connection through it.
func (p *tcpProxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	links := p.takeLinksLocked()
	held := p.releaseHeldLocked()
	p.mu.Unlock()
	p.ln.Close()
	for _, l := range links {
		l.close()
	}
	for _, c := range held {
		c.Close()
	}
	p.wg.Wait()
}

// The proxy's own tests, against a plain TCP server.

// proxyEchoServer accepts connections, records what it receives and echoes
// it back.
type proxyEchoServer struct {
	ln       net.Listener
	received chan []byte
	wg       sync.WaitGroup
}

func startProxyEchoServer(t *testing.T) *proxyEchoServer {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	s := &proxyEchoServer{ln: ln, received: make(chan []byte, 100)}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if n > 0 {
						s.received <- bytes.Clone(buf[:n])
						if _, err := c.Write(buf[:n]); err != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

func proxyDial(t *testing.T, p *tcpProxy) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp4", "127.0.0.1:"+strconv.Itoa(int(p.Port())), 2*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

// proxyRoundTrip writes payload and reads the echo; it fails on anything else.
func proxyRoundTrip(t *testing.T, c net.Conn, payload string) {
	t.Helper()
	_, err := c.Write([]byte(payload))
	require.NoError(t, err)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(payload))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, payload, string(got))
}

// proxyReadEnds reports whether reading from c ends with an error (closed)
// within the deadline.
func proxyReadEnds(c net.Conn, within time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(within))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return err != nil
}

func proxyExpectReceived(t *testing.T, s *proxyEchoServer, payload string) {
	t.Helper()
	select {
	case got := <-s.received:
		require.Equal(t, payload, string(got))
	case <-time.After(5 * time.Second):
		t.Fatalf("the server did not receive %q", payload)
	}
}

func TestProxyForwardsCutsAndHeals(t *testing.T) {
	server := startProxyEchoServer(t)
	p, err := startProxy("test", server.ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(p.Close)

	c := proxyDial(t, p)
	proxyRoundTrip(t, c, "hello")
	proxyExpectReceived(t, server, "hello")
	waitFor(t, 5*time.Second, "one live link", func() (bool, string) {
		n := p.LiveLinks()
		return n == 1, strconv.Itoa(n)
	})

	p.Cut()
	require.True(t, proxyReadEnds(c, 5*time.Second), "Cut must close the live connection")
	require.Equal(t, 0, p.LiveLinks())

	// While cut, a new connection is accepted and closed at once.
	refused := proxyDial(t, p)
	require.True(t, proxyReadEnds(refused, 5*time.Second), "a connection made while cut must be closed at once")
	_, before := p.Stats()
	require.GreaterOrEqual(t, before, 1)

	p.Heal()
	c2 := proxyDial(t, p)
	proxyRoundTrip(t, c2, "again")
	proxyExpectReceived(t, server, "again")
}

func TestProxyDropDirectionIsHalfOpen(t *testing.T) {
	server := startProxyEchoServer(t)
	p, err := startProxy("test", server.ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(p.Close)

	c := proxyDial(t, p)
	proxyRoundTrip(t, c, "warm")
	proxyExpectReceived(t, server, "warm")

	// Bytes back to the source are lost, bytes to the target still arrive,
	// and the connection stays open.
	p.DropDirection(proxyToSource)
	_, err = c.Write([]byte("one-way"))
	require.NoError(t, err)
	proxyExpectReceived(t, server, "one-way")
	require.False(t, proxyReadEnds(c, 300*time.Millisecond), "the echo must be dropped, not delivered, and the link must stay open")
	require.Equal(t, 1, p.LiveLinks())

	// Heal closes the torn connection; a new one works both ways.
	p.Heal()
	require.True(t, proxyReadEnds(c, 5*time.Second), "Heal must close a connection that lost bytes")
	c2 := proxyDial(t, p)
	proxyRoundTrip(t, c2, "clean")
	proxyExpectReceived(t, server, "clean")

	// The other direction: nothing reaches the target.
	p.DropDirection(proxyToTarget)
	_, err = c2.Write([]byte("lost"))
	require.NoError(t, err)
	select {
	case got := <-server.received:
		t.Fatalf("the target received %q through a dropped direction", got)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestProxyBlackholeAcceptsAndNeverAnswers(t *testing.T) {
	server := startProxyEchoServer(t)
	p, err := startProxy("test", server.ln.Addr().String())
	require.NoError(t, err)
	t.Cleanup(p.Close)

	c := proxyDial(t, p)
	proxyRoundTrip(t, c, "before")
	proxyExpectReceived(t, server, "before")

	p.Blackhole()
	require.True(t, proxyReadEnds(c, 5*time.Second), "Blackhole must close the live connection")

	// A new connection is made, and then nothing: no echo, no close.
	held := proxyDial(t, p)
	_, err = held.Write([]byte("into the void"))
	require.NoError(t, err)
	require.False(t, proxyReadEnds(held, 300*time.Millisecond), "a blackholed connection is neither answered nor closed")
	select {
	case got := <-server.received:
		t.Fatalf("the target received %q through a blackhole", got)
	default:
	}

	p.Heal()
	require.True(t, proxyReadEnds(held, 5*time.Second), "Heal must let go of the held connection")
	c2 := proxyDial(t, p)
	proxyRoundTrip(t, c2, "after")
	proxyExpectReceived(t, server, "after")
}
