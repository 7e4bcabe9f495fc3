// Command metrics exports the leader election's figures to Prometheus.
//
// It starts a cluster of three nodes in this process, each with a leader
// actor, and serves /metrics, where a prometheus.Collector (collector.go,
// the part to copy) reads every actor's inspect keys on each scrape:
// elections started, won and lost, leader changes, the term, the view, time
// without a leader and the last failover, labelled by cluster and node.
// After a few seconds it stops the leader's node, so the failover shows up
// in the figures.
//
//	go run ./examples/metrics
//	curl -s localhost:9464/metrics | grep ^leader_
//	go run ./examples/metrics -failover=false -listen 127.0.0.1:0
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"ergo.services/actor/leader"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

func main() { lab.Main("metrics", run) }

// config is the command line, parsed.
type config struct {
	listen        string
	nodes         int
	failover      bool
	failoverAfter time.Duration
	duration      time.Duration
	rediscover    time.Duration
	electionMin   int
	electionMax   int
	heartbeat     int
	cookie        string
	verbose       bool
}

func parseConfig(args []string, output io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("metrics", flag.ContinueOnError)
	fs.SetOutput(output)
	fs.StringVar(&c.listen, "listen", "127.0.0.1:9464", "address of the HTTP server that serves /metrics (port 0 picks one)")
	fs.IntVar(&c.nodes, "nodes", 3, "nodes in the cluster")
	fs.BoolVar(&c.failover, "failover", true, "stop the leader's node once, after -failover-after, to show a failover")
	fs.DurationVar(&c.failoverAfter, "failover-after", 5*time.Second, "when to stop the leader's node, counted from the first leader")
	fs.DurationVar(&c.duration, "duration", 0, "stop after this long; 0 runs until Ctrl-C")
	fs.DurationVar(&c.rediscover, "rediscover", 500*time.Millisecond, "how often each actor joins the static peer list again")
	fs.IntVar(&c.electionMin, "election-min", 150, "ElectionTimeoutMin, ms")
	fs.IntVar(&c.electionMax, "election-max", 300, "ElectionTimeoutMax, ms")
	fs.IntVar(&c.heartbeat, "heartbeat", 50, "HeartbeatInterval, ms")
	fs.StringVar(&c.cookie, "cookie", "metrics-demo", "network cookie shared by all nodes")
	fs.BoolVar(&c.verbose, "v", false, "print the actors' warnings")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if c.nodes < 3 {
		return c, fmt.Errorf("-nodes %d: a failover needs at least 3 nodes", c.nodes)
	}
	return c, nil
}

func (c config) clusterConfig(log io.Writer) clusterConfig {
	if c.verbose == false {
		log = nil
	}
	return clusterConfig{
		Size:   c.nodes,
		Cookie: c.cookie,
		Options: leader.Options{
			ClusterID:          "metrics",
			MinClusterSize:     3,
			ElectionTimeoutMin: c.electionMin,
			ElectionTimeoutMax: c.electionMax,
			HeartbeatInterval:  c.heartbeat,
		},
		Rediscover: c.rediscover,
		Log:        log,
	}
}

// newHandler serves the collector's metrics from a registry of their own,
// so that nothing else (and no second instance, as in the tests) shares the
// default registry. ContinueOnError serves what could be gathered even when
// something failed.
func newHandler(collector prometheus.Collector) (http.Handler, *prometheus.Registry, error) {
	registry := prometheus.NewRegistry()
	if err := registry.Register(collector); err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	return mux, registry, nil
}

// run is the whole program; main only wires it to the process.
func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseConfig(args, out)
	if err != nil {
		return err
	}
	if cfg.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.duration)
		defer cancel()
	}
	start := time.Now()
	say := func(format string, args ...any) {
		fmt.Fprintf(out, "[%6.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}

	c, err := startCluster(cfg.clusterConfig(out))
	if err != nil {
		return err
	}
	defer c.close()

	handler, registry, err := newHandler(NewCollector(c.sources()...))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	server := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- server.Serve(ln) }()
	defer server.Close()
	say("%d nodes started; metrics are served on http://%s/metrics", cfg.nodes, ln.Addr())

	wait := 30 * time.Second
	first, err := waitLeader(ctx, registry, "", wait)
	if err != nil {
		return quiet(ctx, err)
	}
	say("leader: %s", first)
	say("  %s", summary(registry, first))

	var failover <-chan time.Time
	if cfg.failover {
		failover = time.After(cfg.failoverAfter)
	}
	for {
		select {
		case <-ctx.Done():
			say("stopping")
			return nil
		case err := <-served:
			return err
		case <-failover:
			failover = nil
			i := slices.IndexFunc(c.nodes, func(n gen.Node) bool { return string(n.Name()) == first })
			say("stopping the leader's node %s (node.Stop)", first)
			c.stop(i)
			next, err := waitLeader(ctx, registry, first, wait)
			if err != nil {
				return quiet(ctx, err)
			}
			say("new leader: %s", next)
			say("  %s", summary(registry, next))
			say("metrics keep being served on http://%s/metrics; Ctrl-C stops", ln.Addr())
		}
	}
}

// quiet drops the error of a wait that Ctrl-C or -duration ended: that is
// the way out, not a failure.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// gather reads the registry as a scrape would, as metric name -> node ->
// value (the program runs one cluster).
func gather(registry *prometheus.Registry) map[string]map[string]float64 {
	families, _ := registry.Gather() // what could be gathered, as the handler serves it
	values := make(map[string]map[string]float64)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			node := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "node" {
					node = l.GetValue()
				}
			}
			if values[f.GetName()] == nil {
				values[f.GetName()] = make(map[string]float64)
			}
			values[f.GetName()][node] += value(m)
		}
	}
	return values
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	}
	return 0
}

// waitLeader polls the metrics until exactly one node other than skip
// reports leader_is_leader 1, and returns it.
func waitLeader(ctx context.Context, registry *prometheus.Registry, skip string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		var leaders []string
		for node, v := range gather(registry)["leader_is_leader"] {
			if v == 1 && node != skip {
				leaders = append(leaders, node)
			}
		}
		if len(leaders) == 1 {
			return leaders[0], nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no single leader within %s (leaders: %v)", timeout, leaders)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// summary is one line of node's figures, as a scrape shows them.
func summary(registry *prometheus.Registry, node string) string {
	values := gather(registry)
	var b strings.Builder
	for _, name := range []string{
		"leader_term", "leader_view_size", "leader_quorum",
		"leader_elections_started_total", "leader_elections_won_total", "leader_changes_total",
		"leader_last_leaderless_seconds", "leader_last_failover_gap_seconds",
	} {
		if v, ok := values[name][node]; ok {
			fmt.Fprintf(&b, " %s=%g", name, v)
		}
	}
	return strings.TrimSpace(b.String())
}
