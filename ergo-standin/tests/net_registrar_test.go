package tests

import (
	"errors"
	"sync"
	"testing"

	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

// recordingRegistrar is a custom registrar that records what the node
// asks of it and hands out the static routes it was given.
type recordingRegistrar struct {
	mu         sync.Mutex
	static     gen.StaticRoutes
	fail       error
	registered []gen.Atom
	routes     []gen.Route
	terminated int
}

func (r *recordingRegistrar) Register(node gen.NodeRegistrar, routes gen.RegisterRoutes) (gen.StaticRoutes, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.registered = append(r.registered, node.Name())
	r.routes = append(r.routes, routes.Routes...)
	return r.static, r.fail
}

func (r *recordingRegistrar) Terminate() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.terminated++
}

func (r *recordingRegistrar) Resolver() gen.Resolver                { return r }
func (r *recordingRegistrar) Resolve(gen.Atom) ([]gen.Route, error) { return nil, gen.ErrNoRoute }
func (r *recordingRegistrar) ResolveProxy(gen.Atom) ([]gen.ProxyRoute, error) {
	return nil, gen.ErrNoRoute
}
func (r *recordingRegistrar) ResolveApplication(gen.Atom) (gen.ApplicationRoutes, error) {
	return gen.ApplicationRoutes{}, gen.ErrUnsupported
}
func (r *recordingRegistrar) RegisterProxy(gen.Atom) error   { return gen.ErrUnsupported }
func (r *recordingRegistrar) UnregisterProxy(gen.Atom) error { return gen.ErrUnsupported }
func (r *recordingRegistrar) RegisterApplicationRoute(gen.ApplicationRoute) error {
	return gen.ErrUnsupported
}
func (r *recordingRegistrar) UnregisterApplicationRoute(gen.Atom) error { return gen.ErrUnsupported }
func (r *recordingRegistrar) Nodes() ([]gen.Atom, error)                { return nil, gen.ErrUnsupported }
func (r *recordingRegistrar) Config(...string) (map[string]any, error) {
	return nil, gen.ErrUnsupported
}
func (r *recordingRegistrar) ConfigItem(string) (any, error) { return nil, gen.ErrUnsupported }
func (r *recordingRegistrar) Event() (gen.Event, error)      { return gen.Event{}, gen.ErrUnsupported }
func (r *recordingRegistrar) Info() gen.RegistrarInfo        { return gen.RegistrarInfo{} }
func (r *recordingRegistrar) Version() gen.Version           { return gen.Version{Name: "recording"} }

// As in the framework, the node registers with a custom registrar when its
// network starts (its name and its acceptor's route), adds the static
// routes the registrar returns, and terminates the registrar when it
// stops. A registrar that refuses the registration fails the start.
func TestCustomRegistrarIsDrivenByTheNode(t *testing.T) {
	peer := netNode(t, "peer", testCookie)
	reg := &recordingRegistrar{static: gen.StaticRoutes{Routes: map[string]gen.NetworkRoute{
		string(peer.Name()): {Route: gen.Route{Host: "127.0.0.1", Port: port(t, peer)}},
	}}}
	n := startNode(t, "custom", gen.NodeOptions{Network: gen.NetworkOptions{
		Cookie:    testCookie,
		Registrar: reg,
		Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1"}},
	}})
	reg.mu.Lock()
	registered, routes := append([]gen.Atom(nil), reg.registered...), append([]gen.Route(nil), reg.routes...)
	reg.mu.Unlock()
	if len(registered) != 1 || registered[0] != n.Name() {
		t.Fatalf("registered %v, want [%s] once", registered, n.Name())
	}
	if len(routes) != 1 || routes[0].Port != port(t, n) {
		t.Fatalf("published routes %+v, want the acceptor's port %d", routes, port(t, n))
	}
	if _, err := n.Network().GetNode(peer.Name()); err != nil {
		t.Fatalf("the registrar's static route to %s was not used: %v", peer.Name(), err)
	}
	n.Stop()
	reg.mu.Lock()
	terminated := reg.terminated
	reg.mu.Unlock()
	if terminated != 1 {
		t.Fatalf("Terminate called %d times at stop, want 1", terminated)
	}

	refusing := &recordingRegistrar{fail: errors.New("refused")}
	if bad, err := ergo.StartNode(nodeName("refused"), gen.NodeOptions{Network: gen.NetworkOptions{
		Cookie: testCookie, Registrar: refusing, Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1"}},
	}}); err == nil {
		bad.StopForce()
		t.Fatal("a registrar that refuses the registration did not fail the start")
	}
}
