package lab

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"ergo.services/ergo/act"
	"ergo.services/ergo/gen"
)

// TestClusterPool checks that a connection's whole pool of TCP links goes
// through the proxy: the meter sees every byte, a cut disconnects both
// sides and keeps them apart (no link re-dials around the proxy), and the
// heal lets them connect again.
func TestClusterPool(t *testing.T) {
	a := gen.Atom(fmt.Sprintf("lab-pool-%d-a@localhost", os.Getpid()))
	b := gen.Atom(fmt.Sprintf("lab-pool-%d-b@localhost", os.Getpid()))
	c, meter, err := NewMetered([]gen.Atom{a, b}, Options{
		Cookie: "lab-test",
		Node:   func(gen.Atom) gen.NodeOptions { return gen.NodeOptions{Log: ActorLog(os.Stderr, gen.LogLevelError)} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.StartAll(); err != nil {
		t.Fatal(err)
	}

	remote, err := c.Node(a).Network().GetNode(b)
	if err != nil {
		t.Fatal(err)
	}
	proxy := fmt.Sprintf("127.0.0.1:%d", c.links[[2]gen.Atom{a, b}].port())
	waitFor(t, "link of the pool", func() bool { return remote.Info().PoolLen == remote.Info().PoolSize })
	if info := remote.Info(); slices.Equal(info.PoolDSN, []string{proxy}) == false {
		t.Fatalf("pool DSN %v, want the proxy %s", info.PoolDSN, proxy)
	}
	// senders with different PIDs use different links
	for i := 0; i < 20; i++ {
		if _, err := c.Node(a).Spawn(func() gen.ProcessBehavior { return &sender{} }, gen.ProcessOptions{}, b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "frame", func() bool { return remote.Info().BytesOut > 0 && remote.Info().MessagesOut >= 20 })
	// the proxies copy on their own goroutines: give them time to catch up
	waitFor(t, "byte at the proxies that the connection sent", func() bool { return meter.Bytes() >= remote.Info().BytesOut })
	if n := meter.Conns(); n < uint64(remote.Info().PoolSize) {
		t.Errorf("the proxies accepted %d connections for a pool of %d links", n, remote.Info().PoolSize)
	}

	connected := func(from, to gen.Atom) bool { return slices.Contains(c.Node(from).Network().Nodes(), to) }
	c.Partition([]gen.Atom{a}, []gen.Atom{b})
	waitFor(t, "side disconnected by the cut", func() bool { return connected(a, b) == false && connected(b, a) == false })
	time.Sleep(500 * time.Millisecond) // time for re-dials to get around the proxy, if they could
	if connected(a, b) || connected(b, a) {
		t.Fatal("the nodes reconnected through a cut")
	}
	if _, err := c.Node(a).Network().GetNode(b); err == nil {
		t.Fatal("a dial got through a cut")
	}

	c.Heal()
	if _, err := c.Node(a).Network().GetNode(b); err != nil {
		t.Fatalf("after the heal: %v", err)
	}
}

// sender sends one message to a name nobody registered on the given node:
// it crosses the wire all the same.
type sender struct{ act.Actor }

func (s *sender) Init(args ...any) error {
	return s.Send(gen.ProcessID{Name: "nobody", Node: args[0].(gen.Atom)}, "hello")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for ok() == false {
		if time.Now().After(deadline) {
			t.Fatalf("not every %s within 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
