package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/demokit"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

// actorName is the leader actor's registered name on every node.
const actorName gen.Atom = "election"

// electionActor is a small leader actor: it does no work of its own, it
// only takes part in the election, whose figures the collector exports.
type electionActor struct {
	leader.Actor

	spec actorSpec
}

// actorSpec is the actor's argument.
type actorSpec struct {
	Options    leader.Options
	Peers      []gen.ProcessID // the actors on the other nodes: a fixed deployment
	Rediscover time.Duration
}

type messageDiscover struct{}

func factoryElection() gen.ProcessBehavior { return &electionActor{} }

// Init returns the options and starts discovery from a handler (Join needs
// the options applied, which happens after Init returns).
func (a *electionActor) Init(args ...any) (leader.Options, error) {
	a.spec = args[0].(actorSpec)
	if err := a.Send(a.PID(), messageDiscover{}); err != nil {
		return leader.Options{}, err
	}
	return a.spec.Options, nil
}

// HandleMessage runs discovery: it joins every node of the static list,
// again and again. A node of this fixed deployment that stops is expected
// back, so it stays listed: a stopped actor leaves the view of the others,
// and with three nodes and MinClusterSize 3 the two survivors may elect
// only once the stopped one counts in their view again. A discovery that
// knows a node is gone for good calls Leave instead, and then the two left
// elect nobody, as MinClusterSize 3 asks.
func (a *electionActor) HandleMessage(from gen.PID, message any) error {
	if _, ok := message.(messageDiscover); ok {
		for _, peer := range a.spec.Peers {
			a.Join(peer)
		}
		_, err := a.SendAfter(a.PID(), messageDiscover{}, a.spec.Rediscover)
		return err
	}
	return nil
}

func (a *electionActor) HandleBecomeLeader() error {
	a.Log().Info("became leader at term %d", a.Term())
	return nil
}

func (a *electionActor) HandleBecomeFollower(leader gen.PID) error { return nil }

// clusterConfig is what startCluster needs.
type clusterConfig struct {
	Size       int
	Cookie     string
	Options    leader.Options // ClusterID and timings
	Rediscover time.Duration  // how often each actor joins the others again
	Log        io.Writer      // the actors' warnings and above; nil discards them
}

// cluster is a few nodes in this process, each with a leader actor. They
// reach each other through static routes to their acceptors on 127.0.0.1,
// and never ask a registrar.
type cluster struct {
	mu      sync.Mutex
	nodes   []gen.Node
	stopped []bool
}

// clusterRuns keeps the node names of clusters started by one process
// apart (the tests start several).
var clusterRuns atomic.Int64

func startCluster(cfg clusterConfig) (*cluster, error) {
	c := &cluster{}
	seq := clusterRuns.Add(1)
	logOut := cfg.Log
	if logOut == nil {
		logOut = io.Discard
	}
	var addrs []string
	for i := 1; i <= cfg.Size; i++ {
		name := gen.Atom(fmt.Sprintf("metrics-%d-%d-n%d@localhost", os.Getpid(), seq, i))
		node, err := ergo.StartNode(name, gen.NodeOptions{
			Network: gen.NetworkOptions{
				Cookie:    cfg.Cookie,
				Registrar: demokit.NoRegistrar(), // static routes only: never the registrar on port 4499
				Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1"}},
			},
			Log: lab.ActorLog(logOut, gen.LogLevelWarning),
		})
		if err != nil {
			c.close()
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		c.nodes = append(c.nodes, node)
		c.stopped = append(c.stopped, false)
		// The wire types go in before any connection forms. The registry
		// is the process's: every node after the first finds them taken.
		if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
			c.close()
			return nil, fmt.Errorf("%s: register the types: %w", name, err)
		}
		if err := node.Network().RegisterErrors(leader.ErrorTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
			c.close()
			return nil, fmt.Errorf("%s: register the errors: %w", name, err)
		}
		acceptors, err := node.Network().Acceptors()
		if err != nil || len(acceptors) == 0 {
			c.close()
			return nil, fmt.Errorf("%s has no acceptor: %v", name, err)
		}
		addrs = append(addrs, acceptors[0].Info().Interface)
	}

	// Every node gets a static route to every other node's acceptor.
	for i, from := range c.nodes {
		for j, to := range c.nodes {
			if i == j {
				continue
			}
			host, portText, err := net.SplitHostPort(addrs[j])
			if err != nil {
				c.close()
				return nil, fmt.Errorf("acceptor of %s: %w", to.Name(), err)
			}
			port, err := strconv.ParseUint(portText, 10, 16)
			if err != nil {
				c.close()
				return nil, fmt.Errorf("acceptor of %s: %w", to.Name(), err)
			}
			route := gen.NetworkRoute{Route: gen.Route{Host: host, Port: uint16(port)}, Cookie: cfg.Cookie}
			if err := from.Network().AddRoute("^"+regexp.QuoteMeta(string(to.Name()))+"$", route, 1); err != nil {
				c.close()
				return nil, fmt.Errorf("route %s -> %s: %w", from.Name(), to.Name(), err)
			}
		}
	}

	// Only now the actors: every route exists before anyone sends.
	for i, node := range c.nodes {
		spec := actorSpec{Options: cfg.Options, Rediscover: cfg.Rediscover}
		for j, peer := range c.nodes {
			if i != j {
				spec.Peers = append(spec.Peers, gen.ProcessID{Name: actorName, Node: peer.Name()})
			}
		}
		if _, err := node.SpawnRegister(actorName, factoryElection, gen.ProcessOptions{}, spec); err != nil {
			c.close()
			return nil, fmt.Errorf("spawn on %s: %w", node.Name(), err)
		}
	}
	return c, nil
}

// sources are the leader actors, one per node, for the collector. A
// stopped node stays listed: the collector must cope with it.
func (c *cluster) sources() []Source {
	var list []Source
	for _, node := range c.nodes {
		list = append(list, Source{Node: node, Name: actorName})
	}
	return list
}

// stop stops node i gracefully (its leader actor hands leadership over).
func (c *cluster) stop(i int) {
	c.mu.Lock()
	if c.stopped[i] {
		c.mu.Unlock()
		return
	}
	c.stopped[i] = true
	node := c.nodes[i]
	c.mu.Unlock()
	node.Stop()
}

func (c *cluster) close() {
	for i := range c.nodes {
		c.stop(i)
	}
}
