package netstack

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
	"ergo.services/ergo/internal/netstack/registrar"
)

const (
	defaultHandshakeTimeout = 5 * time.Second
	dialTimeout             = 3 * time.Second
	waitConnTimeout         = 5 * time.Second // waiters for another caller's dial
	lostRaceWait            = time.Second     // a lost simultaneous connect waits this long before dialing again
	writeTimeout            = 10 * time.Second
)

// Stack is the network stack of one node. It implements gen.Network.
//
// Each peer pair shares ONE TCP connection. The real framework keeps a pool
// of 3 links and pins every sender to one link; a single link keeps
// per-sender (indeed all) ordering trivially, so RemoteNodeInfo reports
// PoolSize 1. When both nodes dial each other at once, the connection
// dialed by the lexically smaller node name wins on both sides.
//
// A peer is found by, in order: static routes (AddRoute), a stack of that
// name in this OS process, then the registrar (the custom one from
// NetworkOptions.Registrar, or the built-in one on port 4499).
//
// Frames are length-prefixed; the handshake proves the cookie both ways
// without sending it (see handshake.go); payloads use the edf codec, which
// names types by "#"+PkgPath+"/"+Name on every frame instead of exchanging
// a type cache in the handshake.
type Stack struct {
	opts    Options
	name    gen.Atom
	log     logger
	reg     *edf.Registry
	started time.Time
	mode    gen.NetworkMode

	mu        sync.Mutex
	stopped   bool
	cookie    string
	maxMsg    int
	flags     gen.NetworkFlags
	conns     map[gen.Atom]*conn    // established connections
	last      map[gen.Atom]*conn    // newest connection per peer, until its teardown ends
	dials     map[gen.Atom]*dialing // dials in progress
	pending   map[net.Conn]struct{} // sockets still in the handshake
	changed   chan struct{}         // closed and replaced whenever conns changes
	routes    []*staticRoute
	acceptors []*acceptor

	registrar *registrar.Registrar // built-in registrar; nil with a custom one or when disabled
	stopOnce  sync.Once
	wg        sync.WaitGroup // every goroutine the stack started
}

// Start creates the stack: acceptors (unless hidden), the built-in
// registrar (unless NetworkOptions.Registrar is set) and the codec registry
// with the gen errors pre-registered. With NetworkModeDisabled it returns a
// stack that refuses to send.
func Start(opts Options) (*Stack, error) {
	no := opts.Network
	s := &Stack{
		opts:    opts,
		name:    opts.Name,
		log:     logger{opts.Log},
		reg:     edf.NewRegistry(),
		started: time.Now(),
		mode:    no.Mode,
		cookie:  no.Cookie,
		maxMsg:  no.MaxMessageSize,
		flags:   no.Flags,
		conns:   map[gen.Atom]*conn{},
		last:    map[gen.Atom]*conn{},
		dials:   map[gen.Atom]*dialing{},
		pending: map[net.Conn]struct{}{},
		changed: make(chan struct{}),
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
	if s.mode == gen.NetworkModeEnabled {
		specs := no.Acceptors
		if len(specs) == 0 {
			specs = []gen.AcceptorOptions{{}}
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
		}
	}
	if no.Registrar == nil {
		s.registrar = registrar.Start(registrar.Config{
			Name:     string(s.name),
			Port:     s.Port(),
			Register: s.mode == gen.NetworkModeEnabled,
			Logf:     s.log.warning,
		})
	}
	for _, a := range s.acceptors {
		s.wg.Add(1)
		go s.acceptLoop(a)
	}
	registerLocal(s)
	return s, nil
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

// installLocked makes c the connection to its peer and starts its reader.
// A previous connection to the same peer is closed; the new one reports
// HandleConnected only after the old one reported HandleDisconnected.
func (s *Stack) installLocked(c *conn) {
	if old := s.conns[c.peer]; old != nil {
		old.closeBy("replaced by a newer connection")
	}
	c.prev = s.last[c.peer]
	s.last[c.peer] = c
	s.conns[c.peer] = c
	s.notifyLocked()
	s.wg.Add(1)
	go c.serve()
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
	s      *Stack
	ln     net.Listener
	port   uint16
	spec   gen.AcceptorOptions
	mu     sync.Mutex
	cookie string
	flags  gen.NetworkFlags
	maxMsg int
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
	var err error
	for p := uint32(port); p <= last; p++ {
		var ln net.Listener
		ln, err = net.Listen(network, net.JoinHostPort(host, strconv.Itoa(int(p))))
		if err == nil {
			return &acceptor{s: s, ln: ln, port: uint16(p), spec: spec, cookie: spec.Cookie,
				flags: spec.Flags, maxMsg: spec.MaxMessageSize}, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, fmt.Errorf("netstack: cannot listen on %s ports %d-%d: %w", host, port, last, err)
}
