//go:build !norecover

package lib

// Recover reports whether panics in process callbacks are recovered. It is
// true unless the module is built with the norecover tag.
func Recover() bool { return true }
