// Package registrar is the stand-in's built-in registrar: it lets nodes in
// separate OS processes on one host find each other by name alone.
//
// Every registering node first tries to become the server by binding TCP
// 127.0.0.1:4499 (registrations) and UDP :4499 (resolve queries). If the TCP
// port is taken it becomes a client: it keeps one TCP connection to the
// server that carries its name and acceptor port, and stays registered while
// that connection lives. When the server goes away the clients see EOF, and
// each one retries: the first to re-bind becomes the new server, the others
// register with it.
//
// The server tells every registered node (the hosting node through
// Config.Notify, the clients over their links) when another node registers
// or its registration ends; Nodes lists the registered nodes (v3.3.0:
// Registrar().Nodes() and Registrar().Event() of the embedded registrar).
//
// Protocol (text lines):
//
//	TCP  client -> server  "REG <name> <port>\n"   server -> client "OK\n" | "TAKEN\n"
//	     server -> client  "JOIN <name>\n" | "LEFT <name>\n"   (after "OK", any time)
//	UDP  query             "RES <name>"            reply "PORT <port>" | "NONE"
//	     query             "NODES"                 reply "NODES <name> <name> ..."
package registrar // import "ergo.services/ergo/internal/netstack/registrar"

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// DefaultPort is the TCP and UDP port of the built-in registrar.
const DefaultPort uint16 = 4499

// graceperiod is how long a new server holds back "not found" answers
// while the clients of a previous server re-register.
const graceperiod = time.Second

// ErrNotFound is returned by Resolve for a name nobody registered.
var ErrNotFound = errors.New("registrar: name not registered")

// Config describes the node using the registrar.
type Config struct {
	Name     string // full node name, "name@host"
	Port     uint16 // acceptor port published for Name
	Register bool   // false (hidden nodes): resolve only, run no server
	// ServerPort is the registrar port; 0 means DefaultPort. Tests use a
	// private port to exercise failover without disturbing other processes.
	ServerPort uint16
	// Logf reports problems (registration refused, server unreachable).
	Logf func(format string, args ...any)
	// Notify, when set, hears of the other nodes of this host registering
	// (joined) and leaving. It is called from the registrar's goroutines,
	// one call at a time, and must not block.
	Notify func(name string, joined bool)
}

// Registrar is one node's view of the built-in registrar.
type Registrar struct {
	cfg  Config
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	server *server       // set while this registrar hosts the server
	link   net.Conn      // registration link while a client
	linkR  *bufio.Reader // reads the link (it may hold what followed "OK")
}

// Start joins the registrar. With Register set it returns once the node is
// registered (as server or client) or after a few seconds of trying; the
// attempts then continue in the background.
func Start(cfg Config) *Registrar {
	if cfg.ServerPort == 0 {
		cfg.ServerPort = DefaultPort
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Notify == nil {
		cfg.Notify = func(string, bool) {}
	}
	r := &Registrar{cfg: cfg, stop: make(chan struct{})}
	if !cfg.Register {
		return r
	}
	ready := make(chan struct{})
	r.wg.Add(1)
	go r.loop(ready)
	select {
	case <-ready:
	case <-time.After(3 * time.Second):
		cfg.Logf("registrar: %s is not registered yet (server on port %d does not answer), still trying", cfg.Name, cfg.ServerPort)
	}
	return r
}

// Stop leaves the registrar; a hosted server shuts down and its clients
// elect a new one.
func (r *Registrar) Stop() {
	r.mu.Lock()
	select {
	case <-r.stop:
		r.mu.Unlock()
		return
	default:
	}
	close(r.stop)
	if r.link != nil {
		r.link.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// IsServer reports whether this registrar currently hosts the server.
func (r *Registrar) IsServer() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.server != nil
}

func (r *Registrar) stopped() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// sleep waits d or until Stop; it reports false when stopped.
func (r *Registrar) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.stop:
		return false
	case <-t.C:
		return true
	}
}

// loop keeps this node registered: as the server if it can bind the port,
// otherwise as a client of whoever holds it.
func (r *Registrar) loop(ready chan struct{}) {
	defer r.wg.Done()
	signal := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	warnedTaken := false
	for !r.stopped() {
		if srv := listen(r.cfg.ServerPort); srv != nil {
			srv.entries[r.cfg.Name] = &entry{port: r.cfg.Port}
			srv.owner, srv.notify = r.cfg.Name, r.cfg.Notify
			// A previous server may have just died (in this process or
			// another); its clients need a moment to re-register here.
			srv.graceUntil = time.Now().Add(graceperiod)
			r.mu.Lock()
			if r.stopped() {
				r.mu.Unlock()
				srv.close()
				return
			}
			r.server = srv
			r.mu.Unlock()
			signal()
			srv.run(r.stop, r.cfg.Logf) // until Stop
			r.mu.Lock()
			r.server = nil
			r.mu.Unlock()
			return
		}
		status, err := r.register()
		switch {
		case err == nil && status == "OK":
			signal()
			warnedTaken = false
			r.waitLink() // until the server goes away or Stop
			// Spread the re-bind race a little so one client wins quickly.
			if !r.sleep(time.Duration(rand.IntN(20)) * time.Millisecond) {
				return
			}
			continue
		case err == nil && status == "TAKEN":
			if !warnedTaken {
				r.cfg.Logf("registrar: name %s is registered by another node; it cannot be resolved by name until that node leaves", r.cfg.Name)
				warnedTaken = true
			}
			signal()
			if !r.sleep(500 * time.Millisecond) {
				return
			}
			continue
		}
		// The port is held but nobody answers yet (a server starting or
		// dying): back off briefly and retry both roles.
		if !r.sleep(time.Duration(20+rand.IntN(80)) * time.Millisecond) {
			return
		}
	}
}

// register dials the server and sends this node's registration. On "OK"
// the connection stays open as the registration link.
func (r *Registrar) register() (string, error) {
	c, err := net.DialTimeout("tcp4", serverAddr(r.cfg.ServerPort), time.Second)
	if err != nil {
		return "", err
	}
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintf(c, "REG %s %d\n", r.cfg.Name, r.cfg.Port); err != nil {
		c.Close()
		return "", err
	}
	br := bufio.NewReader(c)
	line, err := br.ReadString('\n')
	if err != nil {
		c.Close()
		return "", err
	}
	status := strings.TrimSpace(line)
	if status != "OK" {
		c.Close()
		return status, nil
	}
	c.SetDeadline(time.Time{})
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped() {
		c.Close()
		return "", net.ErrClosed
	}
	r.link, r.linkR = c, br
	return status, nil
}

// waitLink blocks until the registration link ends, passing on what the
// server tells of the other nodes.
func (r *Registrar) waitLink() {
	r.mu.Lock()
	c, br := r.link, r.linkR
	r.mu.Unlock()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if f := strings.Fields(line); len(f) == 2 && f[1] != r.cfg.Name {
			switch f[0] {
			case "JOIN":
				r.cfg.Notify(f[1], true)
			case "LEFT":
				r.cfg.Notify(f[1], false)
			}
		}
	}
	c.Close()
	r.mu.Lock()
	r.link, r.linkR = nil, nil
	r.mu.Unlock()
}

// Nodes lists the nodes registered with the registrar of this host and
// with the registrars of hosts (other nodes' hosts, "" for none), this
// node excluded, sorted. A host whose registrar does not answer adds
// nothing.
func (r *Registrar) Nodes(hosts []string) []string {
	self := r.cfg.Name
	seen := map[string]bool{self: true}
	asked := map[string]bool{}
	var out []string
	collect := func(names []string) {
		for _, name := range names {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	for _, host := range append([]string{hostOf(self)}, hosts...) {
		if isLocal(host) || host == hostOf(self) {
			host = "" // this host
		}
		if asked[host] {
			continue
		}
		asked[host] = true
		r.mu.Lock()
		srv := r.server
		r.mu.Unlock()
		if host == "" && srv != nil {
			collect(srv.names())
			continue
		}
		collect(queryNodes(host, r.cfg.ServerPort))
	}
	sort.Strings(out)
	return out
}

// queryNodes asks the registrar on host ("" for this one) for the names it
// has registered; nil when it does not answer.
func queryNodes(host string, port uint16) []string {
	if host == "" {
		host = "127.0.0.1"
	}
	c, err := net.Dial("udp4", net.JoinHostPort(host, strconv.Itoa(int(port))))
	if err != nil {
		return nil
	}
	defer c.Close()
	// retried for a short while: a lost datagram, or a server that has not
	// bound its UDP port yet (just started, or re-elected)
	deadline := time.Now().Add(2 * time.Second)
	buf := make([]byte, 65000)
	for {
		c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write([]byte("NODES")); err == nil {
			if n, err := c.Read(buf); err == nil {
				if f := strings.Fields(string(buf[:n])); len(f) > 0 && f[0] == "NODES" {
					return f[1:]
				}
				return nil
			}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Resolve returns the acceptor port registered for name ("node@host").
// The hosted server answers in-process for local hosts; otherwise a UDP
// query goes to the registrar on the name's host.
func (r *Registrar) Resolve(name string) (uint16, error) {
	host := hostOf(name)
	r.mu.Lock()
	srv := r.server
	r.mu.Unlock()
	if srv != nil && (isLocal(host) || host == hostOf(r.cfg.Name)) {
		if port, ok := srv.lookup(name); ok {
			return port, nil
		}
		return 0, ErrNotFound
	}
	return query(host, r.cfg.ServerPort, name)
}

// query asks the registrar on host over UDP. It retries for a short while
// when nobody answers: a lost datagram, or a server being re-elected.
func query(host string, port uint16, name string) (uint16, error) {
	if isLocal(host) {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
	deadline := time.Now().Add(2 * time.Second)
	for {
		port, err := queryOnce(addr, name)
		if err == nil || errors.Is(err, ErrNotFound) || time.Now().After(deadline) {
			return port, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func queryOnce(addr, name string) (uint16, error) {
	c, err := net.Dial("udp4", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	// long enough for a server in its failover grace period to answer
	c.SetDeadline(time.Now().Add(1500 * time.Millisecond))
	if _, err := c.Write([]byte("RES " + name)); err != nil {
		return 0, err
	}
	buf := make([]byte, 128)
	n, err := c.Read(buf)
	if err != nil {
		return 0, err
	}
	reply := strings.Fields(string(buf[:n]))
	if len(reply) == 2 && reply[0] == "PORT" {
		p, err := strconv.ParseUint(reply[1], 10, 16)
		if err == nil {
			return uint16(p), nil
		}
	}
	return 0, ErrNotFound
}

func serverAddr(port uint16) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port)))
}

func hostOf(name string) string {
	if i := strings.IndexByte(name, '@'); i >= 0 {
		return name[i+1:]
	}
	return ""
}

func isLocal(host string) bool {
	return host == "" || host == "localhost" || host == "127.0.0.1"
}
