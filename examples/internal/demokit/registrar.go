// Package demokit holds what the in-process demos share besides the lab: a
// registrar that keeps their nodes off the host's name service, and the
// check that flags a measured figure far above the election timeout.
package demokit

import "ergo.services/ergo/gen"

// NoRegistrar returns a registrar that knows no node. A demo node given it
// (gen.NetworkOptions.Registrar) reaches its peers only through the static
// routes the lab adds, and never touches the framework's built-in registrar
// on port 4499: starting a node that uses the built-in one waits up to 3 s
// when another process holds that port without answering.
func NoRegistrar() gen.Registrar { return noRegistrar{} }

type noRegistrar struct{}

var noRegistrarVersion = gen.Version{Name: "demo: static routes only", Release: "1.0", License: gen.LicenseMIT}

func (noRegistrar) Resolver() gen.Resolver                   { return noRegistrar{} }
func (noRegistrar) Nodes() ([]gen.Atom, error)               { return nil, nil }
func (noRegistrar) Info() gen.RegistrarInfo                  { return gen.RegistrarInfo{Version: noRegistrarVersion} }
func (noRegistrar) Version() gen.Version                     { return noRegistrarVersion }
func (noRegistrar) Event() (gen.Event, error)                { return gen.Event{}, gen.ErrUnsupported }
func (noRegistrar) Config(...string) (map[string]any, error) { return nil, gen.ErrUnsupported }
func (noRegistrar) ConfigItem(string) (any, error)           { return nil, gen.ErrUnsupported }

// Register and Terminate are the node's: it registers nowhere and gets no
// static routes (the lab adds its own), and there is nothing to end.
func (noRegistrar) Register(gen.NodeRegistrar, gen.RegisterRoutes) (gen.StaticRoutes, error) {
	return gen.StaticRoutes{}, nil
}
func (noRegistrar) Terminate() {}

// It serves no proxies and no application routes.
func (noRegistrar) RegisterProxy(gen.Atom) error                        { return gen.ErrUnsupported }
func (noRegistrar) UnregisterProxy(gen.Atom) error                      { return gen.ErrUnsupported }
func (noRegistrar) RegisterApplicationRoute(gen.ApplicationRoute) error { return gen.ErrUnsupported }
func (noRegistrar) UnregisterApplicationRoute(gen.Atom) error           { return gen.ErrUnsupported }

// Resolve fails: a node without a static route is not reachable.
func (noRegistrar) Resolve(gen.Atom) ([]gen.Route, error)           { return nil, gen.ErrNoRoute }
func (noRegistrar) ResolveProxy(gen.Atom) ([]gen.ProxyRoute, error) { return nil, gen.ErrNoRoute }
func (noRegistrar) ResolveApplication(gen.Atom) (gen.ApplicationRoutes, error) {
	return gen.ApplicationRoutes{}, gen.ErrNoRoute
}
