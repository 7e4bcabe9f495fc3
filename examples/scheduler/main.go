// Command scheduler is a coordinator built on leader.Actor: a periodic job
// that runs only on the elected leader, peers discovered from a static list
// that is re-read on a timer, and requests accepted on any node - forwarded
// to the leader, or rejected when there is none.
//
// With no arguments it runs three nodes in this process and walks through
// it: the job on one node, a request forwarded by a follower, the leader
// killed and the job moving, and a request rejected when no leader is left.
//
//	go run ./examples/scheduler
//
// With -name it runs one node; start one per line of the peer list:
//
//	go run ./examples/scheduler -name s1@localhost -peers examples/scheduler/peers.txt
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

func main() { lab.Main("scheduler", run) }

// config is the command line, parsed.
type config struct {
	name        gen.Atom
	peers       string
	tick        time.Duration
	rediscover  time.Duration
	electionMin int
	electionMax int
	heartbeat   int
	minSize     int
	cookie      string
}

func parseConfig(args []string, output io.Writer) (config, error) {
	var c config
	var name string
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&name, "name", "", "run one node with this name; without it, three nodes run in this process")
	fs.StringVar(&c.peers, "peers", "examples/scheduler/peers.txt", "static peer list, one node name a line (with -name)")
	fs.DurationVar(&c.tick, "tick", 500*time.Millisecond, "period of the leader-only job")
	fs.DurationVar(&c.rediscover, "rediscover", 2*time.Second, "how often the peer list is re-read")
	fs.IntVar(&c.electionMin, "election-min", 150, "ElectionTimeoutMin, ms")
	fs.IntVar(&c.electionMax, "election-max", 300, "ElectionTimeoutMax, ms")
	fs.IntVar(&c.heartbeat, "heartbeat", 50, "HeartbeatInterval, ms")
	fs.IntVar(&c.minSize, "min-size", 3, "MinClusterSize")
	fs.StringVar(&c.cookie, "cookie", "scheduler-demo", "network cookie shared by all nodes")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	c.name = gen.Atom(name)
	return c, nil
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseConfig(args, out)
	if err != nil {
		return err
	}
	if cfg.name == "" {
		_, err := runDemo(ctx, cfg, out)
		return err
	}
	return runNode(ctx, cfg, out)
}

func (c config) spec(peersFile string, onRun func(Run)) coordinatorSpec {
	return coordinatorSpec{
		Options: leader.Options{
			ClusterID:          "scheduler",
			MinClusterSize:     c.minSize,
			ElectionTimeoutMin: c.electionMin,
			ElectionTimeoutMax: c.electionMax,
			HeartbeatInterval:  c.heartbeat,
		},
		PeersFile:  peersFile,
		Rediscover: c.rediscover,
		Tick:       c.tick,
		OnRun:      onRun,
	}
}

// runNode runs one node of a multi-process scheduler. The application is
// started with the node, so the wire types are registered before anything
// of ours connects to a peer; peers are found through the registrar.
func runNode(ctx context.Context, cfg config, out io.Writer) error {
	onRun := func(r Run) {
		fmt.Fprintf(out, "%s job run #%d at term %d, submitted jobs %v\n", r.At.Format("15:04:05.000"), r.Seq, r.Term, r.Jobs)
	}
	node, err := ergo.StartNode(cfg.name, gen.NodeOptions{
		Network:      gen.NetworkOptions{Cookie: cfg.cookie},
		Applications: []gen.ApplicationBehavior{&schedulerApp{spec: cfg.spec(cfg.peers, onRun)}},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s started; peers from %s\n", string(cfg.name), cfg.peers)
	<-ctx.Done()
	node.Stop()
	return nil
}
