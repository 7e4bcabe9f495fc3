package leader

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tests of the Actor's plumbing on one simulated node: the mailbox loop,
// callbacks and their defaults, exits, calls and inspection.

// bareActor implements nothing but Init: every other callback is Actor's
// default.
type bareActor struct {
	Actor
	options Options
}

func (b *bareActor) Init(args ...any) (Options, error) { return b.options, nil }

// spawnSolo starts behavior on a fresh simulated node with virtual time.
func spawnSolo(t *testing.T, behavior gen.ProcessBehavior, actor *Actor) (*simulator, *simProcess) {
	t.Helper()
	s := newSimTest(t, 1, lanNetwork())
	actor.clock = func() time.Time { return s.now }
	actor.rng = rand.New(rand.NewPCG(1, 2))
	n := s.addNode("solo@sim")
	p, err := s.spawn(n, "leader", behavior)
	require.NoError(t, err)
	return s, p
}

func soloOptions() Options {
	return Options{ClusterID: "solo", MinClusterSize: 1, ElectionTimeoutMin: 150, ElectionTimeoutMax: 300, HeartbeatInterval: 50}
}

func hasWarning(s *simulator, part string) bool {
	for _, w := range s.warnings {
		if strings.Contains(w, part) {
			return true
		}
	}
	return false
}

func TestDefaultCallbacksWarn(t *testing.T) {
	b := &bareActor{options: soloOptions()}
	s, p := spawnSolo(t, b, &b.Actor)
	assert.True(t, hasWarning(s, "MinClusterSize is 1"), "the documented startup warning")
	s.runFor(time.Second)
	require.True(t, b.IsLeader(), "a lone node with MinClusterSize 1 appoints itself")
	assert.True(t, hasWarning(s, "HandleBecomeLeader is not implemented"))
	assert.Equal(t, gen.ProcessKindLeader, p.kind)

	p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, pid("x"), "hello")
	assert.True(t, hasWarning(s, "HandleMessage is not implemented"))
	p.push(p.mailbox.Main, gen.MailboxMessageTypeEvent, pid("x"), gen.MessageEvent{})
	assert.True(t, hasWarning(s, "HandleEvent is not implemented"))
	p.push(p.mailbox.Main, gen.MailboxMessageTypeSpan, pid("x"), gen.TracingSpan{})
	assert.True(t, hasWarning(s, "HandleSpan is not implemented"))
	p.mailbox.Log.Push(gen.MessageLog{})
	p.run()
	assert.True(t, hasWarning(s, "HandleLog is not implemented"))

	// API methods run inside callbacks; the actor performs their effects
	// when the callback returns, so drive one more message through
	require.NoError(t, b.StepDown())
	p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, pid("x"), "after step-down")
	assert.True(t, hasWarning(s, "HandleBecomeFollower is not implemented"))
	assert.ErrorIs(t, b.StepDown(), ErrNotLeader)
	assert.NotEqual(t, gen.ProcessStateTerminated, p.state)
}

// recordingActor records its callbacks and can be told to refuse.
type recordingActor struct {
	Actor
	options      Options
	events       []string
	refuse       error
	callResult   any
	callErr      error
	inspectExtra map[string]string
}

func (r *recordingActor) Init(args ...any) (Options, error) { return r.options, nil }
func (r *recordingActor) HandleBecomeLeader() error {
	r.events = append(r.events, "leader")
	return r.refuse
}
func (r *recordingActor) HandleBecomeFollower(leader gen.PID) error {
	r.events = append(r.events, "follower:"+string(leader.Node))
	return nil
}
func (r *recordingActor) HandleMessage(from gen.PID, message any) error {
	r.events = append(r.events, "message")
	return nil
}
func (r *recordingActor) HandleCall(from gen.PID, ref gen.Ref, request any) (any, error) {
	return r.callResult, r.callErr
}
func (r *recordingActor) HandleInspect(from gen.PID, item ...string) map[string]string {
	return r.inspectExtra
}
func (r *recordingActor) Terminate(reason error) {
	r.events = append(r.events, "terminate:"+reason.Error())
}

func TestHandleBecomeLeaderErrorRollsBackAndTerminates(t *testing.T) {
	refusal := errors.New("cannot honour leadership")
	r := &recordingActor{options: soloOptions(), refuse: refusal}
	s, p := spawnSolo(t, r, &r.Actor)
	s.runFor(time.Second)
	assert.Equal(t, gen.ProcessStateTerminated, p.state)
	assert.Equal(t, []string{"leader", "terminate:" + refusal.Error()}, r.events)
	assert.False(t, r.IsLeader(), "the transition was rolled back")
}

func TestExitsTerminateUnlessTrapped(t *testing.T) {
	r := &recordingActor{options: soloOptions()}
	_, p := spawnSolo(t, r, &r.Actor)
	r.SetTrapExit(true)
	assert.True(t, r.TrapExit())
	p.push(p.mailbox.Urgent, gen.MailboxMessageTypeExit, pid("x"), gen.MessageExitPID{PID: pid("x"), Reason: errors.New("linked child died")})
	assert.NotEqual(t, gen.ProcessStateTerminated, p.state, "a trapped exit from a non-parent is a message")
	assert.Contains(t, r.events, "message")

	p.push(p.mailbox.Urgent, gen.MailboxMessageTypeExit, p.Parent(), gen.MessageExitPID{PID: p.Parent(), Reason: gen.TerminateReasonShutdown})
	assert.Equal(t, gen.ProcessStateTerminated, p.state, "an exit from the parent always terminates")

	r2 := &recordingActor{options: soloOptions()}
	_, p2 := spawnSolo(t, r2, &r2.Actor)
	p2.push(p2.mailbox.Urgent, gen.MailboxMessageTypeExit, pid("x"), gen.MessageExitPID{PID: pid("x"), Reason: errors.New("boom")})
	assert.Equal(t, gen.ProcessStateTerminated, p2.state, "untrapped, any exit terminates")
}

func TestCallErrorsGoToTheCaller(t *testing.T) {
	r := &recordingActor{options: soloOptions(), callErr: gen.ErrNotAllowed}
	_, p := spawnSolo(t, r, &r.Actor)
	p.push(p.mailbox.Main, gen.MailboxMessageTypeRequest, pid("x"), "request")
	assert.NotEqual(t, gen.ProcessStateTerminated, p.state, "rejecting a call does not stop the actor")
	r.callErr = gen.TerminateReasonNormal
	p.push(p.mailbox.Main, gen.MailboxMessageTypeRequest, pid("x"), "request")
	assert.Equal(t, gen.ProcessStateTerminated, p.state)
}

func TestPanicIsRecovered(t *testing.T) {
	b := &panickingActor{}
	b.options = soloOptions()
	s, p := spawnSolo(t, b, &b.Actor)
	p.push(p.mailbox.Main, gen.MailboxMessageTypeRegular, pid("x"), "boom")
	assert.Equal(t, gen.ProcessStateTerminated, p.state)
	require.NotEmpty(t, s.failures, "the simulator reports a panic termination")
}

type panickingActor struct{ bareActor }

func (b *panickingActor) HandleMessage(from gen.PID, message any) error { panic("boom") }

func TestInitRejectsBadOptionsAndNonBehaviors(t *testing.T) {
	s := newSimTest(t, 1, lanNetwork())
	n := s.addNode("solo@sim")
	_, err := s.spawn(n, "leader", &bareActor{options: Options{}})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = s.spawn(n, "other", &Actor{})
	assert.ErrorContains(t, err, "does not implement leader.ActorBehavior")
}

func TestJoinFromInitIsAppliedAfterTheOptions(t *testing.T) {
	b := &joinInInit{}
	b.options = Options{ClusterID: "c"}
	_, _ = spawnSolo(t, b, &b.Actor)
	assert.Equal(t, 3, b.state.viewSize())
	assert.Equal(t, "c", b.ClusterID())
}

type joinInInit struct{ bareActor }

func (b *joinInInit) Init(args ...any) (Options, error) {
	b.Join(procID("b"))
	b.Join(procID("c"))
	return b.options, nil
}

// The node's liveness hub ends with the node's Stop, before the actors
// have handled their own exits: no warning per election then (a node of
// thousands would log thousands). A hub that ends for any other reason is
// an operator's concern: warned of, and a new one asked for.
func TestTheHubEndingWithTheNodesShutdownIsNoWarning(t *testing.T) {
	for _, tc := range []struct {
		reason error
		warn   bool
	}{{gen.TerminateReasonShutdown, false}, {gen.TerminateReasonKill, true}} {
		b := &bareActor{options: soloOptions()}
		s, _ := spawnSolo(t, b, &b.Actor)
		s.runFor(time.Second)
		hub := b.hub
		require.NotEqual(t, gen.PID{}, hub, "the actor joined its node's hub")
		s.process(hub).terminate(tc.reason)
		s.runFor(time.Second)
		assert.Equal(t, tc.warn, hasWarning(s, "liveness hub stopped"), "the hub ended: %s", tc.reason)
		assert.NotEqual(t, hub, b.hub, "a new hub was asked for (%s)", tc.reason)
	}
}

// The election is a closed state machine (doc.go): the actor changes it
// only through its entry points (receive, timer, down, inputs.go), never
// by assigning one of its fields, so that every change of the state is a
// step the simulator drives too. This reads the package's source and fails
// on any assignment to something reached through an actor's state (the
// state itself, a.state = newElection(...), is the actor's own field).
func TestTheActorAssignsNoElectionField(t *testing.T) {
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	check := func(target ast.Expr) {
		for e := target; e != nil; {
			switch x := e.(type) {
			case *ast.SelectorExpr:
				if x.Sel.Name == "state" && x != target {
					found = append(found, fset.Position(target.Pos()).String())
					return
				}
				e = x.X
			case *ast.IndexExpr:
				e = x.X
			case *ast.StarExpr:
				e = x.X
			case *ast.ParenExpr:
				e = x.X
			default:
				e = nil
			}
		}
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(file, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.AssignStmt:
				if s.Tok != token.DEFINE {
					for _, lhs := range s.Lhs {
						check(lhs)
					}
				}
			case *ast.IncDecStmt:
				check(s.X)
			}
			return true
		})
	}
	assert.Empty(t, found, "assignments to the election's fields outside its entry points (inputs.go)")
}

// The election is a closed state machine: nothing the hub writes is
// reachable from it, so the hub's records enter only as the views the
// actor hands a step (stepStarts). Breaks: an election field that holds the
// slot, the hub, or anything that does.
func TestTheElectionHoldsNothingTheHubWrites(t *testing.T) {
	forbidden := map[reflect.Type]bool{reflect.TypeOf(slot{}): true, reflect.TypeOf(hub{}): true}
	seen := map[reflect.Type]bool{}
	var path []string
	var walk func(reflect.Type)
	walk = func(ty reflect.Type) {
		if forbidden[ty] {
			t.Errorf("the election reaches a %s through %s", ty.Name(), strings.Join(path, "."))
			return
		}
		if seen[ty] {
			return
		}
		seen[ty] = true
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array:
			walk(ty.Elem())
		case reflect.Map:
			walk(ty.Key())
			walk(ty.Elem())
		case reflect.Struct:
			for i := 0; i < ty.NumField(); i++ {
				path = append(path, ty.Field(i).Name)
				walk(ty.Field(i).Type)
				path = path[:len(path)-1]
			}
		}
	}
	walk(reflect.TypeOf(election{}))
	require.True(t, seen[reflect.TypeOf(member{})], "the walk reached the members: it looks into the fields")
}

// A step whose only effect is of any kind is performed: the actor skips
// performing when the effects are empty (Actor.flush). Breaks: a new kind
// of effect left out of empty(), whose requests are then dropped whenever
// a step has nothing else to do (as the connection checks of overdue
// monitors were).
func TestEveryKindOfEffectMakesTheEffectsNonEmpty(t *testing.T) {
	ty := reflect.TypeOf(effects{})
	for i := 0; i < ty.NumField(); i++ {
		field := ty.Field(i)
		require.Equal(t, reflect.Slice, field.Type.Kind(), "effects.%s: every kind of effect is a list", field.Name)
		var out effects
		v := reflect.ValueOf(&out).Elem().Field(i)
		reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem().Set(reflect.MakeSlice(field.Type, 1, 1))
		assert.False(t, out.empty(), "effects.%s alone is not empty", field.Name)
	}
}

// Rule 8: a new election actor raises every epoch of its node's board
// before it can grant anything, so that no answer its node's hub gave
// for an earlier process of the election (bound to a leader then) counts
// for that leader any more. Breaks: a leader counts pings answered for a
// process that is gone, whose successor has promised nothing.
func TestANewElectionActorRaisesItsNodesEpochs(t *testing.T) {
	s := newSimTest(t, 1, lanNetwork())
	n := s.addNode("solo@sim")
	spawn := func(name gen.Atom, cluster string) *simProcess {
		b := &bareActor{options: soloOptions()}
		b.options.ClusterID = cluster
		b.clock = func() time.Time { return s.now }
		b.rng = rand.New(rand.NewPCG(1, 2))
		p, err := s.spawn(n, name, b)
		require.NoError(t, err)
		return p
	}
	first := spawn("first", "one")
	board := boardOf(first.Node())
	epoch := func() uint64 {
		board.mu.Lock()
		defer board.mu.Unlock()
		return board.peer("peer@sim").epoch
	}
	before := epoch()
	s.runFor(10 * time.Millisecond)
	assert.Equal(t, before, epoch(), "nothing raised it meanwhile")
	spawn("second", "two")
	assert.NotEqual(t, before, epoch(), "the new actor raised it")
}
