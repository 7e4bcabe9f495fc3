// Package leader elects exactly one coordinator among the nodes of an ergo
// cluster and tells your code when this node gains and loses that role.
//
// Embed Actor in your actor, implement Init, HandleBecomeLeader and
// HandleBecomeFollower, and the work that must run in one place starts and
// stops on its own. Init returns the options and starts discovery, which is
// yours to provide; here it is a fixed list of nodes, joined again every few
// seconds:
//
//	type coordinator struct {
//		leader.Actor
//
//		nodes []gen.Atom // your discovery; here a fixed list
//	}
//
//	type discover struct{}
//
//	func (c *coordinator) Init(args ...any) (leader.Options, error) {
//		c.nodes = args[0].([]gen.Atom)
//		// Start the discovery loop. Join would work here as well (it takes
//		// effect once Init has returned the options), but discovery repeats,
//		// so it belongs in a handler.
//		if err := c.Send(c.PID(), discover{}); err != nil {
//			return leader.Options{}, err
//		}
//		return leader.Options{ClusterID: "scheduler", MinClusterSize: 3}, nil
//	}
//
//	func (c *coordinator) HandleMessage(from gen.PID, message any) error {
//		if _, ok := message.(discover); ok {
//			for _, node := range c.nodes { // Join ignores this actor's own node
//				c.Join(gen.ProcessID{Name: "coordinator", Node: node})
//			}
//			_, err := c.SendAfter(c.PID(), discover{}, 5*time.Second)
//			return err
//		}
//		return nil
//	}
//
//	func (c *coordinator) HandleBecomeLeader() error {
//		// start the work that must run in one place
//		return nil
//	}
//
//	func (c *coordinator) HandleBecomeFollower(leader gen.PID) error {
//		// stop it; leader is empty when no leader is known
//		return nil
//	}
//
// Every node registers the package's wire types before it connects to a
// peer, here through the application that hosts the actor:
//
//	func (a *coordinatorApp) Load(args ...any) (gen.ApplicationSpec, error) {
//		return gen.ApplicationSpec{
//			Name: "scheduler",
//			Network: gen.ApplicationNetwork{
//				RegisterTypes:  leader.NetworkTypes(),
//				RegisterErrors: leader.ErrorTypes(),
//			},
//			Group: []gen.ApplicationMemberSpec{{
//				Name:    "coordinator",
//				Factory: func() gen.ProcessBehavior { return &coordinator{} },
//				Args:    []any{a.nodes},
//			}},
//		}, nil
//	}
//
// and every node of the cluster starts with the same network cookie. Nodes
// whose cookies differ cannot connect, and a node started without one gets
// a random cookie, so it connects to nobody:
//
//	node, err := ergo.StartNode("n1@localhost", gen.NodeOptions{
//		Network:      gen.NetworkOptions{Cookie: "a secret every node shares"},
//		Applications: []gen.ApplicationBehavior{&coordinatorApp{nodes: nodes}},
//	})
//
// The package example is this program, with three nodes in one process.
//
// # Setup
//
// Register the wire types on every node, before it connects to peers, in
// gen.ApplicationSpec.Network.RegisterTypes (or with
// node.Network().RegisterTypes). Init refuses to start without them.
//
// Decide MinClusterSize: the smallest view that may have a leader at all.
// Set it above half the expected node count if two disjoint groups must
// never both elect a leader.
//
// Discovery is yours: call Join with the peers you find, and Leave when your
// discovery stops listing a node. Join works from Init as well as from any
// handler (called from Init, it takes effect once Init has returned the
// options), but discovery must repeat: peers appear and disappear, and a
// peer dropped from the view after GhostTTL comes back only through a later
// Join, yours or its own. So Init usually sends the actor a message that
// starts a loop, as above. Options.Bootstrap is Join declared up front, for
// peers known at deploy time.
//
// # How it works
//
// A Raft-style election without a log: terms, votes and heartbeats. A node
// needs the votes of a majority of its view, counting itself, and a voter
// grants one vote per term, so two nodes with the same view can never lead
// the same term. A higher term always wins.
//
// Beyond the documented protocol, these mechanisms are on by default:
//
//   - Pre-vote. Before raising its term a node asks whether it could win.
//     A voter agrees only if it has not heard a live leader within
//     ElectionTimeoutMin (or saw that leader's down). A node that cannot win,
//     such as the minority side of a partition, never inflates the term, so
//     its return does not depose a healthy leader.
//   - A leader lease. Liveness rounds go every ElectionTimeoutMin/30, are
//     numbered and acknowledged by round; IsLeader is true only while a
//     quorum acknowledged a round sent within F (ElectionTimeoutMin/10, or
//     longer on a slow network; less a 5% drift margin), and the leader
//     keeps its role for ElectionTimeoutMin after such a round before it
//     stands down (HandleBecomeFollower). Every node that acknowledged a
//     round, or granted a vote, refuses to help anyone else for
//     ElectionTimeoutMin, or for F once it sees a sign that its leader is
//     gone, and a freshly started actor grants nothing for a quiet period
//     a little longer than that, so no two nodes of one view act as leader
//     at the same instant, assuming only clock rates within 2.5% of real
//     time (the argument is in docs/safety.md). A half-open link, where
//     the leader's sends still succeed but nothing comes back, does not
//     keep it in office.
//   - Fast failover and handover. A follower that receives a down for its
//     leader's PID pre-votes as soon as its promise ends (F after its last
//     acknowledgement; at once when the leader's process is known to have
//     terminated) instead of after a full election timeout; the delay is
//     staggered by rank so one candidate
//     usually goes first (and the later ranks wait a little longer when a
//     node crash fails many elections of the node over at once, so that
//     the first one's pre-vote reaches them before their own goes out).
//     Voters agree only if they lost the leader too, so
//     one follower whose own link flapped cannot disrupt a healthy leader.
//     A leader that stops on purpose (StepDown, or a normal or shutdown
//     termination) stands down and tells its most recently heard follower
//     to campaign at once. A terminating one then stays until that
//     follower campaigns (at most ElectionTimeoutMin/2), without callbacks
//     and without granting votes, so that a node's Stop, which waits for
//     its processes before it closes the connections, cannot lose the
//     message.
//   - Coalesced liveness. The elections on a node share one process,
//     registered as "leader_liveness", that carries the heartbeat rounds of
//     all of them to each other node in one message per interval and brings
//     the acknowledgements back in one; votes, pre-votes and handovers stay
//     per election, and the guarantees hold per election, unchanged
//     (docs/coalescing.md). Likewise the node watches each other node's
//     processes for all its elections with one process, registered as
//     "leader_watch_" + that node's name. Options.DisableCoalescing turns
//     both off for an election.
//
// The roles and what moves a node between them:
//
//	unclustered ──(view reaches MinClusterSize)──► follower
//	any role ─────(view drops below MinClusterSize)──► unclustered
//
//	follower ──(no heartbeat for a random election timeout,
//	            or the leader's down + a rank-staggered few ms)──► pre-vote round
//	pre-vote round ──(refused: a quorum still hears a leader)──► follower
//	pre-vote round ──(granted by a quorum)──► candidate: term+1, votes for itself
//	follower ──(TimeoutNow from its leader: a handover)──► candidate
//	candidate ──(grants from a quorum)──► HandleConfirmLeader
//	candidate ──(higher term, a leader's heartbeat, round timeout)──► follower / new round
//	HandleConfirmLeader ──(false or error)──► follower, campaign again after a growing backoff
//	HandleConfirmLeader ──(true)──► leader: HandleBecomeLeader, then heartbeats
//	leader ──(higher term; its lease ran out; its connections cannot form a quorum;
//	          StepDown or a graceful stop, which hands over)──► follower: HandleBecomeFollower
//
// A pre-vote round keeps the role (follower or candidate): it changes no
// state anywhere, which is the point of it.
//
// # Guarantees
//
// Within a cluster whose members share one view, at most one leader per
// term, and at most one node for which IsLeader is true at any instant;
// guard leader-only work with IsLeader, and check LeaseExpiry before a long
// step. A partition of a converged cluster elects on the majority side only:
// a lost connection keeps the member in the view until GhostTTL. Diverged
// views (a cold start where groups never met, members lost for real, or
// GhostTTL expiring during a long partition) form separate clusters, each
// with its own leader, until they meet again. Nothing is persisted; if
// leadership authorises something irreversible, gate it on an external
// authority with HandleConfirmLeader and fence it with a monotonic token.
//
// # Where the code is
//
// The files a reader opens first (doc.go is this text):
//
//	actor.go       the embeddable Actor and its mailbox loop; api.go, callbacks.go: its methods and defaults
//	options.go     Options, defaults, validation; timing.go: every duration derived from them
//	election.go    the election state machine: terms, votes, pre-votes, heartbeats, role transitions;
//	               leadership.go, lease.go, pledge.go, departure.go: its rules for leading, the lease
//	               and promises, pledged votes, a leader's graceful exit; inputs.go: the actor's
//	               other inputs to it (the only way the actor changes it; what the node's hub
//	               recorded comes in as a view at the start of each step, coalesce.go)
//	membership.go  the view, Join and Leave, ghost TTL; seats.go: kept seats; gone.go: members that left
//	inspect.go     HandleInspect keys; stats.go, health.go, probe.go, events.go: what operators watch
//	types.go       wire types, NetworkTypes, ErrorTypes
//
// What the elections of a node share (coalescing.md): hub.go (the liveness
// hub: its process, joins and leaves), hub_tick.go (its tick), quietwheel.go
// (which slots a tick must look at), pingwaiters.go (the followers that
// wait on their leader's node's pings), hub_answer.go
// (the other hubs' messages), hubwire.go, routes.go, coalesce.go,
// parking.go, actor_hub.go (an actor's side of it), pings.go (the
// hubs' node-level pings that renew the leases), vouch.go (records only
// for what changed: the pings vouch for the node's leaders), watcher.go,
// shared_watcher.go (watching other nodes' processes), linger.go (these
// helpers end with their last election), pacing.go (node-wide pacing:
// campaign turns, failover waves, owed downs, spare losses), nodestate.go (what goes
// when a node stops), atoms.go. The framework's connections: dialer.go,
// ghostprobe.go (a dead node is probed once per node, not per election),
// silence.go, linkprobe.go (a silent connection is reset only when the
// other node's framework does not answer over it); olderframeworks.go
// holds what only a framework older than v3.3.0 needs, off when both ends
// show the fix.
// Logging: log.go; timers: timers.go; the stack of an activation: stack.go.
package leader
