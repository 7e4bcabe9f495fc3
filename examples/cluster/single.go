package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

// runSingle runs one node of a multi-process cluster. Peers are found
// through the framework's built-in registrar: no routes, no proxies.
func runSingle(ctx context.Context, cfg config, out io.Writer) error {
	level := gen.LogLevelWarning
	if cfg.verbose {
		level = gen.LogLevelInfo
	}
	node, err := ergo.StartNode(cfg.name, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: cfg.cookie},
		Log:     gen.LogOptions{Level: level},
	})
	if err != nil {
		return err
	}
	defer node.StopForce()

	// Registered straight after the start, before anything of ours talks to
	// a peer (see examples/scheduler for the application-spec way). The
	// framework keeps one registry per OS process: when several nodes run
	// in one process, as in the tests, the second one gets gen.ErrTaken,
	// which means the types are there.
	if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		return err
	}
	if err := node.Network().RegisterErrors(leader.ErrorTypes()); err != nil && errors.Is(err, gen.ErrTaken) == false {
		return err
	}
	var peers []gen.ProcessID
	for _, peer := range cfg.join {
		peers = append(peers, gen.ProcessID{Name: processName, Node: peer})
	}
	spec := memberSpec{
		Options: leader.Options{
			ClusterID:          "demo",
			MinClusterSize:     cfg.minSize,
			ElectionTimeoutMin: cfg.electionMin,
			ElectionTimeoutMax: cfg.electionMax,
			HeartbeatInterval:  cfg.heartbeat,
		},
		Peers:      peers,
		Rediscover: time.Second,
	}
	if _, err := node.SpawnRegister(processName, factoryMember, gen.ProcessOptions{}, spec); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s started, joining %s (MinClusterSize %d)\n", string(cfg.name), joinList(cfg.join), cfg.minSize)
	fmt.Fprintln(out, "Ctrl-C stops it gracefully (a leader hands over first); kill -9 stops it abruptly.")

	// Print the election state whenever it changes.
	var last status
	ticker := time.NewTicker(50 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(out, "%s stopping\n", time.Now().Format("15:04:05.000"))
			node.Stop()
			return nil
		case <-ticker.C:
		}
		s := inspect(node)
		if s.State == last.State && s.Term == last.Term && s.Leader == last.Leader && s.View == last.View {
			continue
		}
		last = s
		leaderName := "none"
		if s.Leader != "" {
			leaderName = string(s.Leader)
		}
		fmt.Fprintf(out, "%s %-11s term %-3d leader %-20s view %d quorum %d\n",
			s.At.Format("15:04:05.000"), s.State, s.Term, leaderName, s.View, s.Quorum)
	}
}

func joinList(peers []gen.Atom) string {
	if len(peers) == 0 {
		return "nobody"
	}
	var list []string
	for _, p := range peers {
		list = append(list, string(p))
	}
	return strings.Join(list, ", ")
}
