package netstack

import (
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/registrar"
)

// remoteNode is the gen.RemoteNode view of one connection. It keeps
// answering with the recorded data after the connection is gone.
type remoteNode struct{ c *conn }

var _ gen.RemoteNode = remoteNode{}

func (r remoteNode) Name() gen.Atom  { return r.c.peer }
func (r remoteNode) Creation() int64 { return r.c.info.creation }

// Uptime is the peer's network stack uptime in seconds.
func (r remoteNode) Uptime() int64 { return time.Now().Unix() - r.c.info.start }

// ConnectionUptime is the age of the connection in seconds.
func (r remoteNode) ConnectionUptime() int64 { return int64(time.Since(r.c.since).Seconds()) }

func (r remoteNode) Version() gen.Version { return r.c.info.version }

// Info describes the peer. PoolSize is the size agreed in the handshake;
// PoolLen the links the connection has now (the extra links join after
// the first, so a new connection reports fewer until they are in); PoolDSN
// the addresses the dialing side re-dials (empty on the accepting side).
func (r remoteNode) Info() gen.RemoteNodeInfo {
	poolSize, poolLen, poolDSN := r.c.poolInfo()
	if !r.c.alive() {
		poolLen = 0
	}
	return gen.RemoteNodeInfo{
		Node:             r.c.peer,
		Uptime:           r.Uptime(),
		ConnectionUptime: r.ConnectionUptime(),
		Version:          r.c.info.version,
		HandshakeVersion: HandshakeVersion,
		ProtoVersion:     ProtoVersion,
		NetworkFlags:     r.c.info.flags,
		PoolSize:         poolSize,
		PoolLen:          poolLen,
		PoolDSN:          poolDSN,
		MaxMessageSize:   r.c.info.maxMsg,
		MessagesIn:       r.c.msgIn.Load(),
		MessagesOut:      r.c.msgOut.Load(),
		BytesIn:          r.c.bytesIn.Load(),
		BytesOut:         r.c.bytesOut.Load(),
	}
}

// Spawn is not supported (no remote spawn in the stand-in).
func (r remoteNode) Spawn(name gen.Atom, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return gen.PID{}, gen.ErrUnsupported
}

// SpawnRegister is not supported.
func (r remoteNode) SpawnRegister(register gen.Atom, name gen.Atom, options gen.ProcessOptions, args ...any) (gen.PID, error) {
	return gen.PID{}, gen.ErrUnsupported
}

// ApplicationStart is not supported (nor are its variants).
func (r remoteNode) ApplicationStart(name gen.Atom, options gen.ApplicationOptions) error {
	return gen.ErrUnsupported
}

func (r remoteNode) ApplicationStartTemporary(name gen.Atom, options gen.ApplicationOptions) error {
	return gen.ErrUnsupported
}

func (r remoteNode) ApplicationStartTransient(name gen.Atom, options gen.ApplicationOptions) error {
	return gen.ErrUnsupported
}

func (r remoteNode) ApplicationStartPermanent(name gen.Atom, options gen.ApplicationOptions) error {
	return gen.ErrUnsupported
}

// ApplicationInfo is not supported.
func (r remoteNode) ApplicationInfo(name gen.Atom) (gen.ApplicationInfo, error) {
	return gen.ApplicationInfo{}, gen.ErrUnsupported
}

// Disconnect closes the connection and returns at once; both sides then
// report HandleDisconnected.
func (r remoteNode) Disconnect() { r.c.closeBy("disconnect requested") }

// builtinRegistrar is the gen.Registrar view of the built-in registrar.
type builtinRegistrar struct{ s *Stack }

func (b builtinRegistrar) Resolver() gen.Resolver { return b }

// Register and Terminate are driven by the stack itself for the built-in
// registrar (Start, Stop): as views, they do nothing.
func (b builtinRegistrar) Register(gen.NodeRegistrar, gen.RegisterRoutes) (gen.StaticRoutes, error) {
	return gen.StaticRoutes{}, nil
}
func (b builtinRegistrar) Terminate()                     {}
func (b builtinRegistrar) RegisterProxy(gen.Atom) error   { return gen.ErrUnsupported }
func (b builtinRegistrar) UnregisterProxy(gen.Atom) error { return gen.ErrUnsupported }
func (b builtinRegistrar) ConfigItem(string) (any, error) { return nil, gen.ErrUnsupported }
func (b builtinRegistrar) UnregisterApplicationRoute(gen.Atom) error {
	return gen.ErrUnsupported
}
func (b builtinRegistrar) RegisterApplicationRoute(gen.ApplicationRoute) error {
	return gen.ErrUnsupported
}
func (b builtinRegistrar) Version() gen.Version { return registrarVersion }
func (b builtinRegistrar) Config(items ...string) (map[string]any, error) {
	return nil, gen.ErrUnsupported
}

var registrarVersion = gen.Version{Name: "Registrar (stand-in)", Release: "1.0", License: gen.LicenseMIT}

func (b builtinRegistrar) Info() gen.RegistrarInfo {
	return gen.RegistrarInfo{
		Server:         "127.0.0.1:4499",
		EmbeddedServer: b.s.registrar.IsServer(),
		SupportEvent:   true,
		Version:        registrarVersion,
	}
}

// Resolve returns the route of a node registered with the built-in registrar.
func (b builtinRegistrar) Resolve(node gen.Atom) ([]gen.Route, error) {
	port, err := b.s.registrar.Resolve(string(node))
	if err == registrar.ErrNotFound {
		return nil, gen.ErrNoRoute
	}
	if err != nil {
		return nil, err
	}
	return []gen.Route{{Host: node.Host(), Port: port, HandshakeVersion: HandshakeVersion, ProtoVersion: ProtoVersion}}, nil
}

func (b builtinRegistrar) ResolveProxy(node gen.Atom) ([]gen.ProxyRoute, error) {
	return nil, gen.ErrUnsupported
}

func (b builtinRegistrar) ResolveApplication(name gen.Atom) (gen.ApplicationRoutes, error) {
	var none gen.ApplicationRoutes
	return none, gen.ErrUnsupported
}
