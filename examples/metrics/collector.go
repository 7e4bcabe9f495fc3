package main

// This file is the part to copy: a prometheus.Collector for leader actors.
// It depends on client_golang and the framework's gen package only.

import (
	"errors"
	"strconv"
	"sync"
	"time"

	"ergo.services/ergo/gen"
	"github.com/prometheus/client_golang/prometheus"
)

// Source is one leader actor to export: the node it runs on and the name it
// is registered under. The collector needs the node because gen.Node.Inspect
// reads local processes only, so export from the process that hosts the
// actor. It looks the name up on every scrape, so a restarted actor (a new
// PID under the same name) is followed without telling the collector.
type Source struct {
	Node gen.Node
	Name gen.Atom
}

// Collector exports the election's figures of leader actors to Prometheus.
//
// It reads the actor's inspect keys (gen.Node.Inspect) on every scrape, not
// on a timer of its own: a scrape then shows the actor's state at that
// moment, and an idle exporter costs nothing. Counters are exported as the
// actor counts them, from its start; a restarted actor starts again from
// zero, which Prometheus's rate() and increase() treat as a counter reset.
//
// Every sample carries the labels cluster (the actor's ClusterID, read from
// the actor) and node (the name of its node).
//
// A source whose actor cannot be inspected (its node stopped, the name not
// registered, the actor busy for longer than the framework's request
// timeout) gives no samples of its own in that scrape: a stale figure from
// an earlier scrape would be worse than a gap. A value that does not parse
// (a key an older actor does not know reads "<unknown item>") drops that
// one metric. Both are counted in leader_inspect_errors_total, by reason
// ("inspect" or "parse"), so a gap is visible as such.
type Collector struct {
	sources []Source

	mu       sync.Mutex
	errors   map[errorKey]uint64
	clusters map[string]string // node/name to the cluster it reported last, to label its inspect errors
}

type errorKey struct{ cluster, node, reason string }

// Reasons of leader_inspect_errors_total.
const (
	ReasonInspect = "inspect" // the actor could not be inspected: no samples from it
	ReasonParse   = "parse"   // one value did not parse: that metric is left out
)

// metric maps one inspect key to one Prometheus metric.
type metric struct {
	key   string
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	parse func(string) (float64, error)
}

var labels = []string{"cluster", "node"}

func newMetric(key, name, help string, kind prometheus.ValueType, parse func(string) (float64, error)) metric {
	return metric{key: key, desc: prometheus.NewDesc(name, help, labels, nil), kind: kind, parse: parse}
}

// The exported metrics. Durations are in seconds and counters end in
// _total, as Prometheus's naming conventions ask.
var metrics = []metric{
	newMetric("ergo:elections_started", "leader_elections_started_total",
		"Vote rounds this node opened as a candidate.", prometheus.CounterValue, parseCount),
	newMetric("ergo:elections_won", "leader_elections_won_total",
		"Vote rounds that made this node leader.", prometheus.CounterValue, parseCount),
	newMetric("ergo:elections_lost", "leader_elections_lost_total",
		"Vote rounds this node opened that did not make it leader, the one in progress left out.", prometheus.CounterValue, parseCount),
	newMetric("ergo:leader_changes", "leader_changes_total",
		"Times this node recognised a leader other than the one before, the first one included.", prometheus.CounterValue, parseCount),
	newMetric("ergo:leader", "leader_is_leader",
		"1 while this node believes it leads, else 0.", prometheus.GaugeValue, parseBool),
	newMetric("ergo:term", "leader_term",
		"The node's current election term.", prometheus.GaugeValue, parseCount),
	newMetric("ergo:view_size", "leader_view_size",
		"Members of the node's view, itself included.", prometheus.GaugeValue, parseCount),
	newMetric("ergo:quorum", "leader_quorum",
		"Votes needed to lead: a majority of the view.", prometheus.GaugeValue, parseCount),
	newMetric("ergo:leaderless_for", "leader_leaderless_seconds",
		"How long this node has recognised no leader; 0 while it recognises one.", prometheus.GaugeValue, parseSeconds),
	newMetric("ergo:leaderless_total", "leader_leaderless_seconds_total",
		"Time this node spent recognising no leader since the actor started, the current period included.", prometheus.CounterValue, parseSeconds),
	newMetric("ergo:failover_gap_last", "leader_last_failover_gap_seconds",
		"The last failover as this node saw it: from losing its leader to recognising the next (its leaderless gap); 0 before the first.", prometheus.GaugeValue, parseSeconds),
	newMetric("ergo:leaderless_last", "leader_last_leaderless_seconds",
		"The last completed period without a leader.", prometheus.GaugeValue, parseSeconds),
}

var inspectErrorsDesc = prometheus.NewDesc("leader_inspect_errors_total",
	"Failures to read a leader actor's figures: reason inspect (no samples from the actor in that scrape) or parse (one metric left out).",
	[]string{"cluster", "node", "reason"}, nil)

const keyCluster = "ergo:cluster"

// inspectKeys are the keys one scrape asks for: only these, not the whole
// inspect map, which also renders lists of peers.
var inspectKeys = func() []string {
	keys := []string{keyCluster}
	for _, m := range metrics {
		keys = append(keys, m.key)
	}
	return keys
}()

// NewCollector returns a collector for the given leader actors. Register it
// with a prometheus.Registerer.
func NewCollector(sources ...Source) *Collector {
	return &Collector{
		sources:  append([]Source(nil), sources...),
		errors:   make(map[errorKey]uint64),
		clusters: make(map[string]string),
	}
}

// Describe sends every metric's description: the collector is a checked
// one, so the registry rejects a name clash at registration, not at scrape.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range metrics {
		ch <- m.desc
	}
	ch <- inspectErrorsDesc
}

// Collect inspects every source and sends its samples. The sources are
// inspected concurrently: an inspect waits for the actor to take the request
// from its mailbox, and one slow actor should not add its wait to the
// others'.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var wg sync.WaitGroup
	for _, s := range c.sources {
		wg.Go(func() { c.collect(s, ch) })
	}
	wg.Wait()

	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.errors {
		ch <- prometheus.MustNewConstMetric(inspectErrorsDesc, prometheus.CounterValue, float64(n), k.cluster, k.node, k.reason)
	}
}

func (c *Collector) collect(s Source, ch chan<- prometheus.Metric) {
	node := string(s.Node.Name())
	id := node + "/" + string(s.Name)
	values, err := inspect(s)
	if err != nil {
		c.mu.Lock()
		cluster := c.clusters[id]
		c.mu.Unlock()
		c.countError(cluster, node, ReasonInspect)
		return
	}
	cluster := values[keyCluster]
	c.mu.Lock()
	c.clusters[id] = cluster
	c.mu.Unlock()
	for _, m := range metrics {
		v, err := m.parse(values[m.key])
		if err != nil {
			c.countError(cluster, node, ReasonParse)
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, v, cluster, node)
	}
}

// errUnknownItem is an actor's answer for a key it does not know.
var errUnknownItem = errors.New("unknown inspect item")

func inspect(s Source) (map[string]string, error) {
	pid, err := s.Node.ProcessPID(s.Name)
	if err != nil {
		return nil, err
	}
	values, err := s.Node.Inspect(pid, inspectKeys...)
	if err != nil {
		return nil, err
	}
	// A process under that name that is no leader actor answers without
	// the election's keys.
	if cluster, ok := values[keyCluster]; ok == false || cluster == "<unknown item>" {
		return nil, errUnknownItem
	}
	return values, nil
}

func (c *Collector) countError(cluster, node, reason string) {
	c.mu.Lock()
	c.errors[errorKey{cluster, node, reason}]++
	c.mu.Unlock()
}

func parseCount(s string) (float64, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	return float64(n), err
}

func parseBool(s string) (float64, error) {
	b, err := strconv.ParseBool(s)
	if b {
		return 1, err
	}
	return 0, err
}

// parseSeconds reads a Go duration ("1.5s", "0s") as seconds.
func parseSeconds(s string) (float64, error) {
	d, err := time.ParseDuration(s)
	return d.Seconds(), err
}
