package leader

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"ergo.services/ergo/gen"
)

// Probe answers Kubernetes-style liveness and readiness checks for one
// election actor, from any goroutine. Get it with Actor.Probe and serve it
// next to your other endpoints:
//
//	func (c *coordinator) Init(args ...any) (leader.Options, error) {
//		probe := c.Probe()
//		mux := http.NewServeMux()
//		mux.Handle("/livez", probe.LiveHandler())
//		mux.Handle("/readyz", probe.ReadyHandler())
//		go http.ListenAndServe(":8080", mux)
//		...
//	}
//
// Live reports whether the election runs: the actor has not ended, and it
// stepped, or its node's liveness hub acknowledged or sent a round for it,
// within ten maximum election timeouts (at least a second). An idle
// follower whose rounds the hub answers is live without waking its actor.
// Ready reports whether this node knows a leader or leads: a node outside
// any quorum (below MinClusterSize, cut off) is not ready. Neither says
// whether this node acts as leader: that is IsLeader's, on the actor.
type Probe struct {
	stuck   atomic.Int64 // time.Duration
	clock   func() time.Time
	stepped atomic.Int64 // Unix nanoseconds of the actor's last step
	ready   atomic.Bool
	ended   atomic.Bool
	slot    atomic.Pointer[slot]
}

// Probe returns this actor's probe, made on the first call. Call it from
// the actor (Init or a handler); the probe itself may be used anywhere.
func (a *Actor) Probe() *Probe {
	if a.probe == nil {
		a.probe = &Probe{clock: a.clock}
		a.probe.stuck.Store(int64(time.Second))
		if a.state != nil {
			a.probe.stuck.Store(int64(a.state.stuckAfter()))
		}
		if a.clock == nil {
			a.probe.clock = time.Now
		}
		a.probe.slot.Store(a.slot)
		a.probe.stepped.Store(a.probe.clock().UnixNano())
	}
	return a.probe
}

// observe is the end of every step of the actor.
func (p *Probe) observe(a *Actor) {
	if a.state != nil {
		p.stuck.Store(int64(a.state.stuckAfter()))
		p.ready.Store(a.state.leader != (gen.PID{}))
	}
	p.slot.Store(a.slot)
	p.stepped.Store(p.clock().UnixNano())
}

// Live returns nil while the election runs, and an error that says why not.
func (p *Probe) Live() error {
	if p.ended.Load() {
		return fmt.Errorf("leader: the election actor has ended")
	}
	now := p.clock()
	last := time.Unix(0, p.stepped.Load())
	if s := p.slot.Load(); s != nil {
		s.mu.Lock()
		if s.beatAt.After(last) {
			last = s.beatAt
		}
		if n := len(s.stamps); n > 0 && s.stamps[n-1].at.After(last) {
			last = s.stamps[n-1].at
		}
		s.mu.Unlock()
	}
	if stuck := time.Duration(p.stuck.Load()); now.Sub(last) >= stuck {
		return fmt.Errorf("leader: the election has not run for %s (limit %s): its actor or its node is stalled", now.Sub(last).Round(time.Millisecond), stuck)
	}
	return nil
}

// Ready returns nil while this node knows a leader or leads, and an error
// otherwise.
func (p *Probe) Ready() error {
	if err := p.Live(); err != nil {
		return err
	}
	if p.ready.Load() == false {
		return fmt.Errorf("leader: no leader is known on this node: it is electing one, or it is below MinClusterSize or cut off from a quorum")
	}
	return nil
}

// LiveHandler serves Live: 200 "ok", or 503 with the reason.
func (p *Probe) LiveHandler() http.Handler { return probeHandler(p.Live) }

// ReadyHandler serves Ready: 200 "ok", or 503 with the reason.
func (p *Probe) ReadyHandler() http.Handler { return probeHandler(p.Ready) }

func probeHandler(check func() error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
}
