// Package node is the runtime of the stand-in framework: the process
// registry, mailboxes and the goroutine-per-process scheduler, links and
// monitors, calls, applications, logging, and the glue to the network stack
// (internal/netstack) that carries messages to other nodes.
package node
