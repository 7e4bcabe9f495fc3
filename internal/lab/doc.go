// Package lab is the fault-injection toolkit for tests on real nodes: every
// ergo node runs in its own OS process inside its own Linux network
// namespace, so that faults mean what they mean in production whatever the
// runtime does with its connections (the framework pools several TCP links
// per node pair and dials the extra links, and every reconnect, straight to
// the address the accepting node advertises, so a proxy on one route
// partitions nothing):
//
//   - a partition is a route in both namespaces that drops (CutSilent) or
//     rejects (CutAbort) every packet between two nodes, on every link;
//   - a one-sided abort leaves one side (the quiet side) silent while the
//     other sees its links fail: its resets never leave its namespace
//     (CutAbortOneSided) or are dropped on arrival by an nftables rule
//     (CutAbortResetLost);
//   - a crash is a killed process (Node.Kill, SIGKILL) or a lost connection
//     (CutAbort);
//   - a stall is SIGSTOP/SIGCONT (Node.Stall, Node.Resume);
//   - a graceful stop is node.Stop in the child (Node.Stop).
//
// # Layout
//
// Net creates the namespaces: "ip netns add", one veth pair per node to a
// bridge in the root namespace (the bridge has no address, so concurrent
// labs never see each other), address 10.77.<lab>.<i+1>/24, loopback up.
// Names carry the test process's pid and a counter; everything is removed
// in t.Cleanup, and NewNet first removes what a killed earlier run left
// (RemoveStale). Cut, CutFast, CutWith, Heal, Partition, PartitionWith and
// HealAll change the routes (and, for CutAbortResetLost, nftables rules),
// every namespace of a cut at once from a shell started beforehand
// (LastCut says when); Deafen makes every link to one node half-open
// (an nftables rule in its namespace drops what is sent to it, not what it
// sends); Links counts the kernel's TCP connections between two nodes.
//
// Cluster (Start) adds one node process per namespace. The test binary is
// the node program: the test package's TestMain calls Main, which runs the
// Program the test package supplies when EnvNode is set and the tests
// otherwise. The lab is generic; the test package provides the actor
// (Program.Start spawns it, Program.Go makes it join its peers,
// Program.Handle answers operations such as "stepdown" or "leave").
//
// A child node is named n<i+1>@<ip>, shares the cookie, accepts on its
// namespace address and reaches its peers through static routes (final in
// the framework: no registrar lookup, and no UDP resolve that waits out its
// deadline toward a cut host). It registers Program.Types and the lab's
// Probe before any peer learns its name: the test tells the nodes to go
// only when all are ready.
//
// The control channel is a pair of pipes (fd 3 commands, fd 4 reports, one
// JSON object per line); stdout and stderr go to the node's log file in
// Cluster.Dir (kept with LEADER_LAB_LOGS=<dir>, printed on failure or with
// LEADER_LAB_VERBOSE=1; with LEADER_LAB_DUMP=<dir>, a failed test first
// sends every node SIGQUIT and copies each log, the Go runtime's goroutine
// dump at its end, to <dir>/dump-<index>.log). A child pushes its Status (the actor's Inspect
// keys, the probe counters, each peer's connection and pool) whenever it
// changes, and answers Node.Do and Node.Refresh; Child.Emit pushes events
// (the test actor reports its callbacks with it). Every child watches its
// own scheduling stalls (Node.Stalls, Cluster.WorstStall), so that a test
// can tell a protocol failure from a node process that was not scheduled. A child exits when the
// channel closes, and dies with the test process (Pdeathsig).
//
// The leader-only work log (WorkLog, ReadWorkLog, FindOverlaps) is a file
// all children append to while their actor leads; FindOverlaps reports
// times at which two nodes both did leader-only work.
//
// Requirements: root, iproute2 (ip, ss) and a kernel with network
// namespaces and sock_destroy (ss -K); Deafen also needs nft (nftables). Require skips a test otherwise, or
// fails it when LEADER_LAB=require.
package lab
