// Package gen declares the types, interfaces and errors of the framework:
// identifiers, process and node behaviors, mailboxes, system messages,
// network and application specifications.
package gen // import "ergo.services/ergo/gen"
