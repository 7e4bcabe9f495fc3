package leader

import (
	"strings"
	"testing"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// warningsWith returns the logged warnings that contain every part.
func (h *stateHarness) warningsWith(parts ...string) []string {
	var out []string
	for _, w := range h.log.warnings {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(w, p)
		}
		if all {
			out = append(out, w)
		}
	}
	return out
}

// A lone node below the default MinClusterSize stays unclustered: after a
// few election timeouts it says so, once a minute, with the view, the floor
// and the state of each member.
func TestHealthWarnsAboutAnUnclusteredNode(t *testing.T) {
	h := newStateHarness(t, Options{}, "b")
	require.Equal(t, roleUnclustered, h.e.role)
	h.advance(h.e.stuckAfter())
	h.fire(timerHealth)
	got := h.warningsWith("no leader for", "below MinClusterSize 3", "'b@test' (has not answered)")
	require.Len(t, got, 1, "warnings: %q", h.log.warnings)
	assert.Contains(t, got[0], "the view has 2 members")

	h.advance(h.e.stuckAfter())
	h.fire(timerHealth)
	assert.Len(t, h.warningsWith("no leader for"), 1, "rate-limited: once a minute")
}

// A node whose view qualifies but which cannot reach a quorum names the
// failing members and why; sends that keep failing are reported too.
func TestHealthWarnsAboutALeaderlessNodeAndFailingSends(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "c"})
	h.e.now = h.now
	h.e.sendResult(node("c"), gen.ErrNoRoute)
	h.advance(h.e.stuckAfter())
	h.fire(timerHealth)
	got := h.warningsWith("no leader for", "view 3, quorum 2")
	require.Len(t, got, 1, "warnings: %q", h.log.warnings)
	assert.Contains(t, got[0], "'b@test' (reachable)")
	assert.Contains(t, got[0], "'c@test' (failing: no route)")
	failing := h.warningsWith("sends to peer 'c@test' have failed for", "no route")
	require.Len(t, failing, 1, "warnings: %q", h.log.warnings)
	assert.Contains(t, failing[0], "cookie")
}

// A node that has a leader, and peers that answer, is not warned about, and
// not even woken for the check once it has a leader.
func TestHealthIsQuietWhenThereIsALeader(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.becomeLeader("b", "c")
	h.e.observeLeader(h.now)
	h.advance(h.e.stuckAfter())
	h.fire(timerHealth)
	assert.Empty(t, h.warningsWith("no leader"))
	assert.False(t, h.e.timers[timerHealth].armed, "nothing to watch: no timer")

	h.recv("b", msgHeartbeat{ClusterID: "c", Term: h.e.term + 1, Leader: pid("b"), Round: 1})
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.e.observeLeader(h.now)
	assert.True(t, h.e.timers[timerHealth].armed, "leaderless again: watched again")
}
