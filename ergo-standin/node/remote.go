package node

import (
	"errors"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/internal/netstack"
)

var _ netstack.Handler = (*node)(nil)

// HandleFrame routes a frame from peer to local processes.
func (n *node) HandleFrame(peer gen.Atom, creation int64, f netstack.Frame) {
	<-n.netReady
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
			n.waiters.deliver(to, f.Ref, response{value: f.Message, err: f.Err})
		}

	case netstack.FrameMonitor, netstack.FrameLink:
		link := f.Kind == netstack.FrameLink
		err := gen.ErrProcessUnknown
		if targetNode(f.To) == n.name {
			err = n.addLocalRelation(f.From, f.To, link)
			if errors.Is(err, gen.ErrTargetExist) {
				err = nil
			}
		}
		reply := netstack.Frame{Kind: netstack.FrameReply, From: n.core, To: f.From, Ref: f.Ref, Err: err}
		if serr := n.net.SendFrame(peer, reply); serr != nil {
			n.log.Trace("reply to %s: %s", peer, serr)
		}

	case netstack.FrameDemonitor, netstack.FrameUnlink:
		n.targets.remove(f.From, f.To, f.Kind == netstack.FrameUnlink)

	case netstack.FrameDown, netstack.FrameExit:
		link := f.Kind == netstack.FrameExit
		consumer, ok := f.To.(gen.PID)
		if ok && n.targets.remove(consumer, f.Target, link) {
			n.notifyLocal(consumer, f.From, f.Target, link, f.Err)
		}

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

// HandleDisconnected delivers ErrNoConnection downs and exits for every
// relation on a target of peer and forgets relations owned by peer.
func (n *node) HandleDisconnected(peer gen.Atom) {
	<-n.netReady
	n.waiters.failPeer(peer, gen.ErrNoConnection)
	for _, nt := range n.targets.takePeer(peer) {
		if nt.consumer.Node == n.name {
			n.notifyLocal(nt.consumer, n.core, nt.target, nt.link, gen.ErrNoConnection)
		}
	}
	n.log.Trace("disconnected from %s", peer)
}
