package registrar

import (
	"bufio"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

type entry struct {
	port uint16
	conn net.Conn // registration link; nil for the hosting node itself
	// told: the client has its "OK" and hears of the others from now on
	told bool
}

// server is the registrar server hosted by one node.
type server struct {
	ln   net.Listener
	port uint16

	mu      sync.Mutex
	entries map[string]*entry
	conns   map[net.Conn]struct{}
	udp     net.PacketConn
	closed  bool
	changed chan struct{} // closed and replaced on every registration
	// graceUntil: a new server holds back "not found" answers until then,
	// while the clients of a previous server re-register.
	graceUntil time.Time
	wg         sync.WaitGroup

	owner  string                         // the hosting node
	notify func(name string, joined bool) // the hosting node's Config.Notify
	// notes carries, in order, what every registered node is told of the
	// others; one goroutine (tell) writes it out
	notes []note
	noted chan struct{}
}

type note struct {
	name   string
	joined bool
}

// listen binds the TCP registration port; nil when it is taken.
func listen(port uint16) *server {
	ln, err := net.Listen("tcp4", serverAddr(port))
	if err != nil {
		return nil
	}
	return &server{ln: ln, port: port, entries: map[string]*entry{}, conns: map[net.Conn]struct{}{},
		changed: make(chan struct{}), noted: make(chan struct{}, 1), notify: func(string, bool) {}}
}

// lookup finds a registration; during the grace period after the start it
// waits for the name to re-register before answering "not found".
func (s *server) lookup(name string) (uint16, bool) {
	for {
		s.mu.Lock()
		e, ok := s.entries[name]
		ch, wait, closed := s.changed, time.Until(s.graceUntil), s.closed
		s.mu.Unlock()
		if ok {
			return e.port, true
		}
		if wait <= 0 || closed {
			return 0, false
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

// run serves until stop is closed, then closes everything it opened.
func (s *server) run(stop chan struct{}, logf func(string, ...any)) {
	s.wg.Add(3)
	go s.acceptLoop()
	go s.udpLoop(stop, logf)
	go s.tell(stop)
	<-stop
	s.close()
	s.wg.Wait()
}

func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	close(s.changed)
	// UDP first, so a client that wins the TCP port can bind UDP too.
	if s.udp != nil {
		s.udp.Close()
	}
	s.ln.Close()
	for c := range s.conns {
		c.Close()
	}
}

func (s *server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveClient(c)
	}
}

// serveClient registers one client and unregisters it when its link ends.
func (s *server) serveClient(c net.Conn) {
	defer s.wg.Done()
	var name string
	defer func() {
		c.Close()
		s.mu.Lock()
		delete(s.conns, c)
		if e := s.entries[name]; e != nil && e.conn == c {
			delete(s.entries, name)
			s.noteLocked(name, false)
		}
		s.mu.Unlock()
	}()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(limitReader(c)).ReadString('\n')
	if err != nil {
		return
	}
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "REG" {
		return
	}
	port, err := strconv.ParseUint(f[2], 10, 16)
	if err != nil {
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if _, taken := s.entries[f[1]]; taken {
		s.mu.Unlock()
		c.Write([]byte("TAKEN\n"))
		return
	}
	name = f[1]
	s.entries[name] = &entry{port: uint16(port), conn: c}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if _, err := c.Write([]byte("OK\n")); err != nil {
		return
	}
	s.mu.Lock()
	if e := s.entries[name]; e != nil && e.conn == c {
		e.told = true
		s.noteLocked(name, true)
	}
	s.mu.Unlock()
	c.SetReadDeadline(time.Time{})
	buf := make([]byte, 64)
	for {
		if _, err := c.Read(buf); err != nil {
			return // client gone: unregister
		}
	}
}

// limitReader caps the registration line so a stray client cannot feed megabytes.
func limitReader(c net.Conn) *limited { return &limited{c: c, left: 512} }

type limited struct {
	c    net.Conn
	left int
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, net.ErrClosed
	}
	if len(p) > l.left {
		p = p[:l.left]
	}
	n, err := l.c.Read(p)
	l.left -= n
	return n, err
}

// udpLoop binds the UDP query port (retrying while a previous server
// releases it) and answers resolve queries.
func (s *server) udpLoop(stop chan struct{}, logf func(string, ...any)) {
	defer s.wg.Done()
	var pc net.PacketConn
	warned := false
	for {
		var err error
		pc, err = net.ListenPacket("udp4", ":"+strconv.Itoa(int(s.port)))
		if err == nil {
			break
		}
		if !warned {
			logf("registrar: cannot bind UDP port %d yet: %v", s.port, err)
			warned = true
		}
		select {
		case <-stop:
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		pc.Close()
		return
	}
	s.udp = pc
	s.mu.Unlock()
	buf := make([]byte, 512)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			if s.isClosed() {
				return
			}
			time.Sleep(10 * time.Millisecond) // transient error: do not spin
			continue
		}
		f := strings.Fields(string(buf[:n]))
		if len(f) == 1 && f[0] == "NODES" {
			pc.WriteTo([]byte(strings.Join(append([]string{"NODES"}, s.names()...), " ")), addr)
			continue
		}
		if len(f) != 2 || f[0] != "RES" {
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		s.wg.Add(1)
		s.mu.Unlock()
		// answered in a goroutine: a lookup may wait out the grace period
		go func(name string, addr net.Addr) {
			defer s.wg.Done()
			reply := "NONE"
			if port, ok := s.lookup(name); ok {
				reply = "PORT " + strconv.Itoa(int(port))
			}
			pc.WriteTo([]byte(reply), addr)
		}(f[1], addr)
	}
}

func (s *server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// names lists the registered nodes.
func (s *server) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.entries))
	for name := range s.entries {
		out = append(out, name)
	}
	return out
}

// noteLocked queues a registration or its end for the other nodes; the
// caller holds s.mu.
func (s *server) noteLocked(name string, joined bool) {
	if s.closed {
		return
	}
	s.notes = append(s.notes, note{name, joined})
	select {
	case s.noted <- struct{}{}:
	default:
	}
}

// tell writes out the queued notes, in order: to the hosting node through
// notify and to every other client that has its "OK". A client that does
// not take a line within a second loses its link (and so its
// registration).
func (s *server) tell(stop chan struct{}) {
	defer s.wg.Done()
	for {
		select {
		case <-stop:
			return
		case <-s.noted:
		}
		for {
			s.mu.Lock()
			if len(s.notes) == 0 || s.closed {
				s.mu.Unlock()
				break
			}
			n := s.notes[0]
			s.notes = s.notes[1:]
			var links []net.Conn
			for name, e := range s.entries {
				if e.conn != nil && e.told && name != n.name {
					links = append(links, e.conn)
				}
			}
			s.mu.Unlock()
			if n.name != s.owner {
				s.notify(n.name, n.joined)
			}
			line := []byte("LEFT " + n.name + "\n")
			if n.joined {
				line = []byte("JOIN " + n.name + "\n")
			}
			for _, c := range links {
				c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := c.Write(line); err != nil {
					c.Close()
				}
			}
		}
	}
}
