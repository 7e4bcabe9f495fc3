// Package tests holds the stand-in's end-to-end tests: nodes, processes,
// applications and the network, seen through the public API only.
package tests // import "ergo.services/ergo/tests"
