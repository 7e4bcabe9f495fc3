package node

import (
	"reflect"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

// stack is what the node needs from the network layer.
type stack interface {
	gen.Network
	SendFrame(peer gen.Atom, f netstack.Frame) error
	Stop()
}

// disabledNetwork is the network of a node started with NetworkModeDisabled.
type disabledNetwork struct{}

var _ stack = disabledNetwork{}

func (disabledNetwork) SendFrame(gen.Atom, netstack.Frame) error { return gen.ErrNetworkStopped }
func (disabledNetwork) Stop()                                    {}
func (disabledNetwork) Registrar() (gen.Registrar, error)        { return nil, gen.ErrNetworkStopped }
func (disabledNetwork) ResolveApplication(gen.Atom) (gen.ApplicationRoutes, error) {
	return gen.ApplicationRoutes{}, gen.ErrNetworkStopped
}
func (disabledNetwork) Cookie() string                     { return "" }
func (disabledNetwork) SetCookie(string) error             { return gen.ErrNetworkStopped }
func (disabledNetwork) MaxMessageSize() int                { return 0 }
func (disabledNetwork) SetMaxMessageSize(int)              {}
func (disabledNetwork) NetworkFlags() gen.NetworkFlags     { return gen.NetworkFlags{} }
func (disabledNetwork) SetNetworkFlags(gen.NetworkFlags)   {}
func (disabledNetwork) Acceptors() ([]gen.Acceptor, error) { return nil, gen.ErrNetworkStopped }
func (disabledNetwork) Node(gen.Atom) (gen.RemoteNode, error) {
	return nil, gen.ErrNetworkStopped
}
func (disabledNetwork) GetNode(gen.Atom) (gen.RemoteNode, error) {
	return nil, gen.ErrNetworkStopped
}
func (disabledNetwork) GetNodeWithRoute(gen.Atom, gen.NetworkRoute) (gen.RemoteNode, error) {
	return nil, gen.ErrNetworkStopped
}
func (disabledNetwork) Nodes() []gen.Atom { return nil }
func (disabledNetwork) AddRoute(string, gen.NetworkRoute, int) error {
	return gen.ErrNetworkStopped
}
func (disabledNetwork) RemoveRoute(string) error { return gen.ErrNetworkStopped }
func (disabledNetwork) Route(gen.Atom) ([]gen.NetworkRoute, error) {
	return nil, gen.ErrNetworkStopped
}
func (disabledNetwork) AddProxyRoute(string, gen.NetworkProxyRoute, int) error {
	return gen.ErrNetworkStopped
}
func (disabledNetwork) RemoveProxyRoute(string) error { return gen.ErrNetworkStopped }
func (disabledNetwork) ProxyRoute(gen.Atom) ([]gen.NetworkProxyRoute, error) {
	return nil, gen.ErrNetworkStopped
}
func (disabledNetwork) RegisterProto(gen.NetworkProto)         {}
func (disabledNetwork) RegisterHandshake(gen.NetworkHandshake) {}
func (disabledNetwork) EnableSpawn(gen.Atom, gen.ProcessFactory, ...gen.Atom) error {
	return gen.ErrNetworkStopped
}
func (disabledNetwork) DisableSpawn(gen.Atom, ...gen.Atom) error { return gen.ErrNetworkStopped }
func (disabledNetwork) EnableApplicationStart(gen.Atom, ...gen.Atom) error {
	return gen.ErrNetworkStopped
}
func (disabledNetwork) DisableApplicationStart(gen.Atom, ...gen.Atom) error {
	return gen.ErrNetworkStopped
}
func (disabledNetwork) Info() (gen.NetworkInfo, error) {
	return gen.NetworkInfo{Mode: gen.NetworkModeDisabled}, nil
}
func (disabledNetwork) Mode() gen.NetworkMode                     { return gen.NetworkModeDisabled }
func (disabledNetwork) Protos() []gen.NetworkProto                { return nil }
func (disabledNetwork) RegisterType(any) error                    { return gen.ErrUnsupported }
func (disabledNetwork) RegisterTypes([]any) error                 { return gen.ErrUnsupported }
func (disabledNetwork) RegisterError(error) error                 { return gen.ErrUnsupported }
func (disabledNetwork) RegisterErrors([]error) error              { return gen.ErrUnsupported }
func (disabledNetwork) RegisterAtom(gen.Atom) error               { return gen.ErrUnsupported }
func (disabledNetwork) RegisterAtoms([]gen.Atom) error            { return gen.ErrUnsupported }
func (disabledNetwork) RegisteredTypes() []gen.RegisteredTypeInfo { return nil }
func (disabledNetwork) LookupType(string) (reflect.Type, bool)    { return nil, false }
