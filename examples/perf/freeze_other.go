//go:build !unix

package main

import "os"

// freeze is not available here: the caller kills the child instead.
func (c *child) freeze() bool { return false }

// pause and resume are not available here: the stall is not measured.
func pause(p *os.Process) bool  { return false }
func resume(p *os.Process) bool { return false }
