package leader

import (
	"testing"

	"ergo.services/actor/leader/internal/lab"
)

// TestMain runs the tests as usual; started by the process lab as a node
// (internal/lab, env LEADER_LAB_NODE), the test binary runs labProgram
// instead (lab_actor_test.go).
func TestMain(m *testing.M) {
	lab.Main(m, labProgram())
}
