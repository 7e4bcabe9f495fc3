package netstack

import (
	"errors"
	"net"
	"time"

	"ergo.services/ergo/gen"
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
		go s.accept(a, nc)
	}
}

// accept runs the acceptor side of the handshake on one socket. Failures
// are logged and close only this socket.
func (s *Stack) accept(a *acceptor, nc net.Conn) {
	defer s.wg.Done()
	defer s.untrack(nc)
	peer, err := s.acceptHandshake(a, nc)
	if err != nil {
		nc.Close()
		if !s.isStopped() {
			if peer != "" {
				s.log.warning("handshake with %s (%s) failed: %v", peer, nc.RemoteAddr(), err)
			} else {
				s.log.warning("handshake with %s failed: %v", nc.RemoteAddr(), err)
			}
		}
	}
}

func (s *Stack) isStopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

func (s *Stack) acceptHandshake(a *acceptor, nc net.Conn) (_ gen.Atom, err error) {
	defer catch(&err)
	nc.SetDeadline(time.Now().Add(s.handshakeTimeout(a.spec.HandshakeTimeout)))
	h := newHSConn(nc, a.spec.HandshakeMaxMessageSize)
	cookie := a.Cookie()
	me := s.intro()
	if a.maxMsg > 0 {
		me.maxMsg = a.maxMsg
	}
	peer, saltA, digestA, err := acceptHello(h, me, cookie)
	if err != nil {
		return peer.name, err
	}
	if err := acceptProof(h, saltA, digestA, cookie); err != nil {
		return peer.name, err
	}
	c := newConn(s, h, peer, false, me.maxMsg)
	// Hold the write lock until the verdict is out: once installed, senders
	// may use the connection, and their frames must follow the verdict.
	c.wmu.Lock()
	verdict := s.admit(c)
	err = sendVerdict(h, verdict, "network stopped")
	nc.SetDeadline(time.Time{})
	c.wmu.Unlock()
	if err != nil && verdict == hsOK {
		c.closeBy("sending the verdict failed: " + err.Error())
		return peer.name, nil // the reader reports the disconnect
	}
	if verdict != hsOK {
		nc.Close()
	}
	return peer.name, nil
}

// admit decides about an authenticated incoming connection. On a
// simultaneous connect both nodes dial; the connection dialed by the
// lexically smaller node name wins on both sides.
func (s *Stack) admit(c *conn) byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return hsRejects
	}
	old := s.conns[c.peer]
	if old != nil && old.dialer && s.name < c.peer {
		s.log.debug("simultaneous connect with %s: keeping the connection this node dialed", c.peer)
		return hsExists // ours wins; the peer uses it
	}
	if _, dialing := s.dials[c.peer]; dialing && old == nil && s.name < c.peer {
		s.log.debug("simultaneous connect with %s: this node's dial wins", c.peer)
		return hsExists // our dial in progress wins
	}
	// Otherwise the incoming one wins. An older connection from the same
	// peer is stale: the peer only dials when it has no connection to us.
	s.installLocked(c)
	return hsOK
}

// Acceptor view for gen.Network.Acceptors.

// Cookie returns the acceptor's cookie, or the network cookie.
func (a *acceptor) Cookie() string {
	a.mu.Lock()
	c := a.cookie
	a.mu.Unlock()
	if c == "" {
		return a.s.Cookie()
	}
	return c
}

// SetCookie sets a cookie for this acceptor only.
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
		HandshakeVersion: HandshakeVersion,
		ProtoVersion:     ProtoVersion,
	}
}
