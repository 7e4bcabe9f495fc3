// Command cluster shows leader election at work.
//
// With no arguments it starts five nodes in this process, linked through
// per-pair TCP proxies so that connections can really be cut, and plays a
// scripted story while a table of every node's election state is redrawn:
// a first election, the leader killed, a restart, a partition with the
// leader in the majority, the heal, and a graceful stop of the leader. A
// summary with the measured times closes it.
//
//	go run ./examples/cluster
//	go run ./examples/cluster -plain -timeline story.svg
//
// With -name it runs one node of a cluster of separate processes, which find
// each other through the framework's built-in registrar:
//
//	go run ./examples/cluster -name n1@localhost -join n2@localhost,n3@localhost
//	go run ./examples/cluster -name n2@localhost -join n1@localhost,n3@localhost
//	go run ./examples/cluster -name n3@localhost -join n1@localhost,n2@localhost
//
// Each prints its role as it changes. Stop the leader's process with Ctrl-C
// (a graceful handover) or kill -9 (a failover) and watch the others.
package main

import (
	"context"
	"io"

	"ergo.services/actor/leader/examples/internal/lab"
)

func main() { lab.Main("cluster", run) }

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseConfig(args, out)
	if err != nil {
		return err
	}
	if cfg.name != "" {
		return runSingle(ctx, cfg, out)
	}
	_, err = runDemo(ctx, cfg, out)
	return err
}
