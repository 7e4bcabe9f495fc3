package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"ergo.services/actor/leader/examples/internal/demokit"
	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// runDemo starts the nodes and plays the story: elect, kill the leader,
// restart it, partition, heal, stop the leader gracefully.
func runDemo(ctx context.Context, cfg config, out io.Writer) (report, error) {
	// Redrawing needs a terminal; into a file or a pipe it would write
	// thousands of frames of escapes.
	if _, _, ok := terminalSize(out); ok == false {
		cfg.plain = true
	}
	d := newDemo(cfg, out)
	cluster, err := lab.New(d.names, lab.Options{Cookie: cfg.cookie, Node: d.nodeOptions, Setup: d.setup, Drop: cfg.cut == "drop"})
	if err != nil {
		return report{}, err
	}
	d.cluster = cluster

	d.start = time.Now() // before any goroutine that reads it
	watch, stopWatching := context.WithCancel(context.Background())
	polling := d.obs.run(watch, d.names, cluster.Node, 20*time.Millisecond)
	redraw, stopDrawing := context.WithCancel(watch)
	defer stopDrawing()
	drawing := d.screen(redraw)
	if cfg.plain {
		d.printf("Leader election: %d nodes in one process, linked through per-pair TCP proxies", len(d.names))
		d.printf("election timeout %d-%d ms, heartbeat %d ms, MinClusterSize %d", cfg.electionMin, cfg.electionMax, cfg.heartbeat, cfg.minSize)
		for _, name := range d.names {
			d.printf("  %s = %s", d.letter(name), string(name))
		}
	}

	storyErr := d.story(ctx)
	d.over.Store(true)

	d.mu.Lock()
	if n := len(d.phases); n > 0 && d.phases[n-1].End.IsZero() {
		d.phases[n-1].End = time.Now()
	}
	d.mu.Unlock()
	r := report{Steps: d.steps, Elapsed: time.Since(d.start)}
	summary := d.summary(r.Elapsed)
	stopDrawing()
	drawing.Wait()
	if cfg.plain == false {
		// The last frame shows the cluster as the story left it, not the
		// teardown, and leaves room below for the summary (and the line
		// naming the timeline), so that the table stays on the screen.
		cols, _, _ := terminalSize(out)
		summary = wrapAll(summary, cols-1)
		d.draw(len(summary) + 2)
		d.printf("%s", ansiShowCursor)
	}
	cluster.Close()
	stopWatching()
	polling.Wait()

	d.printf("%s", strings.Join(summary, "\n"))
	if cfg.timeline != "" {
		if err := writeTimeline(cfg.timeline, d); err != nil {
			return r, errors.Join(storyErr, fmt.Errorf("timeline: %w", err))
		}
		r.Timeline = cfg.timeline
		d.printf("timeline written to %s", cfg.timeline)
	}
	return r, storyErr
}

func (d *demo) story(ctx context.Context) error {
	if err := d.cluster.StartAll(); err != nil {
		return err
	}
	steps := []func(context.Context) error{d.firstElection, d.killLeader, d.restart, d.partition, d.heal, d.gracefulStop}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			d.failed(err)
			return err
		}
		d.linger(ctx)
	}
	return ctx.Err()
}

// timeout bounds every wait of the story: generous, because a loaded CI box
// running with -race is slow, and a healthy run takes a fraction of it.
func (d *demo) timeout() time.Duration {
	return 20*time.Second + 40*time.Duration(d.cfg.electionMax)*time.Millisecond
}

// waitAgreed polls until the nodes agree on one leader (in samples taken
// after since) and extra, if any, holds; it returns when that was observed.
func (d *demo) waitAgreed(ctx context.Context, names []gen.Atom, since time.Time, extra func(agreement) bool) (agreement, time.Time, error) {
	deadline := time.Now().Add(d.timeout())
	for {
		if a, ok := d.obs.agreed(names, since); ok && (extra == nil || extra(a)) {
			return a, time.Now(), nil
		}
		if time.Now().After(deadline) {
			return agreement{}, time.Time{}, fmt.Errorf("nodes %s did not agree on one leader within %s:\n%s",
				d.letterList(names), d.timeout(), renderTable(d.names, d.obs.snapshot(), d.letter, false))
		}
		select {
		case <-ctx.Done():
			return agreement{}, time.Time{}, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (d *demo) current() agreement {
	a, _ := d.obs.agreed(d.running(), time.Time{})
	return a
}

// running returns the nodes that are up, in name order.
func (d *demo) running() []gen.Atom {
	var list []gen.Atom
	for _, name := range d.names {
		if d.cluster.Node(name) != nil {
			list = append(list, name)
		}
	}
	return list
}

func without(names []gen.Atom, drop gen.Atom) []gen.Atom {
	return slices.DeleteFunc(slices.Clone(names), func(n gen.Atom) bool { return n == drop })
}

func ms(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

// msText is a short gap in milliseconds, "7 ms", with a decimal below 10.
func msText(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v < 10 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// (a) Every node starts as a follower; one election timer fires first.
func (d *demo) firstElection(ctx context.Context) error {
	d.begin("a", "first election", "Waiting for a leader: every node starts as a follower and campaigns when its randomised election timer fires.")
	a, at, err := d.waitAgreed(ctx, d.names, d.start, nil)
	if err != nil {
		return err
	}
	first, _ := d.obs.firstLeader(d.start, "")
	d.finish(stepResult{Key: "a", Title: "first election", Leader: d.letter(a.Leader), Term: a.Term, OK: true,
		Measured: fmt.Sprintf("elected %s after start, all %d follow after %s", ms(first.At.Sub(d.start)), len(d.names), ms(at.Sub(d.start))),
		Took:     at.Sub(d.start)})
	return nil
}

// (b) The leader's node dies without a word.
func (d *demo) killLeader(ctx context.Context) error {
	old := d.current()
	d.begin("b", "leader killed", "Killing the leader's node %s abruptly (StopForce): no handover, its connections simply drop.", d.letter(old.Leader))
	t0 := time.Now()
	d.cluster.Kill(old.Leader)
	survivors := without(d.names, old.Leader)
	a, at, err := d.waitAgreed(ctx, survivors, t0, func(a agreement) bool { return a.Leader != old.Leader })
	if err != nil {
		return err
	}
	first, _ := d.obs.firstLeader(t0, old.Leader)
	d.addMark("kill", t0, "kill %s: failover %s", d.letter(old.Leader), msText(first.At.Sub(t0)))
	d.finish(stepResult{Key: "b", Title: fmt.Sprintf("leader %s killed (StopForce)", d.letter(old.Leader)),
		Leader: d.letter(old.Leader) + " -> " + d.letter(a.Leader), Term: a.Term, OK: true,
		Measured: fmt.Sprintf("failover %s to a new leader, all %d survivors follow after %s", ms(first.At.Sub(t0)), len(survivors), ms(at.Sub(t0))),
		Took:     at.Sub(t0)})
	return nil
}

// (b') The killed node comes back: a new process with a fresh term.
func (d *demo) restart(ctx context.Context) error {
	var down gen.Atom
	for _, name := range d.names {
		if d.cluster.Node(name) == nil {
			down = name
		}
	}
	d.begin("b'", "restart", "Restarting %s: it comes back with term 0, learns the current term from its peers and follows.", d.letter(down))
	t0 := time.Now()
	if _, err := d.cluster.Start(down); err != nil {
		return err
	}
	d.addMark("restart", t0, "restart %s", d.letter(down))
	a, at, err := d.waitAgreed(ctx, d.names, t0, func(agreement) bool { return d.obs.viewsAre(d.names, len(d.names), t0) })
	if err != nil {
		return err
	}
	d.finish(stepResult{Key: "b'", Title: fmt.Sprintf("%s restarted", d.letter(down)), Leader: d.letter(a.Leader), Term: a.Term, OK: true,
		Measured: fmt.Sprintf("rejoined, all views back to %d after %s", len(d.names), ms(at.Sub(t0))),
		Took:     at.Sub(t0), Extra: rediscover})
	return nil
}

// (c) The spec's partition: the leader keeps a majority, the minority cannot
// elect because a lost connection does not shrink its view.
func (d *demo) partition(ctx context.Context) error {
	before := d.current()
	majority := []gen.Atom{before.Leader}
	for _, name := range d.names {
		if name != before.Leader && len(majority) < len(d.names)/2+1 {
			majority = append(majority, name)
		}
	}
	var minority []gen.Atom
	for _, name := range d.names {
		if slices.Contains(majority, name) == false {
			minority = append(minority, name)
		}
	}
	slices.Sort(majority)
	title := fmt.Sprintf("partition %s | %s", d.letterList(majority), d.letterList(minority))
	d.begin("c", title, "Partition %s | %s: cutting every proxy link between the two sides, leader %s in the majority.",
		d.letterList(majority), d.letterList(minority), d.letter(before.Leader))
	d.say("    The minority keeps all %d nodes in its view, so it still needs %d votes and cannot elect.", len(d.names), len(d.names)/2+1)

	t0 := time.Now()
	d.cluster.Partition(majority, minority)
	d.addMark("cut", t0, "cut: every link %s - %s", d.letterList(majority), d.letterList(minority))
	// Long enough for the minority to campaign, and fail, several times.
	hold := max(d.cfg.pause, 4*time.Duration(d.cfg.electionMax)*time.Millisecond)
	deadline := t0.Add(hold)
	// The leader should hold its term throughout; every sample checks it.
	// Losing it is not a safety failure (the majority may elect again), but
	// it is not the story either, so it is reported: it means the leader
	// missed its quorum for a whole election timeout - a stalled process.
	kept := true
	for time.Now().Before(deadline) {
		s := d.obs.snapshot()[before.Leader]
		if kept && s.At.After(t0) && (s.State != "leader" || s.Term != before.Term) {
			kept = false
			d.say("    Leader %s lost leadership (%s at term %d): it heard from no quorum for %d ms - a stall, not the partition.",
				d.letter(before.Leader), s.State, s.Term, d.cfg.electionMin)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}

	// Nobody in the minority was promoted: the callbacks see every promotion.
	for _, e := range d.obs.allEvents() {
		if e.Leading && e.At.After(t0) && slices.Contains(minority, e.Node) {
			return fmt.Errorf("%s: minority node %s became leader at term %d", title, d.letter(e.Node), e.Term)
		}
	}
	latest := d.obs.snapshot()
	var preVotes []string
	for _, name := range minority {
		s := latest[name]
		if s.Leader != "" || s.State == "leader" {
			return fmt.Errorf("%s: minority node %s still recognises leader %s", title, d.letter(name), d.letter(s.Leader))
		}
		preVotes = append(preVotes, d.letter(name)+":"+dash(s.PreVotes))
	}
	// The partition is real: the framework has no connection across it.
	// With -cut drop the side that dialled may still have one for a while:
	// its links re-dial into the silent proxy, and the connection is lost
	// only when those handshakes time out (the framework's default is 5 s).
	settled := time.Now()
	if d.cfg.cut == "drop" {
		settled = t0.Add(6 * time.Second)
	}
	for connected := true; connected; {
		connected = false
		for _, a := range majority {
			for _, b := range minority {
				if node := d.cluster.Node(a); node != nil {
					if _, err := node.Network().Node(b); err == nil {
						if time.Now().After(settled) {
							return fmt.Errorf("%s: %s is still connected to %s", title, d.letter(a), d.letter(b))
						}
						connected = true
					}
				}
			}
		}
		if connected {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	a, _, err := d.waitAgreed(ctx, majority, t0, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", title, err)
	}
	r := stepResult{Key: "c", Title: title, Leader: d.letter(a.Leader), Term: a.Term, OK: true, Kept: kept && a == before,
		Measured: fmt.Sprintf("kept term %d for %s; minority elected nobody (pre-vote rounds %s)",
			a.Term, ms(hold), strings.Join(preVotes, " "))}
	if r.Kept == false {
		r.Leader = d.letter(before.Leader) + " -> " + d.letter(a.Leader)
		r.Measured = fmt.Sprintf("leadership moved within the majority (a stall); minority elected nobody (pre-vote rounds %s)",
			strings.Join(preVotes, " "))
	}
	d.finish(r)
	return nil
}

// (d) Connectivity returns; the sides find each other through the protocol.
func (d *demo) heal(ctx context.Context) error {
	d.begin("d", "heal", "Healing the partition: the probes get through again, views grow back to %d, one leader remains.", len(d.names))
	t0 := time.Now()
	d.cluster.Heal()
	d.addMark("heal", t0, "heal: links restored")
	a, at, err := d.waitAgreed(ctx, d.names, t0, func(agreement) bool { return d.obs.viewsAre(d.names, len(d.names), t0) })
	if err != nil {
		return err
	}
	d.finish(stepResult{Key: "d", Title: "heal", Leader: d.letter(a.Leader), Term: a.Term, OK: true,
		Measured: fmt.Sprintf("one leader, all views back to %d after %s", len(d.names), ms(at.Sub(t0))),
		Took:     at.Sub(t0), Extra: rediscover})
	return nil
}

// (e) A planned stop: the leader hands over before it goes.
func (d *demo) gracefulStop(ctx context.Context) error {
	old := d.current()
	d.begin("e", "graceful stop", "Stopping the leader's node %s gracefully (node Stop): it steps down and tells an up-to-date follower to campaign at once.", d.letter(old.Leader))
	t0 := time.Now()
	stopped := make(chan struct{})
	go func() {
		d.cluster.Stop(old.Leader)
		close(stopped)
	}()
	survivors := without(d.names, old.Leader)
	a, at, err := d.waitAgreed(ctx, survivors, t0, func(a agreement) bool { return a.Leader != old.Leader })
	if err != nil {
		return err
	}
	select {
	case <-stopped:
	case <-time.After(d.timeout()):
		return fmt.Errorf("node %s did not stop within %s", d.letter(old.Leader), d.timeout())
	}
	first, _ := d.obs.firstLeader(t0, old.Leader)
	d.addMark("stop", t0, "stop %s: handover %s", d.letter(old.Leader), msText(first.At.Sub(t0)))
	gap := fmt.Sprintf("handover gap %s to a new leader, all %d survivors follow after %s", ms(first.At.Sub(t0)), len(survivors), ms(at.Sub(t0)))
	d.finish(stepResult{Key: "e", Title: fmt.Sprintf("leader %s stopped gracefully", d.letter(old.Leader)),
		Leader: d.letter(old.Leader) + " -> " + d.letter(a.Leader), Term: a.Term, OK: true, Measured: gap, Took: at.Sub(t0)})
	return nil
}

// failed records the step in progress as failed, so the summary shows where
// the story stopped.
func (d *demo) failed(err error) {
	d.mu.Lock()
	var p phase
	if n := len(d.phases); n > 0 {
		p = d.phases[n-1]
	}
	d.mu.Unlock()
	first, _, _ := strings.Cut(err.Error(), "\n")
	d.finish(stepResult{Key: p.Key, Title: p.Label, Leader: "?", Measured: first})
}

// verdict is a step's word in the summary: a slow figure is flagged, not
// passed off as the election's.
func verdict(s stepResult) string {
	switch {
	case s.OK == false:
		return "FAILED"
	case s.Slow:
		return "SLOW"
	}
	return "ok"
}

// summary is the closing report, two lines a step (and a third for a slow
// one), so that it fits an 80-column terminal.
func (d *demo) summary(elapsed time.Duration) []string {
	lines := []string{"", fmt.Sprintf("Summary: %d nodes, timeouts %d-%d ms, heartbeat %d ms, MinClusterSize %d",
		len(d.names), d.cfg.electionMin, d.cfg.electionMax, d.cfg.heartbeat, d.cfg.minSize)}
	const indent = "      "
	for _, s := range d.steps {
		lines = append(lines,
			fmt.Sprintf("  %-4s%-7s%-30s leader %-7s term %d", s.Key+".", verdict(s), s.Title, s.Leader, s.Term),
			indent+s.Measured)
		if verdict(s) == "SLOW" {
			lines = append(lines, indent+demokit.SlowNote(d.cfg.electionMax, s.Extra))
		}
	}
	return append(lines, "  whole story: "+ms(elapsed))
}
