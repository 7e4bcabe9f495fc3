// Package lab runs several ergo nodes in one process for the examples and
// their tests. The nodes reach each other only through per-pair TCP proxies
// that the lab owns, so a demo can cut real connections - a partition that
// the framework sees exactly as it would see a broken network - and heal
// them again.
package lab

import (
	"io"
	"net"
	"sync"
)

// link is a one-way TCP proxy: connections dialled by node From to reach
// node To arrive at its listener and are forwarded to To's acceptor. The
// connection it carries is used in both directions once it is up, exactly as
// a direct one would be.
type link struct {
	listener net.Listener
	target   func() string // the acceptor address of To; it changes on a restart
	drop     bool          // while cut, hold new connections silently instead of refusing them

	mu     sync.Mutex
	open   bool                  // false: refuse (or hold) new connections
	active map[net.Conn]net.Conn // accepted side -> dialled side
	held   map[net.Conn]bool     // connections held silently while cut
	closed bool
}

// newLink listens on a free loopback port.
func newLink(target func() string, drop bool) (*link, error) {
	listener, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{listener: listener, target: target, drop: drop, active: make(map[net.Conn]net.Conn)}
	go l.serve()
	return l, nil
}

// port is what a static route of node From points at.
func (l *link) port() uint16 {
	return uint16(l.listener.Addr().(*net.TCPAddr).Port)
}

// setOpen opens or cuts the link. Cutting closes every connection it
// carries, which both nodes observe as a lost connection. A cut link keeps
// listening and closes whatever arrives at once: a refused dial fails fast,
// whereas a dial that hangs would block the sending actor for the whole
// dial timeout.
//
// With drop set, a cut link instead holds new connections without a word, as
// a firewall that drops packets (or an address nobody answers at) would: the
// dialler waits for its handshake to time out. Reopening or closing the link
// lets them go.
func (l *link) setOpen(open bool) {
	l.mu.Lock()
	l.open = open
	var drop []net.Conn
	if open == false {
		for in, out := range l.active {
			drop = append(drop, in, out)
		}
		clear(l.active)
	} else {
		for in := range l.held {
			drop = append(drop, in)
		}
		clear(l.held)
	}
	l.mu.Unlock()
	for _, c := range drop {
		c.Close()
	}
}

func (l *link) close() {
	l.mu.Lock()
	l.closed = true
	held := l.held
	l.held = nil
	l.mu.Unlock()
	l.setOpen(false)
	l.listener.Close()
	for in := range held {
		in.Close()
	}
}

func (l *link) serve() {
	for {
		in, err := l.listener.Accept()
		if err != nil {
			return // closed
		}
		go l.forward(in)
	}
}

func (l *link) forward(in net.Conn) {
	l.mu.Lock()
	open := l.open && l.closed == false
	if open == false && l.drop && l.closed == false {
		if l.held == nil {
			l.held = make(map[net.Conn]bool)
		}
		l.held[in] = true
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	if open == false {
		in.Close()
		return
	}
	out, err := net.Dial("tcp4", l.target())
	if err != nil {
		in.Close()
		return
	}
	l.mu.Lock()
	if l.open == false || l.closed {
		// cut while dialling
		l.mu.Unlock()
		in.Close()
		out.Close()
		return
	}
	l.active[in] = out
	l.mu.Unlock()

	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	// Either side went away: take the other down too, as a real broken path
	// would, instead of leaving a half-open connection behind.
	in.Close()
	out.Close()
	l.mu.Lock()
	delete(l.active, in)
	l.mu.Unlock()
}
