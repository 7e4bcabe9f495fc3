package leader

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"ergo.services/ergo/gen"
)

// simActor is the behavior the simulator runs: the real Actor plus what a
// user's code would do (discovery, StepDown, an external authority).
type simActor struct {
	Actor
	sim     *simulator
	cluster *simCluster
	options Options
	inc     string // node#creation: one incarnation of the node
	chk     actorCheck
	calls   []simCall // every HandleBecomeLeader/HandleBecomeFollower, in order
	ticks   []simTick // the user ticks it handled (sim_nemesis_test.go)
}

// campaignTurns implements campaignTurnsTuner.
func (b *simActor) campaignTurns() int { return b.cluster.switches.campaignTurns }

// simCall is one leadership callback as the behavior saw it.
type simCall struct {
	at      time.Time
	leading bool
	leader  gen.PID
	term    uint64
	kind    gen.ProcessKind // the process kind when the callback ran
}

// Commands the harness delivers into an actor, so that API calls run on
// the actor's goroutine as they must.
type (
	// joinOnly: discovery that only adds (no Leave for names it no
	// longer lists), which leaves replaced names to GhostTTL
	simDiscover struct {
		names    []gen.Atom
		joinOnly bool
	}
	simStepDown struct{}
	simUserTick struct{} // the user's own periodic work, guarded by IsLeader
	simCampaign struct{} // start an election now, skipping the pre-vote
)

func (b *simActor) Init(args ...any) (Options, error) { return b.options, nil }

func (b *simActor) HandleBecomeLeader() error {
	b.cluster.check.callback(b, true, gen.PID{})
	b.calls = append(b.calls, simCall{at: b.sim.now, leading: true, term: b.state.term, kind: b.ProcessKind()})
	return nil
}

func (b *simActor) HandleBecomeFollower(leader gen.PID) error {
	b.cluster.check.callback(b, false, leader)
	b.calls = append(b.calls, simCall{at: b.sim.now, leader: leader, term: b.state.term, kind: b.ProcessKind()})
	return nil
}

func (b *simActor) HandleConfirmLeader() (bool, error) {
	if b.cluster.denyRate > 0 && b.sim.rng.Float64() < b.cluster.denyRate {
		b.sim.note("%s: HandleConfirmLeader denies", b.PID().Node)
		return false, nil
	}
	return true, nil
}

func (b *simActor) HandleMessage(from gen.PID, message any) error {
	switch m := message.(type) {
	case simDiscover:
		// the spec's discovery loop: Join what is listed, Leave what no
		// longer is
		listed := make(map[gen.Atom]bool)
		for _, name := range m.names {
			listed[name] = true
			b.Join(gen.ProcessID{Name: b.cluster.name, Node: name})
		}
		for _, pid := range b.membersNodes() {
			if listed[pid] == false && m.joinOnly == false {
				b.Leave(pid)
			}
		}
	case simStepDown:
		b.StepDown()
	case simUserTick:
		b.userTick()
	case simCampaign:
		b.state.now = b.clock()
		b.state.startElection("nemesis")
	}
	return nil
}

func (b *simActor) membersNodes() []gen.Atom {
	var nodes []gen.Atom
	for node := range b.state.members {
		nodes = append(nodes, node)
	}
	slices.Sort(nodes)
	return nodes
}

const simProcessName gen.Atom = "leader"

// simCluster manages one election's deployment: which node names exist
// (the "discovery" registry) and the election's actor on each. The nodes
// belong to its fleet, which may run other elections on them as well
// (sim_many_test.go): starting, crashing and stopping a node, retiring its
// name and running discovery act on every election of the fleet.
type simCluster struct {
	sim      *simulator
	fleet    *simFleet
	check    *checker // the election's invariants
	name     gen.Atom // the actors' registered name
	options  Options
	switches actorTuning
	actors   map[gen.Atom]*simActor // current incarnation per live node
	registry []gen.Atom             // what discovery lists
	denyRate float64
}

// simFleet is the simulated nodes and the elections they all run, one
// actor per election per node.
type simFleet struct {
	sim      *simulator
	clusters []*simCluster
	serial   int
}

func newSimCluster(sim *simulator, options Options, switches actorTuning) *simCluster {
	return newSimFleet(sim, []Options{options}, switches).clusters[0]
}

// newSimFleet makes one election per options over the same nodes. The
// first election is checked by the simulator's checker, each other one by
// a checker of its own.
func newSimFleet(sim *simulator, options []Options, switches actorTuning) *simFleet {
	f := &simFleet{sim: sim}
	for i, o := range options {
		c := &simCluster{sim: sim, fleet: f, check: sim.check, name: simProcessName, options: o, switches: switches, actors: make(map[gen.Atom]*simActor)}
		if len(options) > 1 {
			c.name = gen.Atom(fmt.Sprintf("%s_%d", simProcessName, i))
			if i > 0 {
				c.check = sim.addChecker()
			}
			c.check.cluster = o.ClusterID
		}
		f.clusters = append(f.clusters, c)
	}
	return f
}

func (c *simCluster) cfg() config {
	cfg, _, err := c.options.resolve()
	if err != nil {
		panic(err)
	}
	return cfg
}

func (c *simCluster) newName() gen.Atom {
	c.fleet.serial++
	return gen.Atom(fmt.Sprintf("n%02d@sim", c.fleet.serial))
}

// start boots a node (new, or a restart of a crashed one under the same
// name) with every election of the fleet, each with everything its
// discovery lists as its bootstrap, and returns this election's actor.
func (c *simCluster) start(name gen.Atom) *simActor {
	n := c.sim.addNode(name)
	var mine *simActor
	for _, e := range c.fleet.clusters {
		if b := e.spawnOn(n); e == c {
			mine = b
		}
	}
	return mine
}

func (c *simCluster) spawnOn(n *simNode) *simActor {
	name := n.name
	if slices.Contains(c.registry, name) == false {
		c.registry = append(c.registry, name)
	}
	options := c.options
	options.Bootstrap = nil
	for _, peer := range c.registry {
		options.Bootstrap = append(options.Bootstrap, gen.ProcessID{Name: c.name, Node: peer})
	}
	b := &simActor{sim: c.sim, cluster: c, options: options, inc: fmt.Sprintf("%s#%d", string(name), n.creation)}
	b.clock = func() time.Time { return c.sim.now }
	b.rng = rand.New(rand.NewPCG(c.sim.rng.Uint64(), c.sim.rng.Uint64()))
	c.sim.note("START %s %s", b.inc, c.options.ClusterID)
	if _, err := c.sim.spawn(n, c.name, b); err != nil {
		c.sim.fail("%s failed to start %s: %s", name, c.options.ClusterID, err)
		return nil
	}
	c.actors[name] = b
	c.check.started(b)
	return b
}

// crash crashes the node: every election's actor on it is gone.
func (c *simCluster) crash(name gen.Atom) {
	if c.actors[name] == nil {
		return
	}
	for _, e := range c.fleet.clusters {
		delete(e.actors, name)
	}
	c.sim.crash(name)
}

// stop is a graceful stop: every actor on the node receives the shutdown
// exit the node sends on Stop and terminates (handing leadership over),
// then the node's connections close.
func (c *simCluster) stop(name gen.Atom) {
	if c.actors[name] == nil {
		return
	}
	c.sim.note("STOP %s", name)
	for _, e := range c.fleet.clusters {
		b := e.actors[name]
		if b == nil {
			continue
		}
		p := c.sim.process(b.PID())
		delete(e.actors, name)
		if p != nil {
			p.push(p.mailbox.Urgent, gen.MailboxMessageTypeExit, p.Parent(), gen.MessageExitPID{PID: p.Parent(), Reason: gen.TerminateReasonShutdown})
		}
	}
	// The framework stops the network once the node's last process has
	// ended; an outgoing leader stays until its successor campaigns
	// (departure.go), so the connections close after it, or after a bound
	// that no departure reaches.
	creation := c.sim.nodes[name].creation
	giveUp := c.sim.now.Add(time.Second)
	var finish func()
	finish = func() {
		// the node may have been restarted meanwhile: stop only this one
		n := c.sim.nodes[name]
		if n == nil || n.creation != creation {
			return
		}
		if c.sim.now.Before(giveUp) && hasElectionActor(n) {
			c.sim.after(100*time.Microsecond, "", finish)
			return
		}
		c.sim.crash(name)
	}
	c.sim.after(time.Millisecond, "", finish)
}

// hasElectionActor reports whether an election's actor still runs on n.
func hasElectionActor(n *simNode) bool {
	for _, p := range n.procs {
		if p.checker() != nil && p.state != gen.ProcessStateTerminated {
			return true
		}
	}
	return false
}

// retire removes a name from every election's discovery, as when a pod
// is replaced.
func (c *simCluster) retire(name gen.Atom) {
	for _, e := range c.fleet.clusters {
		e.registry = slices.DeleteFunc(e.registry, func(n gen.Atom) bool { return n == name })
	}
}

// discover runs every live actor's discovery loop once, in every election,
// each after a random lag, so views converge the way they do in a real
// deployment.
func (c *simCluster) discover(maxLag time.Duration) {
	for _, e := range c.fleet.clusters {
		names := slices.Clone(e.registry)
		for _, name := range e.liveNames() {
			lag := time.Duration(0)
			if maxLag > 0 {
				lag = time.Duration(c.sim.rng.Int64N(int64(maxLag)))
			}
			e.command(name, lag, simDiscover{names: names})
		}
	}
}

func (c *simCluster) command(name gen.Atom, after time.Duration, command any) {
	b := c.actors[name]
	if b == nil {
		return
	}
	pid := b.PID()
	c.sim.after(after, fmt.Sprintf("COMMAND %s %T", name, command), func() {
		if p := c.sim.process(pid); p != nil {
			p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, p.Parent(), command)
		}
	})
}

func (c *simCluster) liveNames() []gen.Atom {
	var names []gen.Atom
	for name := range c.actors {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// leaders returns the live actors that lead. The role is asked first:
// IsLeader has the actor read what its hub recorded, which would make the
// harness, not the actor's own steps, decide when that happens.
func (c *simCluster) leaders() []*simActor {
	var list []*simActor
	for _, name := range c.liveNames() {
		if b := c.actors[name]; b.state != nil && b.state.role == roleLeader && b.IsLeader() {
			list = append(list, b)
		}
	}
	return list
}

// converged reports one leader that every live actor follows, at one term.
func (c *simCluster) converged() bool {
	leaders := c.leaders()
	if len(leaders) != 1 {
		return false
	}
	l := leaders[0]
	for _, name := range c.liveNames() {
		b := c.actors[name]
		if b.Leader() != l.PID() || b.Term() != l.Term() {
			return false
		}
	}
	return true
}

// runUntilConverged runs until the cluster converges or limit passes, and
// returns how long it took (or false).
func (c *simCluster) runUntilConverged(limit time.Duration) (time.Duration, bool) {
	return c.sim.runUntilTrue(limit, c.converged)
}

// runUntilTrue runs until done reports true or limit passes, and returns
// how long it took (or false).
func (s *simulator) runUntilTrue(limit time.Duration, done func() bool) (time.Duration, bool) {
	begin := s.now
	deadline := begin.Add(limit)
	for s.now.Before(deadline) && len(s.failures) == 0 {
		if done() {
			return s.now.Sub(begin), true
		}
		s.runFor(time.Millisecond)
	}
	return 0, done()
}

// --- network faults ---

func (c *simCluster) cut(a, b gen.Atom) {
	c.sim.links[[2]gen.Atom{a, b}] = linkCut
	c.sim.links[[2]gen.Atom{b, a}] = linkCut
	c.sim.disconnect(a, b)
}

// partition cuts every link between the groups.
func (c *simCluster) partition(groups ...[]gen.Atom) {
	c.sim.note("PARTITION %v", groups)
	for i, ga := range groups {
		for _, gb := range groups[i+1:] {
			for _, a := range ga {
				for _, b := range gb {
					c.cut(a, b)
				}
			}
		}
	}
}

// blackhole loses everything from a to b while the connection stays up.
func (c *simCluster) blackhole(from, to gen.Atom) {
	c.sim.note("BLACKHOLE %s -> %s", from, to)
	c.sim.links[[2]gen.Atom{from, to}] = linkBlackhole
}

// crossDials makes the next connection between a and b one that both ends
// report up and that carries nothing either way: on the v320 branch, two
// nodes that dial each other at the same moment can each keep the
// connection the other dialed and leak their own. A new connection (after
// a reset) works.
func (c *simCluster) crossDials(a, b gen.Atom) {
	c.sim.note("CROSSED DIALS %s <-> %s", a, b)
	c.sim.deadNext[pairKey(a, b)] = true
}

func (c *simCluster) heal() {
	c.sim.note("HEAL")
	c.sim.links = make(map[[2]gen.Atom]linkMode)
}
