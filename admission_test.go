package leader

import (
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gateNode is a gen.Node of its own for a gate test: only its identity is
// used.
type gateNode struct {
	gen.Node
	name string
}

func newGateNode(t *testing.T) gen.Node {
	n := &gateNode{name: t.Name()}
	t.Cleanup(func() {
		campaignGates.Lock()
		delete(campaignGates.byNode, n)
		campaignGates.Unlock()
	})
	return n
}

func gatePID(id uint64) gen.PID { return gen.PID{Node: "gate@localhost", ID: id, Creation: 1} }

func TestGateHandsOutAtMostItsTurnsAndQueuesTheRest(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 2}, time.Second
	for id := uint64(1); id <= 2; id++ {
		ok, wake := node.acquire(gatePID(id), t0, hold)
		assert.True(t, ok, "election %d: a turn is free", id)
		assert.Empty(t, wake)
	}
	ok, wake := node.acquire(gatePID(3), t0, hold)
	assert.False(t, ok, "both turns are taken")
	assert.Empty(t, wake)
	ok, _ = node.acquire(gatePID(4), t0, hold)
	assert.False(t, ok)

	// the first to finish gives its turn to the first in the queue
	wake = node.release(gatePID(1), t0, hold)
	assert.Equal(t, []gen.PID{gatePID(3)}, wake)
	ok, wake = node.acquire(gatePID(3), t0, hold)
	assert.True(t, ok, "the turn given to 3 is 3's when it comes to take it")
	assert.Empty(t, wake)
	ok, _ = node.acquire(gatePID(5), t0, hold)
	assert.False(t, ok, "a newcomer does not overtake the queue")
}

func TestGateSendsARetryToTheBackOfTheQueue(t *testing.T) {
	// Elections that cannot win (their node is cut off from most of their
	// members) retry at every election timeout; they must not keep their
	// turns while others wait.
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold)
	require.True(t, ok)
	ok, _ = node.acquire(gatePID(2), t0, hold)
	require.False(t, ok)

	ok, wake := node.acquire(gatePID(1), t0.Add(300*time.Millisecond), hold)
	assert.False(t, ok, "1 tries again while 2 waits: 1 waits now")
	assert.Equal(t, []gen.PID{gatePID(2)}, wake, "and 2 has the turn")

	// alone, an election keeps its turn from one attempt to the next
	node.release(gatePID(2), t0.Add(300*time.Millisecond), hold) // gives it to 1
	ok, _ = node.acquire(gatePID(1), t0.Add(310*time.Millisecond), hold)
	require.True(t, ok)
	ok, wake = node.acquire(gatePID(1), t0.Add(600*time.Millisecond), hold)
	assert.True(t, ok, "nobody waits")
	assert.Empty(t, wake)
}

func TestGateExpiresTheTurnOfAnElectionThatNeverGaveItBack(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold) // then its process is killed
	require.True(t, ok)
	ok, _ = node.acquire(gatePID(2), t0, hold)
	require.False(t, ok)
	ok, _ = node.acquire(gatePID(2), t0.Add(hold), hold)
	assert.False(t, ok, "not before the hold is over")
	ok, _ = node.acquire(gatePID(2), t0.Add(hold+time.Millisecond), hold)
	assert.True(t, ok, "the waiter that looks again after the hold finds the turn free")
}

func TestGateSkipsAWaiterThatLeft(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	ok, _ := node.acquire(gatePID(1), t0, hold)
	require.True(t, ok)
	for id := uint64(2); id <= 4; id++ {
		ok, _ = node.acquire(gatePID(id), t0, hold)
		require.False(t, ok)
	}
	assert.Empty(t, node.release(gatePID(2), t0, hold), "a waiter that terminates frees no turn")
	ok, _ = node.acquire(gatePID(2), t0, hold) // a new incarnation of it, say: at the back
	require.False(t, ok)
	assert.Equal(t, []gen.PID{gatePID(3)}, node.release(gatePID(1), t0, hold), "the turn skips the place 2 left")
	assert.Equal(t, []gen.PID{gatePID(4)}, node.release(gatePID(3), t0, hold))
	assert.Equal(t, []gen.PID{gatePID(2)}, node.release(gatePID(4), t0, hold), "2 comes last, where it queued again")
}

func TestGateForgetsANodeNobodyWaitsOn(t *testing.T) {
	node, hold := nodeTurns{node: newGateNode(t), limit: 1}, time.Second
	node.acquire(gatePID(1), t0, hold)
	campaignGates.Lock()
	_, kept := campaignGates.byNode[node.node]
	campaignGates.Unlock()
	require.True(t, kept)
	node.release(gatePID(1), t0, hold)
	campaignGates.Lock()
	_, kept = campaignGates.byNode[node.node]
	campaignGates.Unlock()
	assert.False(t, kept, "a stopped node's gate is not kept for ever")
}

// fullGate is a gate whose turns are all taken by other elections.
type fullGate struct {
	asked, released int
	grant           bool
}

func (g *fullGate) acquire(pid gen.PID, now time.Time, hold time.Duration) (bool, []gen.PID) {
	g.asked++
	return g.grant, nil
}

func (g *fullGate) release(pid gen.PID, now time.Time, hold time.Duration) []gen.PID {
	g.released++
	return []gen.PID{gatePID(9)}
}

func TestAnElectionWithoutATurnWaitsForIt(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	gate := &fullGate{}
	h.e.turns = gate
	out := h.expireElection()
	assert.Empty(t, sentTo[msgPreVote](out, "b"), "no turn: no campaign")
	assert.Equal(t, uint64(1), h.e.campaignsQueued)
	assert.True(t, h.e.awaitsTurn)
	assert.True(t, h.e.electionDeadline.After(h.now.Add(turnHold(h.e.cfg))), "it looks at the gate again after a hold at the latest")

	gate.grant = true
	h.e.turnCame(h.now)
	out = h.e.takeEffects()
	assert.Len(t, sentTo[msgPreVote](out, "b"), 1, "its turn came: it campaigns")
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1)
	h.e.endTurn()
	assert.Zero(t, gate.released, "the turn is kept while the pre-vote runs")

	h.recv("b", msgPreVoteReply{ClusterID: "c", Granted: true})
	h.recv("b", msgVoteReply{ClusterID: "c", Term: h.e.term, Granted: true})
	require.True(t, h.e.confirming)
	h.e.confirmResult(h.now, true, nil)
	h.e.endTurn()
	assert.Equal(t, 1, gate.released, "won: the turn is given on")
	assert.Equal(t, []gen.PID{gatePID(9)}, h.e.takeEffects().turnWakes, "to the next in the queue")
}

func TestATurnThatCameTooLateIsGivenOn(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	gate := &fullGate{}
	h.e.turns = gate
	h.expireElection()
	require.True(t, h.e.awaitsTurn)
	// a leader is heard while it waits
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	require.Equal(t, pid("b"), h.e.leader)
	h.e.turnCame(h.now)
	out := h.e.takeEffects()
	assert.Empty(t, sentTo[msgPreVote](out, "c"), "it has a leader: no campaign")
	h.e.endTurn()
	assert.Equal(t, 1, gate.released, "the turn it was given goes to the next")
}

func TestFastFailoverDoesNotWaitForATurn(t *testing.T) {
	h := newStateHarness(t, Options{}, "b", "c")
	h.recv("b", msgHeartbeat{ClusterID: "c", Term: 1, Leader: pid("b"), Round: 1})
	gate := &fullGate{}
	h.e.turns = gate
	h.e.leaderLost(pid("b"), h.e.now, false)
	h.now = h.now.Add(h.e.fastFailoverDelay(false) * 3)
	out := h.fire(timerFast)
	assert.Len(t, sentTo[msgPreVote](out, "c"), 1, "a fast failover campaigns at once")
	assert.Zero(t, gate.asked)
}
