//go:build unix

package main

import (
	"os"
	"syscall"
)

// freeze stops the child's process where it stands (SIGSTOP) and reports
// whether it did.
func (c *child) freeze() bool {
	return c.cmd.Process != nil && c.cmd.Process.Signal(syscall.SIGSTOP) == nil
}

// pause stops a process where it stands (SIGSTOP), as a host that holds
// its guest's CPUs back stops everything in it, and reports whether it
// did; resume lets it go on (SIGCONT).
func pause(p *os.Process) bool  { return p.Signal(syscall.SIGSTOP) == nil }
func resume(p *os.Process) bool { return p.Signal(syscall.SIGCONT) == nil }
