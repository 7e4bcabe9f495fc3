package netstack

import (
	"errors"
	"reflect"
	"sort"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
)

var _ gen.Network = (*Stack)(nil)

// SendFrame connects to peer if needed, then encodes f in the caller's
// goroutine (an unregistered type is reported here, wrapping
// gen.ErrUnregistered or gen.ErrUnsupported) and writes the frame to one
// link of the pool, as the framework does (connect, then encode). Errors:
// gen.ErrNetworkStopped, gen.ErrNoRoute (cannot connect), gen.ErrTooLarge
// (over the peer's limit), gen.ErrNoConnection (no link left). A write
// that fails is not reported: the frame is lost.
func (s *Stack) SendFrame(peer gen.Atom, f Frame) error {
	if s.mode == gen.NetworkModeDisabled {
		return gen.ErrNetworkStopped
	}
	c, err := s.connection(peer, nil)
	if err != nil {
		return err
	}
	b, err := encodeFrame(s.reg, c.errs, f)
	if err != nil {
		return err
	}
	limit := c.info.maxMsg
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	if len(b)-frameHeader > limit {
		return gen.ErrTooLarge
	}
	return c.send(b, linkKey(f))
}

// Registrar returns the custom registrar, or a view of the built-in one.
func (s *Stack) Registrar() (gen.Registrar, error) {
	if s.opts.Network.Registrar != nil {
		return s.opts.Network.Registrar, nil
	}
	if s.registrar == nil {
		return nil, gen.ErrNetworkStopped
	}
	return builtinRegistrar{s}, nil
}

// ResolveApplication is not supported by the stand-in.
func (s *Stack) ResolveApplication(name gen.Atom) (gen.ApplicationRoutes, error) {
	var none gen.ApplicationRoutes
	return none, gen.ErrUnsupported
}

// Cookie returns the network cookie.
func (s *Stack) Cookie() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cookie
}

// SetCookie changes the cookie for the next handshakes.
func (s *Stack) SetCookie(cookie string) error {
	if cookie == "" {
		return gen.ErrIncorrect
	}
	s.mu.Lock()
	s.cookie = cookie
	s.mu.Unlock()
	return nil
}

// MaxMessageSize returns the limit announced to peers (0 = DefaultMaxMessageSize).
func (s *Stack) MaxMessageSize() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxMsg
}

// SetMaxMessageSize changes the limit for the next connections.
func (s *Stack) SetMaxMessageSize(size int) {
	s.mu.Lock()
	s.maxMsg = max(size, 0)
	s.mu.Unlock()
}

// NetworkFlags returns the flags announced to peers.
func (s *Stack) NetworkFlags() gen.NetworkFlags {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flags
}

// SetNetworkFlags changes the flags for the next connections; flags with
// Enable false mean gen.DefaultNetworkFlags.
func (s *Stack) SetNetworkFlags(flags gen.NetworkFlags) {
	if !flags.Enable {
		flags = gen.DefaultNetworkFlags
	}
	if s.bugSimultaneous {
		flags.EnableSimultaneousConnect = false
	}
	s.mu.Lock()
	s.flags = flags
	s.mu.Unlock()
}

// Acceptors lists the acceptors; Info().Interface has the bound port.
func (s *Stack) Acceptors() ([]gen.Acceptor, error) {
	if s.mode == gen.NetworkModeDisabled {
		return nil, gen.ErrNetworkStopped
	}
	out := make([]gen.Acceptor, 0, len(s.acceptors))
	for _, a := range s.acceptors {
		out = append(out, a)
	}
	return out, nil
}

// Node returns the peer if connected, otherwise gen.ErrNoConnection.
func (s *Stack) Node(name gen.Atom) (gen.RemoteNode, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mode == gen.NetworkModeDisabled {
		return nil, gen.ErrNetworkStopped
	}
	if c := s.conns[name]; c != nil {
		return remoteNode{c}, nil
	}
	return nil, gen.ErrNoConnection
}

// GetNode returns the peer, connecting synchronously if needed.
func (s *Stack) GetNode(name gen.Atom) (gen.RemoteNode, error) {
	c, err := s.connection(name, nil)
	if err != nil {
		return nil, err
	}
	return remoteNode{c}, nil
}

// GetNodeWithRoute connects using route unless already connected.
func (s *Stack) GetNodeWithRoute(name gen.Atom, route gen.NetworkRoute) (gen.RemoteNode, error) {
	c, err := s.connection(name, &route)
	if err != nil {
		return nil, err
	}
	return remoteNode{c}, nil
}

// Nodes lists the connected peers, sorted.
func (s *Stack) Nodes() []gen.Atom {
	s.mu.Lock()
	out := make([]gen.Atom, 0, len(s.conns))
	for name := range s.conns {
		out = append(out, name)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// AddProxyRoute is not supported by the stand-in.
func (s *Stack) AddProxyRoute(match string, proxy gen.NetworkProxyRoute, weight int) error {
	return gen.ErrUnsupported
}

// RemoveProxyRoute is not supported by the stand-in.
func (s *Stack) RemoveProxyRoute(match string) error { return gen.ErrUnsupported }

// ProxyRoute is not supported by the stand-in.
func (s *Stack) ProxyRoute(name gen.Atom) ([]gen.NetworkProxyRoute, error) {
	return nil, gen.ErrUnsupported
}

// RegisterProto is ignored: the stand-in has one protocol.
func (s *Stack) RegisterProto(proto gen.NetworkProto) {}

// RegisterHandshake makes a handshake available to dials of routes with its
// version; the first one registered for a version stays (as in the
// framework).
func (s *Stack) RegisterHandshake(handshake gen.NetworkHandshake) {
	if handshake == nil {
		s.log.error("unable to register nil value as a handshake")
		return
	}
	key := handshake.Version().String()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handshakes[key] == nil {
		s.handshakes[key] = handshake
	}
}

// EnableSpawn is not supported (no remote spawn in the stand-in).
func (s *Stack) EnableSpawn(name gen.Atom, factory gen.ProcessFactory, nodes ...gen.Atom) error {
	return gen.ErrUnsupported
}

// DisableSpawn is not supported.
func (s *Stack) DisableSpawn(name gen.Atom, nodes ...gen.Atom) error { return gen.ErrUnsupported }

// EnableApplicationStart is not supported.
func (s *Stack) EnableApplicationStart(name gen.Atom, nodes ...gen.Atom) error {
	return gen.ErrUnsupported
}

// DisableApplicationStart is not supported.
func (s *Stack) DisableApplicationStart(name gen.Atom, nodes ...gen.Atom) error {
	return gen.ErrUnsupported
}

// Info describes the stack.
func (s *Stack) Info() (gen.NetworkInfo, error) {
	if s.mode == gen.NetworkModeDisabled {
		return gen.NetworkInfo{Mode: s.mode}, gen.ErrNetworkStopped
	}
	info := gen.NetworkInfo{
		Mode:             s.mode,
		MaxMessageSize:   s.MaxMessageSize(),
		HandshakeVersion: s.defaultHS.Version(),
		ProtoVersion:     ProtoVersion,
		Flags:            s.NetworkFlags(),
	}
	if r, err := s.Registrar(); err == nil {
		info.Registrar = r.Info()
	}
	for _, a := range s.acceptors {
		info.Acceptors = append(info.Acceptors, a.Info())
	}
	return info, nil
}

// Mode returns the network mode.
func (s *Stack) Mode() gen.NetworkMode { return s.mode }

// Protos returns the single built-in protocol.
func (s *Stack) Protos() []gen.NetworkProto { return []gen.NetworkProto{proto{}} }

type proto struct{}

func (proto) Version() gen.Version { return ProtoVersion }

// RegisterType registers one type for the codec of this OS process (every
// node of the process can then encode it); types it refers to must be
// registered already. Values only, exported fields only. As in v3.3.0
// (node/network.go), a type registered before (by this node or another one
// of the process) is no error: gen.ErrTaken from the registry counts as
// success.
func (s *Stack) RegisterType(v any) error { return s.RegisterTypes([]any{v}) }

// RegisterTypes registers a batch of types in any order (all or nothing).
// Types registered before are left out of the batch, so registering the
// same list on every node of one process succeeds and registers the rest.
func (s *Stack) RegisterTypes(types []any) error {
	fresh := make([]any, 0, len(types))
	seen := make(map[reflect.Type]bool, len(types))
	for _, v := range types {
		if v != nil {
			t := reflect.TypeOf(v)
			if seen[t] {
				continue
			}
			seen[t] = true
			if got, ok := s.reg.LookupType(edf.TypeName(t)); ok && got == t {
				continue
			}
		}
		fresh = append(fresh, v)
	}
	if len(fresh) == 0 {
		return nil
	}
	return taken(s.reg.RegisterTypes(fresh))
}

// RegisterError makes e travel by identity (errors.Is works on the peer
// when the peer registered the same variable) on connections formed after
// it; process-wide, like types. Registered before: no error (v3.3.0).
func (s *Stack) RegisterError(e error) error { return taken(s.reg.RegisterErrors([]error{e})) }

// RegisterErrors registers several errors, one by one; those registered
// before are no error (v3.3.0).
func (s *Stack) RegisterErrors(errs []error) error {
	for _, e := range errs {
		if err := s.RegisterError(e); err != nil {
			return err
		}
	}
	return nil
}

// RegisterAtom records an atom (atoms always travel in full here).
func (s *Stack) RegisterAtom(a gen.Atom) error { return taken(s.reg.RegisterAtoms([]gen.Atom{a})) }

// RegisterAtoms records atoms.
func (s *Stack) RegisterAtoms(atoms []gen.Atom) error { return taken(s.reg.RegisterAtoms(atoms)) }

// taken turns gen.ErrTaken into success, as the v3.3.0 network does for
// every registration call.
func taken(err error) error {
	if errors.Is(err, gen.ErrTaken) {
		return nil
	}
	return err
}

// RegisteredTypes lists the registered types, built-ins included.
func (s *Stack) RegisteredTypes() []gen.RegisteredTypeInfo { return s.reg.RegisteredTypes() }

// LookupType finds a type by "#pkgpath/Name" or by the short "Name".
func (s *Stack) LookupType(name string) (reflect.Type, bool) { return s.reg.LookupType(name) }
