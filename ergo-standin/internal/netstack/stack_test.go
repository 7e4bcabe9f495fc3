package netstack

import (
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"ergo.services/ergo/gen"
)

func TestMain(m *testing.M) {
	if runChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

type order struct {
	ID    int
	Items []item
	Meta  map[string]any
	When  time.Time
	Owner gen.PID
}

type item struct {
	Name  string
	Price float64
}

type unregistered struct{ A int }

// registerTestTypes registers order and item in the process registry; the
// first test of the binary to call it registers them.
func registerTestTypes(t *testing.T, n *node) {
	t.Helper()
	if err := n.RegisterTypes([]any{order{}, item{}}); err != nil && !errors.Is(err, gen.ErrTaken) {
		t.Fatal(err)
	}
}

type withPrivate struct {
	A int
	b int
}

func TestExchangeBothWays(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	registerTestTypes(t, a) // one registry per process: b knows them too
	a.routeTo(t, b)
	msg := order{ID: 7, Items: []item{{"x", 1.5}}, Meta: map[string]any{"k": []int{1, 2}}, When: time.Unix(100, 5).UTC(), Owner: pid(a, 1)}
	f := Frame{Kind: FrameSend, From: pid(a, 1), To: pid(b, 2), Priority: gen.MessagePriorityHigh, Message: msg, Err: gen.ErrProcessUnknown}
	if err := a.SendFrame(b.name, f); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame on b", func() bool { return b.rec.count() == 1 })
	got := b.rec.frame(0)
	if got.peer != a.name || got.creation != a.opts.Creation {
		t.Errorf("peer %s creation %d", got.peer, got.creation)
	}
	if !reflect.DeepEqual(got.frame, f) {
		t.Errorf("sent %#v\ngot  %#v", f, got.frame)
	}
	if got.frame.Err != gen.ErrProcessUnknown {
		t.Error("gen error lost its identity")
	}

	// b answers over the connection a made, without any route of its own.
	reply := Frame{Kind: FrameResponse, From: pid(b, 2), To: pid(a, 1), Ref: gen.Ref{Node: b.name, ID: [3]uint64{1, 2, 3}}, Message: []item{{"y", 2}}}
	if err := b.SendFrame(a.name, reply); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reply on a", func() bool { return a.rec.count() == 1 })
	if got := a.rec.frame(0).frame; !reflect.DeepEqual(got, reply) {
		t.Errorf("reply %#v", got)
	}

	if nodes := a.Nodes(); len(nodes) != 1 || nodes[0] != b.name {
		t.Errorf("a.Nodes() = %v", nodes)
	}
	rn, err := a.Node(b.name)
	if err != nil {
		t.Fatal(err)
	}
	info := rn.Info()
	if rn.Name() != b.name || rn.Creation() != b.opts.Creation || info.Node != b.name {
		t.Errorf("remote node info %+v", info)
	}
	if _, err := rn.Spawn("x", gen.ProcessOptions{}); !errors.Is(err, gen.ErrUnsupported) {
		t.Errorf("remote spawn: %v", err)
	}
	if c, d := a.rec.ups(b.name); c != 1 || d != 0 {
		t.Errorf("a: connected %d disconnected %d", c, d)
	}
}

// connectedPool starts two nodes and connects a to b with a full pool of
// links on both sides, having sent one frame (Message -1) from pid(a, 7).
// Like the framework's, the link a sender keeps is its key modulo the
// links in the pool, so order holds only once the pool is complete: a
// frame sent while the extra links join may overtake an earlier one.
func connectedPool(t *testing.T) (a, b *node) {
	t.Helper()
	a = startNode(t, "a")
	b = startNode(t, "b")
	a.routeTo(t, b)
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, 7), Message: -1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a full pool on both sides", func() bool {
		return linkCount(connOf(a, b.name)) == 3 && linkCount(connOf(b, a.name)) == 3 && b.rec.count() == 1
	})
	return a, b
}

func TestOrderPerPeer(t *testing.T) {
	a, b := connectedPool(t)
	const n = 2000
	for i := 0; i < n; i++ {
		// one sender keeps one link of the pool
		if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, 7), Message: i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "all frames", func() bool { return b.rec.count() == n+1 })
	for i := 0; i < n; i++ {
		if got := b.rec.frame(i + 1).frame.Message; got != i {
			t.Fatalf("frame %d carries %v", i, got)
		}
	}
}

func TestUnregisteredTypeFailsSend(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	a.routeTo(t, b)
	err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: unregistered{1}})
	if !errors.Is(err, gen.ErrUnregistered) || !strings.Contains(err.Error(), "unregistered") {
		t.Errorf("unregistered type: %v", err)
	}
	err = a.SendFrame(b.name, Frame{Kind: FrameSend, Message: map[string][]unregistered{}})
	if !errors.Is(err, gen.ErrUnregistered) {
		t.Errorf("nested unregistered type: %v", err)
	}
	if err := a.RegisterType(withPrivate{}); !errors.Is(err, gen.ErrUnsupported) || !strings.Contains(err.Error(), "withPrivate") {
		t.Errorf("unexported field: %v", err)
	}
	err = a.SendFrame(b.name, Frame{Kind: FrameSend, Message: withPrivate{}})
	if err == nil || !strings.Contains(err.Error(), "withPrivate") {
		t.Errorf("struct with unexported field: %v", err)
	}
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: &item{}}); !errors.Is(err, gen.ErrUnsupported) {
		t.Errorf("pointer: %v", err)
	}
	// as in the framework, the send connects first, then encodes
	if _, err := a.Node(b.name); err != nil {
		t.Errorf("a send connects before it encodes: %v", err)
	}
}

func TestTooLarge(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b", func(o *Options) { o.Network.MaxMessageSize = 1024 })
	a.routeTo(t, b)
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: make([]byte, 2000)}); !errors.Is(err, gen.ErrTooLarge) {
		t.Errorf("oversize: %v", err)
	}
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: make([]byte, 500)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the small frame", func() bool { return b.rec.count() == 1 })
}

func TestWrongCookie(t *testing.T) {
	a := startNode(t, "a", func(o *Options) { o.Network.Cookie = "wrong" })
	b := startNode(t, "b")
	a.routeTo(t, b)
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: 1}); err != gen.ErrNoRoute {
		t.Fatalf("wrong cookie: %v", err)
	}
	eventually(t, "the acceptor's log", func() bool { return b.log.has("cookie mismatch") })
	if b.rec.count() != 0 || len(b.Nodes()) != 0 || len(a.Nodes()) != 0 {
		t.Fatal("something got through a failed handshake")
	}
	if c, _ := b.rec.ups(a.name); c != 0 {
		t.Fatal("HandleConnected for an unauthenticated peer")
	}
	// A per-route cookie fixes it, and b keeps serving good peers.
	good := startNode(t, "good")
	good.routeTo(t, b)
	if err := good.SendFrame(b.name, Frame{Kind: FrameSend, Message: 2}); err != nil {
		t.Fatal(err)
	}
	route := gen.NetworkRoute{Route: gen.Route{Port: b.Port()}, Cookie: "secret"}
	if _, err := a.GetNodeWithRoute(b.name, route); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the good frame", func() bool { return b.rec.count() == 1 })
	if got := b.rec.frame(0); got.peer != good.name {
		t.Errorf("frame from %s", got.peer)
	}
}

func TestWrongName(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	// a route that points at b for a name b does not have
	if err := a.AddRoute("ghost@localhost", gen.NetworkRoute{Route: gen.Route{Port: b.Port()}}, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := a.GetNode("ghost@localhost"); err != gen.ErrNoRoute {
		t.Fatalf("dialing a wrong name: %v", err)
	}
	// b completed the handshake (it cannot know whom a wanted); a closed it
	eventually(t, "b drops the connection a closed", func() bool { return len(b.Nodes()) == 0 })
}

func TestDisconnect(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	a.routeTo(t, b)
	rn, err := a.GetNode(b.name)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "b connected", func() bool { c, _ := b.rec.ups(a.name); return c == 1 })
	rn.Disconnect()
	eventually(t, "both disconnected", func() bool {
		_, da := a.rec.ups(b.name)
		_, db := b.rec.ups(a.name)
		return da == 1 && db == 1
	})
	if _, err := a.Node(b.name); !errors.Is(err, gen.ErrNoConnection) {
		t.Errorf("a.Node after Disconnect: %v", err)
	}
	eventually(t, "b forgot a", func() bool { _, err := b.Node(a.name); return err != nil })
	// reconnect works, and the events alternate
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: "again"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame after reconnect", func() bool { return b.rec.count() == 1 })
	b.rec.mu.Lock()
	events := strings.Join(b.rec.events, " ")
	b.rec.mu.Unlock()
	want := "+" + string(a.name) + " -" + string(a.name) + " +" + string(a.name)
	if events != want {
		t.Errorf("b events %q, want %q", events, want)
	}
}

func TestSimultaneousConnect(t *testing.T) {
	for i := 0; i < 20; i++ {
		a := startNode(t, "sim")
		b := startNode(t, "sim")
		a.routeTo(t, b)
		b.routeTo(t, a)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, pair := range [][2]*node{{a, b}, {b, a}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[j] = pair[0].SendFrame(pair[1].name, Frame{Kind: FrameSend, Message: j})
			}()
		}
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v", i, errs)
		}
		eventually(t, "both frames", func() bool { return a.rec.count() == 1 && b.rec.count() == 1 })
		// both sides hold the same connection
		ca, cb := connOf(a, b.name), connOf(b, a.name)
		if ca == nil || cb == nil || ca.id != cb.id || ca.nc.LocalAddr().String() != cb.nc.RemoteAddr().String() && ca.nc.RemoteAddr().String() != cb.nc.LocalAddr().String() {
			t.Fatalf("round %d: the two sides use different connections", i)
		}
		eventually(t, "settled events", func() bool {
			c1, d1 := a.rec.ups(b.name)
			c2, d2 := b.rec.ups(a.name)
			return c1-d1 == 1 && c2-d2 == 1
		})
		a.Stop()
		b.Stop()
	}
}

// TestSimultaneousConnectRule makes both dials overlap for sure: the node
// with the smaller name is held "dialing" while the other dials it.
func TestSimultaneousConnectRule(t *testing.T) {
	small, large := routedPair(t)
	release := holdDialing(small, large.name)

	errc := make(chan error, 1)
	go func() { errc <- large.SendFrame(small.name, Frame{Kind: FrameSend, Message: "from large"}) }()
	eventually(t, "the smaller node to refuse the larger's dial", func() bool {
		return small.log.has("simultaneous connect with " + large.name.String())
	})
	select {
	case err := <-errc:
		t.Fatalf("the larger node's send returned early: %v", err)
	default:
	}
	// the smaller node's own dial goes ahead and serves both senders
	release()
	if err := small.SendFrame(large.name, Frame{Kind: FrameSend, Message: "from small"}); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	eventually(t, "both frames", func() bool { return small.rec.count() == 1 && large.rec.count() == 1 })
	cs, cl := connOf(small, large.name), connOf(large, small.name)
	if !cs.dialer || cl.dialer || cs.id != cl.id || cs.nc.LocalAddr().String() != cl.nc.RemoteAddr().String() {
		t.Error("the connection dialed by the smaller name must be the only one")
	}
	if c, _ := large.rec.ups(small.name); c != 1 {
		t.Errorf("large connected %d times", c)
	}
}

// holdDialing makes n look as if it were dialing peer until release is
// called, so that a dial from peer overlaps it for sure.
func holdDialing(n *node, peer gen.Atom) (release func()) {
	held := &dialing{done: make(chan struct{})}
	n.mu.Lock()
	n.dials[peer] = held
	n.mu.Unlock()
	return func() {
		n.mu.Lock()
		delete(n.dials, peer)
		close(held.done)
		n.mu.Unlock()
	}
}

// routedPair starts two nodes that route to each other, the one with the
// smaller name first.
func routedPair(t *testing.T) (small, large *node) {
	small, large = startNode(t, "sim"), startNode(t, "sim")
	if small.name > large.name {
		small, large = large, small
	}
	small.routeTo(t, large)
	large.routeTo(t, small)
	return small, large
}

func connOf(n *node, peer gen.Atom) *conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.conns[peer]
}

func TestConcurrentSendsShareOneDial(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	a.routeTo(t, b)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: i}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	eventually(t, "all frames", func() bool { return b.rec.count() == 50 })
	if c, _ := b.rec.ups(a.name); c != 1 {
		t.Errorf("%d connections for one peer", c)
	}
}

func TestStopLeavesNothing(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	a.routeTo(t, b)
	if _, err := a.GetNode(b.name); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	eventually(t, "disconnects", func() bool {
		_, da := a.rec.ups(b.name)
		_, db := b.rec.ups(a.name)
		return da == 1 && db == 1
	})
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend}); err != gen.ErrNetworkStopped {
		t.Errorf("send after stop: %v", err)
	}
	b.Stop()
	a.Stop() // twice is fine
	goleak.VerifyNone(t)
}

func TestModes(t *testing.T) {
	off := startNode(t, "off", func(o *Options) { o.Network.Mode = gen.NetworkModeDisabled })
	if err := off.SendFrame("x@localhost", Frame{Kind: FrameSend}); err != gen.ErrNetworkStopped {
		t.Errorf("disabled: %v", err)
	}
	hidden := startNode(t, "hidden", func(o *Options) { o.Network.Mode = gen.NetworkModeHidden })
	if hidden.Port() != 0 {
		t.Error("hidden node listens")
	}
	if acc, err := hidden.Acceptors(); err != nil || len(acc) != 0 {
		t.Errorf("hidden acceptors %v %v", acc, err)
	}
	b := startNode(t, "b")
	hidden.routeTo(t, b)
	if err := hidden.SendFrame(b.name, Frame{Kind: FrameSend, Message: "hi"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "frame from the hidden node", func() bool { return b.rec.count() == 1 })
	acc, err := b.Acceptors()
	if err != nil || len(acc) != 1 || !strings.HasSuffix(acc[0].Info().Interface, ":"+strconv.Itoa(int(b.Port()))) {
		t.Errorf("acceptors: %v %v", acc, err)
	}
}

func TestPortProbing(t *testing.T) {
	opts := func(o *Options) { o.Network.Acceptors = []gen.AcceptorOptions{{Port: 15000}} }
	a := startNode(t, "p", opts)
	b := startNode(t, "p", opts)
	// other test binaries may hold some of these ports too
	if a.Port() < 15000 || b.Port() < 15000 || a.Port() == b.Port() {
		t.Errorf("ports %d %d", a.Port(), b.Port())
	}
	_, err := Start(Options{Name: uniqueName("p"), Network: gen.NetworkOptions{Cookie: "x",
		Acceptors: []gen.AcceptorOptions{{Port: a.Port(), PortRange: 1}}}})
	if err == nil {
		t.Error("PortRange 1 on a taken port must fail")
	}
}

type settingsOrder struct{ Items []settingsItem }
type settingsItem struct{ N int }

func TestRoutesAndSettings(t *testing.T) {
	a := startNode(t, "a")
	r1 := gen.NetworkRoute{Route: gen.Route{Port: 1}}
	r2 := gen.NetworkRoute{Route: gen.Route{Port: 2}}
	r3 := gen.NetworkRoute{Route: gen.Route{Port: 3}}
	if err := a.AddRoute("x@localhost", r1, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.AddRoute("x@localhost", r1, 1); !errors.Is(err, gen.ErrTaken) {
		t.Errorf("duplicate route: %v", err)
	}
	a.AddRoute("x.*", r2, 5)
	a.AddRoute(".*@localhost", r3, 10)
	routes, err := a.Route("x@localhost")
	if err != nil || len(routes) != 3 || routes[0].Route.Port != 1 || routes[1].Route.Port != 3 || routes[2].Route.Port != 2 {
		t.Errorf("routes %+v %v", routes, err)
	}
	if routes, _ := a.Route("ax@localhost"); len(routes) != 1 || routes[0].Route.Port != 3 {
		t.Errorf("anchored match: %+v", routes)
	}
	if err := a.RemoveRoute(".*@localhost"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Route("y@elsewhere"); err != gen.ErrNoRoute {
		t.Errorf("no route: %v", err)
	}
	if a.Cookie() != "secret" || a.SetCookie("new") != nil || a.Cookie() != "new" {
		t.Error("cookie")
	}
	a.SetMaxMessageSize(4096)
	if a.MaxMessageSize() != 4096 {
		t.Error("max message size")
	}
	if !a.NetworkFlags().Enable {
		t.Error("default flags")
	}
	if _, err := a.Node("nobody@localhost"); !errors.Is(err, gen.ErrNoConnection) {
		t.Errorf("Node: %v", err)
	}
	if a.Mode() != gen.NetworkModeEnabled {
		t.Error("mode")
	}
	if info, err := a.Info(); err != nil || len(info.Acceptors) != 1 {
		t.Errorf("info %+v %v", info, err)
	}
	// the registry is the process's: only the first run registers them
	if _, again := a.LookupType("settingsOrder"); !again {
		if err := a.RegisterType(settingsOrder{}); !errors.Is(err, gen.ErrUnregistered) {
			t.Errorf("single RegisterType with an unregistered nested type: %v", err)
		}
		if err := a.RegisterTypes([]any{settingsOrder{}, settingsItem{}}); err != nil {
			t.Fatal(err)
		}
	}
	// v3.3.0: a type registered before is no error
	if err := a.RegisterType(settingsItem{}); err != nil {
		t.Errorf("duplicate type: %v", err)
	}
	if typ, ok := a.LookupType("#ergo.services/ergo/internal/netstack/settingsOrder"); !ok || typ != reflect.TypeOf(settingsOrder{}) {
		t.Errorf("LookupType %v %v", typ, ok)
	}
	if typ, ok := a.LookupType("settingsItem"); !ok || typ != reflect.TypeOf(settingsItem{}) {
		t.Errorf("LookupType short %v %v", typ, ok)
	}
}

func TestNameOnlyInProcess(t *testing.T) {
	a := startNode(t, "a")
	b := startNode(t, "b")
	if err := a.SendFrame(b.name, Frame{Kind: FrameSend, Message: "no route needed"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame", func() bool { return b.rec.count() == 1 })
	if _, err := a.GetNode(uniqueName("nobody")); err != gen.ErrNoRoute {
		t.Errorf("unknown node: %v", err)
	}
}

// TestSimultaneousConnectNeedsTheFlagOnBothEnds: as in v3.3.0, a collision
// is detected only when both ends advertise EnableSimultaneousConnect
// (the default); a peer that does not is admitted while this node dials,
// and each end reports what the other advertised.
func TestSimultaneousConnectNeedsTheFlagOnBothEnds(t *testing.T) {
	small, large := routedPair(t)
	flags := gen.DefaultNetworkFlags
	if !flags.EnableSimultaneousConnect {
		t.Fatal("the default flags advertise EnableSimultaneousConnect, as v3.3.0's do")
	}
	flags.EnableSimultaneousConnect = false
	large.SetNetworkFlags(flags)
	defer holdDialing(small, large.name)()
	if err := large.SendFrame(small.name, Frame{Kind: FrameSend, Message: "from large"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the frame", func() bool { return small.rec.count() == 1 })
	if small.log.has("simultaneous connect with " + large.name.String()) {
		t.Error("a peer without the flag must not be refused")
	}
	r, err := small.Node(large.name)
	if err != nil {
		t.Fatal(err)
	}
	if r.Info().NetworkFlags.EnableSimultaneousConnect {
		t.Error("the peer's advertised flags are reported as they came")
	}
}

// A frame waits only for the frames of its own receive queue, as with the
// framework's recvQueues: one sender's frame to a process whose handling
// is stuck does not hold up its next frame to another process, and its
// frames to one process keep their order.
func TestAFrameWaitsOnlyForItsOwnQueue(t *testing.T) {
	a, b := connectedPool(t)
	stuck, other := pid(b, 1), pid(b, 2) // queues 1 and 2 of the twelve
	release := make(chan struct{})
	defer close(release)
	b.rec.mu.Lock()
	b.rec.onFrame = func(_ gen.Atom, f Frame) {
		if f.To == stuck {
			<-release
		}
	}
	b.rec.mu.Unlock()
	send := func(to gen.PID, m int) {
		t.Helper()
		if err := a.SendFrame(b.name, Frame{Kind: FrameSend, From: pid(a, 7), To: to, Message: m}); err != nil {
			t.Fatal(err)
		}
	}
	send(stuck, 0)
	const n = 500
	for i := 1; i <= n; i++ {
		send(other, i) // the same sender: the same link as the stuck one
	}
	eventually(t, "the other process's frames while the first is stuck", func() bool { return b.rec.count() == n+2 })
	next := 1
	for i := 1; i < n+2; i++ {
		if f := b.rec.frame(i).frame; f.To == other {
			if f.Message != next {
				t.Fatalf("frame %d to one process carries %v", next, f.Message)
			}
			next++
		}
	}
}
