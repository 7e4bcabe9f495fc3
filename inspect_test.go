package leader

import (
	"os"
	"strings"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specKeys are the keys the documentation promises.
var specKeys = []string{
	"ergo:state", "ergo:leader", "ergo:leader_pid", "ergo:leader_node", "ergo:term", "ergo:voted_for", "ergo:term_changed_at",
	"ergo:cluster", "ergo:view_size", "ergo:quorum", "ergo:min_cluster_size", "ergo:peers", "ergo:peers_list", "ergo:declared",
	"ergo:bootstrap", "ergo:unreachable", "ergo:ghost_ttl",
	"ergo:votes_granted", "ergo:votes_count",
	"ergo:election_timer_armed", "ergo:heartbeat_timer_armed", "ergo:heartbeat_in_last", "ergo:heartbeat_out_last",
	"ergo:election_timeout_min", "ergo:election_timeout_max", "ergo:heartbeat_interval",
	"ergo:dropped_by_reason", "ergo:send_failing_peers", "ergo:confirm_denied", "ergo:last_denied_at",
}

func TestInspectHasEveryDocumentedKey(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	all := h.e.inspect(h.now)
	for _, key := range specKeys {
		assert.Contains(t, all, key)
	}
	help := h.e.inspect(h.now, "help")
	for _, key := range specKeys {
		assert.NotEmpty(t, help[key], "help describes %s", key)
	}
	assert.Equal(t, "follower", all["ergo:state"])
	assert.Equal(t, "3", all["ergo:view_size"])
	assert.Equal(t, "2", all["ergo:quorum"])
	assert.Equal(t, "b@test:leader,c@test:leader", all["ergo:bootstrap"], "node:name, as ergo:peers_list lists node:pid")
	assert.Equal(t, "b@test,c@test", all["ergo:declared"])
	assert.Equal(t, "never", all["ergo:heartbeat_in_last"])
	assert.Equal(t, "150ms", all["ergo:election_timeout_min"])
	assert.Equal(t, "true", all["ergo:election_timer_armed"])
}

func TestInspectFiltersAndMarksUnknownItems(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	got := h.e.inspect(h.now, "ergo:term", "no-such-key")
	assert.Equal(t, map[string]string{"ergo:term": "0", "no-such-key": "<unknown item>"}, got)
}

func TestInspectProblemsAreVisible(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHello{ClusterID: "other"})
	h.recv("b", msgHello{ClusterID: "other"})
	h.recv("c", msgVote{ClusterID: "c", Term: ^uint64(0)})
	h.e.sendResult(node("c"), gen.ErrNoRoute)
	got := h.e.inspect(h.now)
	assert.Equal(t, "absurd_term=1,cluster_mismatch=2", got["ergo:dropped_by_reason"])
	assert.Equal(t, "c@test (no route)", got["ergo:send_failing_peers"])
}

func TestInspectMergesTheBehaviorsKeysOnTop(t *testing.T) {
	r := &recordingActor{options: soloOptions(), inspectExtra: map[string]string{"jobs": "3", "ergo:term": "mine"}}
	s, _ := spawnSolo(t, r, &r.Actor)
	s.runFor(time.Second)
	got := r.inspectMerged(gen.PID{})
	assert.Equal(t, "3", got["jobs"])
	assert.Equal(t, "mine", got["ergo:term"], "a key named with the prefix replaces the election's")
	assert.Equal(t, "leader", got["ergo:state"])
	got = r.inspectMerged(gen.PID{}, "jobs", "ergo:state")
	require.Len(t, got, 3, "the behavior answers its own items; extra keys it returns are kept")
	assert.Equal(t, "3", got["jobs"])
	assert.Equal(t, "leader", got["ergo:state"])
}

// A ClusterID mismatch is a warning that names both ids and the sender,
// once per sender, not only a counter; the sender owes no answer (its
// silence resets no connection, silence.go).
func TestClusterMismatchIsReportedOncePerPeer(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.e.members[node("b")].awaitingSince = h.now
	h.recv("b", msgHello{ClusterID: "shceduler"})
	h.advance(time.Second)
	h.recv("b", msgHello{ClusterID: "shceduler"})
	require.Len(t, h.log.warnings, 1)
	assert.Contains(t, h.log.warnings[0], `ClusterID "shceduler"`)
	assert.Contains(t, h.log.warnings[0], `this actor's ClusterID is "c"`)
	assert.Contains(t, h.log.warnings[0], "b@test")
	assert.Contains(t, h.log.warnings[0], "still counts toward the view")
	h.advance(time.Hour)
	h.recv("b", msgHello{ClusterID: "shceduler"})
	assert.Len(t, h.log.warnings, 1, "not again an hour later")
	h.recv("c", msgHello{ClusterID: "shceduler"})
	assert.Len(t, h.log.warnings, 2, "another peer is warned of once too")

	b := h.e.members[node("b")]
	assert.True(t, b.awaitingSince.IsZero(), "b answered, if in another election")
	h.e.send(b, msgHello{ClusterID: "c"})
	assert.True(t, b.awaitingSince.IsZero(), "and owes no answer while it speaks another ClusterID")
}

// A planned handover is logged as information, not as a warning.
func TestHandoverIsNoWarning(t *testing.T) {
	h := leaderOfThree(t)
	h.log.warnings = nil
	h.e.handover(h.now, "the node is stopping", nil)
	assert.Equal(t, roleFollower, h.e.role)
	assert.Empty(t, h.log.warnings)
}

// Every key the actor answers is listed in the godoc of HandleInspect, with
// the description help gives.
func TestEveryInspectKeyIsInTheGodoc(t *testing.T) {
	source, err := os.ReadFile("actor.go")
	require.NoError(t, err)
	var doc strings.Builder
	for _, line := range strings.Split(string(source), "\n") {
		if text, ok := strings.CutPrefix(strings.TrimSpace(line), "//"); ok {
			doc.WriteString(strings.TrimSpace(text) + " ")
		}
	}
	for _, k := range inspectKeys {
		assert.Contains(t, doc.String(), k.key+": "+k.help, "the godoc of HandleInspect lists %s", k.key)
	}
}
