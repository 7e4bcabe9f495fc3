package leader

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"ergo.services/actor/leader/internal/lab"
	"ergo.services/ergo/gen"
)

// The program every lab node process runs: one leader actor, registered as
// labActorName, that reports its callbacks as lab events and, every
// "tick_ms" milliseconds, appends a record to the shared work log while
// IsLeader() is true.

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
)

// Parameters that turn off one mechanism of the protocol (any non-empty
// value), mapped to protocolSwitches: a test compares a run with the
// mechanism and one without it.
const (
	labParamNoPreVote        = "no_prevote"
	labParamNoResponseQuorum = "no_response_quorum"
	labParamNoFastFailover   = "no_fast_failover"
)

// labSwitches reads the protocol switches from the parameters.
func labSwitches(c *lab.Child) protocolSwitches {
	return protocolSwitches{
		noPreVote:        c.Param(labParamNoPreVote) != "",
		noResponseQuorum: c.Param(labParamNoResponseQuorum) != "",
		noFastFailover:   c.Param(labParamNoFastFailover) != "",
	}
}

// labOpInspect answers with the actor's Inspect items named in its
// arguments, as JSON; it runs outside the actor (an actor cannot inspect
// itself from its own handler).
const labOpInspect = "inspect"

func labProgram() lab.Program {
	return lab.Program{
		Types:  NetworkTypes(),
		Errors: ErrorTypes(),
		Start: func(c *lab.Child) (gen.PID, error) {
			switches := labSwitches(c)
			factory := func() gen.ProcessBehavior {
				a := &labActor{child: c}
				a.Actor.switches = switches
				return a
			}
			return c.Node().SpawnRegister(labActorName, factory, gen.ProcessOptions{})
		},
		Go: func(c *lab.Child) error {
			var peers []string
			for _, p := range c.Peers() {
				peers = append(peers, string(p))
			}
			_, err := labCall(c, "join", peers)
			return err
		},
		Handle: func(c *lab.Child, op string, args []string) (string, error) {
			if op == labOpInspect {
				return labChildInspect(c, args)
			}
			return labCall(c, op, args)
		},
	}
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
	labTick struct{}
)

type labActor struct {
	Actor
	child *lab.Child
	tick  time.Duration
}

func (a *labActor) Init(args ...any) (Options, error) {
	c := a.child
	a.tick = time.Duration(c.ParamInt(labParamTick, 5)) * time.Millisecond
	if _, err := a.SendAfter(a.PID(), labTick{}, a.tick); err != nil {
		return Options{}, err
	}
	return Options{
		ClusterID:          labClusterID,
		MinClusterSize:     c.ParamInt(labParamMinSize, 0),
		ElectionTimeoutMin: c.ParamInt(labParamElectMin, 0),
		ElectionTimeoutMax: c.ParamInt(labParamElectMax, 0),
		HeartbeatInterval:  c.ParamInt(labParamHB, 0),
		GhostTTL:           c.ParamInt(labParamGhost, 0),
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
	return nil
}

func (a *labActor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	op, ok := request.(labOp)
	if ok == false {
		return nil, gen.ErrUnsupported
	}
	switch op.op {
	case "join":
		for _, node := range op.args {
			a.Join(gen.ProcessID{Name: labActorName, Node: gen.Atom(node)})
		}
	case "leave":
		for _, node := range op.args {
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
	a.emit("leader", a.PID(), "")
	return nil
}

func (a *labActor) HandleBecomeFollower(leader gen.PID) error {
	a.emit("follower", leader, "")
	return nil
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
	a.emit("terminate", gen.PID{}, fmt.Sprint(reason))
}
