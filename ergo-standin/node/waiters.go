package node

import (
	"sync"
	"time"

	"ergo.services/ergo/gen"
)

type response struct {
	value any
	err   error
}

// waiter is a pending Call, Inspect or remote link/monitor request.
type waiter struct {
	owner gen.PID
	ch    chan response
}

// waiters maps request references to the goroutines waiting for answers.
type waiters struct {
	mu sync.Mutex
	m  map[gen.Ref]*waiter
}

func newWaiters() *waiters { return &waiters{m: make(map[gen.Ref]*waiter)} }

func (w *waiters) add(ref gen.Ref, owner gen.PID) *waiter {
	wt := &waiter{owner: owner, ch: make(chan response, 1)}
	w.mu.Lock()
	w.m[ref] = wt
	w.mu.Unlock()
	return wt
}

func (w *waiters) remove(ref gen.Ref) {
	w.mu.Lock()
	delete(w.m, ref)
	w.mu.Unlock()
}

// deliver hands r to the waiter of ref if it belongs to owner; a response
// nobody waits for (any more) is dropped.
func (w *waiters) deliver(owner gen.PID, ref gen.Ref, r response) bool {
	w.mu.Lock()
	wt, ok := w.m[ref]
	if ok && wt.owner == owner {
		delete(w.m, ref)
	} else {
		ok = false
	}
	w.mu.Unlock()
	if ok {
		wt.ch <- r
	}
	return ok
}

func (w *waiters) failAll(err error) {
	w.mu.Lock()
	all := w.m
	w.m = make(map[gen.Ref]*waiter)
	w.mu.Unlock()
	for _, wt := range all {
		wt.ch <- response{err: err}
	}
}

// wait blocks for the answer to ref, up to timeout seconds.
func (w *waiters) wait(ref gen.Ref, wt *waiter, timeout int) (any, error) {
	if timeout <= 0 {
		timeout = gen.DefaultRequestTimeout
	}
	t := time.NewTimer(time.Duration(timeout) * time.Second)
	defer t.Stop()
	select {
	case r := <-wt.ch:
		return r.value, r.err
	case <-t.C:
		w.remove(ref)
		// the answer may have raced with the timer
		select {
		case r := <-wt.ch:
			return r.value, r.err
		default:
		}
		return nil, gen.ErrTimeout
	}
}
