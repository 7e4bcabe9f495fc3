package main

import (
	"fmt"
	"os"
	"testing"
	"time"

	"ergo.services/ergo/gen"
)

type started struct {
	node gen.Node
	pid  gen.PID
}

// inspectAll reads key from every node's election actor.
func inspectAll(nodes []started, key string) []string {
	var values []string
	for _, n := range nodes {
		m, err := n.node.Inspect(n.pid, key)
		if err != nil {
			values = append(values, "error: "+err.Error())
			continue
		}
		values = append(values, m[key])
	}
	return values
}

// await polls until every node's key reads want (any non-empty common
// value when want is "*"), or fails the test at the deadline.
func await(t *testing.T, nodes []started, key, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		values := inspectAll(nodes, key)
		same := values[0] != "" && (want == "*" || values[0] == want)
		for _, v := range values {
			same = same && v == values[0]
		}
		if same {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v, want %q everywhere", key, values, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRegistrarDiscovery: three nodes with no peer list elect one leader,
// Join a fourth the registrar announces, and Leave it once it has stopped.
func TestRegistrarDiscovery(t *testing.T) {
	prefix := fmt.Sprintf("dt%d", os.Getpid())
	var nodes []started
	t.Cleanup(func() {
		for _, n := range nodes {
			n.node.Stop()
		}
	})
	leaveAfter := 500 * time.Millisecond
	for i := 1; i <= 3; i++ {
		n, pid, err := startMember(gen.Atom(fmt.Sprintf("%s-%d@localhost", prefix, i)), prefix+"-", nil, leaveAfter)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, started{n, pid})
	}
	await(t, nodes, "ergo:view_size", "3")
	await(t, nodes, "ergo:leader_node", "*")
	late, pid, err := startMember(gen.Atom(prefix+"-4@localhost"), prefix+"-", nil, leaveAfter)
	if err != nil {
		t.Fatal(err)
	}
	await(t, append(nodes, started{late, pid}), "ergo:view_size", "4")
	late.Stop()
	await(t, nodes, "ergo:view_size", "3")
	await(t, nodes, "ergo:leader_node", "*")
}
