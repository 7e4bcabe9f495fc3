package main

import (
	"slices"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

// member is an election actor whose discovery is the framework's registrar
// (ergo v3.3.0): it Joins the nodes the registrar lists, at start and on
// every MessageRegistrarNodeJoined, and Leaves a node once the registrar has
// stopped listing it for leaveAfter. A reconcile every reconcileEvery with
// Registrar().Nodes() repairs anything an event missed (a subscription
// that broke, an event lost while the registrar moved to another node).
//
// Why Leave late. A node that stops gracefully keeps its seat for the
// MinClusterSize floor for GhostTTL (5 s at the defaults), so that a
// three-node cluster keeps its leader through a rolling restart; Leave gives
// the seat up at once. Leaving on the registrar's NodeLeft event would make
// every restart of a three-node cluster leaderless until the node is back.
// A node gone for longer than its restart takes is Left, so a quorum does
// not wait for it.
type member struct {
	leader.Actor

	options        leader.Options
	reconcileEvery time.Duration
	leaveAfter     time.Duration
	// ours says which of the registrar's nodes belong to this election: a
	// registrar lists every node of the host (or the cluster), and a node
	// that runs no such election must not count toward the quorum. Here a
	// name prefix, as a deployment's naming convention gives.
	ours func(gen.Atom) bool

	registrar gen.Registrar
	unlisted  map[gen.Atom]time.Time // nodes the registrar stopped listing, and since when
	changes   chan<- string          // the demo's log of what discovery did; nil for none
}

type (
	subscribe struct{}
	reconcile struct{}
)

func (m *member) Init(args ...any) (leader.Options, error) {
	m.unlisted = make(map[gen.Atom]time.Time)
	if err := m.Send(m.PID(), subscribe{}); err != nil {
		return leader.Options{}, err
	}
	return m.options, nil
}

func (m *member) HandleMessage(from gen.PID, message any) error {
	switch message.(type) {
	case subscribe:
		reg, err := m.Node().Network().Registrar()
		if err != nil {
			m.Log().Error("discovery: no registrar (%s); this node finds no peers", err)
			return nil
		}
		m.registrar = reg
		if event, err := reg.Event(); err != nil {
			m.Log().Warning("discovery: the registrar publishes no events (%s); reconciling every %s only", err, m.reconcileEvery)
		} else if _, err := m.MonitorEvent(event); err != nil {
			m.Log().Warning("discovery: cannot subscribe to the registrar's events (%s); reconciling every %s only", err, m.reconcileEvery)
		}
		m.reconcile()
	case reconcile:
		m.reconcile()
	}
	return nil
}

// HandleEvent takes the registrar's news of nodes joining and leaving.
func (m *member) HandleEvent(event gen.MessageEvent) error {
	switch news := event.Message.(type) {
	case gen.MessageRegistrarNodeJoined:
		if m.ours(news.Name) {
			m.join(news.Name)
		}
	case gen.MessageRegistrarNodeLeft:
		if _, ok := m.unlisted[news.Name]; ok == false {
			m.unlisted[news.Name] = time.Now()
		}
	}
	return nil
}

// reconcile Joins every node the registrar lists and Leaves the ones it has
// not listed for leaveAfter, then comes back in reconcileEvery.
func (m *member) reconcile() {
	defer m.SendAfter(m.PID(), reconcile{}, m.reconcileEvery)
	if m.registrar == nil {
		return
	}
	nodes, err := m.registrar.Nodes()
	if err != nil {
		m.Log().Warning("discovery: the registrar did not list the nodes (%s); trying again in %s", err, m.reconcileEvery)
		return
	}
	nodes = slices.DeleteFunc(nodes, func(n gen.Atom) bool { return m.ours(n) == false })
	for _, node := range nodes {
		m.join(node)
	}
	now := time.Now()
	for _, peer := range m.Peers() {
		if slices.Contains(nodes, peer.Node) == false {
			if _, ok := m.unlisted[peer.Node]; ok == false {
				m.unlisted[peer.Node] = now
			}
		}
	}
	for node, since := range m.unlisted {
		if now.Sub(since) >= m.leaveAfter {
			delete(m.unlisted, node)
			m.Leave(node)
			m.note("left " + string(node))
		}
	}
}

func (m *member) join(node gen.Atom) {
	delete(m.unlisted, node)
	if node == m.Node().Name() {
		return
	}
	if err := m.Join(gen.ProcessID{Name: m.Name(), Node: node}); err != nil {
		m.Log().Warning("discovery: %s", err)
		return
	}
}

func (m *member) note(what string) {
	if m.changes != nil {
		select {
		case m.changes <- string(m.Node().Name()) + ": " + what:
		default:
		}
	}
}

func (m *member) HandleBecomeLeader() error {
	m.note("leads")
	return nil
}

func (m *member) HandleBecomeFollower(leader gen.PID) error {
	if leader == (gen.PID{}) {
		m.note("no leader known")
	} else {
		m.note("follows " + string(leader.Node))
	}
	return nil
}
