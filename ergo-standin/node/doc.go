// Package node is the runtime of the stand-in framework: the process
// registry, mailboxes and the goroutine-per-process scheduler, links and
// monitors, calls, applications, logging, and the glue to the network stack
// (internal/netstack) that carries messages to other nodes.
//
// Where the stand-in decides something the real framework may do
// differently:
//
//   - Monitor/Link of a local or remote target that does not exist (PID or
//     ProcessID alike) returns gen.ErrProcessUnknown; no down is delivered.
//   - UnregisterName gives the ProcessID's monitors/links gen.ErrUnregistered.
//   - Links are one-way, like monitors: the linking process gets the exit.
//   - SendExit delivers gen.MessageExitPID{PID: sender, Reason} to Urgent.
//   - Kill unregisters the process at once (downs carry TerminateReasonKill);
//     ProcessTerminate(kill) runs after the current callback returns, or in
//     a new goroutine if the process was asleep.
//   - A termination reason is unwrapped once (errors.Unwrap) before the
//     downs/exits are sent, as act.Actor wraps exit reasons.
//   - Stop sends shutdown exits, waits, kills the rest, then stops the
//     network. StopForce stops the network first (peers see
//     gen.ErrNoConnection), then kills every process.
//   - A response nobody waits for is dropped (SendResponse returns nil). A
//     request to a missing remote process is not reported: the Call times
//     out. Important delivery is not implemented (Send* Important = Send).
//   - ProcessInit runs in its own goroutine under InitTimeout; on timeout
//     Spawn returns gen.ErrTimeout and the process is unregistered.
//   - Env is copied at spawn: node, application, parent, then options. The
//     log level comes from options, else the parent, else the application,
//     else the node.
//   - Loggers are called synchronously (one call at a time per logger).
//   - Meta processes, events, remote spawn, tracing export and the system
//     application are not implemented (gen.ErrUnsupported or no-ops).
package node
