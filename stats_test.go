package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
)

// The operators' figures follow what the node saw: a leader heard, its down,
// the next leader; the failover runs from the last contact with the old
// leader, the leaderless period from the moment there was none.
func TestStatsFollowAFailover(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	inspect := func(key string) string { return h.e.inspect(h.now, key)[key] }
	h.e.observeLeader(h.now)
	assert.Equal(t, "0", inspect("ergo:leader_changes"))

	h.advance(40 * time.Millisecond)
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	h.e.observeLeader(h.now)
	assert.Equal(t, "1", inspect("ergo:leader_changes"), "the first leader counts")
	assert.Equal(t, "0s", inspect("ergo:failover_gap_last"), "the first leader is no failover")
	assert.Equal(t, "40ms", inspect("ergo:leaderless_last"), "from the start to the first leader")
	assert.Equal(t, "0s", inspect("ergo:leaderless_for"))

	h.advance(30 * time.Millisecond) // b's last heartbeat was 30ms ago
	h.e.down(h.now, pid("b"), gen.ErrNoConnection)
	h.e.observeLeader(h.now)
	h.advance(12 * time.Millisecond)
	assert.Equal(t, "12ms", inspect("ergo:leaderless_for"))
	assert.Equal(t, "52ms", inspect("ergo:leaderless_total"), "40ms, then 12ms so far")

	h.recv("c", msgHeartbeat{ClusterID: "c", Term: 2, Leader: pid("c"), Round: 1})
	h.e.observeLeader(h.now)
	assert.Equal(t, "2", inspect("ergo:leader_changes"))
	assert.Equal(t, "12ms", inspect("ergo:leaderless_last"))
	assert.Equal(t, "12ms", inspect("ergo:failover_gap_last"), "from losing b to following c: the gap this node saw, not the age of b's last heartbeat")
	assert.Equal(t, "52ms", inspect("ergo:leaderless_total"))
}

// Elections this node opened are counted, won and lost.
func TestStatsCountElections(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	inspect := func(key string) string { return h.e.inspect(h.now, key)[key] }
	h.becomeLeader("b")
	assert.Equal(t, "1", inspect("ergo:elections_started"))
	assert.Equal(t, "1", inspect("ergo:elections_won"))
	assert.Equal(t, "0", inspect("ergo:elections_lost"))

	// a higher term takes over; the next campaign is refused all round
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 5, Leader: pid("b"), Round: 1})
	h.advance(h.e.cfg.electionTimeoutMax * 2)
	h.expireElection()
	h.recv("b", msgPreVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	assert.Equal(t, roleCandidate, h.e.role)
	assert.Equal(t, "2", inspect("ergo:elections_started"))
	assert.Equal(t, "0", inspect("ergo:elections_lost"), "the round in progress is neither")
	h.recv("c", msgHeartbeat{ClusterID: "c", Term: h.e.term, Leader: pid("c"), Round: 1})
	assert.Equal(t, "1", inspect("ergo:elections_lost"))
}
