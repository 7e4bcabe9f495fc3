package main

import (
	"slices"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

// coordinatorName is the coordinator's registered name on every node; peers
// are addressed by it.
const coordinatorName gen.Atom = "coordinator"

// Submit asks the cluster to run a job once, on the leader's next tick. Any
// node accepts it: a follower forwards it to the leader.
type Submit struct {
	Job string
	// Forwarded is set by the follower that passes the request on, so it
	// makes one hop at most: two nodes that each believe the other leads
	// (briefly possible during a change of leader) must not bounce it
	// between them.
	Forwarded bool
}

// Accepted answers Submit: the leader that queued the job.
type Accepted struct {
	Job    string
	Node   gen.Atom
	Term   uint64
	Queued int
}

// Run is one run of the leader-only job, reported to coordinatorSpec.OnRun.
type Run struct {
	Node gen.Atom
	Term uint64
	Seq  int      // runs since this node last became leader
	Jobs []string // submitted jobs this run executed
	At   time.Time
}

// coordinatorSpec configures a coordinator; the application passes it as
// the member's argument.
type coordinatorSpec struct {
	Options    leader.Options
	PeersFile  string        // node names, one a line; re-read every Rediscover
	Rediscover time.Duration // how often discovery runs
	Tick       time.Duration // the leader-only job's period
	OnRun      func(Run)     // told about every run; nil only logs
}

// coordinator runs a periodic job on whichever node leads, and accepts job
// submissions on every node.
type coordinator struct {
	leader.Actor

	spec   coordinatorSpec
	listed map[gen.Atom]bool // what discovery listed last time

	running    bool   // leading, and the job is scheduled
	generation uint64 // of the current leadership; ticks of an earlier one are ignored
	cancelTick gen.CancelFunc
	seq        int
	queue      []string
}

type messageDiscover struct{}

// messageTick drives the job. It carries the generation of the leadership
// that scheduled it: leadership can be lost and won again between two
// ticks, and the old chain must not run beside the new one.
type messageTick struct{ Generation uint64 }

func factoryCoordinator() gen.ProcessBehavior { return &coordinator{} }

// Init returns the options and starts discovery. Join would work here as
// well (it takes effect once Init has returned the options), but discovery
// repeats on a timer, so it runs from a handler.
func (c *coordinator) Init(args ...any) (leader.Options, error) {
	c.spec = args[0].(coordinatorSpec)
	c.listed = make(map[gen.Atom]bool)
	if err := c.Send(c.PID(), messageDiscover{}); err != nil {
		return leader.Options{}, err
	}
	return c.spec.Options, nil
}

func (c *coordinator) HandleMessage(from gen.PID, message any) error {
	switch m := message.(type) {
	case messageDiscover:
		c.discover()
		// Peers come and go, and a node that starts before its peers must
		// keep looking: discovery is never one-shot.
		_, err := c.SendAfter(c.PID(), messageDiscover{}, c.spec.Rediscover)
		return err

	case messageTick:
		if m.Generation != c.generation || c.running == false {
			return nil // scheduled by an earlier leadership
		}
		if c.IsLeader() == false {
			c.running = false // demoted between ticks
			return nil
		}
		c.runJob()
		cancel, err := c.SendAfter(c.PID(), messageTick{Generation: c.generation}, c.spec.Tick)
		c.cancelTick = cancel
		return err
	}
	return nil
}

// discover re-reads the static peer list: Join what it lists, Leave what it
// no longer lists. Leave matters: the actor cannot tell a node that is gone
// for good from one that is briefly unreachable, and only discovery knows.
func (c *coordinator) discover() {
	nodes, err := readPeers(c.spec.PeersFile)
	if err != nil {
		c.Log().Warning("discovery: %s; keeping the peers from the last read", err)
		return
	}
	now := make(map[gen.Atom]bool)
	for _, node := range nodes {
		if node == c.Node().Name() {
			continue
		}
		now[node] = true
		c.Join(gen.ProcessID{Name: coordinatorName, Node: node})
	}
	for node := range c.listed {
		if now[node] == false {
			c.Log().Info("discovery: %s is no longer listed; leaving it", node)
			c.Leave(node)
		}
	}
	c.listed = now
}

// HandleBecomeLeader starts the job.
func (c *coordinator) HandleBecomeLeader() error {
	c.Log().Info("became leader at term %d; starting the job", c.Term())
	c.generation++
	c.running = true
	c.seq = 0
	return c.Send(c.PID(), messageTick{Generation: c.generation})
}

// HandleBecomeFollower stops the job, unconditionally: it runs on every
// transition into follower, and it is the only place leadership ends.
func (c *coordinator) HandleBecomeFollower(leader gen.PID) error {
	if c.running {
		c.Log().Info("no longer leader (now following %s); stopping the job", leader)
	}
	c.running = false
	if c.cancelTick != nil {
		c.cancelTick()
		c.cancelTick = nil
	}
	if len(c.queue) > 0 {
		// Nothing carries state across a change of leader; a real scheduler
		// keeps its queue where the next leader can read it.
		c.Log().Warning("dropping %d queued jobs with leadership", len(c.queue))
		c.queue = nil
	}
	return nil
}

func (c *coordinator) runJob() {
	c.seq++
	run := Run{Node: c.Node().Name(), Term: c.Term(), Seq: c.seq, Jobs: c.queue, At: time.Now()}
	c.queue = nil
	if c.spec.OnRun != nil {
		c.spec.OnRun(run)
		return
	}
	c.Log().Info("job run #%d at term %d, submitted jobs: %v", run.Seq, run.Term, run.Jobs)
}

// HandleCall accepts Submit on any node: the leader queues it, a follower
// forwards it to the leader, and without a leader it is rejected rather
// than queued for a leader that may never appear.
func (c *coordinator) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	submit, ok := request.(Submit)
	if ok == false {
		return nil, gen.ErrUnsupported
	}
	if c.IsLeader() {
		c.queue = append(c.queue, submit.Job)
		return Accepted{Job: submit.Job, Node: c.Node().Name(), Term: c.Term(), Queued: len(c.queue)}, nil
	}
	leader := c.Leader()
	if leader == (gen.PID{}) || submit.Forwarded {
		return nil, gen.ErrNotAllowed
	}
	submit.Forwarded = true
	// This blocks the actor until the leader answers, so keep it short: the
	// election's own messages wait in the mailbox meanwhile.
	return c.CallWithTimeout(leader, submit, 2)
}

// HandleInspect adds the job's state to the election's keys.
func (c *coordinator) HandleInspect(from gen.PID, item ...string) map[string]string {
	if len(item) > 0 && slices.Contains(item, "job_running") == false {
		return nil
	}
	running := "false"
	if c.running {
		running = "true"
	}
	return map[string]string{"job_running": running}
}
