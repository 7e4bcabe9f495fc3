//go:build norecover

package lib

// Recover reports whether panics in process callbacks are recovered. Built
// with the norecover tag it is false, so panics crash the program.
func Recover() bool { return false }
