package netstack

import (
	"sync"

	"ergo.services/ergo/gen"
)

// registrarEventName is the event of the built-in registrar (framework:
// net/registrar, registrarName + "_event").
const registrarEventName gen.Atom = "ESRD_event"

// registrarEvent is the built-in registrar's event, registered by the first
// Event() call.
type registrarEvent struct {
	mu    sync.Mutex
	name  gen.Atom
	token gen.Ref
}

// Nodes lists the other nodes registered with the registrar of this host
// and with the registrars of the hosts of the connected peers, sorted, this
// node excluded (framework v3.3.0: the embedded registrar's Nodes; it
// caches the answer for a moment, the stand-in asks every time).
func (b builtinRegistrar) Nodes() ([]gen.Atom, error) {
	s := b.s
	if s.isStopped() {
		return nil, gen.ErrRegistrarTerminated
	}
	var hosts []string
	for _, peer := range s.Nodes() {
		hosts = append(hosts, peer.Host())
	}
	names := s.registrar.Nodes(hosts)
	out := make([]gen.Atom, 0, len(names))
	for _, n := range names {
		out = append(out, gen.Atom(n))
	}
	return out, nil
}

// Event returns the event the registrar publishes gen.MessageRegistrarNodeJoined
// and gen.MessageRegistrarNodeLeft to, for the other nodes of this host
// (framework v3.3.0). The node registers it on the first call; its
// producer is the node's core PID.
func (b builtinRegistrar) Event() (gen.Event, error) {
	s := b.s
	if s.isStopped() {
		return gen.Event{}, gen.ErrRegistrarTerminated
	}
	if s.opts.Events == nil {
		return gen.Event{}, gen.ErrUnsupported
	}
	e := &s.regEvent
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.name == "" {
		token, err := s.opts.Events.RegisterEvent(registrarEventName, gen.EventOptions{})
		if err != nil {
			return gen.Event{}, err
		}
		e.name, e.token = registrarEventName, token
	}
	return gen.Event{Name: e.name, Node: s.name}, nil
}

// registrarNotify publishes what the registrar tells of another node, once
// Event() registered the event.
func (s *Stack) registrarNotify(name string, joined bool) {
	e := &s.regEvent
	e.mu.Lock()
	ev, token := e.name, e.token
	e.mu.Unlock()
	if ev == "" {
		return
	}
	var message any = gen.MessageRegistrarNodeLeft{Name: gen.Atom(name)}
	if joined {
		message = gen.MessageRegistrarNodeJoined{Name: gen.Atom(name)}
	}
	if err := s.opts.Events.SendEvent(ev, token, gen.MessageOptions{}, message); err != nil {
		s.log.trace("registrar: unable to publish %T: %s", message, err)
	}
}
