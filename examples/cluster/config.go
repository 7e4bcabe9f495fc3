package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// config is the command line, parsed.
type config struct {
	nodes       int
	electionMin int // ms
	electionMax int // ms
	heartbeat   int // ms
	minSize     int
	timeline    string
	plain       bool
	pause       time.Duration
	cookie      string
	verbose     bool
	cut         string // how a cut link fails: refuse or drop

	// multi-process mode
	name gen.Atom
	join []gen.Atom
}

func parseConfig(args []string, output io.Writer) (config, error) {
	var c config
	var name, join string
	fs := flag.NewFlagSet("cluster", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.Usage = func() {
		fmt.Fprint(output, `Usage:
  cluster [flags]                         five nodes in this process, a scripted story
  cluster -name n1@localhost -join n2@localhost,n3@localhost
                                          one node of a multi-process cluster

Flags:
`)
		fs.PrintDefaults()
	}
	fs.IntVar(&c.nodes, "nodes", 5, "number of nodes in the in-process story (at least 3)")
	fs.IntVar(&c.electionMin, "election-min", 150, "ElectionTimeoutMin, ms")
	fs.IntVar(&c.electionMax, "election-max", 300, "ElectionTimeoutMax, ms")
	fs.IntVar(&c.heartbeat, "heartbeat", 50, "HeartbeatInterval, ms")
	fs.IntVar(&c.minSize, "min-size", 3, "MinClusterSize")
	fs.StringVar(&c.timeline, "timeline", "", "write an SVG timeline of the story to this file")
	fs.BoolVar(&c.plain, "plain", false, "print lines instead of redrawing the table (the default when the output is not a terminal)")
	fs.DurationVar(&c.pause, "pause", 2*time.Second, "how long to linger after each step so it can be read")
	fs.StringVar(&c.cookie, "cookie", "leader-demo", "network cookie shared by all nodes")
	fs.BoolVar(&c.verbose, "v", false, "also print the nodes' log messages")
	fs.StringVar(&c.cut, "cut", "refuse", "how a cut link, or one to a stopped node, fails: refuse (a reset: dials fail at once) or drop (silence: dials wait for their handshake to time out, as behind a firewall)")
	fs.StringVar(&name, "name", "", "run one node with this name (multi-process mode)")
	fs.StringVar(&join, "join", "", "comma-separated nodes to join (multi-process mode)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}

	c.name = gen.Atom(name)
	for _, peer := range strings.Split(join, ",") {
		if peer = strings.TrimSpace(peer); peer != "" {
			c.join = append(c.join, gen.Atom(peer))
		}
	}
	if c.name == "" && len(c.join) > 0 {
		return c, errors.New("-join needs -name")
	}
	if c.name == "" && c.nodes < 3 {
		return c, errors.New("-nodes must be at least 3: the story partitions the cluster into a majority and a minority")
	}
	if c.cut != "refuse" && c.cut != "drop" {
		return c, fmt.Errorf("-cut is refuse or drop, not %q", c.cut)
	}
	if c.nodes > 26 {
		return c, errors.New("-nodes is at most 26 (the table names nodes A to Z)")
	}
	return c, nil
}
