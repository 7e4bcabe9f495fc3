package netstack

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

// tcpProxy forwards every connection it accepts to target.
type tcpProxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int32
	holdIn   atomic.Bool // cutAcceptorFirst: keep the dialer's sockets open for now
	mu       sync.Mutex
	conns    []net.Conn
	wg       sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		out, err := net.Dial("tcp4", p.target)
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
}

func (p *tcpProxy) addr() string { return p.ln.Addr().String() }

func (p *tcpProxy) port() uint16 { return uint16(p.ln.Addr().(*net.TCPAddr).Port) }

// cutAcceptorFirst closes the proxy's sockets to the acceptor, waits until
// seen() holds, then closes the rest. (With a plain cut, the dialer's
// re-dial may reach the acceptor before the acceptor noticed its link end,
// and then joins the still existing connection: a race the framework has
// too.)
func (p *tcpProxy) cutAcceptorFirst(t *testing.T, seen func() bool) {
	p.holdIn.Store(true)
	p.ln.Close()
	p.mu.Lock()
	for i := 1; i < len(p.conns); i += 2 {
		p.conns[i].Close()
	}
	p.mu.Unlock()
	eventually(t, "the acceptor sees its link end", seen)
	p.cut()
}

// cut closes the proxy and everything it carries (both ends).
func (p *tcpProxy) cut() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func addrOf(n *node) string { return "127.0.0.1:" + strconv.Itoa(int(n.Port())) }

// linkAddrs lists the remote address of every link of c, in pool order.
func linkAddrs(c *conn) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, l := range c.pool {
		out = append(out, l.nc.RemoteAddr().String())
	}
	return out
}

func linkCount(c *conn) int {
	if c == nil {
		return 0
	}
	_, n, _ := c.poolInfo()
	return n
}

// messages lists the Message of every frame n received.
func messages(n *node) []any {
	n.rec.mu.Lock()
	defer n.rec.mu.Unlock()
	var out []any
	for _, r := range n.rec.frames {
		out = append(out, r.frame.Message)
	}
	return out
}

func has(list []any, v any) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// AcceptorOptions.Cookie is not what the acceptor authenticates with: it
// uses the network cookie (taken at its first connection, then kept).
func TestAcceptorCookieIgnored(t *testing.T) {
	b := startNode(t, "b", func(o *Options) {
		o.Network.Acceptors = []gen.AcceptorOptions{{Cookie: "acceptor-only"}}
	})
	acc, _ := b.Acceptors()
	if c := acc[0].Cookie(); c != "" {
		t.Errorf("an acceptor with its own cookie reports %q (the framework reports \"\")", c)
	}
	wrong := startNode(t, "wrong", func(o *Options) { o.Network.Cookie = "acceptor-only" })
	wrong.routeTo(t, b)
	if err := wrong.SendFrame(b.name, Frame{Kind: FrameSend, Message: 1}); err != gen.ErrNoRoute {
		t.Fatalf("the acceptor's own cookie was accepted: %v", err)
	}
	eventually(t, "the acceptor's log", func() bool { return b.log.has("cookie mismatch") })
	good := startNode(t, "good")
	good.routeTo(t, b)
	if err := good.SendFrame(b.name, Frame{Kind: FrameSend, Message: 2}); err != nil {
		t.Fatalf("the network cookie was refused: %v", err)
	}
	// the accept loop keeps the cookie of its first connection
	b.SetCookie("changed")
	acc[0].SetCookie("changed")
	changed := startNode(t, "changed", func(o *Options) { o.Network.Cookie = "changed" })
	changed.routeTo(t, b)
	if err := changed.SendFrame(b.name, Frame{Kind: FrameSend, Message: 3}); err != gen.ErrNoRoute {
		t.Fatalf("a changed cookie was taken by a running acceptor: %v", err)
	}
	late := startNode(t, "late")
	late.routeTo(t, b)
	if err := late.SendFrame(b.name, Frame{Kind: FrameSend, Message: 4}); err != nil {
		t.Fatalf("the first cookie no longer works: %v", err)
	}
	// an acceptor without a cookie of its own reports the network cookie
	plain := startNode(t, "plain", func(o *Options) { o.Network.Acceptors = []gen.AcceptorOptions{{}} })
	if acc, _ := plain.Acceptors(); acc[0].Cookie() != "secret" {
		t.Errorf("acceptor cookie %q", acc[0].Cookie())
	}
}

type procWide struct{ N int }

type lateType struct{ S string }

// One registry per OS process: what one node registers every node of the
// process encodes. Types registered after a connection formed work on it;
// errors keep their identity only on connections formed after them.
func TestTypesProcessWide(t *testing.T) {
	run := string(uniqueName("run")) // error messages are unique per process
	earlyErr := errors.New("registered before the connection " + run)
	lateErr := errors.New("registered after the connection " + run)
	a := startNode(t, "a")
	b := startNode(t, "b")
	// (taken when the test runs again in this process)
	if err := a.RegisterTypes([]any{procWide{}}); err != nil && !errors.Is(err, gen.ErrTaken) {
		t.Fatal(err)
	}
	if err := a.RegisterError(earlyErr); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.LookupType("#ergo.services/ergo/internal/netstack/procWide"); !ok {
		t.Fatal("b does not see the type a registered")
	}
	if err := b.RegisterType(procWide{}); err != nil {
		t.Errorf("registering it again on b (v3.3.0: ErrTaken is success): %v", err)
	}
	b.routeTo(t, a)
	if err := b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, 1), Message: procWide{7}, Err: earlyErr}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame", func() bool { return a.rec.count() == 1 })
	if got := a.rec.frame(0).frame; got.Message != (procWide{7}) || got.Err != earlyErr {
		t.Fatalf("got %#v", got)
	}

	// registered after the connection formed
	if err := a.RegisterType(lateType{}); err != nil && !errors.Is(err, gen.ErrTaken) {
		t.Fatal(err)
	}
	if err := b.RegisterError(lateErr); err != nil {
		t.Fatal(err)
	}
	if err := b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, 1), Message: lateType{"x"}, Err: lateErr}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the late frame", func() bool { return a.rec.count() == 2 })
	got := a.rec.frame(1).frame
	if got.Message != (lateType{"x"}) {
		t.Errorf("a type registered after the connection formed: %#v", got.Message)
	}
	if errors.Is(got.Err, lateErr) || got.Err == nil || got.Err.Error() != lateErr.Error() {
		t.Errorf("an error registered after the connection formed: %#v", got.Err)
	}

	// a new connection carries it by identity
	rn, _ := b.Node(a.name)
	rn.Disconnect()
	// Both sides must have dropped the old connection: until b has, its
	// send goes to the closed one and is lost, as on the real framework.
	eventually(t, "the disconnect on both sides", func() bool {
		_, da := a.rec.ups(b.name)
		_, db := b.rec.ups(a.name)
		return da == 1 && db == 1
	})
	if err := b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, 1), Err: lateErr}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame on the new connection", func() bool { return a.rec.count() == 3 })
	if got := a.rec.frame(2).frame; got.Err != lateErr {
		t.Errorf("on a new connection: %#v", got.Err)
	}
}

// connectThroughProxy starts nodes a and b, routes a to b through a TCP
// proxy, connects them and waits for the default pool of 3 links on both
// sides. It returns a's connection to b.
func connectThroughProxy(t *testing.T) (a, b *node, p *tcpProxy, ca *conn) {
	t.Helper()
	a = startNode(t, "a")
	b = startNode(t, "b")
	p = startProxy(t, addrOf(b))
	if err := a.AddRoute(string(b.name), gen.NetworkRoute{Route: gen.Route{Host: "127.0.0.1", Port: p.port()}}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetNode(b.name); err != nil {
		t.Fatal(err)
	}
	ca = connOf(a, b.name)
	eventually(t, "3 links on both sides", func() bool { return linkCount(ca) == 3 && linkCount(connOf(b, a.name)) == 3 })
	return a, b, p, ca
}

// The default pool has 3 links. The accepting side advertises the local
// address of the accepted socket, so a proxy in front of the acceptor
// carries the first link only; the extra links, and the re-dial of the
// first one when the proxy goes, connect to the acceptor directly, and the
// connection survives. What the dialer sends over the re-dialed link is
// lost: its writer stays bound to the socket the link started with.
func TestPoolThroughProxy(t *testing.T) {
	a, b, p, ca := connectThroughProxy(t)
	cb := connOf(b, a.name)
	if size, _, dsn := ca.poolInfo(); size != 3 || len(dsn) != 1 || dsn[0] != addrOf(b) {
		t.Fatalf("dialer pool size %d, DSN %v (acceptor at %s)", size, dsn, addrOf(b))
	}
	if size, _, dsn := cb.poolInfo(); size != 3 || len(dsn) != 0 {
		t.Fatalf("acceptor pool size %d, DSN %v", size, dsn)
	}
	if n := p.accepted.Load(); n != 1 {
		t.Fatalf("the proxy carried %d links", n)
	}
	if got := linkAddrs(ca); got[0] != p.addr() || got[1] != addrOf(b) || got[2] != addrOf(b) {
		t.Fatalf("dialer links go to %v (proxy %s, acceptor %s)", got, p.addr(), addrOf(b))
	}

	p.cut()
	eventually(t, "the first link re-dialed to the acceptor", func() bool {
		return linkAddrs(ca)[0] == addrOf(b) && linkCount(cb) == 3
	})
	if connOf(a, b.name) != ca || connOf(b, a.name) != cb {
		t.Fatal("the connection was replaced")
	}
	if _, d := a.rec.ups(b.name); d != 0 {
		t.Error("the dialer reported a disconnect")
	}
	if _, d := b.rec.ups(a.name); d != 0 {
		t.Error("the acceptor reported a disconnect")
	}
	if n := p.accepted.Load(); n != 1 {
		t.Errorf("the proxy carried %d links", n)
	}
	// b reaches a over every link
	for id := uint64(1); id <= 3; id++ {
		if err := b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, id), Message: int(id)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "b's frames", func() bool { return a.rec.count() == 3 })
	// a's senders 1 and 2 use links 1 and 2; sender 3 uses link 0, re-dialed
	for id := uint64(1); id <= 3; id++ {
		if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, id), Message: int(id)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "a's frames over the links it started with", func() bool {
		m := messages(b)
		return has(m, 1) && has(m, 2)
	})
	time.Sleep(300 * time.Millisecond)
	if has(messages(b), 3) {
		t.Error("a frame went out over the re-dialed link")
	}
}

// With PoolSize 1 (handshake.Create on the accepting side) the proxy
// carries everything. When it goes, the acceptor loses the connection; the
// dialer re-dials the advertised address, the acceptor has no connection
// for that Join and closes it, and the dialer keeps re-dialing: it still
// reports the peer connected, and what it sends is lost. The acceptor
// dialing back replaces the dialer's stale connection.
func TestPoolSizeOneThroughProxy(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b", func(o *Options) {
		o.Network.Handshake = handshake.Create(handshake.Options{PoolSize: 1})
	})
	p := startProxy(t, addrOf(b))
	if err := a.AddRoute(string(b.name), gen.NetworkRoute{Route: gen.Route{Host: "127.0.0.1", Port: p.port()}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, 1), Message: "via proxy"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame", func() bool { return b.rec.count() == 1 })
	ca, cb := connOf(a, b.name), connOf(b, a.name)
	if size, n, dsn := ca.poolInfo(); size != 1 || n != 1 || len(dsn) != 1 || dsn[0] != addrOf(b) {
		t.Fatalf("dialer pool %d/%d %v", n, size, dsn)
	}
	if size, n, _ := cb.poolInfo(); size != 1 || n != 1 {
		t.Fatalf("acceptor pool %d/%d", n, size)
	}
	if got := linkAddrs(ca); got[0] != p.addr() {
		t.Fatalf("the link goes to %v, not through the proxy", got)
	}
	if err := b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, 1), Message: "back"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reply", func() bool { return a.rec.count() == 1 })

	p.cutAcceptorFirst(t, func() bool { _, d := b.rec.ups(a.name); return d == 1 })
	eventually(t, "the acceptor closing the dialer's re-dials", func() bool {
		return b.log.has("unable to create new connection")
	})
	time.Sleep(300 * time.Millisecond)
	if _, d := a.rec.ups(b.name); d != 0 {
		t.Fatal("the dialer reported the disconnect")
	}
	if _, err := a.Node(b.name); err != nil || connOf(a, b.name) != ca {
		t.Fatalf("the dialer dropped its connection: %v", err)
	}
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, 1), Message: "lost"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if has(messages(b), "lost") {
		t.Fatal("a frame of the stale connection arrived")
	}

	// b dials a (in-process lookup): a refuses first (it dialed, its name is
	// the smaller one), then takes the forced retry and drops the stale one.
	if err := b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, 1), Message: "heal"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame over the new connection", func() bool { return has(messages(a), "heal") })
	eventually(t, "a replaced the stale connection", func() bool {
		c, d := a.rec.ups(b.name)
		return c == 2 && d == 1
	})
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, 1), Message: "again"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a's frame over the new connection", func() bool { return has(messages(b), "again") })
}

// holdDials makes two nodes dial each other at the same moment: each dial
// waits until both are under way, and each completed handshake waits until
// ready(self, peer) holds (or a second passes) before it registers.
func holdDials(t *testing.T, a, b *node, ready func(self, peer *node) bool) {
	mine := map[*Stack]*node{a.Stack: a, b.Stack: b}
	other := map[*Stack]*node{a.Stack: b, b.Stack: a}
	var arrived sync.WaitGroup
	arrived.Add(2)
	both := make(chan struct{})
	go func() { arrived.Wait(); close(both) }()
	var once sync.Map
	dialing := func(s *Stack, peer gen.Atom) {
		if mine[s] == nil {
			return
		}
		if _, dup := once.LoadOrStore(s, true); dup {
			return
		}
		arrived.Done()
		select {
		case <-both:
		case <-time.After(3 * time.Second):
		}
	}
	dialed := func(s *Stack, peer gen.Atom) {
		if mine[s] == nil {
			return
		}
		deadline := time.Now().Add(time.Second)
		for !ready(mine[s], other[s]) && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
	}
	testHookDialing.Store(&dialing)
	testHookDialed.Store(&dialed)
}

func clearHooks() { testHookDialing.Store(nil); testHookDialed.Store(nil) }

// dialBoth sends from a to b and from b to a at once.
func dialBoth(t *testing.T, a, b *node) {
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for j, pair := range [][2]*node{{a, b}, {b, a}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = pair[0].SendFrame(pair[1].name, Frame{Kind: FrameSend, From: pid(pair[0], 1), Message: j})
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("sends: %v", errs)
	}
}

func hasConn(self, peer *node) bool { return connOf(self, peer.name) != nil }

// ERGO_STANDIN_BUGS=simultaneous-connect: both dials complete, each node's
// acceptor registers the peer's dial first, each dialer then keeps that
// connection and leaks its own socket: both nodes report each other
// connected and nothing flows either way (the v320 branch).
func TestSimultaneousConnectV320Bug(t *testing.T) {
	t.Setenv("ERGO_STANDIN_BUGS", "simultaneous-connect")
	t.Cleanup(clearHooks) // after the nodes stop
	a := startNode(t, "sim")
	b := startNode(t, "sim")
	if !a.bugSimultaneous {
		t.Fatal("the switch was not read")
	}
	a.routeTo(t, b)
	b.routeTo(t, a)
	holdDials(t, a, b, hasConn) // the own acceptor registered the peer's dial
	dialBoth(t, a, b)
	ca, cb := connOf(a, b.name), connOf(b, a.name)
	if ca == nil || cb == nil || ca.dialer || cb.dialer {
		t.Fatal("each node should hold the connection the other dialed")
	}
	for i := 0; i < 5; i++ {
		a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, uint64(i+1)), Message: i})
		b.SendFrame(a.name, Frame{Kind: FrameSend, From: pid(b, uint64(i+1)), Message: i})
	}
	time.Sleep(500 * time.Millisecond)
	if a.rec.count() != 0 || b.rec.count() != 0 {
		t.Fatalf("frames flowed: a got %d, b got %d", a.rec.count(), b.rec.count())
	}
	if _, err := a.Node(b.name); err != nil {
		t.Error(err)
	}
	if _, err := b.Node(a.name); err != nil {
		t.Error(err)
	}
}

// Without the switch the same interleaving converges on one connection,
// the one dialed by the smaller name, and frames flow both ways.
func TestSimultaneousConnectConverges(t *testing.T) {
	t.Cleanup(clearHooks)
	a := startNode(t, "sim")
	b := startNode(t, "sim")
	a.routeTo(t, b)
	b.routeTo(t, a)
	holdDials(t, a, b, func(self, peer *node) bool { return hasConn(peer, self) })
	dialBoth(t, a, b)
	eventually(t, "both frames", func() bool { return a.rec.count() == 1 && b.rec.count() == 1 })
	small, large := a, b
	if small.name > large.name {
		small, large = large, small
	}
	cs, cl := connOf(small, large.name), connOf(large, small.name)
	if cs == nil || cl == nil || cs.id != cl.id || !cs.dialer || cl.dialer {
		t.Fatal("the two sides should share the connection the smaller name dialed")
	}
	eventually(t, "settled events", func() bool {
		c1, d1 := a.rec.ups(b.name)
		c2, d2 := b.rec.ups(a.name)
		return c1-d1 == 1 && c2-d2 == 1
	})
	if err := large.SendFrame(small.name, Frame{Kind: FrameSend, From: pid(large, 2), Message: "more"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the next frame", func() bool { return has(messages(small), "more") })
}

// A node killed just after a proxy cut one of its links: the dialer's
// re-dial of that link reaches the node directly before it dies, and the
// link ends again a moment later. The framework re-dials it at once, is
// refused, and loses the connection; the stand-in must not pause first
// (relinkPause is for a peer that keeps closing re-dials, not for the
// first one). With an hour's pause, only the connection's loss without
// one ends this test in time.
func TestRedialedLinkOfADyingPeerEndsTheConnection(t *testing.T) {
	defer func(d time.Duration) { relinkPause = d }(relinkPause)
	relinkPause = time.Hour
	a, b, p, ca := connectThroughProxy(t)
	p.cut()
	eventually(t, "the first link re-dialed to the acceptor", func() bool {
		return linkAddrs(ca)[0] == addrOf(b) && linkCount(connOf(b, a.name)) == 3
	})
	b.Stop()
	eventually(t, "the dialer losing the connection", func() bool { _, d := a.rec.ups(b.name); return d == 1 })
}
