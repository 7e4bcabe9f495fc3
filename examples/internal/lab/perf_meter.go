package lab

import (
	"fmt"
	"net"
	"slices"
	"sync/atomic"

	"ergo.services/ergo/gen"
)

// Meter counts the bytes a metered Cluster's proxies carry, in both
// directions: every byte two nodes exchange crosses exactly one proxy, so
// the count is what the nodes put on the wire (TCP payload, without TCP/IP
// headers).
type Meter struct {
	bytes atomic.Uint64
	conns atomic.Uint64
}

// Bytes returns the bytes carried so far.
func (m *Meter) Bytes() uint64 { return m.bytes.Load() }

// Conns returns the connections the proxies accepted so far, cut ones
// included.
func (m *Meter) Conns() uint64 { return m.conns.Load() }

// NewMetered is New with proxies that count what they carry. It builds the
// cluster exactly as New does; only the proxies' listeners differ, and they
// are wrapped rather than reimplemented so that cutting and healing behave
// the same as in every other lab cluster. (New cannot be given a link
// factory without changing it, and the lab's existing files stay as they
// are.)
func NewMetered(names []gen.Atom, opts Options) (*Cluster, *Meter, error) {
	meter := &Meter{}
	c := &Cluster{
		opts:  opts,
		names: slices.Clone(names),
		nodes: make(map[gen.Atom]gen.Node),
		addrs: make(map[gen.Atom]string),
		ready: make(map[gen.Atom]bool),
		side:  make(map[gen.Atom]int),
		links: make(map[[2]gen.Atom]*link),
	}
	for _, from := range names {
		for _, to := range names {
			if from == to {
				continue
			}
			l, err := newMeteredLink(func() string { return c.addr(to) }, meter)
			if err != nil {
				c.Close()
				return nil, nil, fmt.Errorf("lab: proxy %s -> %s: %w", from, to, err)
			}
			c.links[[2]gen.Atom{from, to}] = l
		}
	}
	return c, meter, nil
}

// newMeteredLink is newLink with a listener whose accepted connections
// count their reads and writes. The link copies between the accepted side
// and the dialled side, so counting the accepted side alone sees every
// byte once.
func newMeteredLink(target func() string, meter *Meter) (*link, error) {
	listener, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &link{listener: meteredListener{listener, meter}, target: target, active: make(map[net.Conn]net.Conn)}
	go l.serve()
	return l, nil
}

type meteredListener struct {
	net.Listener
	meter *Meter
}

func (l meteredListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.meter.conns.Add(1)
	return &meteredConn{Conn: c, meter: l.meter}, nil
}

// meteredConn embeds the net.Conn interface, not *net.TCPConn, on purpose:
// io.Copy then cannot bypass Read and Write through ReadFrom/WriteTo.
type meteredConn struct {
	net.Conn
	meter *Meter
}

func (c *meteredConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.meter.bytes.Add(uint64(n))
	return n, err
}

func (c *meteredConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.meter.bytes.Add(uint64(n))
	return n, err
}
