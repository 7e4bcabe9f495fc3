// Package node is the runtime of the stand-in framework: the process
// registry, mailboxes and the goroutine-per-process scheduler, links and
// monitors, calls, applications, logging, and the glue to the network stack
// (internal/netstack) that carries messages to other nodes.
//
// Links, monitors and their notices follow the framework's v320 node core
// (node/core.go, node/process.go, net/proto/connection.go): a remote
// Link/Unlink/Monitor/Demonitor is a request that blocks the calling
// goroutine until the peer answers or gen.DefaultRequestTimeout (5) seconds
// pass, also when the connection drops meanwhile; links and monitors need
// the Running state; downs go to the System queue (MailboxMessageTypeRegular)
// and exits to Urgent (MailboxMessageTypeExit), sent by the dead PID for a
// PID target and by the core PID otherwise (ProcessID, Alias, a connection
// loss, a node); Kill of a process inside a callback only makes it a zombee;
// StopForce kills the processes before the network stops.
//
// Events follow the same sources (node/node.go registerEvent,
// unregisterEvent and unregisterProcess; node/core.go RouteSendEvent,
// RouteLinkEvent, RouteMonitorEvent, their removals, RouteTerminateEvent
// and RouteNodeDown; net/proto/connection.go): a name is unique per node
// (gen.ErrTaken; gen.CoreEvent is taken by every node's core at start);
// SendEvent needs the token from every sender (gen.ErrEventOwner,
// gen.ErrEventUnknown for an unknown name; EventOptions.Open is ignored,
// see below); a message reaches a subscriber as
// MailboxMessageTypeEvent from the sender, in the queue of the sender's
// send priority (act.Actor calls HandleEvent); LinkEvent/MonitorEvent
// return the last Buffer messages; with Notify the producer gets
// MessageEventStart/MessageEventStop from the core PID in the System queue
// when a subscription count reaches one / zero - a count a terminated
// subscriber never leaves (framework bug: only Unlink/Demonitor and a lost
// connection take subscriptions off it), so after one dies the producer
// hears neither; a process that both links and monitors gets every message
// twice; UnlinkEvent/DemonitorEvent do not default an empty Event.Node
// (gen.ErrTargetUnknown); the end of an event (its producer's reason, or
// gen.ErrUnregistered) is a MessageDownEvent/MessageExitEvent from the
// subscriber node's core PID. A remote subscription is a request like a
// remote Monitor, answered with the buffer; a message is sent once per
// subscribing node (existing connection only) and fanned out there. A
// message the network cannot encode still reaches the local subscribers:
// SendEvent returns nil and logs the failure for each such node. A buffer
// holding such a message makes a remote subscription time out
// (gen.ErrTimeout; the answer cannot be encoded) while the event's node
// keeps the subscription.
//
// Where the stand-in still differs from the framework, and why it does not
// matter to the library (or what the library must not rely on):
//
//   - A remote relation is recorded, as pending, before its request is sent.
//     A down or exit arriving before the peer's answer is held and delivered
//     once the peer accepted; a refused or timed-out request drops it. The
//     framework records the relation only after the answer, so a target that
//     dies right then can lose its down there. Likewise MonitorNode/LinkNode
//     deliver the down at once if the connection dropped while they ran (the
//     framework would keep a relation that fires at the next disconnect).
//     The stand-in never loses a down; the library must not count on that.
//   - When a consumer dies, its relations on remote targets are dropped on
//     the peer too (the framework keeps them there until the target dies or
//     the connection drops). Invisible: PIDs are not reused, and a notice
//     for a dead consumer is discarded either way.
//   - A relation request for a target that is not on the receiving node is
//     answered gen.ErrProcessUnknown (the framework would route it on). The
//     sender always addresses the target's own node.
//   - ProcessInit runs in its own goroutine under InitTimeout; on timeout
//     Spawn returns gen.ErrTimeout and the name is released. Kill of a
//     process in Init is gen.ErrProcessUnknown, as in the framework, whose
//     PID is not registered yet. A second Kill of a zombee does nothing (the framework
//     unregisters it and runs ProcessTerminate concurrently with the running
//     callback).
//   - StopForce waits (up to NodeOptions.ShutdownTimeout, a stand-in option)
//     for its processes' goroutines before returning, and ends requests still
//     waiting with gen.ErrNodeTerminated; the framework returns at once and
//     leaves those callers to time out. Only the stopped node can tell.
//   - Stop sends the shutdown exit (from each process's parent) to every
//     process at once and waits, up to ShutdownTimeout, until every
//     ProcessTerminate and every application's Terminate has returned; only
//     then does it take the network down (as v3.3.0 does), killing what is
//     left. The framework first stops each application (5 s each) and then
//     waits without a bound. The exits and their senders are the
//     framework's. An application's Terminate runs once the ProcessTerminate
//     of its last process returned (v3.3.0). ApplicationStop sends its exit
//     to the group members only; v3.3.0 also stops the processes they
//     spawned (the stand-in waits for those to end on their own, up to the
//     timeout). The library stops no application with spawned children.
//     As in v3.3.0 the node stays alive (IsAlive, Spawn, sends) through
//     Stop until its network is down, so a process spawned after Stop sent
//     its exits gets none, and Stop waits for it until ShutdownTimeout and
//     then kills it; the framework also logs the processes it still waits
//     for every 5 s and the kill as an error, the stand-in logs neither.
//   - SIGTERM and Interrupt: as in v3.3.0, node.Start ends with
//     SetCTRLC(true) and a signal logs "node ... is starting a graceful
//     shutdown..." and runs Stop. SetCTRLC(false) and the node's end call
//     signal.Stop on the node's channel, so the program's own signal
//     handling (or the default action) comes back; the framework closes its
//     channel without signal.Stop, and after a signal calls signal.Reset()
//     for the whole program. Only a program with its own signal handling
//     can tell; the library installs none.
//   - Creation is the node's start time in unix seconds (v3.3.0 node.Start),
//     so two starts of one name within a second share it (PIDs then differ
//     by ID only; the library's staleIncarnation allows for that), and
//     Creation() reads 0 once the node's network is down.
//   - Built-in registrar (internal/netstack/registrar): Nodes() and Event()
//     behave as v3.3.0's embedded registrar (other nodes of this host and
//     of the connected peers' hosts, self excluded, sorted; event
//     "ESRD_event" produced by the node, gen.MessageRegistrarNodeJoined /
//     NodeLeft for the other nodes of this host), but Nodes() asks the
//     server on every call (the framework caches the answer briefly), and
//     the wire protocol is the stand-in's own text protocol, so stand-in
//     nodes cannot use a real ESRD server or serve real nodes. When the
//     node hosting the server stops, no NodeLeft is published for it, and
//     the clients' re-registration with the next server is published as
//     NodeJoined again. The library uses neither Nodes nor Event.
//   - Connections: no software keepalive. The stand-in advertises no
//     period in the handshake and sends no heartbeats; a peer that stops
//     reading (SIGSTOP, a stuck process) keeps its connection until TCP
//     gives up, where v3.3.0 (period 15 s, 3 misses) drops it after about
//     45 s. The library detects silence itself (the connection reset after
//     two ElectionTimeoutMax) and needs neither. Simultaneous connects end
//     with one connection per pair as in v3.3.0 (the dial of the smaller
//     name wins) when both ends advertise EnableSimultaneousConnect (in
//     gen.DefaultNetworkFlags, as in v3.3.0; a peer without it is admitted
//     while this node dials), but connection IDs are random per handshake
//     rather than derived from the pair. gen.DefaultNetworkFlags has no
//     other v3.3.0 default the stand-in does not implement (fragmentation,
//     clock skew, tracing, wrapped errors, keepalive stay off).
//     ERGO_STANDIN_BUGS=simultaneous-connect brings back the v320 failure
//     for tests, and the node then advertises no EnableSimultaneousConnect,
//     as v320 cannot. When both dials of a simultaneous connect get
//     through (the larger name's dial was admitted before the smaller
//     name's arrived), the newer connection replaces the older one and
//     what was in flight on the older one is lost, a monitor request among
//     it (its caller then times out after 5 s). v3.3.0's collision
//     detection, with connection IDs derived from the pair, is built to
//     keep one connection from the start; whether it can still lose a
//     frame there was not checked. This costs the library
//     liveness only: a monitor that timed out counts the member as lost
//     until it answers again; tests wait for every monitor before they
//     measure steadiness (waitAcquainted). Messages are not fragmented (one frame up to
//     MaxMessageSize). A write to a connection whose socket buffer is
//     full blocks the sender, as in the framework (whose flusher writes in
//     the sender's goroutine, with no deadline, once its buffer is full),
//     but for at most 10 s,
//     after which the stand-in closes that link; a peer whose packets are
//     dropped blocks every process of the node that writes to it until
//     then. The library resets such a connection itself well before (its
//     silence check), so it meets neither limit. The library sees none of
//     this.
//   - As in the framework, a process's PID is registered only when its Init
//     has returned (its name, given to SpawnRegister, before): a message,
//     a monitor, a link or a Call's answer for the PID of a process in Init
//     finds no process (gen.ErrProcessUnknown), so a Call made in Init times
//     out, RegisterName in Init fails, and a SendAfter to itself that fires
//     during Init is lost; the process's own Send to itself is queued.
//     One difference is left: Stop's shutdown exit also reaches a process
//     still in Init (the framework's reaches registered processes only, so
//     a process in Init then, or spawned after, keeps the node's Stop
//     waiting for it). The library starts node-level helpers (the shared
//     watcher, the liveness hub) from an election's step, which may run
//     while its node begins to stop; that the helpers end with the last
//     election is not yet so, and the difference may hide it.
//   - Looser state checks outside links and monitors: CreateAlias also
//     works in Init, Send also in WaitResponse (framework: CreateAlias only
//     while Running; Send in Init, Running or Terminated). The library must
//     not depend on them.
//   - Sending to a local PID of an older incarnation is
//     gen.ErrProcessIncarnation (framework: gen.ErrProcessUnknown).
//   - A full mailbox refuses a message; ProcessFallback is not applied.
//   - A response nobody waits for is dropped (SendResponse returns nil). A
//     request to a missing remote process is not reported: the Call times
//     out. Important delivery is not implemented (Send* Important = Send).
//   - Env is copied at spawn: node, application, parent, then options. The
//     log level comes from options, else the parent, else the application,
//     else the node.
//   - Loggers are called synchronously (one call at a time per logger).
//   - A new subscriber gets a message sent concurrently either in its
//     buffer or delivered, never both (the framework reads the buffer and
//     the subscribers without a lock and may do both). NodeOptions.Events
//     (v3.2) and EventOptions.Open (v3.3.0: any local process may publish
//     without the token) are ignored; Node.EventInfo, the other event
//     listings, Node.ShortInfo and the other v3.3.0 introspection
//     (NodeShortInfo, Process.ShortInfo, activity counters, Reconnections)
//     are not implemented. The library uses none of them.
//   - Each link of a connection has one reader, which counts what it reads
//     (RemoteNodeInfo.MessagesIn, as the framework's socket reader does)
//     and queues it in one of the connection's receive queues, four per
//     link of the pool, each handled by a goroutine of its own while it
//     holds frames, as the framework's recvQueues are: a frame goes to
//     the queue its order byte names (the recipient's process ID for a
//     PID or an alias, the sender's for a name or an event, none for the
//     notifications of a termination), so a frame waits only for the
//     frames of its queue, and one sender's frames to one process keep
//     their order. Frames are written as the framework's flusher writes
//     them: into a 64 KiB buffer per link, flushed 500 ns after the first
//     frame that found it empty, so a burst costs one system call. Unlike
//     the framework, a connection that closes first writes what its
//     buffers hold (at most 100 ms): the framework's node stops its
//     processes before its network, a gap in which its flusher has long
//     written them.
//   - Meta processes, remote spawn, tracing export and the system
//     application are not implemented (gen.ErrUnsupported or no-ops).
package node // import "ergo.services/ergo/node"
