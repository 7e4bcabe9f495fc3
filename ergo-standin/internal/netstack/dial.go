package netstack

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"ergo.services/ergo/gen"
)

// dialing is a dial in progress; concurrent callers wait for it.
type dialing struct {
	done chan struct{}
	err  error
}

// target is one address to try, with the credentials for it.
type target struct {
	addr    string
	cookie  string
	timeout time.Duration
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
			out = append(out, s.target(host, rt.Port, r))
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
		addr:    net.JoinHostPort(dialHost(host), strconv.Itoa(int(port))),
		cookie:  cookie,
		timeout: s.handshakeTimeout(r.HandshakeTimeout),
	}
}

// dialOne connects to one address and runs the dialer handshake.
func (s *Stack) dialOne(peer gen.Atom, t target) (*conn, error) {
	return s.dialAttempt(peer, t, true)
}

// dialAttempt dials once. When the peer answers that its own dial to us
// wins, we wait a short while for that connection; if it does not come
// (the peer's dial went somewhere that does not answer), we dial again
// once, since by then the peer no longer claims a dial in progress.
func (s *Stack) dialAttempt(peer gen.Atom, t target, retry bool) (*conn, error) {
	nc, err := net.DialTimeout("tcp", t.addr, dialTimeout)
	if err != nil {
		return nil, err
	}
	if !s.track(nc) {
		nc.Close()
		return nil, gen.ErrNetworkStopped
	}
	defer s.untrack(nc)
	h := newHSConn(nc, s.opts.Network.HandshakeMaxMessageSize)
	me := s.intro()
	info, verdict, err := dialHandshake(h, me, peer, t.cookie, t.timeout)
	if err != nil {
		nc.Close()
		if s.isStopped() {
			return nil, gen.ErrNetworkStopped
		}
		s.log.warning("handshake with %s at %s failed: %v", peer, t.addr, err)
		return nil, err
	}
	if verdict == hsExists {
		// Simultaneous connect: the peer keeps the connection it dialed
		// (or is dialing) to us; wait for it to arrive.
		nc.Close()
		wait := waitConnTimeout
		if retry {
			wait = lostRaceWait
		}
		if c := s.awaitConn(peer, time.Now().Add(wait)); c != nil {
			return c, nil
		}
		if s.isStopped() {
			return nil, gen.ErrNetworkStopped
		}
		if retry {
			return s.dialAttempt(peer, t, false)
		}
		return nil, fmt.Errorf("%s kept its own connection, but it did not arrive", peer)
	}
	c := newConn(s, h, info, true, me.maxMsg)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		nc.Close()
		return nil, gen.ErrNetworkStopped
	}
	if old := s.conns[peer]; old != nil && s.name > peer {
		// The peer's connection to us arrived meanwhile and wins.
		nc.Close()
		return old, nil
	}
	s.installLocked(c)
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
