// Package lib holds the low-level helpers of the stand-in framework: the
// multi-producer single-consumer queue used by process mailboxes and the
// panic-recovery switch.
package lib // import "ergo.services/ergo/lib"
