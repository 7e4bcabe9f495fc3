package leader

import "ergo.services/ergo/gen"

// Keys: how hubs name elections to each other.
//
// A hub gives every actor that joins it a key, a number unique for the
// hub's life (hub.add). Its rounds name the election by that key, and
// until the receiving hub has shown that it knows the key (it answered a
// round of it, or said no actor there serves it) they carry the ClusterID
// as well. The receiving hub keeps, per sending node, a table from key to
// route: the ClusterID and this node's slots of that election. A round
// with its ClusterID (re)writes the route; a round without one finds its
// route by the key alone. So in the steady state neither hub hashes or
// compares a ClusterID: a thousand elections cost a thousand small
// numbers per message, looked up in a table by number.
//
// What can go wrong, and why it is harmless:
//   - The receiving hub restarted, or forgot a key: it answers the round
//     with the key in msgBeatAcks.Unknown and no ack, and the sender names
//     the election again in its next round. One round of that election
//     goes unacknowledged, which a lease of several rounds absorbs; the
//     sender's leader falls back to its own heartbeats only if the hub
//     stops answering altogether (peerTTL), as before.
//   - The sending hub restarted: its keys start again from 1, but the
//     receiver's table belongs to the old hub's process (by PID) and is
//     dropped when the new hub's first message comes, so no old key can
//     point at another election. The new hub names every election until
//     answered, because its links remember only the old hub (namedBy).
//   - A key names the election it was given for, for the hub's life; the
//     route resolves to this node's slots of that ClusterID again after
//     every join and leave (slotsVersion), so a slot that left is never
//     answered for.
//   - A peer sends nonsense: a key it never named is unknown, a ClusterID
//     with no actor here is unserved, and each answer is only ever about
//     this node's own followers, checked as before (hub.beats).

// routeIdleMessages is how many messages from a node a route may go
// unused before it is forgotten: about ten seconds of ticks at the default
// liveness interval (5 ms), so well over the refresh that sends every
// leader's record once a second (vouch.go): a route in use is never
// forgotten between two of its records. An election that stopped leading,
// or left, costs nothing after that; one that comes back is named again
// (Unknown).
const routeIdleMessages = 2048

// peerRoutes is what one hub knows of another node's hub's keys.
type peerRoutes struct {
	hub      gen.PID // the hub process the keys belong to
	table    map[uint64]*route
	messages uint64 // msgBeats read from hub
}

// route is one key of another hub: its election, and this node's slots
// of that election.
type route struct {
	cluster string
	slots   []*slot // h.byCluster[cluster], as of version
	version uint64  // the hub's slotsVersion when slots was looked up
	usedAt  uint64  // peerRoutes.messages when last used
}

// routesFrom returns the table of the keys of the hub from, a new one if
// from is another hub than the one its node had.
func (h *hub) routesFrom(from gen.PID) *peerRoutes {
	p := h.routes[from.Node]
	if p == nil || p.hub != from {
		p = &peerRoutes{hub: from, table: make(map[uint64]*route)}
		h.routes[from.Node] = p
	}
	p.messages++
	return p
}

// route returns the route of key, named cluster if the round named it;
// nil when the key was never named.
func (p *peerRoutes) route(h *hub, key uint64, cluster []byte) *route {
	r := p.table[key]
	fresh := cluster != nil && (r == nil || r.cluster != string(cluster))
	if fresh {
		r = &route{cluster: string(cluster)}
		p.table[key] = r
	}
	if r == nil {
		return nil
	}
	if fresh || r.version != h.slotsVersion {
		r.slots, r.version = h.byCluster[r.cluster], h.slotsVersion
	}
	r.usedAt = p.messages
	return r
}

// sweep forgets the routes unused for routeIdleMessages, now and then.
func (p *peerRoutes) sweep() {
	if p.messages%routeIdleMessages != 0 {
		return
	}
	for key, r := range p.table {
		if p.messages-r.usedAt >= routeIdleMessages {
			delete(p.table, key)
		}
	}
}
