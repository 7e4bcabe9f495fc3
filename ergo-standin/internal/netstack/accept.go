package netstack

import (
	"errors"
	"net"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/net/handshake"
)

func (s *Stack) acceptLoop(a *acceptor) {
	defer s.wg.Done()
	for {
		nc, err := a.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.warning("acceptor %s: %v", a.ln.Addr(), err)
			time.Sleep(10 * time.Millisecond) // e.g. out of file descriptors
			continue
		}
		s.mu.Lock()
		if s.stopped {
			s.mu.Unlock()
			nc.Close()
			return
		}
		s.pending[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		// One handshake at a time, as the framework's accept loop: a
		// connection is registered before the next socket (its extra
		// links' Joins) is handshaken.
		s.accept(a, nc)
	}
}

// accept runs the acceptor side of the handshake on one socket and
// registers the connection, or joins the link to one. Failures are logged
// and close only this socket.
func (s *Stack) accept(a *acceptor, nc net.Conn) {
	defer s.wg.Done()
	defer s.untrack(nc)
	res, err := s.acceptHandshake(a, nc)
	if err != nil {
		nc.Close()
		switch {
		case s.isStopped():
		case errors.Is(err, gen.ErrTaken):
			// simultaneous connect: the peer uses the connection we dialed
		case res.Peer != "":
			s.log.warning("unable to handshake with %s (%s): %v", res.Peer, nc.RemoteAddr(), err)
		default:
			s.log.warning("unable to handshake with %s: %v", nc.RemoteAddr(), err)
		}
		return
	}
	if res.Peer == "" {
		s.log.warning("%s did not introduce itself, closing the connection", nc.RemoteAddr())
		nc.Close()
		return
	}
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		nc.Close()
		return
	}
	old := s.conns[res.Peer]
	if res.PeerCreation == 0 {
		// A Join (the framework's NewConnection refuses to make a
		// connection of it when there is none to join).
		s.mu.Unlock()
		if old == nil {
			s.log.warning("unable to create new connection with %s: %v", res.Peer, gen.ErrNotAllowed)
			nc.Close()
			return
		}
		if err := old.join(nc, res.ConnectionID, res.Tail); err != nil {
			s.log.trace("unable to join %s to the existing connection with %s: %v", nc.RemoteAddr(), res.Peer, err)
			nc.Close()
		}
		return
	}
	if old != nil && s.bugSimultaneous {
		// v320: the accepted socket is joined to the existing connection,
		// whose ID differs.
		s.mu.Unlock()
		s.log.trace("unable to join %s to the existing connection with %s: connection id mismatch", nc.RemoteAddr(), res.Peer)
		nc.Close()
		return
	}
	opts, ok := res.Custom.(handshake.ConnectionOptions)
	if !ok {
		s.mu.Unlock()
		s.log.warning("unable to create new connection with %s: HandshakeResult.Custom has unknown type", res.Peer)
		nc.Close()
		return
	}
	// Otherwise the new connection wins: an older one from the same peer
	// is stale, or was dialed by the larger name in a simultaneous connect.
	c := newConn(s, res.ConnectionID, introFrom(res), false, res.NodeMaxMessageSize, opts.PoolSize, nil)
	s.installLocked(c, nc, res.Tail)
	s.mu.Unlock()
}

func (s *Stack) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *Stack) acceptHandshake(a *acceptor, nc net.Conn) (res gen.HandshakeResult, err error) {
	defer catch(&err)
	nc.SetDeadline(time.Now().Add(s.handshakeTimeout(a.spec.HandshakeTimeout)))
	opts := gen.HandshakeOptions{
		Cookie:         a.handshakeCookie(),
		Flags:          a.NetworkFlags(),
		MaxMessageSize: a.MaxMessageSize(),
	}
	res, err = a.hs.Accept(hsNode{s: s}, nc, opts)
	nc.SetDeadline(time.Time{})
	return res, err
}

// handshakeCookie is the cookie the accept loop authenticates with (see
// acceptor.hsCookie).
func (a *acceptor) handshakeCookie() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.hsCookie == "" {
		a.hsCookie = a.s.Cookie()
	}
	return a.hsCookie
}

// Acceptor view for gen.Network.Acceptors.

// Cookie returns what the framework's acceptor reports: the network cookie
// at start when AcceptorOptions.Cookie was empty, otherwise "" (or what
// SetCookie set). It is not what the acceptor authenticates with.
func (a *acceptor) Cookie() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cookie
}

// SetCookie changes what Cookie reports; as in the framework, the accept
// loop does not read it.
func (a *acceptor) SetCookie(cookie string) {
	a.mu.Lock()
	a.cookie = cookie
	a.mu.Unlock()
}

// NetworkFlags returns the acceptor's flags, or the network flags.
func (a *acceptor) NetworkFlags() gen.NetworkFlags {
	a.mu.Lock()
	f := a.flags
	a.mu.Unlock()
	if !f.Enable {
		return a.s.NetworkFlags()
	}
	return f
}

// SetNetworkFlags sets the flags of this acceptor.
func (a *acceptor) SetNetworkFlags(flags gen.NetworkFlags) {
	a.mu.Lock()
	a.flags = flags
	a.mu.Unlock()
}

// MaxMessageSize returns the acceptor's limit, or the network limit.
func (a *acceptor) MaxMessageSize() int {
	a.mu.Lock()
	m := a.maxMsg
	a.mu.Unlock()
	if m == 0 {
		return a.s.MaxMessageSize()
	}
	return m
}

// SetMaxMessageSize sets the limit announced by this acceptor.
func (a *acceptor) SetMaxMessageSize(size int) {
	a.mu.Lock()
	a.maxMsg = size
	a.mu.Unlock()
}

// Info describes the acceptor; Interface is "host:port".
func (a *acceptor) Info() gen.AcceptorInfo {
	return gen.AcceptorInfo{
		Interface:        a.ln.Addr().String(),
		MaxMessageSize:   a.MaxMessageSize(),
		Flags:            a.NetworkFlags(),
		CustomRegistrar:  a.s.opts.Network.Registrar != nil,
		RegistrarServer:  "127.0.0.1:4499",
		HandshakeVersion: a.hs.Version(),
		ProtoVersion:     ProtoVersion,
	}
}
