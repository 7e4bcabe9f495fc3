package leader

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime/debug"
	"time"

	"ergo.services/ergo/gen"
	"ergo.services/ergo/lib"
)

// ActorBehavior is what an actor embedding Actor implements. Embedding Actor
// provides every method except Init.
type ActorBehavior interface {
	gen.ProcessBehavior

	// Init returns the options of this election. It runs before the options
	// are applied: Join called here is remembered and applied right after.
	Init(args ...any) (Options, error)
	// HandleMessage receives every message that is not part of the election
	// protocol. Returning an error terminates the actor with it.
	HandleMessage(from gen.PID, message any) error
	// HandleCall receives synchronous requests. A non-nil result is sent back
	// to the caller. A non-nil error is sent back to the caller as the call's
	// error and the actor keeps running (so a node without a leader can reject
	// a request, as in the forwarding pattern); only gen.TerminateReasonNormal,
	// gen.TerminateReasonShutdown and gen.TerminateReasonKill stop the actor.
	// A nil result with a nil error means the response is sent later with
	// SendResponse.
	HandleCall(from gen.PID, ref gen.Ref, request any) (any, error)
	// Terminate is called once when the actor stops.
	Terminate(reason error)
	// HandleInspect returns the behavior's own inspection keys; they are
	// merged on top of the election's ergo: keys. Inspecting the actor
	// (gen.Node.Inspect, the observer) with no items returns every key;
	// with the item "help", each key's description. The election's keys,
	// all plain strings (durations as Go durations, times as RFC 3339 or
	// "never", lists sorted and comma-separated):
	//
	//   - ergo:state: leader, candidate, follower or unclustered
	//   - ergo:leader: whether this node believes it leads
	//   - ergo:leader_pid: PID of the recognised leader, empty if none
	//   - ergo:leader_node: node of the recognised leader, empty if none
	//   - ergo:term: current term
	//   - ergo:voted_for: PID voted for in the current term, empty if none
	//   - ergo:term_changed_at: when the term last changed
	//   - ergo:cluster: the ClusterID
	//   - ergo:view_size: members of the view, this node included
	//   - ergo:quorum: majority of the view
	//   - ergo:min_cluster_size: MinClusterSize
	//   - ergo:peers: number of peers whose PID is known
	//   - ergo:peers_list: peers whose PID is known, as node:pid
	//   - ergo:members: every node of the view, this node included
	//   - ergo:declared: peers declared through Join or Bootstrap
	//   - ergo:bootstrap: Options.Bootstrap as node:name, this node left out
	//   - ergo:unreachable: members whose connection dropped, with how long ago
	//   - ergo:unmonitored: members whose process is known but not yet monitored
	//     (a termination would look like a lost connection)
	//   - ergo:ghost_ttl: GhostTTL
	//   - ergo:votes_granted: grants in the current election, self included
	//   - ergo:votes_count: vote replies received in the current election
	//   - ergo:prevote: whether a pre-vote round is in progress
	//   - ergo:prevote_granted: pre-vote grants in the current round, self
	//     included
	//   - ergo:prevote_rounds: pre-vote rounds started
	//   - ergo:fast_failover_rounds: pre-votes started early after the leader's
	//     down
	//   - ergo:lease_reclaims: pre-votes this node asked at once, to lead the
	//     next term, after its lease as leader ran out
	//   - ergo:stall_graces: election timeouts that came so late past their
	//     deadline that this follower kept its leader one more timeout rather
	//     than campaign (its node had not run)
	//   - ergo:pledges_given: votes this node gave with its grants of fast
	//     pre-votes (pledged votes)
	//   - ergo:pledged_elections: elections this node started with votes
	//     pledged to it counted
	//   - ergo:fast_prevotes_reasked: fast pre-votes asked again of a voter
	//     that had not seen the leader's loss yet
	//   - ergo:fast_failovers_deferred: fast failovers this node gave up for
	//     a survivor ranked before it
	//   - ergo:owed_down_waits: election timeouts that waited for the
	//     leader's down instead of campaigning, the framework having dropped
	//     the connection to the leader's node already
	//   - ergo:fast_failovers_in_wave: fast failovers that waited longer
	//     because many elections of this node failed over at once
	//   - ergo:campaigns_queued: election timeouts that waited for a turn to
	//     campaign (the elections of a node campaign a few dozen at a time)
	//   - ergo:liveness_hub: the node's liveness hub this election's heartbeats go
	//     through, "none" when it sends its own
	//   - ergo:liveness_carried: as leader, the nodes the hub carries its
	//     heartbeat rounds to
	//   - ergo:liveness_delegated: as follower, whether the hub answers its
	//     leader's rounds for it
	//   - ergo:leader_changes: times this node recognised a leader other than the
	//     one before, the first included
	//   - ergo:elections_started: vote rounds this node opened as a candidate
	//   - ergo:elections_won: vote rounds that made this node leader
	//   - ergo:elections_lost: vote rounds that did not, the one in progress left
	//     out
	//   - ergo:leaderless_for: how long this node has recognised no leader, 0s
	//     while it does
	//   - ergo:leaderless_last: the last completed period without a leader
	//   - ergo:leaderless_total: every period without a leader since the start,
	//     the current one included
	//   - ergo:failover_gap_last: the last failover as this node saw it: from
	//     losing its leader to recognising the next (its leaderless gap)
	//   - ergo:election_timer_armed: whether a campaign is scheduled
	//   - ergo:heartbeat_timer_armed: whether heartbeats are scheduled
	//   - ergo:heartbeat_in_last: last heartbeat received from the leader
	//   - ergo:heartbeat_out_last: last heartbeat round sent as leader
	//   - ergo:election_timeout_min: ElectionTimeoutMin
	//   - ergo:election_timeout_max: ElectionTimeoutMax
	//   - ergo:heartbeat_interval: HeartbeatInterval
	//   - ergo:lease_until: until when this node's leadership is exclusive (its
	//     lease), never when it does not lead
	//   - ergo:quiet_until: a freshly started actor grants no vote before this
	//     time
	//   - ergo:longest_step: the longest time the actor spent on one message,
	//     callbacks and sends included
	//   - ergo:timer_wakeups: timers that went off: an idle election whose
	//     node's hub carries its heartbeats wakes only for its chores
	//   - ergo:handovers: graceful handovers started by this node
	//   - ergo:last_handover: successor and time of the last handover
	//   - ergo:dropped_by_reason: discarded messages per reason
	//   - ergo:send_failing_peers: peers whose last send failed, with the error
	//   - ergo:connections_kept: times a silent member's connection was not
	//     reset because it still carried messages or a request and its
	//     answer (a member that is absent or ignores this election)
	//   - ergo:confirm_denied: elections won but withheld by HandleConfirmLeader
	//   - ergo:last_denied_at: when HandleConfirmLeader last withheld leadership
	//   - ergo:confirm_backoff: no campaign before this time (confirm denial or
	//     handover)
	HandleInspect(from gen.PID, item ...string) map[string]string

	// HandleConfirmLeader is consulted after this node won an election and
	// before leadership is published. False or an error withholds it: the
	// node stands down and re-campaigns after a backoff that doubles with
	// each consecutive denial. It runs on the actor's goroutine; bound any
	// network call well under the election timeout.
	HandleConfirmLeader() (bool, error)
	// HandleBecomeLeader is where the singleton work starts. Returning an
	// error rolls the transition back and terminates the actor with it.
	HandleBecomeLeader() error
	// HandleBecomeFollower is where the work stops. It fires on every
	// transition into follower and whenever the recognised leader changes,
	// with an empty PID when no leader is known. Make it idempotent.
	HandleBecomeFollower(leader gen.PID) error

	// HandlePeerJoined reports a peer whose process became known (a new
	// member, or a member's restarted process). Informational: membership
	// is already applied.
	HandlePeerJoined(peer gen.PID) error
	// HandlePeerLeft reports a peer removed from the view. Its PID holds only
	// the node when the process was never reached.
	HandlePeerLeft(peer gen.PID) error

	// HandleEvent, HandleSpan and HandleLog receive the framework's message
	// classes for events, tracing spans and log messages.
	HandleEvent(event gen.MessageEvent) error
	HandleSpan(span gen.TracingSpan) error
	HandleLog(message gen.MessageLog) error
}

// ErrNotLeader is returned by StepDown on a node that does not lead.
var ErrNotLeader = errors.New("leader: this node is not the leader")

// ErrNotUpToDate is wrapped by the error StepDownTo returns when the chosen
// successor cannot take leadership over now.
var ErrNotUpToDate = errors.New("leader: the chosen successor is not up to date")

// ErrInvalidPeer is wrapped by the error Join returns for a peer that cannot
// be a member: its node name is not of the form name@host.
var ErrInvalidPeer = errors.New("leader: invalid peer")

// kindCandidate is the process kind reported while campaigning; the
// framework names leader and follower kinds but not this one.
const kindCandidate gen.ProcessKind = "candidate"

// Actor is the embeddable leader actor. Embed it in your actor, implement
// Init, HandleBecomeLeader and HandleBecomeFollower, and spawn the result
// like any other process. Its methods must be called from the actor's own
// callbacks, as with any ergo actor.
type Actor struct {
	gen.Process

	behavior ActorBehavior
	mailbox  gen.ProcessMailbox
	trap     bool
	retained bool   // counted among its node's election actors (nodestate.go)
	probe    *Probe // made by Probe

	state        *election
	pendingJoins []gen.ProcessID       // Join called from Init, before options exist
	reported     publicState           // what the callbacks have told the behavior
	events       publisher             // the Leadership event (events.go)
	timers       [numTimers]actorTimer // armed with the framework or parked with the hub (parking.go)
	kind         gen.ProcessKind

	dialerPID    gen.PID                    // the helper that connects to unreachable nodes (dialer.go)
	hub          gen.PID                    // the node's liveness hub, once joined (hub.go)
	slot         *slot                      // what this actor shares with the hub (coalesce.go)
	noCoalescing bool                       // Options.DisableCoalescing
	departing    *departure                 // an outgoing leader waiting for its successor (departure.go)
	dialing      map[gen.Atom]bool          // nodes it is connecting to now
	watchers     map[gen.Atom]gen.PID       // per member node, the helper that monitors its processes (watcher.go)
	watching     map[gen.PID]gen.Atom       // the same, by the helper's PID
	held         map[gen.Atom][]heldMessage // sends waiting for the dialer (dialer.go)
	losses       *lossBoard                 // connection losses as the watcher saw them
	hints        *downHints                 // which downs the watchers may hand over late
	hinted       downHintsState             // what hints says now
	heldDown     *downsInFlight             // a paced down whose failover goes on (holdDown)

	// the watchers above that are the node's shared ones, which the actor
	// monitors (shared_watcher.go); the others are its children
	sharedWatchers map[gen.PID]bool

	// Injected by the deterministic simulator; production uses the wall
	// clock and a randomly seeded source.
	clock func() time.Time
	rng   *rand.Rand
}

// campaignTurnsTuner is implemented by test behaviors only (its method is
// unexported): how many elections of the node campaign at once on election
// timeouts (pacing.go), lowered so that a handful of elections already
// queue. Every other behavior gets campaignsInFlight.
type campaignTurnsTuner interface{ campaignTurns() int }

// publicState is the part of the state the callbacks report.
type publicState struct {
	leading     bool
	campaigning bool
	leader      gen.PID
}

func (e *election) public() publicState {
	return publicState{leading: e.role == roleLeader, campaigning: e.role == roleCandidate, leader: e.recognisedLeader()}
}

// recognisedLeader is the leader the callbacks name: the leader this node
// follows, or the one it lost to a mere sign (a lost connection, which a
// reconnect follows in milliseconds) until it looks for another leader
// (its fast pre-vote) or learns of a later term. So a connection's blip,
// or the resets a long stall of this node makes its peers do, run no
// callback (HandleBecomeFollower once per real change, not "no leader" and
// the same leader again); a leader that is really gone is named until a
// survivor's pre-vote, a few milliseconds after its acting lease ran out.
func (e *election) recognisedLeader() gen.PID {
	if e.leader != (gen.PID{}) || e.signLost == (gen.PID{}) || e.role != roleFollower || e.term != e.signTerm {
		return e.leader
	}
	if m, ok := e.members[e.signLost.Node]; ok && m.knownPID == e.signLost {
		return e.signLost
	}
	return gen.PID{}
}

// ProcessInit implements gen.ProcessBehavior. It runs the behavior's Init,
// validates the options, checks that the protocol types are registered and
// arms the first election timer.
func (a *Actor) ProcessInit(process gen.Process, args ...any) error {
	behavior, ok := process.Behavior().(ActorBehavior)
	if ok == false {
		return fmt.Errorf("leader: %T does not implement leader.ActorBehavior: embed leader.Actor and implement Init(args ...any) (leader.Options, error)", process.Behavior())
	}
	a.behavior = behavior
	a.Process = process
	a.mailbox = process.Mailbox()
	if a.clock == nil {
		a.clock = time.Now
	}
	if a.rng == nil {
		a.rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}

	options, err := behavior.Init(args...)
	if err != nil {
		return err
	}
	cfg, warnings, err := options.resolve()
	if err != nil {
		return err
	}
	if err := a.checkRegistered(); err != nil {
		return err
	}
	for _, warning := range warnings {
		a.Log().Warning("leader %q: %s", cfg.clusterID, warning)
	}

	a.losses = &lossBoard{}
	a.hints = &downHints{pause: lazyDownPause(cfg)}
	a.noCoalescing = options.DisableCoalescing
	a.state = newElection(cfg, a.PID(), a.Name(), a.rng, a.Log())
	turns := 0
	if tuner, ok := a.behavior.(campaignTurnsTuner); ok {
		turns = tuner.campaignTurns()
	}
	a.state.configure(turnsOf(a.Node(), turns))
	retainNode(a.Node())
	a.retained = true
	// before this actor can grant anything: no answer its node's hub gave
	// for an earlier process of this election counts any more (pings.go)
	boardOf(a.Node()).raiseAll()
	a.state.start(a.clock())
	for _, peer := range a.pendingJoins {
		a.state.joinPeer(a.clock(), peer)
	}
	a.pendingJoins = nil
	// The timers are armed by the first ProcessRun, which the framework
	// runs right after Init: it registers the PID only when Init has
	// returned, and a timer that fired before would be refused and lost.
	err = a.flush()
	if err != nil && a.retained {
		// the framework runs no ProcessTerminate for a failed init
		a.retained = false
		releaseNode(a.Node())
	}
	return err
}

// checkRegistered refuses to start a node that cannot encode the protocol.
// A node without a network has no peers to talk to, so nothing is needed.
func (a *Actor) checkRegistered() error {
	network := a.Node().Network()
	if network.Mode() == gen.NetworkModeDisabled {
		return nil
	}
	for _, value := range NetworkTypes() {
		t := reflect.TypeOf(value)
		name := "#" + t.PkgPath() + "/" + t.Name()
		if _, ok := network.LookupType(name); ok == false {
			return fmt.Errorf("%w on node %s: %s is unknown to the node's codec, so every vote would fail to encode; "+
				"add leader.NetworkTypes() to gen.ApplicationSpec.Network.RegisterTypes of the application that starts this actor "+
				"(and leader.ErrorTypes() to RegisterErrors), or call node.Network().RegisterTypes(leader.NetworkTypes()) before the node connects to any peer",
				ErrNotRegistered, a.Node().Name(), name)
		}
	}
	return nil
}

// ProcessKind implements gen.ProcessBehavior: leader, follower or candidate.
func (a *Actor) ProcessKind() gen.ProcessKind {
	if a.kind == "" {
		return gen.ProcessKindFollower
	}
	return a.kind
}

// ProcessRun implements gen.ProcessBehavior. It drains the mailbox (Urgent,
// System, Main, then Log) and returns nil to sleep once it is empty.
func (a *Actor) ProcessRun() (reason error) {
	_ = reserveStack(0)
	if lib.Recover() {
		defer func() {
			if r := recover(); r != nil {
				a.Log().Panic("leader: panic in the actor: %v\n%s", r, debug.Stack())
				reason = gen.TerminateReasonPanic
			}
		}()
	}
	if a.events.tried == false {
		// the framework registers events of running processes only
		a.events.tried = true
		a.registerEvent()
		a.joinHub()
		a.syncTimers()
	}
	for {
		if a.State() != gen.ProcessStateRunning {
			return gen.TerminateReasonKill
		}
		if a.departing != nil && a.departing.over(a.state.term, a.clock()) {
			return a.departing.reason
		}
		message, ok := a.pop()
		var logged any
		if ok == false {
			if logged, ok = a.mailbox.Log.Pop(); ok == false {
				// Nothing left: the activation ends. The last step shared
				// its state with the hub and synced its timers; no step
				// starts for an empty mailbox, since starting one takes
				// the election's permissions back from the hub, which
				// costs its ping board an unbinding and a binding again
				// at every activation.
				return nil
			}
		}
		var err error
		started := a.clock()
		// the hub acts for this actor only between its steps (coalesce.go)
		a.state.stepStarts(started, a.hubView())
		if message != nil {
			// A leader whose lease ran out while it was busy or stalled
			// stands down before it handles anything else (lease.go).
			if a.state.role == roleLeader {
				a.state.checkLease(a.clock())
				err = a.flush()
			}
			if err == nil {
				err = a.dispatch(message)
			}
			gen.ReleaseMailboxMessage(message)
		} else if entry, isLog := logged.(gen.MessageLog); isLog {
			err = a.behavior.HandleLog(entry)
		}
		if err == nil {
			err = a.flush()
		}
		if err == nil {
			a.shareWithHub()
			a.syncTimers()
		}
		a.state.stepTook(a.clock().Sub(started))
		if err != nil {
			if a.departing == nil && a.depart(err) {
				continue // until the successor campaigns (departure.go)
			}
			return err
		}
	}
}

func (a *Actor) pop() (*gen.MailboxMessage, bool) {
	// Urgent holds exits, System the framework's notifications, Main the
	// rest: the order in which the framework means them to be handled.
	for _, queue := range []lib.QueueMPSC{a.mailbox.Urgent, a.mailbox.System, a.mailbox.Main} {
		for {
			value, ok := queue.Pop()
			if ok == false {
				break
			}
			if message, isMessage := value.(*gen.MailboxMessage); isMessage {
				return message, true
			}
		}
	}
	return nil, false
}

func (a *Actor) dispatch(message *gen.MailboxMessage) error {
	if a.departing != nil {
		return a.dispatchDeparting(message)
	}
	switch message.Type {
	case gen.MailboxMessageTypeRegular:
		return a.handleRegular(message.From, message.Message)

	case gen.MailboxMessageTypeRequest:
		result, err := a.behavior.HandleCall(message.From, message.Ref, message.Message)
		if err != nil {
			if isTermination(err) {
				if result != nil {
					a.SendResponse(message.From, message.Ref, result)
				}
				return err
			}
			a.SendResponseError(message.From, message.Ref, err)
			return nil
		}
		if result != nil {
			a.SendResponse(message.From, message.Ref, result)
		}
		return nil

	case gen.MailboxMessageTypeEvent:
		if event, ok := message.Message.(gen.MessageEvent); ok {
			return a.behavior.HandleEvent(event)
		}
	case gen.MailboxMessageTypeSpan:
		if span, ok := message.Message.(gen.TracingSpan); ok {
			return a.behavior.HandleSpan(span)
		}
	case gen.MailboxMessageTypeExit:
		return a.handleExit(message.From, message.Message)

	case gen.MailboxMessageTypeInspect:
		items, _ := message.Message.([]string)
		a.SendResponse(message.From, message.Ref, a.inspectMerged(message.From, items...))
		return nil
	}
	a.Log().Warning("leader: dropped a mailbox message of type %d (%T) that this actor does not handle", message.Type, message.Message)
	return nil
}

func (a *Actor) handleRegular(from gen.PID, message any) error {
	now := a.clock()
	switch m := message.(type) {
	case rewatch:
		if from == a.PID() {
			if member, ok := a.state.members[m.Node]; ok && member.pid != (gen.PID{}) {
				a.watch(member.pid)
			}
		}
		return nil
	case hubJoined, hubBeat, hubCarryLost, hubRetry, hubWake:
		a.handleHub(from, message)
		return nil
	case dialResult:
		if from != a.dialerPID {
			a.state.drop("foreign_dial_result")
			return nil
		}
		a.dialed(m)
		return nil
	case campaignTurn:
		// another election of this node gave this one its turn to
		// campaign (pacing.go)
		if from.Node != a.Node().Name() {
			a.state.drop("foreign_campaign_turn")
			return nil
		}
		a.state.turnCame(now)
		return nil
	case sharedDialResult:
		// another election's dialer connected to a node this one wanted
		// to reach (joinDial), or the connection to a ghost's node is up
		// (Spread, ghostprobe.go)
		if from.Node != a.Node().Name() {
			a.state.drop("foreign_dial_result")
			return nil
		}
		a.state.sharedDialConnected(now, m.Node, m.Spread)
		return nil
	case timerFired:
		if from != a.PID() {
			a.state.drop("foreign_timer")
			return nil
		}
		// a timer that fires late says the node is starved (markStarved)
		var due time.Time
		if m.Kind >= 0 && m.Kind < numTimers {
			due = a.timers[m.Kind].at
		}
		if a.fired(m.Kind, m.Generation) && now.Sub(due) > starvedLateness(a.state.cfg) {
			connectionResets.markStarved(a.Node(), now)
			a.state.restartSilences() // the peers were not silent: this node was
		}
		a.fireTimer(now, m.Kind, m.Generation)
		return nil
	case peerDown, watchFailed, forgedDown, watchStarted, watchSuspect:
		down, _ := m.(peerDown)
		if a.fromWatcher(from, m) == false {
			down.inFlight.taken() // the watcher paces by it, dropped or not
			a.state.drop("foreign_down")
			return nil
		}
		a.holdDown(down.inFlight)
		a.watched(now, m)
		return nil
	case gen.MessageDownPID:
		if from == m.PID && (a.hubDown(m.PID, m.Reason) || a.sharedWatcherDown(m.PID)) {
			return nil
		}
		// The actor monitors nothing else itself (the watcher does), so a
		// down for a member's process here was not sent by the framework
		// for the election: counted and dropped, it cannot shrink the view.
		if a.state.isMemberPID(m.PID) {
			a.state.drop("foreign_down")
			return nil
		}
	case msgPreVote, msgVote:
		a.noticeLeaderConnectionGone(now)
		if a.state.receive(now, from, message) {
			return nil
		}
	case departureDeadline:
		if a.departing != nil && from == a.PID() {
			// the end is due whatever the clock says: an outgoing leader
			// must never outlive its deadline (a node's Stop waits for it)
			a.departing.until = time.Time{}
		}
		return nil
	default:
		if a.state.receive(now, from, message) {
			return nil
		}
	}
	if a.departing != nil {
		return nil // the behavior asked to end: nothing more for it
	}
	return a.behavior.HandleMessage(from, message)
}

// noticeLeaderConnectionGone tells the state that the framework has no
// connection to its leader's node any more, before a pre-vote or a vote
// is weighed, when the down that the end of that connection brings has not
// reached the actor yet.
//
// Why. When a node leading many elections dies, each survivor's framework
// drops the connection at once and queues a down for every monitor of
// every election (a thousand elections: a thousand downs, each through a
// watcher to its actor). A survivor that is asked for its pre-vote before
// its own down for that election came through still keeps its promise to
// the dead leader and refuses; the candidate's round is lost, and the
// failover waits for an election timeout. The connection's end is the very
// event that down reports, and the framework shows it at once: reading it
// here is seeing the same down earlier, never seeing one that will not
// come. So it is handled exactly as that down (down, lostContact): a
// connection this node reset itself is not an observed failure, and no
// promise is released for it.
func (a *Actor) noticeLeaderConnectionGone(now time.Time) {
	if a.leaderConnectionGone() {
		a.state.down(now, a.state.leader, gen.ErrNoConnection)
	}
}

// leaderConnectionGone reports whether this follower's leader is on
// another node to which the framework has no connection any more.
func (a *Actor) leaderConnectionGone() bool {
	leader := a.state.leader
	if leader == (gen.PID{}) || leader.Node == a.Node().Name() || a.state.role != roleFollower {
		return false
	}
	_, err := a.Node().Network().Node(leader.Node)
	return err != nil
}

// fireTimer runs the election's timer of kind, fired by the framework or
// parked with the hub. An election timer first notes whether the leader's
// down is owed (pacing.go, owed downs): the timer must not campaign for a
// leader whose down, on its way, starts the fast failover.
func (a *Actor) fireTimer(now time.Time, kind timerKind, generation uint64) {
	if kind == timerElection && a.leaderConnectionGone() {
		lostAt, _ := a.losses.at(a.state.leader.Node)
		a.state.leaderDownOwed(now, lostAt)
	}
	a.state.timer(now, kind, generation)
}

// handleExit terminates on an exit signal unless exits are trapped, in which
// case an exit from anyone but the parent arrives as a message.
func (a *Actor) handleExit(from gen.PID, message any) error {
	if a.trap && from != a.Parent() {
		return a.behavior.HandleMessage(from, message)
	}
	var reason error
	switch exit := message.(type) {
	case gen.MessageExitPID:
		reason = exit.Reason
	case gen.MessageExitProcessID:
		reason = exit.Reason
	case gen.MessageExitAlias:
		reason = exit.Reason
	case gen.MessageExitEvent:
		reason = exit.Reason
	case gen.MessageExitNode:
		reason = gen.ErrNoConnection
	case error:
		reason = exit
	}
	if reason == nil {
		reason = gen.TerminateReasonKill
	}
	return reason
}

func isTermination(err error) bool {
	return errors.Is(err, gen.TerminateReasonNormal) || errors.Is(err, gen.TerminateReasonShutdown) || errors.Is(err, gen.TerminateReasonKill)
}

// ProcessTerminate implements gen.ProcessBehavior.
func (a *Actor) ProcessTerminate(reason error) {
	if a.slot != nil {
		a.slot.settle(0, 0)   // the hub speaks for no terminated actor
		a.slot.share(grant{}) // nor waits for it to end a step
	}
	for kind := range a.timers {
		a.disarm(timerKind(kind))
	}
	if a.state != nil {
		a.tellTurns(a.state.leaveGate(a.clock()))
	}
	a.heldDown.taken() // its failover ends with it
	a.heldDown = nil
	if a.retained {
		a.retained = false
		releaseNode(a.Node())
	}
	if a.probe != nil {
		a.probe.ended.Store(true)
	}
	a.behavior.Terminate(reason)
}

// flush runs the callbacks the state's changes call for and performs what
// the state asked for, until nothing is left: callbacks may call Join, Leave
// or StepDown, which change the state again. Callbacks run before the sends
// of the same step, so a leader that stands down has stopped its work
// before its handover message can make a successor.
func (a *Actor) flush() error {
	for {
		if a.state.confirming {
			allowed, err := a.behavior.HandleConfirmLeader()
			a.state.confirmResult(a.clock(), allowed, err)
			continue
		}
		if a.departing != nil {
			// the behavior asked to end: no callback runs any more
			a.state.observeLeader(a.clock())
			a.reported = a.state.public()
		} else if err := a.report(); err != nil {
			return err
		}
		a.state.endTurn()
		a.releaseDown()
		a.state.keepChoreTimer()
		a.hint()
		out := a.state.takeEffects()
		if out.empty() && a.state.confirming == false && a.state.public() == a.reported {
			a.updateKind()
			if a.probe != nil {
				a.probe.observe(a)
			}
			return nil
		}
		a.perform(out)
		if a.departing != nil {
			continue
		}
		for _, pid := range out.joined {
			if err := a.behavior.HandlePeerJoined(pid); err != nil {
				return err
			}
		}
		for _, pid := range out.left {
			a.unwatch(pid.Node)
			if err := a.behavior.HandlePeerLeft(pid); err != nil {
				return err
			}
		}
	}
}

func (a *Actor) perform(out effects) {
	for _, o := range out.sends {
		if err := a.sendConnected(o.node, o.to, o.message); err != errQueued {
			a.state.sendResult(o.node, err)
		}
	}
	for _, t := range out.timers {
		a.armTimer(t)
	}
	for _, pid := range out.monitor {
		a.watch(pid)
	}
	for _, o := range out.probeGone {
		// never a dial: a watched node is only looked at over a
		// connection the framework already has (gone.go)
		if a.connected(o.node) {
			a.Send(o.to, o.message)
		} else {
			a.state.goneUnconnected(o.node)
		}
	}
	for _, node := range out.sampleInbound {
		a.sampleInbound(node)
	}
	a.tellTurns(out.turnWakes)
	for _, node := range out.reset {
		a.resetConnection(node)
	}
	lost := false
	for _, node := range out.checkConnected {
		if a.connected(node) == false {
			a.state.dialed(a.clock(), node, gen.ErrNoConnection)
			lost = true
		}
	}
	if lost {
		a.perform(a.state.takeEffects())
	}
}

// tellTurns tells the elections of this node that they have a turn to
// campaign (pacing.go).
func (a *Actor) tellTurns(pids []gen.PID) {
	for _, pid := range pids {
		if pid == a.PID() {
			a.state.turnCame(a.clock()) // its own reservation: taken at once
			continue
		}
		if err := a.Send(pid, campaignTurn{}); err != nil {
			// gone: its turn expires (turnHold)
			a.state.drop("campaign_turn_not_sent")
		}
	}
}

// watch asks the watcher of pid's node to monitor pid, starting it on
// first use. Each member node has a watcher of its own, so that a monitor
// request stuck for the framework's request timeout (a stalled peer, or a
// request sent on a connection the framework then dropped) delays no other
// member's downs.
func (a *Actor) watch(pid gen.PID) {
	if a.departing != nil {
		return // it ends in a moment: no helper is started for it
	}
	watcher, ok := a.watchers[pid.Node]
	if ok == false {
		watcher, ok = a.sharedWatcher(pid.Node)
	}
	if ok == false {
		var err error
		watcher, err = a.Spawn(factoryWatcher, gen.ProcessOptions{LinkParent: true}, a.losses, a.hints, a.clock)
		if err != nil {
			a.Log().Error("leader %q: cannot start a watcher process (%s): the downs of %s will not be seen, so a failover waits for the election timeout and a terminated peer leaves only through GhostTTL or Leave", a.state.cfg.clusterID, err, pid.Node)
			return
		}
	}
	if _, known := a.watching[watcher]; known == false {
		if a.watchers == nil {
			a.watchers = make(map[gen.Atom]gen.PID)
			a.watching = make(map[gen.PID]gen.Atom)
		}
		a.watchers[pid.Node] = watcher
		a.watching[watcher] = pid.Node
	}
	if err := a.Send(watcher, watchRequest{PID: pid, Hints: a.hints, Losses: a.losses}); err != nil {
		a.Log().Error("leader %q: cannot reach the watcher process (%s); %s is not monitored", a.state.cfg.clusterID, err, pid)
	}
}

// watcherOf returns the watcher of node's processes, zero if none.
func (a *Actor) watcherOf(node gen.Atom) gen.PID { return a.watchers[node] }

// fromWatcher reports whether report came from the watcher of the node it
// is about.
func (a *Actor) fromWatcher(from gen.PID, report any) bool {
	node, ok := a.watching[from]
	if ok == false {
		return false
	}
	switch r := report.(type) {
	case peerDown:
		return r.PID.Node == node
	case watchFailed:
		return r.PID.Node == node
	case watchStarted:
		return r.PID.Node == node
	case watchSuspect:
		return r.Node == node
	}
	return true
}

// unwatch stops the private watcher of a node that left the view, or tells
// the node's shared watcher that this election is done with that node.
func (a *Actor) unwatch(node gen.Atom) {
	watcher, ok := a.watchers[node]
	if ok == false {
		return
	}
	if _, member := a.state.members[node]; member {
		return
	}
	delete(a.watchers, node)
	delete(a.watching, watcher)
	if a.sharedWatchers[watcher] {
		delete(a.sharedWatchers, watcher)
		a.Send(watcher, watchCancel{Node: node})
		a.Demonitor(watcher) // local: it does not block
		return
	}
	a.SendExit(watcher, gen.TerminateReasonNormal)
}

// replaceWatcher stops the watcher of node, whose monitors there may be
// one-sided (watcher.go, nodeSettle), and has a new one monitor the
// member's current process.
func (a *Actor) replaceWatcher(node gen.Atom) {
	old, ok := a.watchers[node]
	if ok == false {
		return
	}
	delete(a.watchers, node)
	delete(a.watching, old)
	a.SendExit(old, gen.TerminateReasonNormal)
	a.rewatchLater(node)
}

// rewatchLater has a new watcher monitor node's member once the node has
// processed the connection's end (watcher.go, nodeSettle).
func (a *Actor) rewatchLater(node gen.Atom) {
	a.state.rewatching(a.clock(), node)
	a.SendAfter(a.PID(), rewatch{Node: node}, nodeSettlePause)
}

// rewatch reminds the actor to have a new watcher monitor node's member.
type rewatch struct{ Node gen.Atom }

// watched applies what the watcher reports.
func (a *Actor) watched(now time.Time, report any) {
	switch r := report.(type) {
	case peerDown:
		if r.Since.IsZero() {
			a.takeLeaderLosses(now)
		} else if a.hints.lossHandled(r.PID) {
			a.hinted.spare = -1 // the hints changed under the actor: tell them again
		}
		reconnected := errors.Is(r.Reason, gen.ErrNoConnection) && a.connected(r.PID.Node)
		if a.state.downReported(now, r.At, r.PID, r.Reason, reconnected) == false {
			a.state.drop("stale_down")
		} else if r.Since.IsZero() == false {
			a.state.backdateLoss(r.PID.Node, r.Since)
		}
	case watchFailed:
		a.state.monitorFailed(now, r.PID, r.Err)
	case watchStarted:
		a.state.monitored(r.PID)
	case watchSuspect:
		a.replaceWatcher(r.Node)
	case forgedDown:
		a.state.drop("forged_down")
		a.Log().Warning("leader %q: dropped a down notification sent by %s, which is not how the framework reports a termination; nothing changed", a.state.cfg.clusterID, r.From)
	}
}

// report runs HandleBecomeLeader or HandleBecomeFollower when the role or the
// recognised leader changed since the last report, exactly once per change.
func (a *Actor) report() error {
	a.state.observeLeader(a.clock())
	now := a.state.public()
	previous := a.reported
	switch {
	case now.leading && previous.leading == false:
		a.reported = now
		a.updateKind()
		if err := a.behavior.HandleBecomeLeader(); err != nil {
			a.state.rollback(a.clock())
			a.reported = a.state.public()
			a.Log().Error("leader %q: HandleBecomeLeader refused leadership of term %d: %s; the actor stops", a.state.cfg.clusterID, a.state.term, err)
			return err
		}
		a.state.published(a.clock())
		a.publish()
	case now.leading == false && (previous.leading ||
		now.campaigning == false && (previous.campaigning || previous.leader != now.leader)):
		// a leader that became a candidate within one step (a higher term,
		// then a handover to it) is told it no longer leads all the same
		a.reported = now
		a.updateKind()
		err := a.behavior.HandleBecomeFollower(now.leader)
		a.publish()
		return err
	default:
		a.reported = now
	}
	return nil
}

func (a *Actor) updateKind() {
	kind := gen.ProcessKindFollower
	switch a.state.role {
	case roleLeader:
		kind = gen.ProcessKindLeader
	case roleCandidate:
		kind = kindCandidate
	}
	if kind != a.kind {
		a.kind = kind
		a.SetProcessKind(kind)
	}
}
