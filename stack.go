package leader

// The framework runs every activation of a process (a message arriving in
// an empty mailbox) on a goroutine of its own, which starts with the Go
// runtime's smallest stack. An election's step goes deeper than that: the
// runtime grew the stack two or three times in each activation, and each
// growth copies every frame so far and walks them to adjust their
// pointers, which was a sixth of a survivor's CPU while it took in a node
// crash under a thousand elections, and 7% of a node's CPU when idle.
// reserveStack, called first in an activation, while the stack holds only
// the framework's frames, makes the runtime grow it once, straight to a
// size that fits a step.

// stackReserve is the stack a step fits in, with room to spare.
const stackReserve = 16 << 10

// reserveStack grows the calling goroutine's stack to at least
// stackReserve in one copy. It returns a byte of its frame, which callers
// drop, so that the compiler keeps the frame (at an index it cannot know).
//
//go:noinline
func reserveStack(at int) byte {
	// three quarters: the runtime doubles the stack until the frame and
	// what is in use fit, and a frame of the whole reserve would take it
	// to twice that
	var frame [stackReserve * 3 / 4]byte
	return frame[at%len(frame)]
}
