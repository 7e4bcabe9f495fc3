package leader

// The framework runs every activation of a process (a message arriving in
// an empty mailbox) on a goroutine of its own, which starts with the Go
// runtime's smallest stack. An election's step goes deeper than that: the
// runtime grew the stack two or three times in each activation, and each
// growth copies every frame so far and walks them to adjust their
// pointers, which was a sixth of a survivor's CPU while it took in a node
// crash under a thousand elections, and a tenth of a node's CPU when idle.
// reserveStack, called first in an activation, while the stack holds only
// the framework's frames, makes the runtime grow it once, straight to a
// size that fits a step.

// stackReserve is the stack a step fits in, with room to spare.
const stackReserve = 16 << 10

// stackTouch keeps the reserve's frame from being optimised away.
var stackTouch byte

// reserveStack grows the calling goroutine's stack to at least
// stackReserve in one copy.
//
//go:noinline
func reserveStack() {
	var frame [stackReserve * 3 / 4]byte
	stackTouch = frame[int(stackTouch)%len(frame)]
}
