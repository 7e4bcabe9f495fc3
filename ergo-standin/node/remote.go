package node

import (
	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
	"ergo.services/ergo/internal/testhook"
)

var _ netstack.Handler = (*node)(nil)

// HandleFrame routes a frame from peer to local processes.
func (n *node) HandleFrame(peer gen.Atom, creation int64, f netstack.Frame) {
	<-n.netReady
	testhook.Frame(n.name, peer)
	switch f.Kind {
	case netstack.FrameSend:
		if targetNode(f.To) == n.name {
			n.routeSend(f.From, f.To, f.Message, f.Priority)
		}

	case netstack.FrameRequest:
		if targetNode(f.To) == n.name {
			n.routeRequest(f.From, f.To, f.Ref, f.Message, f.Priority)
		}

	case netstack.FrameResponse, netstack.FrameReply:
		if to, ok := f.To.(gen.PID); ok {
			n.deliverResponse(to, f.Ref, response{value: f.Message, err: f.Err})
		}

	case netstack.FrameMonitor, netstack.FrameLink:
		// framework: connection.routeMessage -> RouteMonitor*/RouteLink*
		// on this node, answered with MessageResult
		link := f.Kind == netstack.FrameLink
		err := gen.ErrProcessUnknown
		var last []gen.MessageEvent
		if targetNode(f.To) == n.name {
			if ev, isEvent := f.To.(gen.Event); isEvent {
				last, err = n.subscribeLocal(f.From, ev, link)
			} else {
				err = n.addLocalRelation(f.From, f.To, link)
			}
		}
		n.replyWith(peer, f, last, err)

	case netstack.FrameDemonitor, netstack.FrameUnlink:
		link := f.Kind == netstack.FrameUnlink
		if f.Ref == (gen.Ref{}) {
			// a consumer of peer died: forget its relation, no answer
			// (an event's count keeps it, see eventOwner.consumers)
			n.targets.remove(f.From, f.To, link)
			break
		}
		err := gen.ErrProcessUnknown
		if targetNode(f.To) == n.name {
			if ev, isEvent := f.To.(gen.Event); isEvent {
				err = n.unsubscribeLocal(f.From, ev, link)
			} else {
				err = n.removeLocalRelation(f.From, f.To, link)
			}
		}
		n.reply(peer, f, err)

	case netstack.FrameDown, netstack.FrameExit:
		// framework: RouteTerminate* on this node, run for the target of
		// a remote termination
		link := f.Kind == netstack.FrameExit
		consumer, ok := f.To.(gen.PID)
		if !ok || consumer.Node != n.name {
			break
		}
		from := n.noticeFrom(f.Target)
		if n.targets.takeNotice(consumer, f.Target, link, from, f.Err) {
			n.notifyLocal(consumer, from, f.Target, link, f.Err)
		}

	case netstack.FrameEvent:
		n.fanOut(peer, f)

	case netstack.FrameExitSignal:
		if to, ok := f.To.(gen.PID); ok {
			if p, err := n.localProcess(to); err == nil {
				n.deliverExit(p, f.From, gen.MessageExitPID{PID: f.From, Reason: f.Err})
			}
		}
	}
}

// HandleConnected is called once a connection to peer is up.
func (n *node) HandleConnected(peer gen.Atom) {
	<-n.netReady
	n.log.Trace("connected to %s", peer)
}

// reply answers a relation request of peer.
func (n *node) reply(peer gen.Atom, f netstack.Frame, err error) { n.replyWith(peer, f, nil, err) }

// replyWith answers a relation request with a value: the buffered
// messages of an event. A reply that cannot be encoded (a buffered message
// of a type not registered) is not sent, and the subscriber's request
// times out while the subscription stands here (framework:
// connection.sendAny fails in routeMessage, unreported).
func (n *node) replyWith(peer gen.Atom, f netstack.Frame, value any, err error) {
	r := netstack.Frame{Kind: netstack.FrameReply, From: n.core, To: f.From, Ref: f.Ref, Err: err}
	if last, ok := value.([]gen.MessageEvent); ok && last != nil {
		r.Message = last
	}
	if serr := n.net.SendFrame(peer, r); serr != nil {
		n.log.Trace("reply to %s: %s", peer, serr)
	}
}

// HandleDisconnected delivers ErrNoConnection downs and exits, from the
// core PID, for every relation on a target of peer and forgets relations
// owned by peer, also on the count of local events (framework:
// RouteNodeDown). Requests waiting for an answer from peer keep waiting
// until their timeout.
func (n *node) HandleDisconnected(peer gen.Atom) {
	<-n.netReady
	for _, nt := range n.targets.takePeer(peer) {
		if nt.consumer.Node == n.name {
			n.notifyLocal(nt.consumer, n.core, nt.target, nt.link, gen.ErrNoConnection)
		}
	}
	n.eventsPeerDown(peer)
	n.log.Trace("disconnected from %s", peer)
}
