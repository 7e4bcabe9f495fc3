package main

import (
	"fmt"
	"os"
	"sync"
	"time"

	"ergo.services/ergo"
	"ergo.services/ergo/gen"
)

// canary watches the name resolution that a send to an unreachable node
// falls back on. A member whose connection dropped is addressed by name,
// and the framework then connects synchronously in the sending actor:
// static route first, then the registrar. On this machine the registrar is
// shared by every process that runs nodes (port 4499), and other test
// suites start and stop it all the time; while it re-elects a server, a
// lookup blocks for a second or more, and so does the actor that sends.
// The canary resolves an unknown name in a loop from a node of its own and
// records when that took long, so each run can say whether it overlapped
// such a stall.
type canary struct {
	node gen.Node
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	stalls []stall
	looked time.Time // start of the last lookup that has returned
}

type stall struct{ from, to time.Time }

// canaryStall is a lookup slow enough to be the registrar rather than the
// CPU: a lookup answered at once takes well under a millisecond.
const canaryStall = 100 * time.Millisecond

// watchRegistrar runs a canary for the length of a section. Only the
// sections whose nodes address unreachable peers run one: its lookups are
// work of their own, which the cost figures must not include. Without a
// canary every run counts as unaffected.
func (p *plan) watchRegistrar() (stop func()) {
	c, err := startCanary()
	if err != nil {
		p.progress("no registrar canary (%v): runs are not checked for registrar stalls", err)
		return func() {}
	}
	p.canary = c
	return func() {
		p.canary = nil
		c.close()
	}
}

func startCanary() (*canary, error) {
	name := gen.Atom(fmt.Sprintf("perf-%d-canary@localhost", os.Getpid()))
	node, err := ergo.StartNode(name, gen.NodeOptions{
		Network: gen.NetworkOptions{Acceptors: []gen.AcceptorOptions{{Host: "127.0.0.1"}}},
		Log:     gen.LogOptions{DefaultLogger: gen.DefaultLoggerOptions{Disable: true}},
	})
	if err != nil {
		return nil, err
	}
	c := &canary{node: node, stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop(gen.Atom(fmt.Sprintf("perf-%d-nobody@localhost", os.Getpid())))
	return c, nil
}

func (c *canary) loop(nobody gen.Atom) {
	defer close(c.done)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		start := time.Now()
		c.node.Network().GetNode(nobody) // fails; how long it takes is the point
		end := time.Now()
		c.mu.Lock()
		if end.Sub(start) >= canaryStall {
			c.stalls = append(c.stalls, stall{start, end})
		}
		c.looked = start
		c.mu.Unlock()
	}
}

// settle waits until a lookup that started after t has returned, so that a
// stall in progress at t is on record; it gives up after a few seconds
// (the longest stall is the registrar's retry window).
func (c *canary) settle(t time.Time) {
	if c == nil {
		return
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		done := c.looked.After(t)
		c.mu.Unlock()
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stalled reports whether a lookup stalled at some point in [from, to].
func (c *canary) stalled(from, to time.Time) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.stalls {
		if s.from.Before(to) && s.to.After(from) {
			return true
		}
	}
	return false
}

func (c *canary) close() {
	if c == nil {
		return
	}
	close(c.stop)
	<-c.done
	c.node.StopForce()
}
