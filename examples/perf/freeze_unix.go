//go:build unix

package main

import "syscall"

// freeze stops the child's process where it stands (SIGSTOP) and reports
// whether it did.
func (c *child) freeze() bool {
	return c.cmd.Process != nil && c.cmd.Process.Signal(syscall.SIGSTOP) == nil
}
