//go:build race

package leader

// raceDetector is whether the race detector is on: the long simulations run
// fewer rounds under it (about ten times slower), with the same checks.
const raceDetector = true
