package netstack

import (
	"sync"

	"ergo.services/ergo/gen"
)

// local knows the stacks running in this OS process. Dialing consults it
// before the registrar: test binaries running at once on one host often
// reuse node names, and a node must reach its sibling in the same process
// rather than a namesake registered by another binary.
var local = struct {
	sync.Mutex
	stacks map[gen.Atom]*Stack
}{stacks: map[gen.Atom]*Stack{}}

func registerLocal(s *Stack) {
	if len(s.acceptors) == 0 {
		return
	}
	local.Lock()
	local.stacks[s.name] = s
	local.Unlock()
}

func unregisterLocal(s *Stack) {
	local.Lock()
	if local.stacks[s.name] == s {
		delete(local.stacks, s.name)
	}
	local.Unlock()
}

// localTarget returns the address of a stack named peer in this process.
func (s *Stack) localTarget(peer gen.Atom) []target {
	local.Lock()
	other := local.stacks[peer]
	local.Unlock()
	if other == nil {
		return nil
	}
	t := s.target("", 0, gen.NetworkRoute{})
	t.addr = other.acceptors[0].ln.Addr().String()
	return []target{t}
}
