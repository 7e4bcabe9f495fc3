package netstack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
	"ergo.services/ergo/internal/netstack/registrar"
	"ergo.services/ergo/net/handshake"
)

const (
	defaultHandshakeTimeout = 5 * time.Second
	dialTimeout             = 3 * time.Second
	waitConnTimeout         = 5 * time.Second // waiters for another caller's dial
	lostRaceWait            = time.Second     // a lost simultaneous connect waits this long before dialing again
	writeTimeout            = 10 * time.Second
)

// processRegistry holds the types, errors and atoms of every stack of this
// OS process: the framework registers them in its edf package, once per
// process, whichever node's Network().RegisterTypes was called.
var processRegistry = edf.NewRegistry()

// Test hooks: called on the dialing side once a dial of peer is under way
// (it is in s.dials), and once its handshake succeeded, before the
// connection is registered.
var testHookDialing, testHookDialed atomic.Pointer[func(s *Stack, peer gen.Atom)]

func runHook(h *atomic.Pointer[func(s *Stack, peer gen.Atom)], s *Stack, peer gen.Atom) {
	if fn := h.Load(); fn != nil {
		(*fn)(s, peer)
	}
}

// Stack is the network stack of one node. It implements gen.Network.
//
// A connection to a peer is a pool of TCP links (see conn). Handshakes
// are gen.NetworkHandshake values: NetworkOptions.Handshake, or
// AcceptorOptions.Handshake per acceptor, default net/handshake with pool
// size 3. The accepting side's handshake decides the pool size.
//
// A peer is found by, in order: static routes (AddRoute), a stack of that
// name in this OS process, then the registrar (the custom one from
// NetworkOptions.Registrar, or the built-in one on port 4499).
//
// Simultaneous connect (both nodes dial each other at once): the
// connection dialed by the lexically smaller node name wins on both sides
// (see admit). With ERGO_STANDIN_BUGS containing simultaneous-connect
// (read at Start) the stack registers connections as the framework's v320
// branch does instead: an accepted full handshake for a peer it already
// has a connection with is closed (the framework tries to join it to that
// connection and the IDs differ), and a dial that completes after a
// connection from the peer was registered keeps that one and leaks its own
// socket (never read, never closed). Both nodes may then report each other
// connected while nothing flows either way.
type Stack struct {
	opts    Options
	name    gen.Atom
	log     logger
	reg     *edf.Registry
	started time.Time
	mode    gen.NetworkMode

	bugSimultaneous bool // ERGO_STANDIN_BUGS has simultaneous-connect

	handshakes map[string]gen.NetworkHandshake // by Version().String(), first registered wins
	defaultHS  gen.NetworkHandshake

	mu        sync.Mutex
	stopped   bool
	cookie    string
	maxMsg    int
	flags     gen.NetworkFlags
	conns     map[gen.Atom]*conn    // established connections
	last      map[gen.Atom]*conn    // newest connection per peer, until its teardown ends
	dials     map[gen.Atom]*dialing // dials in progress
	pending   map[net.Conn]struct{} // sockets still in the handshake, and leaked ones
	changed   chan struct{}         // closed and replaced whenever conns changes
	routes    []*staticRoute
	acceptors []*acceptor

	registrar *registrar.Registrar // built-in registrar; nil with a custom one or when disabled
	regEvent  registrarEvent       // the built-in registrar's event, once Event() registered it
	stopOnce  sync.Once
	wg        sync.WaitGroup // every goroutine the stack started
}

// bugEnabled reports whether ERGO_STANDIN_BUGS names the bug (a list
// separated by commas or spaces).
func bugEnabled(name string) bool {
	for _, f := range strings.FieldsFunc(os.Getenv("ERGO_STANDIN_BUGS"), func(r rune) bool {
		return r == ',' || r == ' ' || r == ';'
	}) {
		if f == name {
			return true
		}
	}
	return false
}

// Start creates the stack: acceptors (unless hidden), the built-in
// registrar (unless NetworkOptions.Registrar is set). Types and errors go
// to the registry of the process, with the gen errors pre-registered.
// With NetworkModeDisabled it returns a stack that refuses to send.
func Start(opts Options) (*Stack, error) {
	no := opts.Network
	s := &Stack{
		opts:            opts,
		name:            opts.Name,
		log:             logger{opts.Log},
		reg:             processRegistry,
		started:         time.Now(),
		mode:            no.Mode,
		bugSimultaneous: bugEnabled("simultaneous-connect"),
		handshakes:      map[string]gen.NetworkHandshake{},
		cookie:          no.Cookie,
		maxMsg:          no.MaxMessageSize,
		flags:           no.Flags,
		conns:           map[gen.Atom]*conn{},
		last:            map[gen.Atom]*conn{},
		dials:           map[gen.Atom]*dialing{},
		pending:         map[net.Conn]struct{}{},
		changed:         make(chan struct{}),
	}
	// As in the framework: the built-in handshake is registered first, so
	// dials find it under its version whatever NetworkOptions.Handshake is;
	// NetworkOptions.Handshake is the acceptors' default.
	builtin := handshake.Create(handshake.Options{})
	s.RegisterHandshake(builtin)
	s.defaultHS = builtin
	if no.Handshake != nil {
		s.defaultHS = no.Handshake
	}
	if !s.flags.Enable {
		s.flags = gen.DefaultNetworkFlags
	}
	if s.mode == gen.NetworkModeDisabled {
		s.stopped = true
		return s, nil
	}
	if s.cookie == "" {
		b := make([]byte, 16)
		rand.Read(b)
		s.cookie = hex.EncodeToString(b)
		s.log.warning("network cookie is empty, using a random one: other nodes cannot connect to %s", s.name)
	}
	if s.bugSimultaneous {
		s.log.warning("ERGO_STANDIN_BUGS: simultaneous connects are registered as in v320")
		// v320 has no such flag: its peers cannot tell that it settles them
		s.flags.EnableSimultaneousConnect = false
	}
	if s.mode == gen.NetworkModeEnabled {
		specs := no.Acceptors
		if len(specs) == 0 {
			// the framework's default acceptor carries the network cookie
			specs = []gen.AcceptorOptions{{Cookie: s.cookie, MaxMessageSize: no.MaxMessageSize, Flags: s.flags}}
		}
		for _, spec := range specs {
			a, err := listen(s, spec)
			if err != nil {
				for _, a := range s.acceptors {
					a.ln.Close()
				}
				return nil, err
			}
			s.acceptors = append(s.acceptors, a)
			s.RegisterHandshake(a.hs)
		}
	}
	if no.Registrar != nil {
		// as the framework does: a custom registrar is told of the node
		// and its routes, and the static routes it returns are added
		if err := s.registerWith(no.Registrar, opts.Node); err != nil {
			for _, a := range s.acceptors {
				a.ln.Close()
			}
			return nil, err
		}
	}
	if no.Registrar == nil {
		s.registrar = registrar.Start(registrar.Config{
			Name:     string(s.name),
			Port:     s.Port(),
			Register: s.mode == gen.NetworkModeEnabled,
			Logf:     s.log.warning,
			Notify:   s.registrarNotify,
		})
	}
	for _, a := range s.acceptors {
		s.wg.Add(1)
		go s.acceptLoop(a)
	}
	registerLocal(s)
	return s, nil
}

// registerWith registers the node with a custom registrar: the routes of
// its acceptors (none in hidden mode), then the static routes the
// registrar returns. Proxy routes are not supported by the stand-in and
// are dropped with a warning.
func (s *Stack) registerWith(r gen.Registrar, node gen.NodeRegistrar) error {
	var routes gen.RegisterRoutes
	if s.mode == gen.NetworkModeEnabled {
		for _, a := range s.acceptors {
			routes.Routes = append(routes.Routes, gen.Route{Host: s.name.Host(), Port: a.port, TLS: a.spec.CertManager != nil, HandshakeVersion: HandshakeVersion, ProtoVersion: ProtoVersion})
		}
	}
	static, err := r.Register(node, routes)
	if err != nil {
		return fmt.Errorf("unable to register node with the registrar: %w", err)
	}
	for match, route := range static.Routes {
		if err := s.AddRoute(match, route, 0); err != nil {
			s.log.warning("registrar: static route %q: %v", match, err)
		}
	}
	if len(static.Proxies) > 0 {
		s.log.warning("registrar: %d static proxy routes dropped: the stand-in has no proxies", len(static.Proxies))
	}
	return nil
}

// Port returns the port of the first acceptor (0 without acceptors).
func (s *Stack) Port() uint16 {
	if len(s.acceptors) == 0 {
		return 0
	}
	return s.acceptors[0].port
}

// Stop closes the acceptors and all connections (each one reports
// HandleDisconnected), leaves the registrar and waits for every goroutine of
// the stack. It must not be called from a Handler callback.
func (s *Stack) Stop() {
	s.stopOnce.Do(func() {
		unregisterLocal(s)
		s.mu.Lock()
		s.stopped = true
		for _, a := range s.acceptors {
			a.ln.Close()
		}
		for _, c := range s.conns {
			c.closeBy("network stop")
		}
		for nc := range s.pending {
			nc.Close()
		}
		s.notifyLocked()
		s.mu.Unlock()
		if s.registrar != nil {
			s.registrar.Stop()
		}
		if r := s.opts.Network.Registrar; r != nil && s.mode != gen.NetworkModeDisabled {
			r.Terminate()
		}
		s.wg.Wait()
	})
}

func (s *Stack) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// track registers a socket in the handshake so Stop can close it.
func (s *Stack) track(nc net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return false
	}
	s.pending[nc] = struct{}{}
	return true
}

func (s *Stack) untrack(nc net.Conn) {
	s.mu.Lock()
	delete(s.pending, nc)
	s.mu.Unlock()
}

// installLocked makes c the connection to its peer, with nc as its first
// link, and starts it (and, on the dialing side, the extra links). A
// previous connection to the same peer is closed; the new one reports
// HandleConnected only after the old one reported HandleDisconnected.
func (s *Stack) installLocked(c *conn, nc net.Conn, tail []byte) {
	if old := s.conns[c.peer]; old != nil {
		old.closeBy("replaced by a newer connection")
	}
	c.nc = nc
	c.prev = s.last[c.peer]
	s.last[c.peer] = c
	s.conns[c.peer] = c
	s.notifyLocked()
	s.log.info("new connection with %s", c.peer)
	s.wg.Add(1)
	go c.life()
	c.addLink(nc, tail, true)
	if c.redial != nil {
		s.wg.Add(1)
		go c.dialExtra()
	}
}

// forget drops c from the tables once its reader is done.
func (s *Stack) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns[c.peer] == c {
		delete(s.conns, c.peer)
		s.notifyLocked()
	}
}

func (s *Stack) finished(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last[c.peer] == c {
		delete(s.last, c.peer)
	}
}

func (s *Stack) handshakeTimeout(route time.Duration) time.Duration {
	switch {
	case route > 0:
		return route
	case s.opts.Network.HandshakeTimeout > 0:
		return s.opts.Network.HandshakeTimeout
	}
	return defaultHandshakeTimeout
}

// dialHost maps a host from a node name or route to an address to dial or
// bind: "localhost" and "" mean IPv4 loopback.
func dialHost(host string) string {
	if host == "" || host == "localhost" {
		return "127.0.0.1"
	}
	return host
}

// acceptor is one listening socket.
type acceptor struct {
	s    *Stack
	ln   net.Listener
	port uint16
	spec gen.AcceptorOptions
	hs   gen.NetworkHandshake

	mu     sync.Mutex
	cookie string // what Cookie reports (the framework's acceptor.cookie)
	// hsCookie is the cookie the accept loop authenticates with. As in the
	// framework it is the acceptor's cookie at start (the network cookie
	// when AcceptorOptions.Cookie is empty, otherwise empty); when empty,
	// the network cookie at the first accepted connection; then it stays.
	// AcceptorOptions.Cookie itself is never used, nor is SetCookie.
	hsCookie string
	flags    gen.NetworkFlags
	maxMsg   int
}

// listen binds an acceptor, probing upward from the port when it is taken
// (several test binaries may start nodes at the same moment).
func listen(s *Stack, spec gen.AcceptorOptions) (*acceptor, error) {
	host := spec.Host
	if host == "" {
		host = s.name.Host()
	}
	host = dialHost(host)
	network := spec.TCP
	if network == "" {
		network = "tcp4"
	}
	port := spec.Port
	if port == 0 {
		port = gen.DefaultPort
	}
	last := uint32(65535)
	if spec.PortRange > 0 {
		last = min(uint32(port)+uint32(spec.PortRange)-1, 65535)
	}
	hs := spec.Handshake
	if hs == nil {
		hs = s.defaultHS
	}
	a := &acceptor{s: s, spec: spec, hs: hs, flags: spec.Flags, maxMsg: spec.MaxMessageSize}
	if !a.flags.Enable {
		a.flags = hs.NetworkFlags()
	}
	if s.bugSimultaneous {
		a.flags.EnableSimultaneousConnect = false
	}
	if spec.Cookie == "" {
		a.cookie = s.cookie
	}
	a.hsCookie = a.cookie
	var err error
	for p := uint32(port); p <= last; p++ {
		var ln net.Listener
		ln, err = net.Listen(network, net.JoinHostPort(host, strconv.Itoa(int(p))))
		if err == nil {
			a.ln, a.port = ln, uint16(p)
			return a, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("netstack: cannot listen on %s ports %d-%d: %w", host, port, last, err)
}
