package leader_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo"
	"ergo.services/ergo/app"
	"ergo.services/ergo/gen"
)

// coordinator embeds leader.Actor: Init returns the options, and the two
// leadership callbacks start and stop the work that must run in one place.
type coordinator struct {
	leader.Actor

	leading chan<- uint64 // tells the example when leadership begins
}

func (c *coordinator) Init(args ...any) (leader.Options, error) {
	c.leading = args[0].(chan uint64)
	return leader.Options{
		ClusterID: "example",
		// A single-node deployment must say so: the default is 3.
		MinClusterSize: 1,
	}, nil
}

func (c *coordinator) HandleBecomeLeader() error {
	fmt.Println("became leader at term", c.Term())
	c.leading <- c.Term()
	return nil
}

func (c *coordinator) HandleBecomeFollower(leader gen.PID) error {
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
	factory := func() gen.ProcessBehavior { return &coordinator{} }
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
	factory := func() gen.ProcessBehavior { return &coordinator{} }
	_, err = node.Spawn(factory, gen.ProcessOptions{}, leading)
	fmt.Println("started:", err)
	<-leading
	node.Stop()
	// Output:
	// started: <nil>
	// became leader at term 1
	// no longer leader
}

// schedulerApp hosts a coordinator and registers the wire types in its
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
			Factory: func() gen.ProcessBehavior { return &coordinator{} },
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
	// Join from a handler, not from here: the options are not applied
	// until Init returns.
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
