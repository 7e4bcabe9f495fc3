package leader

import "ergo.services/ergo/gen"

// The wire protocol. Every message carries the ClusterID, so that separate
// elections can share a network, and the sender's current Term, the logical
// clock that settles every disagreement: a receiver that sees a higher term
// adopts it before doing anything else.
//
// The type names are unexported on purpose: users never build these values,
// they only register them through NetworkTypes. Fields are exported because
// the framework's codec encodes exported fields only.

// msgHello is Join's probe: "I count you as a member of ClusterID". It makes
// the sender a member on the receiver and is answered with msgHelloReply. It
// never asks for a vote.
type msgHello struct {
	ClusterID string
	Term      uint64
	Name      gen.Atom // the sender's registered name, to reach it when its PID is forgotten
	ViewSize  int      // the sender's view, this node counted: sizes a restarted node's term floor
	// Incarnation is random per actor start: a node restarted within the
	// framework's one-second creation resolution may give its new actor
	// the PID of the old one, and this tells the two apart (isDead)
	Incarnation uint64
	// Knew is the incarnation of the receiver's actor that the sender last
	// knew, zero if none. Another one than the receiver's own tells the
	// receiver it is a restart, as msgHelloReply.Restarted does: a
	// restarted actor that its peers find before it greets them learns it
	// from their Hellos (lease.go, the term floor).
	Knew uint64
}

// msgHelloReply answers msgHello.
//
// Restarted tells the sender that the replier knew an earlier process of
// it: the sender is a restart, and must know a stricter term floor before
// it grants anything (lease.go).
type msgHelloReply struct {
	ClusterID   string
	Term        uint64
	Name        gen.Atom
	Restarted   bool
	ViewSize    int    // the replier's view: sizes the sender's term floor
	Incarnation uint64 // as msgHello's
}

// msgPreVote asks "could I win term Term+1?". It changes no state on the
// voter: no vote is recorded and no term is adopted beyond the sender's
// current one.
type msgPreVote struct {
	ClusterID string
	Term      uint64 // the sender's current term; the election it asks about is Term+1
	Name      gen.Atom
	ViewSize  int
	Seats     int // seats kept for members that stopped gracefully (seats.go): ViewSize+Seats is the floor's size
	// Pledge asks a voter that grants to give its vote for Term+1 with the
	// grant (fast failover; pledge.go)
	Pledge bool
}

// msgPreVoteReply answers msgPreVote. A voter that refuses because it still
// hears a leader names it, so a candidate the leader does not know about
// (its view lost the candidate while they were apart) can introduce itself.
type msgPreVoteReply struct {
	ClusterID string
	Term      uint64
	Granted   bool
	Leader    gen.PID
	// Pledged is the term the voter gave the requester its vote for with
	// this grant (Term+1), 0 when it gave none (pledge.go)
	Pledged uint64
}

// msgVote is Raft's RequestVote for Term. Handover marks the election a
// leader asked for with msgTimeoutNow after it had already stood down:
// voters grant it even while they still hear that leader, because the
// leader's lease ended before the request could exist.
type msgVote struct {
	ClusterID string
	Term      uint64
	Name      gen.Atom
	ViewSize  int
	Seats     int // as msgPreVote.Seats
	Handover  bool
}

// msgVoteReply answers msgVote. Term is the voter's term after handling the
// request, so a candidate behind the cluster learns the real term.
type msgVoteReply struct {
	ClusterID string
	Term      uint64
	Granted   bool
}

// msgHeartbeat is the leader asserting itself for Term. Round numbers the
// leader's heartbeat rounds within the term, so that an acknowledgement
// says which round it answers (see msgHeartbeatAck).
type msgHeartbeat struct {
	ClusterID string
	Term      uint64
	Leader    gen.PID
	Round     uint64
	// Fresh is the round's F: the leader acts on its acknowledgements for
	// F less a drift margin, and a follower that acknowledged it keeps its
	// promise that long at least, whatever happens to the connection
	Fresh int64 // nanoseconds
}

// msgHeartbeatAck is a follower's answer to a heartbeat: the leader's
// evidence that it still reaches this member. Round echoes the heartbeat's
// round: the leader's lease runs from the time it sent the newest round a
// quorum acknowledged, not from when the acks happened to be processed.
type msgHeartbeatAck struct {
	ClusterID string
	Term      uint64
	Round     uint64
}

// msgTimeoutNow is the graceful handover: the sender, which led Term and has
// already stepped down, asks the receiver to campaign at once.
type msgTimeoutNow struct {
	ClusterID string
	Term      uint64
}

// NetworkTypes returns the protocol's wire types. Register them on every node
// that runs a leader actor, before the node connects to its peers: in
// gen.ApplicationSpec.Network.RegisterTypes of the application hosting the
// actor, or with node.Network().RegisterTypes. Init refuses to start when they
// are missing, because an unregistered vote fails to encode on every send and
// the node would never take part in an election.
func NetworkTypes() []any {
	return []any{
		msgHello{},
		msgHelloReply{},
		msgPreVote{},
		msgPreVoteReply{},
		msgVote{},
		msgVoteReply{},
		msgHeartbeat{},
		msgHeartbeatAck{},
		msgTimeoutNow{},
		msgBeats{},
		msgBeatAcks{},
		Leadership{},
	}
}

// ErrorTypes returns the errors the protocol sends over the wire: none today.
// Register it next to NetworkTypes anyway (gen.ApplicationSpec.Network.
// RegisterErrors) so your setup stays correct if that changes.
func ErrorTypes() []error {
	return []error{}
}

// msgBeats carries, from one node's liveness hub to another's, a ping
// every liveness interval and, every HeartbeatInterval, one heartbeat
// round of every election the first node leads with followers on the
// second (hub_tick.go, hub_answer.go, pings.go). It is answered with msgBeatAcks, even when
// empty, so the sender knows the hub is there.
//
// A hub that ticks answers a ping that carries no rounds in its next
// tick's msgBeats to that node (the Answer fields), so that an idle node
// pair exchanges one message each way per interval; rounds, and anything
// a hub that does not tick receives, are answered at once with
// msgBeatAcks.
type msgBeats struct {
	Ping  uint64 // the ping's number, which the answer echoes; 0: an answer alone
	Fresh uint64 // the ping's F in microseconds: the answering node promises that long from its arrival
	// LeadEpoch is the sending hub's lead epoch: it vouches for every
	// leader whose record came under it (vouch.go)
	LeadEpoch uint64
	Beats     []byte // the rounds, packed (hubwire.go): each msgHeartbeat's content

	// the answer to the other hub's latest ping, as msgBeatAcks's fields
	Answer   uint64
	Held     uint64 // how long the answer waited for this message, in microseconds
	Epoch    uint64
	AckEpoch uint64
	Acks     []byte
	Unserved []byte
	Unknown  []byte
	Busy     []byte
}

// msgBeatAcks answers msgBeats with the acknowledgements the receiving hub
// was allowed to give for its node's followers.
type msgBeatAcks struct {
	Ping     uint64 // the number of the ping answered
	Held     uint64 // how long the answer waited before it was sent, in microseconds (not network time)
	Epoch    uint64 // the answering node's epoch for the pinging node when it answered (pings.go)
	AckEpoch uint64 // its epoch when it made the acknowledgements below
	Acks     []byte // packed (hubwire.go): each msgHeartbeatAck's content and the follower
	// Unserved lists the keys of rounds that no actor on the receiving
	// node has joined its hub for (it disabled coalescing, or has not
	// joined yet): their leaders must send their own heartbeats there.
	Unserved []byte
	// Unknown lists the keys of rounds that came without their ClusterID
	// to a hub that does not know them (it restarted, or forgot an idle
	// key): their next rounds must name their elections again.
	Unknown []byte
	// Busy lists the keys of the pinging hub's leaders whose followers on
	// the answering node were in a step when the answer was sent: the
	// answer counts for none of them (pings.go).
	Busy []byte
}

// header is what every protocol message shares.
type header struct {
	cluster string
	term    uint64
}

// headerOf extracts the common header from a protocol message; ok is false
// for anything that is not one of ours.
func headerOf(message any) (header, bool) {
	switch m := message.(type) {
	case msgHello:
		return header{m.ClusterID, m.Term}, true
	case msgHelloReply:
		return header{m.ClusterID, m.Term}, true
	case msgPreVote:
		return header{m.ClusterID, m.Term}, true
	case msgPreVoteReply:
		return header{m.ClusterID, m.Term}, true
	case msgVote:
		return header{m.ClusterID, m.Term}, true
	case msgVoteReply:
		return header{m.ClusterID, m.Term}, true
	case msgHeartbeat:
		return header{m.ClusterID, m.Term}, true
	case msgHeartbeatAck:
		return header{m.ClusterID, m.Term}, true
	case msgTimeoutNow:
		return header{m.ClusterID, m.Term}, true
	}
	return header{}, false
}
