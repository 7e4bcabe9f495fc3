package netstack

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
)

// conn is an authenticated connection to a peer.
type conn struct {
	s      *Stack
	nc     net.Conn
	br     *bufio.Reader // from the handshake: may hold early data frames
	peer   gen.Atom
	info   intro // what the peer told about itself
	dialer bool  // this side dialed
	since  time.Time
	prev   *conn // must finish its teardown before this one connects
	limit  int   // max incoming frame, as announced to the peer

	wmu       sync.Mutex // one writer at a time keeps frames whole
	closeOnce sync.Once
	reason    atomic.Value  // why this side closed it (string)
	done      chan struct{} // closed after HandleDisconnected returned

	msgIn, msgOut, bytesIn, bytesOut atomic.Uint64
}

func newConn(s *Stack, h *hsConn, peer intro, dialer bool, limit int) *conn {
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	return &conn{s: s, nc: h.nc, br: h.br, peer: peer.name, info: peer, dialer: dialer,
		limit: limit, since: time.Now(), done: make(chan struct{})}
}

// closeBy closes the socket; the reader notices and tears the rest down.
func (c *conn) closeBy(reason string) {
	c.closeOnce.Do(func() {
		c.reason.Store(reason)
		c.nc.Close()
	})
}

func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return c.reason.Load() == nil
	}
}

// send writes one sealed frame. A failed write closes the connection.
func (c *conn) send(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	if _, err := c.nc.Write(b); err != nil {
		c.closeBy("write failed: " + err.Error())
		return gen.ErrNoConnection
	}
	c.msgOut.Add(1)
	c.bytesOut.Add(uint64(len(b)))
	return nil
}

// serve is the reader goroutine: it reports the connection, hands every
// frame to the Handler in arrival order and reports the disconnect once.
func (c *conn) serve() {
	defer c.s.wg.Done()
	if c.prev != nil {
		<-c.prev.done
		c.prev = nil // do not chain every past connection in memory
	}
	h := c.s.opts.Handler
	if h != nil {
		h.HandleConnected(c.peer)
	}
	err := c.readLoop(h)
	c.closeBy("") // keeps an earlier reason
	c.s.forget(c)
	c.logEnd(err)
	if h != nil {
		h.HandleDisconnected(c.peer)
	}
	close(c.done)
	c.s.finished(c)
}

func (c *conn) readLoop(h Handler) (err error) {
	defer catch(&err)
	for {
		payload, err := readFrame(c.br, c.limit)
		if err != nil {
			return err
		}
		c.msgIn.Add(1)
		c.bytesIn.Add(uint64(len(payload) + frameHeader))
		f, err := decodeFrame(c.s.reg, payload)
		if err != nil {
			return protocolError{err}
		}
		if h != nil {
			h.HandleFrame(c.peer, c.info.creation, f)
		}
	}
}

func (c *conn) logEnd(err error) {
	if r, _ := c.reason.Load().(string); r != "" {
		c.s.log.debug("connection to %s closed: %s", c.peer, r)
		return
	}
	var pe protocolError
	switch {
	case errors.As(err, &pe):
		c.s.log.warning("connection to %s closed: %v", c.peer, err)
	case errors.Is(err, io.EOF):
		c.s.log.info("connection to %s closed by the peer", c.peer)
	default:
		c.s.log.info("connection to %s lost: %v", c.peer, err)
	}
}
