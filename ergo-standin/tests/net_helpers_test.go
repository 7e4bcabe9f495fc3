package tests

import (
	"errors"
	"net"
	"strconv"
	"testing"

	"ergo.services/ergo/gen"
)

// Ping and Pong are registered network types.
type Ping struct {
	N    int
	Text string
}

// Pong is the reply type.
type Pong struct{ N int }

// NotRegistered is never registered in the network.
type NotRegistered struct{ X int }

const testCookie = "test-cookie"

// netNode starts a networked node on loopback with the test types
// registered.
func netNode(t testing.TB, prefix, cookie string) gen.Node {
	t.Helper()
	n := startNode(t, prefix, gen.NodeOptions{
		Network: gen.NetworkOptions{
			Cookie:    cookie,
			Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1"}},
		},
	})
	// one registry per OS process: the first node registers them
	if err := n.Network().RegisterTypes([]any{Ping{}, Pong{}}); err != nil && !errors.Is(err, gen.ErrTaken) {
		t.Fatalf("register types: %s", err)
	}
	return n
}

// port returns the acceptor port of a node.
func port(t testing.TB, n gen.Node) uint16 {
	t.Helper()
	acceptors, err := n.Network().Acceptors()
	if err != nil || len(acceptors) == 0 {
		t.Fatalf("acceptors: %v", err)
	}
	_, p, err := net.SplitHostPort(acceptors[0].Info().Interface)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.Atoi(p)
	return uint16(v)
}

// routes adds static routes between the nodes, both ways.
func routes(t testing.TB, nodes ...gen.Node) {
	t.Helper()
	for _, a := range nodes {
		for _, b := range nodes {
			if a == b {
				continue
			}
			r := gen.NetworkRoute{Route: gen.Route{Host: "127.0.0.1", Port: port(t, b)}}
			if err := a.Network().AddRoute(string(b.Name()), r, 1); err != nil {
				t.Fatalf("add route: %s", err)
			}
		}
	}
}

// pair starts two connected-able nodes with routes to each other.
func pair(t testing.TB) (gen.Node, gen.Node) {
	a := netNode(t, "a", testCookie)
	b := netNode(t, "b", testCookie)
	routes(t, a, b)
	return a, b
}
