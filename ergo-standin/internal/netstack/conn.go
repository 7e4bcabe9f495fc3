package netstack

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack/edf"
)

// conn is an authenticated connection to a peer: a pool of TCP links, as
// in the framework's net/proto (connection.go Join/serve/send, enp.go Serve):
//
//   - The accepting side's handshake sets the pool size (3 by default) and
//     advertises the local address of the accepted socket. The dialing
//     side joins the extra links right after the first one, each straight
//     to that address; an extra link that cannot be dialed is skipped.
//   - A link that ends on the dialing side is re-dialed (Join) to the
//     advertised addresses in random order; only when none answers does
//     it leave the pool. The accepting side never re-dials: its link
//     leaves the pool when its socket ends.
//   - The connection is lost (HandleDisconnected) when its last link left.
//     An accepting side that drops the connection while its node runs
//     answers the dialer's re-dials with a valid Join and then closes
//     them, because it has no connection for them: the dialing side never
//     loses the connection that way and keeps re-dialing (see relinkPause).
//   - Each link has one writer, bound to the socket the link started with
//     (the framework's flusher): after a re-dial the dialing side still
//     writes to the old, closed socket, so what it sends over a re-dialed
//     link is dropped; it still reads what the peer sends there.
//   - A frame goes over link (key % links), where key is the sender's
//     PID ID % 255, so one sender keeps one link and per-sender order holds
//     while the pool keeps its size (as in the framework, a frame sent while
//     the extra links join, or after one left, may overtake an earlier one);
//     key 0 (and downs, exits and monitor/link replies, which the framework
//     sends without an order) takes the links round-robin.
type conn struct {
	s      *Stack
	id     string // ConnectionID from the handshake
	peer   gen.Atom
	info   intro // what the peer told about itself
	dialer bool  // this side dialed
	since  time.Time
	prev   *conn    // must finish its teardown before this one connects
	limit  int      // max incoming frame, as announced to the peer
	nc     net.Conn // the socket of the first link
	errs   edf.Errors

	poolSize int
	poolDSN  []string
	redial   func(dsn string) (net.Conn, []byte, error) // dialing side only

	mu         sync.Mutex
	pool       []*link
	active     int  // link goroutines still serving or re-dialing
	ended      bool // the last link goroutine ended
	terminated atomic.Bool
	rr         atomic.Uint32 // round-robin counter
	recv       []*frameQueue // the framework's recvQueues: shared by the links
	recvN      atomic.Uint32 // frames read, which spreads the unordered ones
	closeOnce  sync.Once
	reason     atomic.Value  // why this side closed it (string)
	term       chan struct{} // closed by closeBy
	ready      chan struct{} // closed after HandleConnected
	gone       chan struct{} // closed when the last link goroutine ended
	done       chan struct{} // closed after HandleDisconnected returned

	msgIn, msgOut, bytesIn, bytesOut atomic.Uint64
}

// link is one TCP link of the pool.
type link struct {
	w  *linkWriter
	nc net.Conn // the socket it reads from now (changes on a re-dial); under conn.mu
}

// linkWriter writes frames to the socket a link started with. Like the
// framework's flusher, a frame goes into a buffer and the buffer is written
// flushLatency after the first frame that found it empty (or at once when
// it fills): a burst of frames costs one system call, not one each.
type linkWriter struct {
	mu       sync.Mutex
	nc       net.Conn
	buf      *bufio.Writer // over deadlineWriter{nc}
	timer    *time.Timer   // flushes the buffer; nil until the first frame
	pending  bool
	dead     bool
	deadline *deadlineWriter
}

// flushLatency is how long a frame may wait in the buffer for others: the
// framework's (lib/flusher.go).
const flushLatency = 500 * time.Nanosecond

// writeBuffer is the size of a link's buffer: the framework's.
const writeBuffer = 64 << 10

func newLinkWriter(nc net.Conn) *linkWriter {
	d := &deadlineWriter{nc: nc, timeout: writeTimeout}
	return &linkWriter{nc: nc, buf: bufio.NewWriterSize(d, writeBuffer), deadline: d}
}

// deadlineWriter gives every socket write a deadline: the stand-in's
// writeTimeout (node/doc.go says why the framework has none), or drain's.
type deadlineWriter struct {
	nc      net.Conn
	timeout time.Duration
}

func (d *deadlineWriter) Write(b []byte) (int, error) {
	d.nc.SetWriteDeadline(time.Now().Add(d.timeout))
	return d.nc.Write(b)
}

// relinkPause spaces the re-dials of a link whose re-dialed sockets ended
// within a second twice in a row. The framework re-dials at once, in a
// tight loop while the peer keeps closing them; the pause only makes that
// loop cheaper. The first re-dial after a short-lived one is never
// delayed: when a node is killed just after one of its links was cut, the
// re-dial of that link can land before the process dies, and the
// framework's next re-dial, refused, ends the connection at once. Pausing
// there made the dialing side see the crash up to relinkPause late.
var relinkPause = 100 * time.Millisecond

func newConn(s *Stack, id string, peer intro, dialer bool, limit int, poolSize int, poolDSN []string) *conn {
	if limit <= 0 {
		limit = DefaultMaxMessageSize
	}
	// as in the framework (enp.go): four receive queues per link of the
	// pool, because decoding costs more than encoding
	recv := make([]*frameQueue, 4*max(poolSize, 1))
	for i := range recv {
		recv[i] = &frameQueue{}
	}
	return &conn{s: s, id: id, peer: peer.name, info: peer, dialer: dialer, limit: limit,
		since: time.Now(), errs: s.reg.Errors(), poolSize: poolSize, poolDSN: poolDSN, recv: recv,
		term: make(chan struct{}), ready: make(chan struct{}), gone: make(chan struct{}), done: make(chan struct{})}
}

// closeBy terminates the connection: every link's socket is closed and no
// link re-dials; the readers notice and tear the rest down.
func (c *conn) closeBy(reason string) {
	c.closeOnce.Do(func() {
		c.reason.Store(reason)
		c.mu.Lock()
		c.terminated.Store(true)
		close(c.term)
		for _, l := range c.pool {
			l.w.drain()
			l.nc.Close()
		}
		c.mu.Unlock()
	})
}

func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return !c.terminated.Load()
	}
}

// pool reports the pool size, the links in it and the advertised addresses.
func (c *conn) poolInfo() (size, links int, dsn []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.poolSize, len(c.pool), append([]string(nil), c.poolDSN...)
}

// join adds a link to an established connection (the accepting side gets
// the dialer's Join here).
func (c *conn) join(nc net.Conn, id string, tail []byte) error {
	if id != c.id {
		return errors.New("connection id mismatch")
	}
	return c.addLink(nc, tail, false)
}

// addLink starts a link on nc. The first link is always taken (a connection
// closed before it started still needs one link to end).
func (c *conn) addLink(nc net.Conn, tail []byte, first bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !first {
		if c.terminated.Load() || c.ended {
			return errors.New("connection terminated")
		}
		if len(c.pool) > c.poolSize+1 {
			return errors.New("pool size limit")
		}
	}
	l := &link{w: newLinkWriter(nc), nc: nc}
	c.pool = append(c.pool, l)
	c.active++
	if c.terminated.Load() {
		nc.Close()
	}
	c.s.wg.Add(1)
	go c.serveLink(l, nc, tail)
	return nil
}

// relinked makes nc the socket l reads from; false if the connection was
// terminated meanwhile.
//
// Only the reading side moves to the new socket: l's writer keeps the
// socket the link started with, so what is sent over a re-dialed link is
// written to the dead socket and dropped until the connection ends. That
// is the framework's behaviour, reproduced on purpose: v3.2's re-dial sets
// pool_item.connection and leaves pool_item.fl, the Flusher made over the
// first socket, in place (net/proto/connection.go, Join). A library must
// not count on a re-dialed link carrying its sends.
func (c *conn) relinked(l *link, nc net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terminated.Load() {
		return false
	}
	l.nc = nc
	return true
}

// leave ends a link goroutine; the last one ends the connection.
func (c *conn) leave(l *link) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.terminated.Load() {
		for i, item := range c.pool {
			if item == l {
				c.pool[i] = c.pool[0]
				c.pool = c.pool[1:]
				break
			}
		}
	}
	c.active--
	if c.active == 0 && !c.ended {
		c.ended = true
		close(c.gone)
	}
}

// serveLink reads one link, re-dialing it on the dialing side.
func (c *conn) serveLink(l *link, nc net.Conn, tail []byte) {
	defer c.s.wg.Done()
	defer c.leave(l)
	redialed, quickEnds := false, 0
	for {
		began := time.Now()
		err := c.readLink(nc, tail)
		nc.Close()
		c.logLinkEnd(nc, err)
		if c.redial == nil || c.terminated.Load() {
			return
		}
		if redialed && time.Since(began) < time.Second {
			quickEnds++
		} else {
			quickEnds = 0
		}
		if quickEnds > 1 {
			t := time.NewTimer(relinkPause)
			select {
			case <-t.C:
			case <-c.term:
				t.Stop()
				return
			}
		}
		dsns := append([]string(nil), c.poolDSN...)
		rand.Shuffle(len(dsns), func(i, j int) { dsns[i], dsns[j] = dsns[j], dsns[i] })
		var next net.Conn
		for _, dsn := range dsns {
			if c.terminated.Load() {
				return
			}
			c.s.log.trace("re-dialing %s (connection with %s)", dsn, c.peer)
			n, t, err := c.redial(dsn)
			if err != nil {
				c.s.log.trace("re-dialing %s failed: %v", dsn, err)
				continue
			}
			if !c.relinked(l, n) {
				n.Close()
				return
			}
			next, tail = n, t
			break
		}
		if next == nil {
			return
		}
		nc, redialed = next, true
	}
}

// readLink hands every frame of one socket to the Handler once the
// connection was reported. A frame that does not decode is logged and
// dropped (the framework's handleRecvQueue); broken framing ends the link.
//
// Like the framework, the socket reader only counts and queues what it
// reads: other goroutines decode and handle it, one per busy queue of the
// connection's recvQueues, chosen by the frame's order byte (orderOf).
// Handling a frame can mean writing one (the answer to a monitor or link
// request), and a reader that wrote would stop reading while the writes
// queue up behind the node's own traffic: under load the connection would
// bring nothing for hundreds of milliseconds although the peer keeps
// sending. And one handler per link would make a frame wait for the
// decoding of every frame read before it on that link, for any process:
// with the framework's queues it waits only for the frames of its queue.
// The link ends only after every frame it queued was handled, so frames
// still come before the connection's end.
func (c *conn) readLink(nc net.Conn, tail []byte) (err error) {
	defer catch(&err)
	var r io.Reader = nc
	if len(tail) > 0 {
		r = io.MultiReader(bytes.NewReader(tail), nc)
	}
	br := bufio.NewReaderSize(r, 64<<10)
	select {
	case <-c.ready:
	case <-c.term:
		return nil
	}
	defer c.awaitHandled()
	for {
		payload, err := readFrame(br, c.limit)
		if err != nil {
			return err
		}
		if payload[0] != msgData {
			return protoErr("malformed packet (message type %d)", payload[0])
		}
		c.msgIn.Add(1)
		c.bytesIn.Add(uint64(len(payload) + frameHeader))
		c.recvQueue(payload).push(queuedFrame{payload: payload}, c.handleFrame)
	}
}

// recvQueue is the queue the framework's serve puts a frame in: the one
// its order byte names, or, for a frame sent without an order, the next
// one by the count of frames read.
func (c *conn) recvQueue(payload []byte) *frameQueue {
	n := c.recvN.Add(1)
	if order := orderOf(c.s.reg, c.errs, payload); order > 0 {
		return c.recv[int(order)%len(c.recv)]
	}
	return c.recv[int(n)%len(c.recv)]
}

// awaitHandled returns once every frame queued before it was handled.
func (c *conn) awaitHandled() {
	waits := make([]chan struct{}, len(c.recv))
	for i, q := range c.recv {
		waits[i] = make(chan struct{})
		q.push(queuedFrame{handled: waits[i]}, c.handleFrame)
	}
	for _, w := range waits {
		<-w
	}
}

// handleFrame decodes one frame read from the link and hands it to the
// Handler.
func (c *conn) handleFrame(payload []byte) {
	var err error
	defer func() {
		if err != nil {
			c.s.log.error("unable to handle a message from %s: %v", c.peer, err)
		}
	}()
	defer catch(&err)
	f, decodeErr := decodeFrame(c.s.reg, c.errs, payload)
	if errors.Is(decodeErr, errTrailing) {
		c.s.log.warning("message from %s has extra bytes", c.peer)
	} else if decodeErr != nil {
		c.s.log.error("unable to decode received message from %s: %v", c.peer, decodeErr)
		return
	}
	if h := c.s.opts.Handler; h != nil {
		h.HandleFrame(c.peer, c.info.creation, f)
	}
}

// frameQueue is one of a connection's receive queues: unbounded, as the
// framework's are, and handled by a goroutine that runs while it holds
// frames (the framework's handleRecvQueue), so frames of one queue are
// handled in the order they were read.
type frameQueue struct {
	mu      sync.Mutex
	items   []queuedFrame
	running bool
}

// queuedFrame is a frame to handle, or, with handled set, a mark that
// closes it when every frame queued before it was handled.
type queuedFrame struct {
	payload []byte
	handled chan struct{}
}

func (q *frameQueue) push(f queuedFrame, handle func([]byte)) {
	q.mu.Lock()
	q.items = append(q.items, f)
	start := q.running == false
	q.running = true
	q.mu.Unlock()
	if start {
		go q.drain(handle)
	}
}

// drain handles the queued frames until none is left.
func (q *frameQueue) drain(handle func([]byte)) {
	var batch []queuedFrame
	for {
		q.mu.Lock()
		batch, q.items = q.items, batch[:0]
		if len(batch) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		for i, f := range batch {
			if f.handled != nil {
				close(f.handled)
			} else {
				handle(f.payload)
			}
			batch[i] = queuedFrame{}
		}
	}
}

// send writes one sealed frame over the link the key selects. Like the
// framework it does not report a failed write: the frame is dropped.
func (c *conn) send(b []byte, key uint8) error {
	c.mu.Lock()
	n := len(c.pool)
	if n == 0 {
		c.mu.Unlock()
		return gen.ErrNoConnection
	}
	var l *link
	if key == 0 {
		l = c.pool[int(c.rr.Add(1))%n]
	} else {
		l = c.pool[int(key)%n]
	}
	c.mu.Unlock()
	c.msgOut.Add(1)
	c.bytesOut.Add(uint64(len(b)))
	l.w.write(c, b)
	return nil
}

func (w *linkWriter) write(c *conn, b []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead {
		return
	}
	if _, err := w.buf.Write(b); err != nil {
		w.fail(c, err)
		return
	}
	if w.pending {
		return
	}
	w.pending = true
	if w.timer == nil {
		w.timer = time.AfterFunc(flushLatency, func() { w.flush(c) })
		return
	}
	w.timer.Reset(flushLatency)
}

// flush writes what the buffer holds, on the flusher's timer.
func (w *linkWriter) flush(c *conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead || w.pending == false {
		return
	}
	w.pending = false
	if err := w.buf.Flush(); err != nil {
		w.fail(c, err)
	}
}

// drain writes what the buffer holds before the connection closes, giving
// the socket a moment at most. The framework's Terminate closes the socket
// without a flush, but its node stops its processes before its network, a
// gap in which the flusher's timer has long fired; a stand-in node that
// closes at once would lose the last frames (the downs of a StopForce)
// that the framework delivers.
func (w *linkWriter) drain() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dead || w.pending == false {
		return
	}
	w.pending = false
	w.deadline.timeout = drainTimeout
	w.buf.Flush()
}

// drainTimeout bounds drain's write to a socket that does not take it.
const drainTimeout = 100 * time.Millisecond

// fail ends the writer: the socket is broken or stalled, later frames for
// this link are dropped, and closing it lets the reader notice. Must hold
// w.mu.
func (w *linkWriter) fail(c *conn, err error) {
	w.dead = true
	w.nc.Close()
	c.s.log.debug("write to %s (%s) failed: %v", c.peer, w.nc.RemoteAddr(), err)
}

// life reports the connection once its predecessor is gone, and reports the
// disconnect once its last link ended.
func (c *conn) life() {
	defer c.s.wg.Done()
	if c.prev != nil {
		<-c.prev.done
		c.prev = nil // do not chain every past connection in memory
	}
	h := c.s.opts.Handler
	if h != nil {
		h.HandleConnected(c.peer)
	}
	close(c.ready)
	<-c.gone
	c.closeBy("") // keeps an earlier reason
	c.s.forget(c)
	c.logEnd()
	if h != nil {
		h.HandleDisconnected(c.peer)
	}
	close(c.done)
	c.s.finished(c)
}

// dialExtra joins the extra links of a connection this side dialed.
func (c *conn) dialExtra() {
	defer c.s.wg.Done()
	if c.poolSize < 2 {
		return
	}
	if len(c.poolDSN) == 0 {
		c.s.log.warning("pool size is %d, but DSN list is empty", c.poolSize)
		return
	}
	for i := 1; i < c.poolSize; i++ {
		if c.terminated.Load() {
			return
		}
		dsn := c.poolDSN[i%len(c.poolDSN)]
		nc, tail, err := c.redial(dsn)
		if err != nil {
			c.s.log.trace("dialing %s (pool: %d of %d) failed: %v", dsn, i+1, c.poolSize, err)
			continue
		}
		if err := c.addLink(nc, tail, false); err != nil {
			c.s.log.error("unable to join %s: %v", nc.RemoteAddr(), err)
			nc.Close()
		}
	}
}

func (c *conn) logLinkEnd(nc net.Conn, err error) {
	var pe protocolError
	switch {
	case c.terminated.Load():
	case errors.As(err, &pe):
		c.s.log.warning("link %s with %s closed: %v", nc.RemoteAddr(), c.peer, err)
	case err != nil && !errors.Is(err, io.EOF):
		c.s.log.trace("link %s with %s closed: %v", nc.RemoteAddr(), c.peer, err)
	}
}

func (c *conn) logEnd() {
	if r, _ := c.reason.Load().(string); r != "" {
		c.s.log.debug("connection to %s closed: %s", c.peer, r)
		return
	}
	c.s.log.info("connection with %s terminated", c.peer)
}

// linkKey is the framework's order byte for a frame.
func linkKey(f Frame) uint8 {
	switch f.Kind {
	case FrameDown, FrameExit, FrameReply:
		return 0
	}
	return uint8(f.From.ID % 255)
}

func (c *conn) String() string { return fmt.Sprintf("connection %s with %s", c.id, c.peer) }
