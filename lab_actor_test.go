package leader

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"ergo.services/actor/leader/internal/lab"
	"ergo.services/ergo/gen"
)

// The program every lab node process runs: one leader actor, registered as
// labActorName, that reports its callbacks as lab events and, every
// "tick_ms" milliseconds, appends a record to the shared work log while
// IsLeader() is true. Like the documentation's Basic Usage, it runs a
// discovery loop: every "discover_ms" milliseconds (default 100, negative:
// never) it Joins again every node it lists, which are the nodes of the
// "join" operations not unlisted since ("unlist", "leave"), as a discovery
// service stops listing a node that went away.

const (
	labActorName gen.Atom = "lab_leader"
	labClusterID          = "lab"
)

// Parameters a test passes through lab.Config.Params, all in milliseconds
// except min_cluster_size; unset ones take the library's defaults.
const (
	labParamMinSize  = "min_cluster_size"
	labParamElectMin = "election_min"
	labParamElectMax = "election_max"
	labParamHB       = "heartbeat"
	labParamGhost    = "ghost_ttl"
	labParamTick     = "tick_ms"
	labParamDiscover = "discover_ms"
	// labParamJoinOnly (comma-separated node names) replaces the peers a
	// node joins when it starts: a discovery that lists only those
	labParamJoinOnly = "join_only"
	// labParamSymmetricLoss (any non-empty value) turns on
	// Options.AssumeSymmetricConnectionLoss, the opt-in that trades the
	// assumption that both ends of a lost connection notice it together
	// for faster renewals (docs/safety.md).
	labParamSymmetricLoss = "assume_symmetric_loss"
)

// labOpInspect answers with the actor's Inspect items named in its
// arguments, as JSON; it runs outside the actor (an actor cannot inspect
// itself from its own handler).
const labOpInspect = "inspect"

// labOpHelpers answers with the actor's child processes (the watcher,
// the dialer) as the framework reports them (JSON []labHelper).
const labOpHelpers = "helpers"

// labHelper is one helper process of the actor.
type labHelper struct {
	PID      string   `json:"pid"`
	Behavior string   `json:"behavior"`
	State    string   `json:"state"`
	Main     int64    `json:"main"`
	System   int64    `json:"system"`
	Monitors []string `json:"monitors,omitempty"`
}

func labProgram() lab.Program {
	return lab.Program{
		Types:  NetworkTypes(),
		Errors: ErrorTypes(),
		Start: func(c *lab.Child) (gen.PID, error) {
			factory := func() gen.ProcessBehavior {
				return &labActor{child: c}
			}
			return c.Node().SpawnRegister(labActorName, factory, gen.ProcessOptions{})
		},
		Go: func(c *lab.Child) error {
			// The nodes of a cluster are told to go at the same instant. Two
			// nodes that dial each other at once make the framework drop
			// one of the two connections, and a remote Monitor request in
			// flight on it waits out its 5 s timeout, holding up every down
			// behind it in the actor's watcher. So each node joins the
			// nodes before it at once and the ones after it a little later,
			// when they have dialed it already.
			if only := c.Param(labParamJoinOnly); only != "" {
				_, err := labCall(c, "join", strings.Split(only, ","))
				return err
			}
			var before, after []string
			for _, p := range c.Peers() {
				if c.Index() > labPeerIndex(c, p) {
					before = append(before, string(p))
				} else {
					after = append(after, string(p))
				}
			}
			if _, err := labCall(c, "join", before); err != nil {
				return err
			}
			time.AfterFunc(labJoinStagger, func() {
				// "join-initial": a node the test unlisted meanwhile stays
				// unlisted (it may be cut off on purpose already)
				if _, err := labCall(c, "join-initial", after); err != nil {
					c.Logf("join %v: %v", after, err)
				}
			})
			return nil
		},
		Handle: func(c *lab.Child, op string, args []string) (string, error) {
			switch op {
			case labOpInspect:
				return labChildInspect(c, args)
			case labOpHelpers:
				return labChildHelpers(c)
			}
			return labCall(c, op, args)
		},
	}
}

// labJoinStagger is how long a node waits before it joins the nodes after
// it (see labProgram's Go).
const labJoinStagger = 200 * time.Millisecond

// labPeerIndex is the index of peer in the cluster (the lab names node i
// "n<i+1>@<ip>").
func labPeerIndex(c *lab.Child, peer gen.Atom) int {
	name, _, _ := strings.Cut(string(peer), "@")
	i, err := strconv.Atoi(strings.TrimPrefix(name, "n"))
	if err != nil {
		return c.Index()
	}
	return i - 1
}

func labChildInspect(c *lab.Child, items []string) (string, error) {
	pid, err := c.Node().ProcessPID(labActorName)
	if err != nil {
		return "", err
	}
	raw, err := c.Node().Inspect(pid, items...)
	if err != nil {
		return "", err
	}
	out, err := json.Marshal(raw)
	return string(out), err
}

func labChildHelpers(c *lab.Child) (string, error) {
	pid, err := c.Node().ProcessPID(labActorName)
	if err != nil {
		return "", err
	}
	list, err := c.Node().ProcessList()
	if err != nil {
		return "", err
	}
	var helpers []labHelper
	for _, linked := range list {
		hi, err := c.Node().ProcessInfo(linked)
		if err != nil || hi.Parent != pid {
			continue
		}
		h := labHelper{PID: linked.String(), Behavior: hi.Behavior, State: hi.State.String(),
			Main: hi.MailboxQueues.Main, System: hi.MailboxQueues.System}
		for _, m := range hi.MonitorsPID {
			h.Monitors = append(h.Monitors, m.String())
		}
		helpers = append(helpers, h)
	}
	out, err := json.Marshal(helpers)
	return string(out), err
}

// labCall runs an operation inside the actor, so that Join, Leave and
// StepDown are called from the actor's own goroutine.
func labCall(c *lab.Child, op string, args []string) (string, error) {
	pid, err := c.Node().ProcessPID(labActorName)
	if err != nil {
		return "", err
	}
	result, err := c.Node().Call(pid, labOp{op: op, args: args})
	if err != nil {
		return "", err
	}
	return fmt.Sprint(result), nil
}

type (
	labOp struct {
		op   string
		args []string
	}
	labTick     struct{}
	labDiscover struct{}
)

type labActor struct {
	Actor
	child       *lab.Child
	tick        time.Duration
	every       time.Duration // of the discovery loop; 0: none
	listed      map[gen.Atom]bool
	unlisted    map[gen.Atom]bool // unlisted or left since: the start's staggered join skips them
	discovering bool
	leading     bool // since HandleBecomeLeader, until its work stopped (endWork)
}

func (a *labActor) Init(args ...any) (Options, error) {
	c := a.child
	a.tick = time.Duration(c.ParamInt(labParamTick, 5)) * time.Millisecond
	a.every = time.Duration(max(c.ParamInt(labParamDiscover, 100), 0)) * time.Millisecond
	a.listed = make(map[gen.Atom]bool)
	a.unlisted = make(map[gen.Atom]bool)
	// a Send to itself, not a SendAfter: the framework registers the PID
	// only after Init, and a SendAfter that fired before is lost, and with
	// it every later tick
	if err := a.Send(a.PID(), labTick{}); err != nil {
		return Options{}, err
	}
	return Options{
		ClusterID:          labClusterID,
		MinClusterSize:     c.ParamInt(labParamMinSize, 0),
		ElectionTimeoutMin: c.ParamInt(labParamElectMin, 0),
		ElectionTimeoutMax: c.ParamInt(labParamElectMax, 0),
		HeartbeatInterval:  c.ParamInt(labParamHB, 0),
		GhostTTL:           c.ParamInt(labParamGhost, 0),

		AssumeSymmetricConnectionLoss: c.Param(labParamSymmetricLoss) != "",
	}, nil
}

func (a *labActor) HandleMessage(from gen.PID, message any) error {
	if _, ok := message.(labTick); ok {
		// the clock first, then the check (see lab.WorkLog.Record)
		at := time.Now()
		if a.IsLeader() {
			if err := a.child.WorkLog().Record(a.Term(), at); err != nil {
				a.Log().Error("lab: work log: %s", err)
			}
		}
		_, err := a.SendAfter(a.PID(), labTick{}, a.tick)
		return err
	}
	if _, ok := message.(labDiscover); ok {
		for node := range a.listed {
			a.Join(gen.ProcessID{Name: labActorName, Node: node})
		}
		_, err := a.SendAfter(a.PID(), labDiscover{}, a.every)
		return err
	}
	return nil
}

func (a *labActor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	op, ok := request.(labOp)
	if ok == false {
		return nil, gen.ErrUnsupported
	}
	switch op.op {
	case "join", "join-initial":
		for _, node := range op.args {
			if op.op == "join-initial" && a.unlisted[gen.Atom(node)] {
				continue
			}
			delete(a.unlisted, gen.Atom(node))
			a.listed[gen.Atom(node)] = true
			a.Join(gen.ProcessID{Name: labActorName, Node: gen.Atom(node)})
		}
		if a.every > 0 && a.discovering == false {
			a.discovering = true
			if _, err := a.SendAfter(a.PID(), labDiscover{}, a.every); err != nil {
				return nil, err
			}
		}
	case "unlist":
		for _, node := range op.args {
			delete(a.listed, gen.Atom(node))
			a.unlisted[gen.Atom(node)] = true
		}
	case "leave":
		for _, node := range op.args {
			delete(a.listed, gen.Atom(node))
			a.unlisted[gen.Atom(node)] = true
			a.Leave(gen.Atom(node))
		}
	case "stepdown":
		if err := a.StepDown(); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown operation %q", op.op)
	}
	return "ok " + op.op + " " + strings.Join(op.args, ","), nil
}

func (a *labActor) emit(kind string, leader gen.PID, detail string) {
	a.child.Emit(lab.Event{Kind: kind, Term: a.Term(), Leader: string(leader.Node), Detail: detail})
}

func (a *labActor) HandleBecomeLeader() error {
	a.leading = true
	a.emit("leader", a.PID(), "")
	return nil
}

func (a *labActor) HandleBecomeFollower(leader gen.PID) error {
	a.endWork()
	a.emit("follower", leader, "")
	return nil
}

// endWork writes the work log's end record when this node led: leadership
// ends here, as the documentation says, and a handover runs it before it
// tells the successor, so the last unit of work ends now (lab.WorkLog.End).
func (a *labActor) endWork() {
	if a.leading == false {
		return
	}
	a.leading = false
	if err := a.child.WorkLog().End(a.Term(), time.Now()); err != nil {
		a.Log().Error("lab: work log: %s", err)
	}
}

func (a *labActor) HandlePeerJoined(peer gen.PID) error {
	a.emit("peer_joined", gen.PID{}, string(peer.Node))
	return nil
}

func (a *labActor) HandlePeerLeft(peer gen.PID) error {
	a.emit("peer_left", gen.PID{}, string(peer.Node))
	return nil
}

func (a *labActor) Terminate(reason error) {
	a.endWork()
	a.emit("terminate", gen.PID{}, fmt.Sprint(reason))
}
