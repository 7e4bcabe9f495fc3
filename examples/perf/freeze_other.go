//go:build !unix

package main

// freeze is not available here: the caller kills the child instead.
func (c *child) freeze() bool { return false }
