package lab

import (
	"slices"
	"strconv"
	"time"
)

// The control channel between the test (parent) and a node process
// (child) is two pipes handed to the child as extra files: the child reads
// commands from fd 3 and writes reports to fd 4, one JSON object per line.
// The child's stdout and stderr go to its log file, so nothing the runtime
// prints can corrupt the channel. When fd 3 reaches EOF (the test died) the
// child exits.

// EnvNode is the environment variable that turns the test binary into a
// node program: it holds the node's configuration as JSON.
const EnvNode = "LEADER_LAB_NODE"

// Built-in operations every child answers. Anything else goes to
// Program.Handle.
const (
	OpStatus = "status" // reply with a fresh Status
	OpStop   = "stop"   // gracefully stop the node (node.Stop) and exit 0
	OpGo     = "go"     // start the traffic probes (Config.Pingers)
	OpStalls = "stalls" // reply with the scheduling stalls seen (JSON []Stall)
)

// Stall is a time the node process was not scheduled: its 5 ms ticker fired
// Gap late (CPU starvation on a loaded box, a garbage collection pause, a
// SIGSTOP). A protocol timing assumption holds only while stalls stay well
// below ElectionTimeoutMin, so a test that asserts that nothing happens
// treats a disruption during a long stall as inconclusive.
type Stall struct {
	// End is when the process ran again (Unix ns).
	End int64         `json:"end"`
	Gap time.Duration `json:"gap"`
}

// EndTime is End as a time.
func (s Stall) EndTime() time.Time { return time.Unix(0, s.End) }

// command is one parent -> child line.
type command struct {
	ID   uint64   `json:"id"`
	Op   string   `json:"op"`
	Args []string `json:"args,omitempty"`
}

// report is one child -> parent line.
type report struct {
	Kind   string  `json:"kind"` // "ready", "status", "event", "reply"
	ID     uint64  `json:"id,omitempty"`
	Result string  `json:"result,omitempty"`
	Err    string  `json:"err,omitempty"`
	Status *Status `json:"status,omitempty"`
	Event  *Event  `json:"event,omitempty"`
}

// childConfig is what a child is started with (EnvNode).
type childConfig struct {
	Index   int               `json:"index"`
	Name    string            `json:"name"`
	IP      string            `json:"ip"`
	Port    uint16            `json:"port"`
	Cookie  string            `json:"cookie"`
	Peers   []peerConfig      `json:"peers"`
	Params  map[string]string `json:"params,omitempty"`
	WorkLog string            `json:"worklog"`
	Pingers int               `json:"pingers"`
	Poll    time.Duration     `json:"poll"`
}

type peerConfig struct {
	Name string `json:"name"`
	IP   string `json:"ip"`
	Port uint16 `json:"port"`
}

// Status is a node's state as its child reports it: the actor's Inspect
// keys (InspectKeys), the probe counters and the connections.
type Status struct {
	Node string `json:"node"`
	// At is when the child took it (Unix ns; every process shares the
	// machine's clock).
	At      int64             `json:"at"`
	Inspect map[string]string `json:"inspect,omitempty"`
	// Err is set when the actor could not be inspected (gone, or busy).
	Err string `json:"err,omitempty"`
	// Received counts the probe messages received, per sending node.
	Received map[string]uint64 `json:"received,omitempty"`
	// Links describes the connection to each peer.
	Links map[string]Link `json:"links,omitempty"`
}

// Link is a node's connection to one peer, as its runtime reports it.
type Link struct {
	Connected bool `json:"connected"`
	PoolSize  int  `json:"pool_size,omitempty"`
	PoolLen   int  `json:"pool_len,omitempty"`
}

// InspectKeys are the actor's inspect items a child reports.
var InspectKeys = []string{
	"ergo:state", "ergo:leader", "ergo:leader_node", "ergo:term", "ergo:view_size",
	"ergo:quorum", "ergo:unreachable", "ergo:heartbeat_in_last", "ergo:lease_reclaims",
}

// Role is the actor's role: leader, candidate, follower or unclustered
// (ergo:state); "" when unknown.
func (s Status) Role() string { return s.Inspect["ergo:state"] }

// IsLeader reports whether the actor believes it leads (ergo:leader).
func (s Status) IsLeader() bool { return s.Inspect["ergo:leader"] == "true" }

// Leader is the node the actor recognises as leader (ergo:leader_node).
func (s Status) Leader() string { return s.Inspect["ergo:leader_node"] }

// Term is the actor's term (ergo:term).
func (s Status) Term() uint64 {
	v, _ := strconv.ParseUint(s.Inspect["ergo:term"], 10, 64)
	return v
}

// ViewSize is the size of the actor's view (ergo:view_size).
func (s Status) ViewSize() int {
	v, _ := strconv.Atoi(s.Inspect["ergo:view_size"])
	return v
}

// Time is At as a time.
func (s Status) Time() time.Time { return time.Unix(0, s.At) }

func (s Status) String() string {
	if s.Err != "" {
		return s.Node + " (" + s.Err + ")"
	}
	out := s.Node + " " + s.Role() + " term=" + s.Inspect["ergo:term"] + " leader=" + s.Leader() + " view=" + s.Inspect["ergo:view_size"]
	if u := s.Inspect["ergo:unreachable"]; u != "" {
		out += " unreachable=" + u
	}
	return out
}

// summary is what decides whether a status is worth pushing unasked.
func (s Status) summary() string {
	out := s.String()
	peers := make([]string, 0, len(s.Links))
	for peer := range s.Links {
		peers = append(peers, peer)
	}
	slices.Sort(peers)
	for _, peer := range peers {
		l := s.Links[peer]
		out += " " + peer + ":" + strconv.FormatBool(l.Connected) + "/" + strconv.Itoa(l.PoolLen)
	}
	return out
}

// Event is something a node's program reports as it happens (Child.Emit),
// for example a leadership callback.
type Event struct {
	Node string `json:"node"`
	// At is when it happened (Unix ns).
	At     int64  `json:"at"`
	Kind   string `json:"kind"`
	Term   uint64 `json:"term,omitempty"`
	Leader string `json:"leader,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// Time is At as a time.
func (e Event) Time() time.Time { return time.Unix(0, e.At) }

func (e Event) String() string {
	out := e.Time().Format("15:04:05.000000") + " " + e.Node + " " + e.Kind
	if e.Term != 0 {
		out += " term=" + strconv.FormatUint(e.Term, 10)
	}
	if e.Leader != "" {
		out += " leader=" + e.Leader
	}
	if e.Detail != "" {
		out += " " + e.Detail
	}
	return out
}
