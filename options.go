package leader

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"ergo.services/ergo/gen"
)

// Defaults applied to zero-valued Options fields.
const (
	DefaultMinClusterSize     = 3
	DefaultElectionTimeoutMin = 150  // ms
	DefaultElectionTimeoutMax = 300  // ms
	DefaultHeartbeatInterval  = 50   // ms
	DefaultGhostTTL           = 5000 // ms
)

// ErrInvalidOptions is wrapped by every error Init returns for options that
// cannot work. The message says which field to change and how.
var ErrInvalidOptions = errors.New("leader: invalid options")

// ErrNotRegistered is wrapped by the error Init returns when the node cannot
// encode the protocol's wire types (see NetworkTypes).
var ErrNotRegistered = errors.New("leader: protocol types are not registered")

// Options configure a leader actor. Init returns them; zero values take the
// documented defaults. All durations are in milliseconds.
type Options struct {
	// ClusterID names the election and is required. Messages carrying another
	// id are dropped and counted, so separate groups can share a network.
	// Nodes that share an id by accident merge into one election.
	ClusterID string

	// MinClusterSize is the smallest view (this node plus the peers it knows)
	// that may have a leader at all. Default 3. 1 lets a lone node appoint
	// itself and 2 makes losing either node end leadership: both are allowed
	// and warned about at startup. Set it above half the expected node count
	// if two disjoint groups must never both elect a leader.
	MinClusterSize int

	// Bootstrap lists peers known at deploy time. It is exactly Join declared
	// up front: the entries seed the same membership.
	Bootstrap []gen.ProcessID

	// ElectionTimeoutMin and ElectionTimeoutMax bound the randomised wait
	// before a follower that hears no leader campaigns. Defaults 150 and 300.
	// Set only one and the other is derived: min alone doubles into max, max
	// alone halves into min. Max must be greater than min.
	ElectionTimeoutMin int
	ElectionTimeoutMax int

	// HeartbeatInterval is how often a leader asserts itself. Default 50, or
	// a third of ElectionTimeoutMin when that is shorter. It must be
	// comfortably below ElectionTimeoutMin (at most a third of it), or
	// followers time out between heartbeats; Init warns otherwise. Through
	// the node's liveness hub (the default, see DisableCoalescing) a
	// leader asserts itself more often and more cheaply: the hub pings
	// each other node every ElectionTimeoutMin/30 for all the node's
	// leaders at once, and sends a leader's own heartbeat record only
	// when something changed, and at least every twenty HeartbeatIntervals
	// (docs/coalescing.md).
	HeartbeatInterval int

	// GhostTTL is how long a peer whose connection dropped stays in the view
	// before it is dropped. Default 5000. It bounds how long a gone peer keeps
	// inflating quorum; it is not a safety control (MinClusterSize is).
	GhostTTL int

	// DisableCoalescing makes this election send and answer its own
	// heartbeats and watch its members with processes of its own. By
	// default the heartbeats of all the elections on a node travel through
	// the node's liveness hub (a process registered as "leader_liveness",
	// started by the first election actor on the node), in one message per
	// other node and interval, however many elections share the nodes, and
	// the node watches each other node's processes with one shared watcher
	// (registered as "leader_watch_" + that node's name); the guarantees
	// are the same either way. Disable it only to compare the two, or when
	// one election per node is all you run and you want no extra process.
	DisableCoalescing bool

	// AssumeSymmetricConnectionLoss trades a safety assumption for speed.
	// Off by default: then two nodes never act as leader at once assuming
	// only that clocks run at roughly the right rate (docs/safety.md), and a
	// crashed leader is replaced in about 15 to 25 ms at the defaults,
	// because the lease that IsLeader checks is short and renewed by
	// liveness rounds every ElectionTimeoutMin/30.
	//
	// On, a follower that sees its leader's connection drop stops supporting
	// it at once, and the leader's lease is a whole ElectionTimeoutMin,
	// renewed every HeartbeatInterval. That is safe only when both ends of
	// every dropped connection notice within ElectionTimeoutMin/30 of each
	// other, which these faults break: a reset that reaches one end only
	// (conntrack, NAT or load-balancer state lost, a firewall that rejects
	// on one side, a lost RST or FIN, a sidecar proxy closing its side), and
	// a leader process stalled or starved of CPU as its links go. Under them
	// the old leader may go on acting for up to a lease next to the new one.
	// Turn it on only where none of them can happen and the default's
	// faster liveness rounds cost too much (many elections per node).
	AssumeSymmetricConnectionLoss bool
}

// config is Options resolved: defaults applied, durations typed.
type config struct {
	clusterID          string
	minClusterSize     int
	bootstrap          []gen.ProcessID
	electionTimeoutMin time.Duration
	electionTimeoutMax time.Duration
	heartbeatInterval  time.Duration
	ghostTTL           time.Duration
	// Options.AssumeSymmetricConnectionLoss: long leases, and a follower
	// releases its promise at its leader's lost connection
	assumeSymmetricLoss bool
}

// maxDurationMs is the largest duration option accepted: one day. Options
// are in milliseconds, so a value above it is almost certainly a
// time.Duration (nanoseconds) passed by mistake: int(time.Second) is
// 1,000,000,000 "milliseconds", eleven days.
const maxDurationMs = 24 * 60 * 60 * 1000

// resolve validates the options, applies defaults and returns the warnings
// an operator should see at startup. A returned error wraps
// ErrInvalidOptions and names every field to change, not only the first.
func (o Options) resolve() (config, []string, error) {
	var warnings, problems []string
	invalid := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
	}

	if o.ClusterID == "" {
		invalid("ClusterID is empty: set Options.ClusterID to a name shared by every node of this election (for example \"scheduler\")")
	}
	if o.MinClusterSize < 0 {
		invalid("MinClusterSize is %d: it must not be negative; leave it 0 for the default", o.MinClusterSize)
	}
	durations := []struct {
		name  string
		value int
	}{
		{"ElectionTimeoutMin", o.ElectionTimeoutMin}, {"ElectionTimeoutMax", o.ElectionTimeoutMax},
		{"HeartbeatInterval", o.HeartbeatInterval}, {"GhostTTL", o.GhostTTL},
	}
	for _, field := range durations {
		switch {
		case field.value < 0:
			invalid("%s is %d: it must not be negative; leave it 0 for the default", field.name, field.value)
		case field.value > maxDurationMs:
			invalid("%s is %d ms (%s): durations in Options are milliseconds, and this looks like a time.Duration; write %d for %s",
				field.name, field.value, time.Duration(field.value)*time.Millisecond, time.Duration(field.value).Milliseconds(), time.Duration(field.value))
		}
	}
	for _, peer := range o.Bootstrap {
		if err := checkPeer(peer); err != nil {
			invalid("Bootstrap entry %s: %s", peer, err)
		}
	}

	size := o.MinClusterSize
	if size == 0 {
		size = DefaultMinClusterSize
	}
	switch size {
	case 1:
		warnings = append(warnings, "MinClusterSize is 1: a lone node appoints itself leader, and nothing prevents a fragment of one node from operating alone; use it only for a single-node deployment")
	case 2:
		warnings = append(warnings, "MinClusterSize is 2: quorum is two of two, so losing either node ends leadership; use it only when an external authority gates leadership through HandleConfirmLeader")
	}

	lo, hi := o.ElectionTimeoutMin, o.ElectionTimeoutMax
	switch {
	case lo == 0 && hi == 0:
		lo, hi = DefaultElectionTimeoutMin, DefaultElectionTimeoutMax
	case hi == 0:
		hi = 2 * lo
	case lo == 0:
		lo = hi / 2
		if lo == 0 {
			invalid("ElectionTimeoutMax is %d ms, too small to derive ElectionTimeoutMin from (max/2 would be 0): raise it to at least 2", hi)
		}
	}
	if lo > 0 && hi <= lo {
		invalid("ElectionTimeoutMax (%d ms) must be greater than ElectionTimeoutMin (%d ms): the randomised window between them is what stops nodes campaigning at the same instant; raise ElectionTimeoutMax, for example to %d", hi, lo, 2*lo)
	}

	// An unset HeartbeatInterval follows the timeouts: the default, or a
	// third of ElectionTimeoutMin when that is shorter, so that shortening
	// the timeouts alone never produces a configuration Init warns about.
	hb := o.HeartbeatInterval
	if hb == 0 {
		hb = max(min(DefaultHeartbeatInterval, lo/3), 1)
	} else if lo > 0 && hb*3 > lo {
		relation := "is not comfortably below"
		if hb >= lo {
			relation = "is not below"
		}
		warnings = append(warnings, fmt.Sprintf("HeartbeatInterval (%d ms) %s ElectionTimeoutMin (%d ms): followers may time out between heartbeats and campaign against a healthy leader; keep it at most a third of ElectionTimeoutMin (here %d ms)", hb, relation, lo, max(lo/3, 1)))
	}

	ttl := o.GhostTTL
	if ttl == 0 {
		ttl = DefaultGhostTTL
	}

	if len(problems) > 0 {
		return config{}, nil, fmt.Errorf("%w: %s", ErrInvalidOptions, strings.Join(problems, "; "))
	}
	return config{
		clusterID:           o.ClusterID,
		minClusterSize:      size,
		bootstrap:           append([]gen.ProcessID(nil), o.Bootstrap...),
		electionTimeoutMin:  time.Duration(lo) * time.Millisecond,
		electionTimeoutMax:  time.Duration(hi) * time.Millisecond,
		heartbeatInterval:   time.Duration(hb) * time.Millisecond,
		ghostTTL:            time.Duration(ttl) * time.Millisecond,
		assumeSymmetricLoss: o.AssumeSymmetricConnectionLoss,
	}, warnings, nil
}

// checkPeer reports why peer cannot be a member: a node name must have the
// form name@host, as the framework's node names do.
func checkPeer(peer gen.ProcessID) error {
	node := string(peer.Node)
	at := strings.IndexByte(node, '@')
	if at <= 0 || at == len(node)-1 {
		return fmt.Errorf("node name %q is not a node name of the form name@host", node)
	}
	return nil
}
