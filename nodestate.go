package leader

import (
	"sync"

	"ergo.services/ergo/gen"
)

// What the elections of one node share lives in package-level tables keyed
// by the node (connectionResets, campaignGates, pingBoards): they coordinate actors that
// know nothing else of each other. Each table would otherwise grow with
// every node instance the OS process has run (tests start thousands; a
// program may restart a node under a new name), so a node's entries go
// when its last election actor, or its liveness hub, ends (releaseNode). A node whose OS process
// was killed takes the tables with it.

// nodeActors counts the running election actors of each node.
var nodeActors = struct {
	sync.Mutex
	count map[gen.Node]int
}{count: make(map[gen.Node]int)}

// retainNode records that an election actor of node runs.
func retainNode(node gen.Node) {
	nodeActors.Lock()
	nodeActors.count[node]++
	nodeActors.Unlock()
}

// releaseNode records that an election actor of node ended, and forgets the
// node's shared state when it was the last.
func releaseNode(node gen.Node) {
	nodeActors.Lock()
	nodeActors.count[node]--
	last := nodeActors.count[node] <= 0
	if last {
		delete(nodeActors.count, node)
	}
	nodeActors.Unlock()
	if last {
		connectionResets.forget(node)
		forgetGate(node)
		forgetBoard(node)
	}
}

// forgetNode drops everything the package keeps for node at once, as the
// end of its OS process does (the simulator's crash and the end of a
// simulation).
func forgetNode(node gen.Node) {
	nodeActors.Lock()
	delete(nodeActors.count, node)
	nodeActors.Unlock()
	connectionResets.forget(node)
	forgetGate(node)
	forgetBoard(node)
}
