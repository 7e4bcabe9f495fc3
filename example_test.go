package leader_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo"
	"ergo.services/ergo/act"
	"ergo.services/ergo/app"
	"ergo.services/ergo/gen"
)

// coordinator runs on every node; one of them leads.
type coordinator struct {
	leader.Actor

	nodes []gen.Atom // your discovery; here a fixed list
}

type discover struct{}

func (c *coordinator) Init(args ...any) (leader.Options, error) {
	c.nodes = args[0].([]gen.Atom)
	// Start the discovery loop. Join would work here as well (it takes
	// effect once Init has returned the options), but discovery repeats,
	// so it belongs in a handler.
	if err := c.Send(c.PID(), discover{}); err != nil {
		return leader.Options{}, err
	}
	return leader.Options{ClusterID: "scheduler", MinClusterSize: 3}, nil
}

func (c *coordinator) HandleMessage(from gen.PID, message any) error {
	if _, ok := message.(discover); ok {
		for _, node := range c.nodes { // Join ignores this actor's own node
			c.Join(gen.ProcessID{Name: "coordinator", Node: node})
		}
		_, err := c.SendAfter(c.PID(), discover{}, 5*time.Second)
		return err
	}
	return nil
}

func (c *coordinator) HandleBecomeLeader() error                 { /* start the work */ return nil }
func (c *coordinator) HandleBecomeFollower(leader gen.PID) error { /* stop it */ return nil }

// coordinatorApp hosts the coordinator and registers the wire types, which
// every node needs before it connects to a peer.
type coordinatorApp struct {
	app.Application

	nodes []gen.Atom
}

func (a *coordinatorApp) Load(args ...any) (gen.ApplicationSpec, error) {
	return gen.ApplicationSpec{
		Name: "scheduler",
		Network: gen.ApplicationNetwork{
			RegisterTypes:  leader.NetworkTypes(),
			RegisterErrors: leader.ErrorTypes(),
		},
		Group: []gen.ApplicationMemberSpec{{
			Name:    "coordinator",
			Factory: func() gen.ProcessBehavior { return &coordinator{} },
			Args:    []any{a.nodes},
		}},
	}, nil
}

// Three nodes elect one coordinator. In production every node runs in a
// process of its own; here they share one, and they find each other through
// the framework's built-in registrar. Nodes connect only if they share the
// network cookie.
func Example() {
	var nodes []gen.Atom
	for i := 1; i <= 3; i++ {
		nodes = append(nodes, gen.Atom(fmt.Sprintf("n%d-%d@localhost", i, os.Getpid())))
	}
	var started []gen.Node
	for _, name := range nodes {
		node, err := ergo.StartNode(name, gen.NodeOptions{
			Network:      gen.NetworkOptions{Cookie: "a secret every node shares"},
			Applications: []gen.ApplicationBehavior{&coordinatorApp{nodes: nodes}},
			Log:          gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
		})
		if err != nil {
			panic(err)
		}
		defer node.Stop()
		started = append(started, node)
	}

	// Wait until every node follows the same leader.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		leaders := make(map[string]int)
		for _, node := range started {
			pid, err := node.ProcessPID("coordinator")
			if err != nil {
				continue
			}
			info, _ := node.Inspect(pid, "ergo:leader_node")
			if info["ergo:leader_node"] != "" {
				leaders[info["ergo:leader_node"]]++
			}
		}
		if len(leaders) == 1 {
			for _, followers := range leaders {
				if followers == len(started) {
					fmt.Println("one leader, followed by", followers, "nodes")
					return
				}
			}
		}
	}
	fmt.Println("no agreement within 30s")
	// Output:
	// one leader, followed by 3 nodes
}

// solo is the actor of the single-node examples. It tells the example when
// leadership begins.
type solo struct {
	leader.Actor

	leading chan<- uint64 // tells the example when leadership begins
}

func (c *solo) Init(args ...any) (leader.Options, error) {
	c.leading = args[0].(chan uint64)
	return leader.Options{
		ClusterID: "example",
		// A single-node deployment must say so: the default is 3.
		MinClusterSize: 1,
	}, nil
}

func (c *solo) HandleBecomeLeader() error {
	fmt.Println("became leader at term", c.Term())
	c.leading <- c.Term()
	return nil
}

func (c *solo) HandleBecomeFollower(leader gen.PID) error {
	// Every transition into follower lands here, also a leader's own stop:
	// make it idempotent and stop the work unconditionally.
	fmt.Println("no longer leader")
	return nil
}

// Embedding leader.Actor. The node runs alone, so MinClusterSize 1 lets it
// appoint itself; without a network there is nothing to register.
func ExampleActor() {
	node, err := ergo.StartNode(gen.Atom(fmt.Sprintf("actor-%d@localhost", os.Getpid())), gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		panic(err)
	}
	leading := make(chan uint64, 1)
	factory := func() gen.ProcessBehavior { return &solo{} }
	if _, err := node.SpawnRegister("coordinator", factory, gen.ProcessOptions{}, leading); err != nil {
		panic(err)
	}
	<-leading
	node.Stop() // a leader that stops steps down first
	// Output:
	// became leader at term 1
	// no longer leader
}

// Registering the wire types on the node, before it talks to any peer. The
// actor refuses to start without them: an unregistered vote would fail to
// encode on every send. The framework keeps one registry per OS process,
// so a second node of the same process finds the types registered already
// (gen.ErrTaken), which is fine.
func ExampleNetworkTypes() {
	node, err := ergo.StartNode(gen.Atom(fmt.Sprintf("types-%d@localhost", os.Getpid())), gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "example"},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		panic(err)
	}
	if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		panic(err)
	}
	if err := node.Network().RegisterErrors(leader.ErrorTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		panic(err)
	}
	leading := make(chan uint64, 1)
	factory := func() gen.ProcessBehavior { return &solo{} }
	_, err = node.Spawn(factory, gen.ProcessOptions{}, leading)
	fmt.Println("started:", err)
	<-leading
	node.Stop()
	// Output:
	// started: <nil>
	// became leader at term 1
	// no longer leader
}

// schedulerApp hosts a solo actor and registers the wire types in its
// spec: ApplicationSpec.Network is applied while the application loads,
// before any of its members is spawned.
type schedulerApp struct {
	app.Application

	leading chan uint64
}

func (a *schedulerApp) Load(args ...any) (gen.ApplicationSpec, error) {
	return gen.ApplicationSpec{
		Name: "scheduler",
		Network: gen.ApplicationNetwork{
			RegisterTypes:  leader.NetworkTypes(),
			RegisterErrors: leader.ErrorTypes(),
		},
		Group: []gen.ApplicationMemberSpec{{
			Name:    "coordinator",
			Factory: func() gen.ProcessBehavior { return &solo{} },
			Args:    []any{a.leading},
		}},
	}, nil
}

// Registering the wire types through the application that hosts the actor.
func ExampleNetworkTypes_application() {
	leading := make(chan uint64, 1)
	node, err := ergo.StartNode(gen.Atom(fmt.Sprintf("app-%d@localhost", os.Getpid())), gen.NodeOptions{
		Network:      gen.NetworkOptions{Cookie: "example"},
		Log:          gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
		Applications: []gen.ApplicationBehavior{&schedulerApp{leading: leading}},
	})
	if err != nil {
		panic(err)
	}
	<-leading
	node.Stop()
	// Output:
	// became leader at term 1
	// no longer leader
}

// member joins the peers its discovery finds, and keeps looking.
type member struct {
	leader.Actor

	discover func() []gen.Atom // whatever your deployment offers
}

type messageDiscover struct{}

func (m *member) Init(args ...any) (leader.Options, error) {
	m.discover = args[0].(func() []gen.Atom)
	// Join works here too (it takes effect once Init has returned the
	// options), but discovery must repeat: start its loop from a handler.
	if err := m.Send(m.PID(), messageDiscover{}); err != nil {
		return leader.Options{}, err
	}
	return leader.Options{ClusterID: "example", MinClusterSize: 3}, nil
}

func (m *member) HandleMessage(from gen.PID, message any) error {
	switch message.(type) {
	case messageDiscover:
		for _, node := range m.discover() {
			m.Join(gen.ProcessID{Name: "member", Node: node})
		}
		// Peers appear and disappear, and a node that starts before its
		// peers must keep looking: re-run discovery on a timer.
		_, err := m.SendAfter(m.PID(), messageDiscover{}, time.Second)
		return err
	}
	return nil
}

func (m *member) HandleBecomeLeader() error                 { return nil }
func (m *member) HandleBecomeFollower(leader gen.PID) error { return nil }

// Join from a discovery loop. A declared peer counts toward the view at
// once, before it has answered - here it never will, as the node has no
// network - which is what lets a node reach MinClusterSize.
func ExampleActor_Join() {
	node, err := ergo.StartNode(gen.Atom(fmt.Sprintf("join-%d@localhost", os.Getpid())), gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		panic(err)
	}
	defer node.Stop()
	discover := func() []gen.Atom { return []gen.Atom{"b@localhost", "c@localhost"} }
	pid, err := node.SpawnRegister("member", func() gen.ProcessBehavior { return &member{} }, gen.ProcessOptions{}, discover)
	if err != nil {
		panic(err)
	}

	var info map[string]string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		info, _ = node.Inspect(pid, "ergo:view_size", "ergo:quorum", "ergo:declared", "ergo:peers")
		if info["ergo:view_size"] == "3" {
			break
		}
	}
	fmt.Println("view:", info["ergo:view_size"], "quorum:", info["ergo:quorum"])
	fmt.Println("declared:", info["ergo:declared"])
	fmt.Println("answered:", info["ergo:peers"])
	// Output:
	// view: 3 quorum: 2
	// declared: b@localhost,c@localhost
	// answered: 0
}

// lease stands for an external authority, such as a Kubernetes Lease that a
// separate process keeps renewed; the actor only reads its cached state.
type lease struct {
	mu   sync.Mutex
	held bool
}

func (l *lease) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

func (l *lease) grant() {
	l.mu.Lock()
	l.held = true
	l.mu.Unlock()
}

// gated wins elections like any leader actor, but leads only while it holds
// the lease.
type gated struct {
	leader.Actor

	lease   *lease
	asked   chan<- bool
	leading chan<- uint64
}

func (g *gated) Init(args ...any) (leader.Options, error) {
	g.lease, g.asked, g.leading = args[0].(*lease), args[1].(chan bool), args[2].(chan uint64)
	return leader.Options{ClusterID: "example", MinClusterSize: 1}, nil
}

// HandleConfirmLeader runs after the election is won and before leadership
// is published. False withholds it: the node re-campaigns after a backoff.
func (g *gated) HandleConfirmLeader() (bool, error) {
	held := g.lease.Held() // cheap: cached state, no network call
	fmt.Printf("won term %d, lease held: %v\n", g.Term(), held)
	g.asked <- held
	return held, nil
}

func (g *gated) HandleBecomeLeader() error {
	fmt.Println("leading at term", g.Term())
	g.leading <- g.Term()
	return nil
}

func (g *gated) HandleBecomeFollower(leader gen.PID) error { return nil }

// Gating leadership on an external authority: winning the election is
// necessary but not sufficient.
func ExampleActor_HandleConfirmLeader() {
	node, err := ergo.StartNode(gen.Atom(fmt.Sprintf("gated-%d@localhost", os.Getpid())), gen.NodeOptions{
		Network: gen.NetworkOptions{Mode: gen.NetworkModeDisabled},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		panic(err)
	}
	defer node.Stop()

	l := &lease{}
	asked := make(chan bool, 2)
	leading := make(chan uint64, 1)
	factory := func() gen.ProcessBehavior { return &gated{} }
	if _, err := node.Spawn(factory, gen.ProcessOptions{}, l, asked, leading); err != nil {
		panic(err)
	}
	<-asked   // the first win is denied: the lease is held elsewhere
	l.grant() // the lease is ours now; the next campaign is confirmed
	<-leading
	// Output:
	// won term 1, lease held: false
	// won term 2, lease held: true
	// leading at term 2
}

// leadershipWatcher is any process, on any node, that wants to know who
// leads: a health check, a metrics exporter, a router.
type leadershipWatcher struct {
	act.Actor
}

func (w *leadershipWatcher) Init(args ...any) error {
	// Subscribing is a request to the event's node: do it from a handler,
	// once the process runs.
	return w.Send(w.PID(), "subscribe")
}

func (w *leadershipWatcher) HandleMessage(from gen.PID, message any) error {
	// The election "orders" as node n1 sees it. The event's buffer holds
	// the current state, so it comes back at once.
	event := gen.Event{Name: leader.EventName("orders"), Node: "n1@localhost"}
	current, err := w.MonitorEvent(event)
	if err != nil {
		return err // not running yet on n1, say: try again later
	}
	for _, m := range current {
		w.report(m.Message.(leader.Leadership))
	}
	return nil
}

// HandleEvent receives one event per leadership change.
func (w *leadershipWatcher) HandleEvent(m gen.MessageEvent) error {
	w.report(m.Message.(leader.Leadership))
	return nil
}

func (w *leadershipWatcher) report(l leader.Leadership) {
	if l.IsLeader {
		w.Log().Info("%s leads %q at term %d", l.Node, l.ClusterID, l.Term)
		return
	}
	w.Log().Info("%s follows %s in %q", l.Node, l.Leader, l.ClusterID)
}

// Code outside the election learns about leadership from the event each
// election actor publishes (see Leadership). The subscriber's node must
// have the types of NetworkTypes registered, as every node of the cluster
// does.
func ExampleEventName() {
	node, err := ergo.StartNode("watcher@localhost", gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: "the cluster's cookie"},
	})
	if err != nil {
		panic(err)
	}
	node.Network().RegisterTypes(leader.NetworkTypes())
	node.Spawn(func() gen.ProcessBehavior { return &leadershipWatcher{} }, gen.ProcessOptions{})
}
