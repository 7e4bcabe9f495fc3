// Discovery from the registrar: three nodes on one host find each other
// through the framework's embedded registrar (ergo v3.3.0: Registrar().Nodes()
// and the registrar event, MessageRegistrarNodeJoined / NodeLeft), elect a
// leader, see a fourth node arrive and, after it stops, leave it.
//
//	go run ./examples/discovery
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

const (
	cookie  = "leader-discovery-demo"
	cluster = "discovery"
	actor   = gen.Atom("coordinator")
)

// startMember starts a node that runs one election actor, whose discovery
// is the registrar.
func startMember(name gen.Atom, prefix string, changes chan<- string, leaveAfter time.Duration) (gen.Node, gen.PID, error) {
	node, err := ergo.StartNode(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Cookie: cookie},
		Log:     gen.LogOptions{Level: gen.LogLevelWarning},
	})
	if err != nil {
		return nil, gen.PID{}, err
	}
	if err := node.Network().RegisterTypes(leader.NetworkTypes()); err != nil {
		node.StopForce()
		return nil, gen.PID{}, err
	}
	if err := node.Network().RegisterErrors(leader.ErrorTypes()); err != nil {
		node.StopForce()
		return nil, gen.PID{}, err
	}
	factory := func() gen.ProcessBehavior {
		return &member{
			options:        leader.Options{ClusterID: cluster, MinClusterSize: 3},
			reconcileEvery: 2 * time.Second,
			leaveAfter:     leaveAfter,
			changes:        changes,
			ours:           func(n gen.Atom) bool { return strings.HasPrefix(string(n), prefix) },
		}
	}
	pid, err := node.SpawnRegister(actor, factory, gen.ProcessOptions{})
	if err != nil {
		node.StopForce()
		return nil, gen.PID{}, err
	}
	return node, pid, nil
}

func main() {
	leaveAfter := flag.Duration("leave-after", 6*time.Second, "how long a node the registrar stopped listing stays joined")
	flag.Parse()
	if err := run(*leaveAfter); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(leaveAfter time.Duration) error {
	changes := make(chan string, 100)
	var nodes []gen.Node
	defer func() {
		for _, n := range nodes {
			n.Stop()
		}
	}()
	for i := 1; i <= 3; i++ {
		n, _, err := startMember(gen.Atom(fmt.Sprintf("disco%d@localhost", i)), "disco", changes, leaveAfter)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	show := func(d time.Duration) {
		end := time.After(d)
		for {
			select {
			case c := <-changes:
				fmt.Println(" ", c)
			case <-end:
				return
			}
		}
	}
	fmt.Println("three nodes, no peer list: the registrar introduces them")
	show(2 * time.Second)
	late, _, err := startMember("disco4@localhost", "disco", changes, leaveAfter)
	if err != nil {
		return err
	}
	fmt.Println("a fourth node starts")
	show(2 * time.Second)
	late.Stop()
	fmt.Printf("the fourth node stops; the others leave it after %s\n", leaveAfter)
	show(leaveAfter + 3*time.Second)
	return nil
}
