package lab

import (
	"fmt"
	"net"
	"slices"
	"sync"

	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

// Options configure a Cluster.
type Options struct {
	// Cookie is every node's network cookie; the handshake fails without it.
	Cookie string
	// Node returns the options to start a node with. The lab sets
	// Network.Cookie and Network.Acceptors; everything else is the caller's.
	Node func(name gen.Atom) gen.NodeOptions
	// Setup runs once a node is up and its static routes are in place, and
	// before any peer can reach it: the place to register network types,
	// load applications and spawn actors. Peers are kept out until it
	// returns because a connection formed before the types are registered
	// could never decode them.
	Setup func(node gen.Node) error
	// Drop makes a cut link, or one to a node that is down, hold new
	// connections silently instead of refusing them: an address that does
	// not answer, as behind a firewall that drops packets, rather than one
	// that resets. Connections already up are still broken by a cut.
	Drop bool
}

// Cluster is a fixed set of node names, each of which may be running or
// not, connected pairwise through proxies. Node names must match themselves
// as static route patterns: letters, digits, '-' and '@' only.
type Cluster struct {
	opts  Options
	names []gen.Atom

	mu    sync.Mutex
	nodes map[gen.Atom]gen.Node
	addrs map[gen.Atom]string // acceptor address of each running node
	ready map[gen.Atom]bool   // set up and reachable by peers
	side  map[gen.Atom]int    // partition group; all equal when healed
	links map[[2]gen.Atom]*link
}

// New creates the proxies for every ordered pair of names. No node starts.
func New(names []gen.Atom, opts Options) (*Cluster, error) {
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
			l, err := newLink(func() string { return c.addr(to) }, opts.Drop)
			if err != nil {
				c.Close()
				return nil, fmt.Errorf("lab: proxy %s -> %s: %w", from, to, err)
			}
			c.links[[2]gen.Atom{from, to}] = l
		}
	}
	return c, nil
}

// Names returns the node names in the order given to New.
func (c *Cluster) Names() []gen.Atom { return slices.Clone(c.names) }

func (c *Cluster) addr(name gen.Atom) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.addrs[name]
}

// Node returns the running node of that name, or nil.
func (c *Cluster) Node(name gen.Atom) gen.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[name]
}

// StartAll starts every node that is not running.
func (c *Cluster) StartAll() error {
	for _, name := range c.names {
		if c.Node(name) != nil {
			continue
		}
		if _, err := c.Start(name); err != nil {
			return err
		}
	}
	return nil
}

// Start starts one node (again, after Kill or Stop): its acceptor on a free
// loopback port, a static route to every peer through the proxies (all the
// TCP links of a connection, see proxied), then
// Options.Setup, and only then opens the proxies towards it.
func (c *Cluster) Start(name gen.Atom) (gen.Node, error) {
	var node gen.Node
	var err error
	// A free port can be taken by someone else before the node binds it;
	// another one is as good.
	for attempt := 0; attempt < 5; attempt++ {
		var port uint16
		if port, err = freePort(); err != nil {
			continue
		}
		options := gen.NodeOptions{}
		if c.opts.Node != nil {
			options = c.opts.Node(name)
		}
		if node, err = StartRouted(name, options, c.opts.Cookie, port, c.ProxyPorts(name), c.opts.Setup); err == nil {
			c.mu.Lock()
			c.addrs[name] = fmt.Sprintf("127.0.0.1:%d", port)
			c.mu.Unlock()
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("lab: start %s: %w", name, err)
	}

	c.mu.Lock()
	c.nodes[name] = node
	c.ready[name] = true
	c.mu.Unlock()
	c.refresh()
	return node, nil
}

// StartRouted starts a node that listens on port of 127.0.0.1 and reaches
// each peer through the proxy port routes gives for it (all the TCP links
// of a connection, see proxied), then runs setup. Start uses it for the
// nodes of this process; a node that runs in another OS process (Adopt)
// starts with it there, given its ProxyPorts.
func StartRouted(name gen.Atom, options gen.NodeOptions, cookie string, port uint16, routes map[gen.Atom]uint16, setup func(gen.Node) error) (gen.Node, error) {
	// A matching static route is final: a node whose proxy is cut is not
	// dialled through the registrar instead.
	return startRouted(name, options, cookie, port, routes, true, setup)
}

// StartDirect starts a node that listens on port of 127.0.0.1 and reaches
// each peer directly at the port peers gives for it, with the framework's
// own handshake: no proxy, nothing to cut. It is for nodes that each run in
// an OS process of their own, where a crash is a killed process.
func StartDirect(name gen.Atom, options gen.NodeOptions, cookie string, port uint16, peers map[gen.Atom]uint16, setup func(gen.Node) error) (gen.Node, error) {
	return startRouted(name, options, cookie, port, peers, false, setup)
}

// startRouted starts the node with a static route to each peer, through the
// lab's proxied handshake or the framework's own, and runs setup. An
// acceptor authenticates with the node's cookie, so every node has the
// cluster's.
func startRouted(name gen.Atom, options gen.NodeOptions, cookie string, port uint16, routes map[gen.Atom]uint16, proxy bool, setup func(gen.Node) error) (gen.Node, error) {
	options.Network.Cookie = cookie
	options.Network.Acceptors = []gen.AcceptorOptions{{Host: "127.0.0.1", Port: port, PortRange: 1}}
	node, err := ergo.StartNode(name, options)
	if err != nil {
		return nil, err
	}
	if proxy {
		node.Network().RegisterHandshake(viaProxy)
	}
	for peer, at := range routes {
		route := gen.NetworkRoute{Route: gen.Route{Host: "127.0.0.1", Port: at}}
		if proxy {
			route.Route.HandshakeVersion = viaProxy.Version() // every link of the pool through the proxy
		}
		if err := node.Network().AddRoute(string(peer), route, 100); err != nil {
			node.StopForce()
			return nil, fmt.Errorf("lab: route %s -> %s: %w", name, peer, err)
		}
	}
	if setup != nil {
		if err := setup(node); err != nil {
			node.StopForce()
			return nil, fmt.Errorf("lab: set up %s: %w", name, err)
		}
	}
	return node, nil
}

// ProxyPorts gives, for each peer of name, the port of the proxy name
// reaches it through.
func (c *Cluster) ProxyPorts(name gen.Atom) map[gen.Atom]uint16 {
	ports := make(map[gen.Atom]uint16)
	for _, peer := range c.names {
		if peer != name {
			ports[peer] = c.links[[2]gen.Atom{name, peer}].port()
		}
	}
	return ports
}

// FreePort returns a loopback port that was free a moment ago, for a node
// of another process to listen on (Adopt).
func FreePort() (uint16, error) { return freePort() }

// Adopt makes name a node that runs in another OS process, started there
// with StartRouted and this cluster's ProxyPorts(name), and listening at
// addr: the proxies towards it open, and it counts as running. The lab
// cannot stop it: its crash is the caller's kill of that process, after
// which Kill(name) closes the proxies towards it. Node(name) stays nil.
func (c *Cluster) Adopt(name gen.Atom, addr string) {
	c.mu.Lock()
	c.addrs[name] = addr
	c.ready[name] = true
	c.mu.Unlock()
	c.refresh()
}

// Kill stops a node abruptly (StopForce): no handover, connections drop. A
// node of another process (Adopt) is only marked gone.
func (c *Cluster) Kill(name gen.Atom) {
	if node := c.Node(name); node != nil {
		node.StopForce()
	}
	c.forget(name)
}

// Stop stops a node gracefully and returns once it is down.
func (c *Cluster) Stop(name gen.Atom) {
	c.mu.Lock()
	node := c.nodes[name]
	c.mu.Unlock()
	if node == nil {
		return
	}
	node.Stop()
	c.forget(name)
}

func (c *Cluster) forget(name gen.Atom) gen.Node {
	c.mu.Lock()
	node := c.nodes[name]
	delete(c.nodes, name)
	c.ready[name] = false
	c.mu.Unlock()
	c.refresh()
	return node
}

// Partition cuts every link between nodes of different groups. A node not
// named in any group forms a group of its own.
func (c *Cluster) Partition(groups ...[]gen.Atom) {
	c.mu.Lock()
	for i, name := range c.names {
		c.side[name] = -1 - i
	}
	for g, group := range groups {
		for _, name := range group {
			c.side[name] = g
		}
	}
	c.mu.Unlock()
	c.refresh()
}

// Heal reopens every link between running nodes.
func (c *Cluster) Heal() {
	c.mu.Lock()
	clear(c.side)
	c.mu.Unlock()
	c.refresh()
}

// Separated reports whether the link between a and b is cut.
func (c *Cluster) Separated(a, b gen.Atom) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.side[a] != c.side[b]
}

// refresh opens exactly the links whose target is ready and on the same
// side as their source.
func (c *Cluster) refresh() {
	c.mu.Lock()
	type change struct {
		l    *link
		open bool
	}
	var changes []change
	for pair, l := range c.links {
		from, to := pair[0], pair[1]
		changes = append(changes, change{l, c.ready[to] && c.side[from] == c.side[to]})
	}
	c.mu.Unlock()
	for _, ch := range changes {
		ch.l.setOpen(ch.open)
	}
}

// Close stops every running node abruptly and closes the proxies.
func (c *Cluster) Close() {
	for _, name := range c.names {
		c.Kill(name)
	}
	for _, l := range c.links {
		l.close()
	}
}

func freePort() (uint16, error) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return uint16(l.Addr().(*net.TCPAddr).Port), nil
}
