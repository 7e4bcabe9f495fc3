package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The actor publishes its leadership as a framework event: the initial
// state at start (so a subscriber learns it at once from the buffer), then
// one event per change, and none for what is not a change.
func TestLeadershipEventPerChange(t *testing.T) {
	b := &bareActor{options: soloOptions()}
	s, p := spawnSolo(t, b, &b.Actor)
	require.Empty(t, p.events, "nothing before the actor runs: the framework registers events of running processes")
	p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, pid("x"), "first run")
	require.NotEmpty(t, p.events, "the initial state is published at the first run")
	assert.Equal(t, Leadership{ClusterID: "solo", Node: "solo@sim"}, p.events[0], "no leader yet")

	s.runFor(time.Second)
	require.True(t, b.IsLeader())
	require.Len(t, p.events, 2)
	assert.Equal(t, Leadership{ClusterID: "solo", Term: b.Term(), Leader: p.pid, Node: "solo@sim", IsLeader: true}, p.events[1])

	s.runFor(time.Second)
	assert.Len(t, p.events, 2, "heartbeats and lease renewals are not changes")

	require.NoError(t, b.StepDown())
	p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, pid("x"), "after step-down")
	require.GreaterOrEqual(t, len(p.events), 3)
	assert.False(t, p.events[2].IsLeader, "standing down is a change")
}

// The event's name is derived from the ClusterID, so one node can publish
// the events of several elections.
func TestEventName(t *testing.T) {
	assert.Equal(t, gen.Atom("leader.orders"), EventName("orders"))
}
