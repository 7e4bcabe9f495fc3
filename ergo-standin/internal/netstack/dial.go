package netstack

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/net/handshake"
)

// dialing is a dial in progress; concurrent callers wait for it.
type dialing struct {
	done chan struct{}
	err  error
}

// target is one address to try, with the credentials for it.
type target struct {
	addr      string
	cookie    string
	flags     gen.NetworkFlags // Enable false: the network's
	timeout   time.Duration
	handshake gen.Version // zero: the built-in handshake's
}

// connection returns the connection to peer, dialing it if needed. Callers
// racing for the same peer share one dial: the others wait up to 5 s and
// reuse the winner's connection.
func (s *Stack) connection(peer gen.Atom, route *gen.NetworkRoute) (*conn, error) {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return nil, gen.ErrNetworkStopped
	}
	if c := s.conns[peer]; c != nil {
		s.mu.Unlock()
		return c, nil
	}
	if peer == s.name {
		s.mu.Unlock()
		return nil, gen.ErrNoRoute
	}
	if d := s.dials[peer]; d != nil {
		s.mu.Unlock()
		t := time.NewTimer(waitConnTimeout)
		defer t.Stop()
		select {
		case <-d.done:
		case <-t.C:
			return nil, gen.ErrNoRoute
		}
		s.mu.Lock()
		c, stopped := s.conns[peer], s.stopped
		s.mu.Unlock()
		switch {
		case c != nil:
			return c, nil
		case stopped:
			return nil, gen.ErrNetworkStopped
		case d.err != nil:
			return nil, d.err
		}
		return nil, gen.ErrNoRoute
	}
	d := &dialing{done: make(chan struct{})}
	s.dials[peer] = d
	s.mu.Unlock()
	runHook(&testHookDialing, s, peer)

	c, err := s.dial(peer, route)

	s.mu.Lock()
	delete(s.dials, peer)
	d.err = err
	close(d.done)
	s.mu.Unlock()
	return c, err
}

// dial tries the static routes (or only the given route), then a stack of
// that name in this process, then the registrar. Resolve, dial and
// handshake errors all end up as gen.ErrNoRoute.
func (s *Stack) dial(peer gen.Atom, route *gen.NetworkRoute) (*conn, error) {
	var routes []gen.NetworkRoute
	if route != nil {
		routes = []gen.NetworkRoute{*route}
	} else {
		routes, _ = s.Route(peer)
	}
	tried := map[string]bool{}
	try := func(targets []target) (*conn, error) {
		for _, t := range targets {
			if tried[t.addr] {
				continue
			}
			tried[t.addr] = true
			c, err := s.dialOne(peer, t)
			if err == nil {
				return c, nil
			}
			if errors.Is(err, gen.ErrNetworkStopped) {
				return nil, err
			}
			s.log.debug("cannot connect to %s at %s: %v", peer, t.addr, err)
		}
		return nil, nil
	}
	var targets []target
	for _, r := range routes {
		targets = append(targets, s.expand(peer, r)...)
	}
	if c, err := try(targets); c != nil || err != nil {
		return c, err
	}
	// A matching static route is final, as in the framework: a node pinned
	// to an address (a proxy, a firewall rule) is never reached behind its
	// back through the registrar or another stack of this process.
	if route == nil && len(routes) == 0 {
		if c, err := try(s.localTarget(peer)); c != nil || err != nil {
			return c, err
		}
		if c, err := try(s.resolve(peer, gen.NetworkRoute{})); c != nil || err != nil {
			return c, err
		}
	}
	return nil, gen.ErrNoRoute
}

// expand turns a static route into addresses: its own host and port, or
// whatever its resolver (or the registrar, without a port) answers.
func (s *Stack) expand(peer gen.Atom, r gen.NetworkRoute) []target {
	if r.Route.Port == 0 {
		return s.resolve(peer, r)
	}
	host := r.Route.Host
	if host == "" {
		host = peer.Host()
	}
	return []target{s.target(host, r.Route.Port, r)}
}

// resolve asks the route's resolver, a custom registrar, or the built-in
// registrar for peer's address.
func (s *Stack) resolve(peer gen.Atom, r gen.NetworkRoute) []target {
	resolver := r.Resolver
	if resolver == nil && s.opts.Network.Registrar != nil {
		resolver = s.opts.Network.Registrar.Resolver()
	}
	if resolver != nil {
		routes, err := resolver.Resolve(peer)
		if err != nil {
			s.log.debug("cannot resolve %s: %v", peer, err)
		}
		var out []target
		for _, rt := range routes {
			host := rt.Host
			if host == "" {
				host = peer.Host()
			}
			t := s.target(host, rt.Port, r)
			if t.handshake == (gen.Version{}) {
				t.handshake = rt.HandshakeVersion
			}
			out = append(out, t)
		}
		return out
	}
	if s.registrar == nil {
		return nil
	}
	port, err := s.registrar.Resolve(string(peer))
	if err != nil {
		s.log.debug("cannot resolve %s: %v", peer, err)
		return nil
	}
	host := r.Route.Host
	if host == "" {
		host = peer.Host()
	}
	return []target{s.target(host, port, r)}
}

func (s *Stack) target(host string, port uint16, r gen.NetworkRoute) target {
	cookie := r.Cookie
	if cookie == "" {
		cookie = s.Cookie()
	}
	return target{
		addr:      net.JoinHostPort(dialHost(host), strconv.Itoa(int(port))),
		cookie:    cookie,
		flags:     r.Flags,
		timeout:   s.handshakeTimeout(r.HandshakeTimeout),
		handshake: r.Route.HandshakeVersion,
	}
}

// dialOne connects to one address and runs the dialer handshake.
func (s *Stack) dialOne(peer gen.Atom, t target) (*conn, error) {
	return s.dialAttempt(peer, t, false)
}

// dialTCP opens a socket that Stop closes while it is in a handshake.
func (s *Stack) dialTCP(addr string) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	if !s.track(nc) {
		nc.Close()
		return nil, gen.ErrNetworkStopped
	}
	return nc, nil
}

// handshakeFor finds the registered handshake for a route's version.
func (s *Stack) handshakeFor(v gen.Version) (gen.NetworkHandshake, error) {
	if v == (gen.Version{}) {
		v = HandshakeVersion
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hs := s.handshakes[v.String()]; hs != nil {
		return hs, nil
	}
	return nil, fmt.Errorf("no handshake handler for %s", v)
}

// dialAttempt dials once and registers the connection. When the peer
// answers that its own dial to us wins (simultaneous connect), we wait a
// short while for that connection; if it does not come, we dial again with
// force (the peer's connection is stale).
func (s *Stack) dialAttempt(peer gen.Atom, t target, force bool) (*conn, error) {
	hs, err := s.handshakeFor(t.handshake)
	if err != nil {
		return nil, err
	}
	hopts := gen.HandshakeOptions{Cookie: t.cookie, Flags: t.flags, MaxMessageSize: s.MaxMessageSize()}
	if !hopts.Flags.Enable {
		hopts.Flags = s.NetworkFlags()
	}
	nc, err := s.dialTCP(t.addr)
	if err != nil {
		return nil, err
	}
	leaked := false
	defer func() {
		if !leaked {
			s.untrack(nc)
		}
	}()
	nc.SetDeadline(time.Now().Add(t.timeout))
	res, err := hs.Start(hsNode{s: s, force: force}, nc, hopts)
	nc.SetDeadline(time.Time{})
	if err != nil {
		nc.Close()
		if s.isStopped() {
			return nil, gen.ErrNetworkStopped
		}
		if errors.Is(err, gen.ErrTaken) && !force {
			// Simultaneous connect: the peer keeps the connection it
			// dialed (or is dialing) to us; wait for it to arrive.
			if c := s.awaitConn(peer, time.Now().Add(lostRaceWait)); c != nil {
				return c, nil
			}
			if s.isStopped() {
				return nil, gen.ErrNetworkStopped
			}
			return s.dialAttempt(peer, t, true)
		}
		s.log.warning("handshake with %s at %s failed: %v", peer, t.addr, err)
		return nil, err
	}
	if res.Peer != peer {
		nc.Close()
		return nil, fmt.Errorf("remote node %s introduced itself as %s", peer, res.Peer)
	}
	opts, ok := res.Custom.(handshake.ConnectionOptions)
	if !ok {
		nc.Close()
		return nil, fmt.Errorf("HandshakeResult.Custom has unknown type %T", res.Custom)
	}
	c := newConn(s, res.ConnectionID, introFrom(res), true, hopts.MaxMessageSize, opts.PoolSize, opts.PoolDSN)
	id := res.ConnectionID
	c.redial = func(dsn string) (net.Conn, []byte, error) {
		nc, err := s.dialTCP(dsn)
		if err != nil {
			return nil, nil, err
		}
		defer s.untrack(nc)
		nc.SetDeadline(time.Now().Add(t.timeout))
		tail, err := hs.Join(hsNode{s: s}, nc, id, hopts)
		nc.SetDeadline(time.Time{})
		if err != nil {
			nc.Close()
			return nil, nil, err
		}
		return nc, tail, nil
	}
	runHook(&testHookDialed, s, peer)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		nc.Close()
		return nil, gen.ErrNetworkStopped
	}
	if old := s.conns[peer]; old != nil {
		if s.bugSimultaneous {
			// v320: registering finds the connection from the peer and
			// returns it; this socket stays open and unread (Stop closes it).
			leaked = true
			return old, nil
		}
		if s.name > peer {
			// The peer's connection to us arrived meanwhile and wins.
			nc.Close()
			return old, nil
		}
	}
	s.installLocked(c, nc, res.Tail)
	return c, nil
}

// awaitConn waits until a connection to peer is installed.
func (s *Stack) awaitConn(peer gen.Atom, deadline time.Time) *conn {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for {
		s.mu.Lock()
		c, ch, stopped := s.conns[peer], s.changed, s.stopped
		s.mu.Unlock()
		if c != nil || stopped {
			return c
		}
		select {
		case <-ch:
		case <-t.C:
			return nil
		}
	}
}
