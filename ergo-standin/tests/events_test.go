package tests

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/testhook"
)

// Events as the framework's v320 node routes them: the token check, the
// buffer a new subscriber gets, the producer's start/stop notices, the
// subscribers' downs and exits, and remote subscribers served once per
// node.

func registerFn(name gen.Atom, options gen.EventOptions) rawRun {
	return func(p gen.Process) any {
		token, err := p.RegisterEvent(name, options)
		if err != nil {
			return err
		}
		return token
	}
}

func sendEventFn(name gen.Atom, token gen.Ref, message any) rawRun {
	return func(p gen.Process) any { return p.SendEvent(name, token, message) }
}

// subscribed is what LinkEvent/MonitorEvent returned.
type subscribed struct {
	last []gen.MessageEvent
	err  error
}

func monitorEventFn(ev gen.Event) rawRun {
	return func(p gen.Process) any {
		last, err := p.MonitorEvent(ev)
		return subscribed{last, err}
	}
}

func linkEventFn(ev gen.Event) rawRun {
	return func(p gen.Process) any {
		last, err := p.LinkEvent(ev)
		return subscribed{last, err}
	}
}

// token runs fn (a registerFn) and fails the test unless it gave a token.
func token(t testing.TB, n gen.Node, r raw, fn rawRun) gen.Ref {
	t.Helper()
	v := r.run(t, n, fn)
	ref, ok := v.(gen.Ref)
	if !ok {
		t.Fatalf("register event: %v", v)
	}
	return ref
}

func subscribe(t testing.TB, n gen.Node, r raw, fn rawRun) []gen.MessageEvent {
	t.Helper()
	s := r.run(t, n, fn).(subscribed)
	if s.err != nil {
		t.Fatalf("subscribe: %s", s.err)
	}
	return s.last
}

// expectEvent waits for an event message and checks how it was queued.
func expectEvent(t testing.TB, r raw, queue string, from gen.PID, ev gen.Event, message any) {
	t.Helper()
	d := expectDelivery(t, r.out, queue, gen.MailboxMessageTypeEvent, from)
	m, ok := d.msg.(gen.MessageEvent)
	if !ok || m.Event != ev || m.Message != message || m.Timestamp == 0 {
		t.Fatalf("event %#v, want %s %v", d.msg, ev, message)
	}
}

// expectNotice waits for a producer notice (start or stop): a regular
// message from the node core in the System queue.
func expectNotice(t testing.TB, n gen.Node, r raw, notice any) {
	t.Helper()
	d := expectDelivery(t, r.out, "system", gen.MailboxMessageTypeRegular, n.PID())
	if d.msg != notice {
		t.Fatalf("notice %#v, want %#v", d.msg, notice)
	}
}

// expectNothing checks that nothing else arrived at r before a marker sent
// now from the node core.
func expectNothing(t testing.TB, n gen.Node, r raw) {
	t.Helper()
	if err := n.Send(r.pid, "marker"); err != nil {
		t.Fatal(err)
	}
	if d := recv(t, r.out); d.msg != "marker" {
		t.Fatalf("unexpected %#v", d)
	}
}

func TestEventLocal(t *testing.T) {
	n := localNode(t)
	producer, other, sub1, sub2 := spawnRaw(t, n), spawnRaw(t, n), spawnRaw(t, n), spawnRaw(t, n)
	ev := gen.Event{Name: "ev", Node: n.Name()}
	tok := token(t, n, producer, registerFn("ev", gen.EventOptions{Notify: true, Buffer: 2}))

	for i, fn := range []rawRun{
		registerFn("ev", gen.EventOptions{}),
		registerFn(gen.CoreEvent, gen.EventOptions{}), // every node has it
	} {
		if err := errOf(other.run(t, n, fn)); !errors.Is(err, gen.ErrTaken) {
			t.Fatalf("%d: want ErrTaken, got %v", i, err)
		}
	}
	if err := errOf(producer.run(t, n, sendEventFn("ev", gen.Ref{}, 0))); !errors.Is(err, gen.ErrEventOwner) {
		t.Fatalf("wrong token: %v", err)
	}
	if err := errOf(producer.run(t, n, sendEventFn("nope", tok, 0))); !errors.Is(err, gen.ErrEventUnknown) {
		t.Fatalf("unknown event: %v", err)
	}
	if s := sub1.run(t, n, monitorEventFn(gen.Event{Name: "nope"})).(subscribed); !errors.Is(s.err, gen.ErrEventUnknown) {
		t.Fatalf("subscribe to an unknown event: %v", s.err)
	}

	// the buffer keeps the last two messages, oldest first
	for i := 1; i <= 3; i++ {
		if err := errOf(producer.run(t, n, sendEventFn("ev", tok, i))); err != nil {
			t.Fatal(err)
		}
	}
	last := subscribe(t, n, sub1, monitorEventFn(gen.Event{Name: "ev"})) // Node defaults to the local one
	if len(last) != 2 || last[0].Message != 2 || last[1].Message != 3 || last[0].Event != ev {
		t.Fatalf("buffer %#v", last)
	}
	expectNotice(t, n, producer, gen.MessageEventStart{Name: "ev"})
	subscribe(t, n, sub2, linkEventFn(ev))
	if s := sub2.run(t, n, linkEventFn(ev)).(subscribed); !errors.Is(s.err, gen.ErrTargetExist) {
		t.Fatalf("second link: %v", s.err)
	}

	// delivery: MailboxMessageTypeEvent from the sender, in the queue of
	// its send priority; a holder of the token may send too
	if err := errOf(producer.run(t, n, sendEventFn("ev", tok, 4))); err != nil {
		t.Fatal(err)
	}
	for _, r := range []raw{sub1, sub2} {
		expectEvent(t, r, "main", producer.pid, ev, 4)
	}
	other.run(t, n, func(p gen.Process) any { return p.SetSendPriority(gen.MessagePriorityHigh) })
	if err := errOf(other.run(t, n, sendEventFn("ev", tok, 5))); err != nil {
		t.Fatal(err)
	}
	for _, r := range []raw{sub1, sub2} {
		expectEvent(t, r, "system", other.pid, ev, 5)
	}

	info, err := n.ProcessInfo(producer.pid)
	if err != nil || len(info.Events) != 1 || info.Events[0] != "ev" {
		t.Fatalf("producer events %v %v", info.Events, err)
	}
	if info, _ := n.ProcessInfo(sub1.pid); len(info.MonitorsEvent) != 1 || info.MonitorsEvent[0] != ev {
		t.Fatalf("monitors %v", info.MonitorsEvent)
	}
	if info, _ := n.ProcessInfo(sub2.pid); len(info.LinksEvent) != 1 || info.LinksEvent[0] != ev {
		t.Fatalf("links %v", info.LinksEvent)
	}

	// the framework's UnlinkEvent/DemonitorEvent do not default Node
	if err := errOf(sub2.run(t, n, func(p gen.Process) any { return p.UnlinkEvent(gen.Event{Name: "ev"}) })); !errors.Is(err, gen.ErrTargetUnknown) {
		t.Fatalf("unlink without node: %v", err)
	}
	if err := errOf(sub2.run(t, n, func(p gen.Process) any { return p.UnlinkEvent(ev) })); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, n, producer)
	if err := errOf(sub1.run(t, n, func(p gen.Process) any { return p.DemonitorEvent(ev) })); err != nil {
		t.Fatal(err)
	}
	expectNotice(t, n, producer, gen.MessageEventStop{Name: "ev"})

	// only inside a callback
	eventually(t, "producer asleep", func() bool { return producer.proc.p.State() == gen.ProcessStateSleep })
	if err := producer.proc.p.SendEvent("ev", tok, 6); !errors.Is(err, gen.ErrNotAllowed) {
		t.Fatalf("send while asleep: %v", err)
	}
}

func TestEventUnregisterAndOwnerTermination(t *testing.T) {
	n := localNode(t)
	producer, other, mon, link := spawnRaw(t, n), spawnRaw(t, n), spawnRaw(t, n), spawnRaw(t, n)
	ev := gen.Event{Name: "ev", Node: n.Name()}
	token(t, n, producer, registerFn("ev", gen.EventOptions{}))
	subscribe(t, n, mon, monitorEventFn(ev))
	subscribe(t, n, link, linkEventFn(ev))

	unregister := func(name gen.Atom) rawRun {
		return func(p gen.Process) any { return p.UnregisterEvent(name) }
	}
	if err := errOf(other.run(t, n, unregister("ev"))); !errors.Is(err, gen.ErrEventOwner) {
		t.Fatalf("unregister by another: %v", err)
	}
	if err := errOf(other.run(t, n, unregister("nope"))); !errors.Is(err, gen.ErrEventUnknown) {
		t.Fatalf("unregister unknown: %v", err)
	}
	if err := errOf(producer.run(t, n, unregister("ev"))); err != nil {
		t.Fatal(err)
	}
	checkEnd(t, n, mon, link, ev, gen.ErrUnregistered)
	if names := producer.run(t, n, func(p gen.Process) any { return p.Events() }).([]gen.Atom); len(names) != 0 {
		t.Fatalf("events after unregister: %v", names)
	}

	// a producer's termination ends its events with its reason
	token(t, n, producer, registerFn("ev", gen.EventOptions{}))
	subscribe(t, n, mon, monitorEventFn(ev))
	subscribe(t, n, link, linkEventFn(ev))
	reason := errors.New("custom")
	n.Send(producer.pid, rawStop{reason})
	checkEnd(t, n, mon, link, ev, reason)
	// the name is free again
	token(t, n, other, registerFn("ev", gen.EventOptions{}))
}

// checkEnd expects the down of a monitoring and the exit of a linked
// subscriber, both from the subscriber node's core PID.
func checkEnd(t testing.TB, n gen.Node, mon, link raw, ev gen.Event, reason error) {
	t.Helper()
	d := expectDelivery(t, mon.out, "system", gen.MailboxMessageTypeRegular, n.PID())
	if m, ok := d.msg.(gen.MessageDownEvent); !ok || m.Event != ev || !errors.Is(m.Reason, reason) {
		t.Fatalf("down %#v, want %v", d.msg, reason)
	}
	d = expectDelivery(t, link.out, "urgent", gen.MailboxMessageTypeExit, n.PID())
	if m, ok := d.msg.(gen.MessageExitEvent); !ok || m.Event != ev || !errors.Is(m.Reason, reason) {
		t.Fatalf("exit %#v, want %v", d.msg, reason)
	}
}

// A subscriber that terminates stays on the framework's count: the
// producer hears of neither the next first subscriber nor the last one
// leaving.
func TestEventDeadSubscriberStaysCounted(t *testing.T) {
	n := localNode(t)
	producer, sub1, sub2 := spawnRaw(t, n), spawnRaw(t, n), spawnRaw(t, n)
	ev := gen.Event{Name: "ev", Node: n.Name()}
	token(t, n, producer, registerFn("ev", gen.EventOptions{Notify: true}))
	subscribe(t, n, sub1, monitorEventFn(ev))
	expectNotice(t, n, producer, gen.MessageEventStart{Name: "ev"})
	n.Kill(sub1.pid)
	eventually(t, "sub1 gone", func() bool { _, err := n.ProcessInfo(sub1.pid); return err != nil })
	subscribe(t, n, sub2, monitorEventFn(ev))
	if err := errOf(sub2.run(t, n, func(p gen.Process) any { return p.DemonitorEvent(ev) })); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, n, producer)
}

func TestEventNodeProducer(t *testing.T) {
	n := localNode(t)
	sub := spawnRaw(t, n)
	tok, err := n.RegisterEvent("nodeev", gen.EventOptions{Notify: true, Buffer: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.RegisterEvent("nodeev", gen.EventOptions{}); !errors.Is(err, gen.ErrTaken) {
		t.Fatalf("taken: %v", err)
	}
	ev := gen.Event{Name: "nodeev", Node: n.Name()}
	subscribe(t, n, sub, monitorEventFn(ev))
	if err := n.SendEvent("nodeev", tok, gen.MessageOptions{Priority: gen.MessagePriorityMax}, "x"); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, sub, "urgent", n.PID(), ev, "x")
	if err := n.UnregisterEvent("nodeev"); err != nil {
		t.Fatal(err)
	}
	d := expectDelivery(t, sub.out, "system", gen.MailboxMessageTypeRegular, n.PID())
	if m, ok := d.msg.(gen.MessageDownEvent); !ok || !errors.Is(m.Reason, gen.ErrUnregistered) {
		t.Fatalf("down %#v", d.msg)
	}
}

// frameCounter counts the frames node handles from its peers.
func frameCounter(t testing.TB, node gen.Atom) *atomic.Int64 {
	var c atomic.Int64
	testhook.SetFrame(func(local, peer gen.Atom) {
		if local == node {
			c.Add(1)
		}
	})
	t.Cleanup(func() { testhook.SetFrame(nil) })
	return &c
}

func TestEventRemote(t *testing.T) {
	a, b := pair(t)
	logs := &logCapture{}
	a.LoggerAdd("capture", logs)
	producer, local := spawnRaw(t, a), spawnRaw(t, a)
	mon, link := spawnRaw(t, b), spawnRaw(t, b)
	ev := gen.Event{Name: "ev", Node: a.Name()}
	tok := token(t, a, producer, registerFn("ev", gen.EventOptions{Notify: true, Buffer: 1}))
	if err := errOf(producer.run(t, a, sendEventFn("ev", tok, Ping{N: 1}))); err != nil {
		t.Fatal(err)
	}

	if s := mon.run(t, b, monitorEventFn(gen.Event{Name: "nope", Node: a.Name()})).(subscribed); !errors.Is(s.err, gen.ErrEventUnknown) {
		t.Fatalf("remote unknown event: %v", s.err)
	}
	last := subscribe(t, b, mon, monitorEventFn(ev))
	if len(last) != 1 || last[0].Message != (Ping{N: 1}) || last[0].Event != ev {
		t.Fatalf("remote buffer %#v", last)
	}
	expectNotice(t, a, producer, gen.MessageEventStart{Name: "ev"})
	subscribe(t, b, link, linkEventFn(ev))
	if s := link.run(t, b, linkEventFn(ev)).(subscribed); !errors.Is(s.err, gen.ErrTargetExist) {
		t.Fatalf("second remote link: %v", s.err)
	}
	subscribe(t, a, local, monitorEventFn(ev))
	if info, _ := b.ProcessInfo(mon.pid); len(info.MonitorsEvent) != 1 || info.MonitorsEvent[0] != ev {
		t.Fatalf("remote monitors %v", info.MonitorsEvent)
	}

	// one frame for both subscribers on b
	frames := frameCounter(t, b.Name())
	if err := errOf(producer.run(t, a, sendEventFn("ev", tok, Ping{N: 2}))); err != nil {
		t.Fatal(err)
	}
	for _, r := range []raw{mon, link, local} {
		expectEvent(t, r, "main", producer.pid, ev, Ping{N: 2})
	}
	if c := frames.Load(); c != 1 {
		t.Fatalf("b handled %d frames for one event", c)
	}
	testhook.SetFrame(nil)

	// a type the network does not know: SendEvent succeeds, the local
	// subscriber gets it, the remote ones do not, and the producer's node
	// logs the failure
	if err := errOf(producer.run(t, a, sendEventFn("ev", tok, NotRegistered{X: 1}))); err != nil {
		t.Fatalf("unregistered type: %v", err)
	}
	expectEvent(t, local, "main", producer.pid, ev, NotRegistered{X: 1})
	eventually(t, "the send error logged", func() bool {
		return logs.contains("unable to send event message to the remote consumer on")
	})
	if err := errOf(producer.run(t, a, sendEventFn("ev", tok, Ping{N: 3}))); err != nil {
		t.Fatal(err)
	}
	for _, r := range []raw{mon, link} {
		expectEvent(t, r, "main", producer.pid, ev, Ping{N: 3}) // nothing in between
	}
	expectEvent(t, local, "main", producer.pid, ev, Ping{N: 3})

	// a remote unsubscribe is a request too; the last one out stops it
	if err := errOf(link.run(t, b, func(p gen.Process) any { return p.UnlinkEvent(ev) })); err != nil {
		t.Fatal(err)
	}
	if err := errOf(local.run(t, a, func(p gen.Process) any { return p.DemonitorEvent(ev) })); err != nil {
		t.Fatal(err)
	}
	expectNothing(t, a, producer)
	subscribe(t, b, link, linkEventFn(ev))

	// the producer's termination: the down and the exit come from b's core,
	// with the reason (a registered error, to keep its identity here)
	reason := gen.TerminateReasonShutdown
	a.Send(producer.pid, rawStop{reason})
	checkEnd(t, b, mon, link, ev, reason)
}

func TestEventLostConnection(t *testing.T) {
	a, b := pair(t)
	producer := spawnRaw(t, a)
	mon, link := spawnRaw(t, b), spawnRaw(t, b)
	ev := gen.Event{Name: "ev", Node: a.Name()}
	token(t, a, producer, registerFn("ev", gen.EventOptions{Notify: true}))
	subscribe(t, b, mon, monitorEventFn(ev))
	subscribe(t, b, link, linkEventFn(ev))
	expectNotice(t, a, producer, gen.MessageEventStart{Name: "ev"})

	rn, err := b.Network().Node(a.Name())
	if err != nil {
		t.Fatal(err)
	}
	rn.Disconnect()
	checkEnd(t, b, mon, link, ev, gen.ErrNoConnection)
	// a takes b's subscriptions off the count
	expectNotice(t, a, producer, gen.MessageEventStop{Name: "ev"})
}

// A buffered message whose type the network does not know cannot travel
// in the answer to a remote subscription: the answer is never sent, the
// subscriber times out and the producer's node keeps the subscription.
func TestEventRemoteBufferNotRegistered(t *testing.T) {
	a, b := pair(t)
	producer, sub := spawnRaw(t, a), spawnRaw(t, b)
	ev := gen.Event{Name: "ev", Node: a.Name()}
	tok := token(t, a, producer, registerFn("ev", gen.EventOptions{Notify: true, Buffer: 1}))
	if err := errOf(producer.run(t, a, sendEventFn("ev", tok, NotRegistered{X: 1}))); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	s := sub.run(t, b, monitorEventFn(ev)).(subscribed)
	if !errors.Is(s.err, gen.ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", s.err)
	}
	if took := time.Since(start); took < time.Duration(gen.DefaultRequestTimeout)*time.Second-100*time.Millisecond {
		t.Fatalf("timed out after %s", took)
	}
	expectNotice(t, a, producer, gen.MessageEventStart{Name: "ev"})
	if info, _ := b.ProcessInfo(sub.pid); len(info.MonitorsEvent) != 0 {
		t.Fatalf("subscriber side recorded %v", info.MonitorsEvent)
	}
}

// eventActor is a probe that also forwards the events act.Actor hands to
// HandleEvent.
type eventActor struct{ probe }

func (e *eventActor) HandleEvent(m gen.MessageEvent) error {
	e.out <- m
	return nil
}

func TestEventActorHandleEvent(t *testing.T) {
	n := localNode(t)
	producer := spawnRaw(t, n)
	tok := token(t, n, producer, registerFn("ev", gen.EventOptions{}))
	out := make(chan any, 10)
	pid, err := n.Spawn(func() gen.ProcessBehavior { return &eventActor{probe{out: out}} }, gen.ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := errOf(runIn(t, n, pid, func(p *probe) any {
		_, err := p.MonitorEvent(gen.Event{Name: "ev"})
		return err
	})); err != nil {
		t.Fatal(err)
	}
	if err := errOf(producer.run(t, n, sendEventFn("ev", tok, "hello"))); err != nil {
		t.Fatal(err)
	}
	if m, ok := recv(t, out).(gen.MessageEvent); !ok || m.Message != "hello" || m.Event.Name != "ev" {
		t.Fatalf("HandleEvent got %#v", m)
	}
}
