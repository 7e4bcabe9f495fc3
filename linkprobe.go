package leader

import (
	"errors"
	"time"

	"ergo.services/ergo/gen"
)

// Before it resets a silent connection (silence.go), the dialer asks the
// other node's framework a request over it. A member that answers nothing
// may merely be absent (its actor not started yet, or stopped while the
// discovery still lists its node) or ignore this election, over a
// connection that is fine: resetting that would cut every monitor and link
// of both nodes' processes over it, every silence bound, for as long as the
// member stays away. Only a request that goes unanswered for ProbeWait (a
// link that drops packets, a connection the other side does not read) lets
// the reset go on.
//
// The request blocks its caller until the answer or the framework's
// request timeout (seconds), so a short-lived linkProber makes it, and the
// dialer goes on serving meanwhile: a connection into a black hole must be
// reset soon, because once its socket buffer is full every process that
// sends over it blocks, the liveness hub included, and with it every
// leader's rounds.

// linkProbeName is a name no process registers. A monitor of it on another
// node is a request that node's framework answers itself, with
// ErrProcessUnknown, whatever runs there.
const linkProbeName gen.Atom = "leader_link_probe"

// linkCarries reports whether the connection to node carried a request and
// its answer. It blocks for up to gen.DefaultRequestTimeout.
func linkCarries(process gen.Process, node gen.Atom) bool {
	probe := gen.ProcessID{Name: linkProbeName, Node: node}
	err := process.Monitor(probe)
	switch {
	case err == nil:
		process.Demonitor(probe) // somebody registered the name after all
		return true
	case errors.Is(err, gen.ErrProcessUnknown), errors.Is(err, gen.ErrProcessTerminated):
		return true
	}
	return false
}

// linkProber asks one request of node's framework (linkCarries), tells its
// parent, the dialer, if it was answered (linkAnswered), and ends.
type linkProber struct {
	process gen.Process
	node    gen.Atom
}

type (
	// linkProbeGo starts a linkProber's request.
	linkProbeGo struct{}
	// linkAnswered reports that node's framework answered a linkProber.
	linkAnswered struct{ Node gen.Atom }
	// linkProbeDue is the dialer's reminder that a probe's wait is over.
	linkProbeDue struct{ Node gen.Atom }
)

func factoryLinkProber() gen.ProcessBehavior { return &linkProber{} }

func (p *linkProber) ProcessInit(process gen.Process, args ...any) error {
	p.process = process
	for _, arg := range args {
		if node, ok := arg.(gen.Atom); ok {
			p.node = node
		}
	}
	return nil
}

func (p *linkProber) ProcessKind() gen.ProcessKind { return gen.ProcessKindCustom }

func (p *linkProber) ProcessTerminate(reason error) {}

// ProcessRun makes the request on the dialer's go, and ends.
func (p *linkProber) ProcessRun() error {
	return serveHelper(p.process, func(m *gen.MailboxMessage, system bool) error {
		if _, ok := m.Message.(linkProbeGo); ok == false || m.From != p.process.Parent() {
			return nil
		}
		if linkCarries(p.process, p.node) {
			p.process.Send(p.process.Parent(), linkAnswered{Node: p.node})
		}
		return gen.TerminateReasonNormal
	})
}

// probe starts a linkProber for a reset request; false when it cannot, and
// the reset goes on at once.
func (d *dialer) probe(request dialRequest) bool {
	if _, pending := d.probing[request.Node]; pending {
		return true // the first request's probe decides
	}
	// not linked: its end, normal as it is, would be an exit signal that
	// ends the dialer; it ends by itself within the request timeout
	pid, err := d.process.Spawn(factoryLinkProber, gen.ProcessOptions{}, request.Node)
	if err != nil {
		return false
	}
	if d.process.Send(pid, linkProbeGo{}) != nil {
		return false
	}
	if _, err := d.process.SendAfter(d.process.PID(), linkProbeDue{Node: request.Node}, request.ProbeWait); err != nil {
		return false
	}
	if d.probing == nil {
		d.probing = make(map[gen.Atom]dialRequest)
	}
	d.probing[request.Node] = request
	return true
}

// probed ends the probe of node: answered, the connection is kept and the
// actor told (dialResult.Kept); otherwise the reset goes on.
func (d *dialer) probed(node gen.Atom, answered bool) {
	request, pending := d.probing[node]
	if pending == false {
		return
	}
	delete(d.probing, node)
	if answered {
		connectionResets.holdRedial(d.process.Node(), node, time.Time{})
		d.process.Send(d.process.Parent(), dialResult{Node: node, Kept: true})
		return
	}
	request.ProbeWait = 0
	d.serve(request)
}
