package main

import (
	"context"
	"fmt"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/ergo/gen"
)

// writerName is the writer's registered name on every node.
const writerName gen.Atom = "writer"

// writerSpec configures a writer; the demo passes it as the spawn argument.
type writerSpec struct {
	Options    leader.Options
	Peers      []gen.ProcessID
	Rediscover time.Duration
	Store      *store // this node's own connection
	Cluster    string // key of the token counter
	Resource   string // id of the fenced row
	Every      time.Duration
	// ConfirmTimeout bounds the database call in HandleConfirmLeader, which
	// runs on the actor's goroutine: well under the election timeout.
	ConfirmTimeout time.Duration
	// BeforeWrite runs after the leadership check and before the write. The
	// demo uses it to stall the leader, as a long GC pause or a slow disk
	// would; nil in real use.
	BeforeWrite func(node gen.Atom, token int64)
	// OnEvent is told what the writer did, for the demo to narrate.
	OnEvent func(event)
}

// event is one thing a writer did.
type event struct {
	Node  gen.Atom
	Kind  string // "token", "write", "fenced", "error"
	Token int64
	Rows  int64
	Seq   int
	Err   error
	At    time.Time
}

// writer is the leader-only writer: leadership is confirmed by taking a
// fencing token from the database, and every write carries the token, so a
// leader that has been superseded without knowing it cannot take effect.
type writer struct {
	leader.Actor

	spec       writerSpec
	token      int64 // this leadership's fencing token
	claimed    bool  // the row carries our token
	writing    bool
	generation uint64
	seq        int
}

type messageDiscover struct{}

// messageWrite carries the generation of the leadership that scheduled it,
// so a chain from an earlier leadership never runs beside the current one.
type messageWrite struct{ Generation uint64 }

func factoryWriter() gen.ProcessBehavior { return &writer{} }

func (w *writer) Init(args ...any) (leader.Options, error) {
	w.spec = args[0].(writerSpec)
	if err := w.Send(w.PID(), messageDiscover{}); err != nil {
		return leader.Options{}, err
	}
	return w.spec.Options, nil
}

// HandleConfirmLeader makes winning the election necessary but not
// sufficient: leadership also needs a token from the database. An error is
// a denial - a timeout here is exactly when someone else may be holding it.
func (w *writer) HandleConfirmLeader() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.spec.ConfirmTimeout)
	defer cancel()
	token, err := w.spec.Store.claimToken(ctx, w.spec.Cluster, string(w.Node().Name()))
	if err != nil {
		w.tell(event{Kind: "error", Err: fmt.Errorf("claiming a token: %w", err)})
		return false, err
	}
	w.token = token
	w.claimed = false
	w.tell(event{Kind: "token", Token: token})
	return true, nil
}

func (w *writer) HandleBecomeLeader() error {
	w.generation++
	w.writing = true
	w.seq = 0
	return w.Send(w.PID(), messageWrite{Generation: w.generation})
}

func (w *writer) HandleBecomeFollower(leader gen.PID) error {
	w.writing = false
	return nil
}

func (w *writer) HandleMessage(from gen.PID, message any) error {
	switch m := message.(type) {
	case messageDiscover:
		for _, peer := range w.spec.Peers {
			w.Join(peer)
		}
		_, err := w.SendAfter(w.PID(), messageDiscover{}, w.spec.Rediscover)
		return err

	case messageWrite:
		if m.Generation != w.generation || w.writing == false {
			return nil
		}
		// IsLeader is false for a moment when the lease is not fresh (a
		// hiccup longer than it, or right after a HandleConfirmLeader that
		// took longer than the lease: the first round after it is still on
		// its way): skip this tick, not the leadership. Leadership ends with
		// HandleBecomeFollower.
		if w.IsLeader() {
			if w.spec.BeforeWrite != nil {
				w.spec.BeforeWrite(w.Node().Name(), w.token)
			}
			w.write()
		}
		if w.writing {
			_, err := w.SendAfter(w.PID(), messageWrite{Generation: w.generation}, w.spec.Every)
			return err
		}
	}
	return nil
}

// write performs one write with this leadership's token. Zero rows updated
// means a newer token has written: whatever this node believes, it is no
// longer the leader the resource obeys, so it stops.
func (w *writer) write() {
	w.seq++
	value := fmt.Sprintf("write #%d by %s with token %d", w.seq, string(w.Node().Name()), w.token)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var rows int64
	var err error
	if w.claimed {
		rows, err = w.spec.Store.write(ctx, w.spec.Resource, w.token, value)
	} else {
		rows, err = w.spec.Store.claimResource(ctx, w.spec.Resource, w.token, value)
		w.claimed = rows == 1
	}
	if err != nil {
		// Not a verdict on leadership: try again on the next tick.
		w.tell(event{Kind: "error", Token: w.token, Seq: w.seq, Err: err})
		return
	}
	if rows == 0 {
		w.writing = false
		w.tell(event{Kind: "fenced", Token: w.token, Seq: w.seq})
		w.Log().Warning("write with token %d updated no rows: a newer leader owns %q; stopping", w.token, w.spec.Resource)
		if w.IsLeader() {
			// it believed it led; it does not, so it says so
			w.StepDown()
		}
		return
	}
	w.tell(event{Kind: "write", Token: w.token, Rows: rows, Seq: w.seq})
}

func (w *writer) tell(e event) {
	if w.spec.OnEvent == nil {
		return
	}
	e.Node = w.Node().Name()
	e.At = time.Now()
	w.spec.OnEvent(e)
}
