package leader

import (
	"sync"
	"testing"

	"ergo.services/ergo/act"
	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/require"
)

// eventWatcher is an ordinary actor, on any node, that follows an
// election's leadership through the framework's event mechanism.
type eventWatcher struct {
	act.Actor
	target gen.Event
	mu     *sync.Mutex
	got    *[]Leadership
}

func (w *eventWatcher) Init(args ...any) error {
	return w.Send(w.PID(), "subscribe") // events need a running process
}

func (w *eventWatcher) HandleMessage(from gen.PID, message any) error {
	buffered, err := w.MonitorEvent(w.target)
	if err != nil {
		return err
	}
	for _, m := range buffered {
		w.record(m)
	}
	return nil
}

func (w *eventWatcher) HandleEvent(m gen.MessageEvent) error {
	w.record(m)
	return nil
}

func (w *eventWatcher) record(m gen.MessageEvent) {
	if l, ok := m.Message.(Leadership); ok {
		w.mu.Lock()
		*w.got = append(*w.got, l)
		w.mu.Unlock()
	}
}

// Leadership changes reach a subscriber on another node: the current state
// at once (the buffer), then one event per change, each with the ClusterID,
// term, leader, node and whether that node leads.
func TestClusterLeadershipEventsReachOtherNodes(t *testing.T) {
	tm := clusterFastTimings
	const cluster = "events"
	c := newRealCluster(t, clConfig{})
	nodes := c.addNodes(4)
	c.spawnAll(nodes[:3], tm.options(cluster, 3), actorTuning{})
	leader, term := c.waitLeader(nodes[:3], clActorName, clConverge)

	var mu sync.Mutex
	var got []Leadership
	seen := func() []Leadership {
		mu.Lock()
		defer mu.Unlock()
		return append([]Leadership(nil), got...)
	}
	target := gen.Event{Name: EventName(cluster), Node: c.name(leader)}
	_, err := c.n(nodes[3]).node.Spawn(func() gen.ProcessBehavior {
		return &eventWatcher{target: target, mu: &mu, got: &got}
	}, gen.ProcessOptions{})
	require.NoError(t, err)

	waitFor(t, clConverge, "the current leadership from the event's buffer", func() (bool, string) {
		list := seen()
		return len(list) > 0 && list[len(list)-1].IsLeader, describeEvents(list)
	})
	first := seen()[len(seen())-1]
	require.Equal(t, Leadership{ClusterID: cluster, Term: term, Leader: c.pid(leader, clActorName), Node: c.name(leader), IsLeader: true}, first)

	// The leader stands down on purpose: one event saying it no longer
	// leads, none for anything else.
	count := len(seen())
	result := make(chan error, 1)
	c.send(leader, clActorName, ctlStepDown{result: result})
	require.NoError(t, <-result)
	waitFor(t, clConverge, "an event for the step-down", func() (bool, string) {
		list := seen()
		return len(list) > count && list[count].IsLeader == false, describeEvents(list)
	})
	require.Equal(t, c.name(leader), seen()[count].Node)
}

func describeEvents(list []Leadership) string {
	out := ""
	for _, l := range list {
		out += string(l.Node) + " " + pidText(l.Leader) + " " + map[bool]string{true: "leads", false: "follows"}[l.IsLeader] + "; "
	}
	return out
}
