package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"ergo.services/actor/leader/examples/internal/lab"
	"ergo.services/ergo/gen"
)

// procCluster is a set of node processes (procs_child.go) and what their
// callbacks say: the harness of section 6c. Every figure of a node comes
// from that node's own process.
type procCluster struct {
	names  []gen.Atom
	nodes  []*procNode
	groups int

	mu      sync.Mutex
	state   [][]procState // [election][node]: the latest callback
	leads   []int         // HandleBecomeLeader calls per node
	changed chan struct{} // a callback arrived
	// From a kill on (killedAt, unix ns; 0 before any), the first agreement
	// each election reached after it: a failover is measured when it
	// happens, not by what holds at the end of the wait. With three nodes
	// and MinClusterSize 3 every election loses its leader again once the
	// dead node leaves the survivors' views (GhostTTL), as the contract
	// says, so the state at the end of a long wait says nothing about
	// failovers that were done in time.
	killedAt int64
	firstLed []procAgreement

	progress func(format string, args ...any) // nil: quiet
}

// procNode is one node process.
type procNode struct {
	name    gen.Atom
	cmd     *exec.Cmd
	in      io.WriteCloser
	replies chan string // every line but the events
	dead    bool
}

// procState is the latest callback of one member.
type procState struct {
	kind   byte // 0 (none yet), S, L, F, T
	leader int  // node index, -1 for none
	term   uint64
	at     int64 // unix ns
}

// startProcCluster starts n node processes for groups elections and waits
// until each listens; the members are spawned by spawn.
func startProcCluster(n, groups int) (*procCluster, error) {
	run := runSeq.Add(1)
	c := &procCluster{groups: groups, leads: make([]int, n), changed: make(chan struct{}, 1)}
	ports := make(map[gen.Atom]uint16)
	for i := 0; i < n; i++ {
		name := gen.Atom(fmt.Sprintf("procs-%d-%d-%02d@localhost", os.Getpid(), run, i))
		port, err := lab.FreePort()
		if err != nil {
			return nil, err
		}
		c.names, ports[name] = append(c.names, name), port
	}
	c.state = make([][]procState, groups)
	for g := range c.state {
		c.state[g] = make([]procState, n)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	for i, name := range c.names {
		peers := make(map[gen.Atom]uint16)
		for peer, port := range ports {
			if peer != name {
				peers[peer] = port
			}
		}
		spec, err := json.Marshal(procSpec{Name: name, Cookie: perfCookie, Port: ports[name], Peers: peers,
			Names: c.names, Groups: groups, Symmetric: symmetricLoss})
		if err != nil {
			c.close()
			return nil, err
		}
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), procEnv+"="+string(spec))
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			c.close()
			return nil, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			c.close()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			c.close()
			return nil, err
		}
		node := &procNode{name: name, cmd: cmd, in: in, replies: make(chan string, 4)}
		c.nodes = append(c.nodes, node)
		go c.read(i, node, out)
	}
	for _, node := range c.nodes {
		if _, err := node.await("ready", 30*time.Second); err != nil {
			c.close()
			return nil, fmt.Errorf("node process %s: %w", node.name, err)
		}
	}
	return c, nil
}

// read takes one node process's lines: events into the state, the rest to
// its replies.
func (c *procCluster) read(i int, node *procNode, out io.Reader) {
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "e ") == false {
			node.replies <- line
			continue
		}
		f := strings.Fields(line)
		if len(f) != 6 || len(f[2]) != 1 {
			continue
		}
		g, _ := strconv.Atoi(f[1])
		lead, _ := strconv.Atoi(f[3])
		term, _ := strconv.ParseUint(f[4], 10, 64)
		at, _ := strconv.ParseInt(f[5], 10, 64)
		if g < 0 || g >= c.groups {
			continue
		}
		c.mu.Lock()
		c.state[g][i] = procState{kind: f[2][0], leader: lead, term: term, at: at}
		if c.killedAt != 0 && c.firstLed[g].leader < 0 {
			if a, ok := c.agreedLocked(g); ok && a.at >= c.killedAt {
				c.firstLed[g] = a
			}
		}
		if f[2][0] == 'L' {
			c.leads[i]++
		}
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
	close(node.replies)
}

// await waits for a reply that starts with word and returns the rest.
func (n *procNode) await(word string, within time.Duration) (string, error) {
	deadline := time.After(within)
	for {
		select {
		case line, ok := <-n.replies:
			if ok == false {
				return "", errors.New("the process ended before it said " + word)
			}
			if rest, found := strings.CutPrefix(line, word); found {
				return strings.TrimSpace(rest), nil
			}
		case <-deadline:
			return "", fmt.Errorf("no %q within %s", word, within)
		}
	}
}

// ask sends a command and waits for its reply.
func (n *procNode) ask(command string, within time.Duration) (string, error) {
	if _, err := fmt.Fprintln(n.in, command); err != nil {
		return "", err
	}
	word, _, _ := strings.Cut(command, " ")
	return n.await(word, within)
}

// cost reads every live node's counters.
func (c *procCluster) cost() ([]procCost, error) {
	costs := make([]procCost, len(c.nodes))
	for i, n := range c.nodes {
		if n.dead {
			continue
		}
		reply, err := n.ask("cost", 30*time.Second)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
		if err := json.Unmarshal([]byte(reply), &costs[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", n.name, err)
		}
	}
	return costs, nil
}

// hubCounters describes, for a progress line, each live node's CPU so
// far and its hub's records sent, epochs raised and late ticks: what a start that
// does not settle spends its time on.
func (c *procCluster) hubCounters() string {
	costs, err := c.cost()
	if err != nil {
		return ""
	}
	var b strings.Builder
	for i, cost := range costs {
		if c.nodes[i].dead {
			continue
		}
		fmt.Fprintf(&b, "; node %d: CPU %.1fs, %d records, %d lead and %d answer epochs raised, %d late ticks (latest %s)",
			i+1, cost.CPU.Seconds(), cost.Records, cost.Raises, cost.AnswerRaises, cost.LateTicks, cost.LateMax.Round(time.Millisecond))
	}
	return b.String()
}

// heaps reads every live node's live heap as its last collection found it.
func (c *procCluster) heaps() []uint64 {
	heaps := make([]uint64, len(c.nodes))
	for i, n := range c.nodes {
		if n.dead {
			continue
		}
		if reply, err := n.ask("heap", time.Minute); err == nil {
			heaps[i], _ = strconv.ParseUint(reply, 10, 64)
		}
	}
	return heaps
}

// spawn has every node spawn its members at once and returns when they all
// have, with the moment the first was told.
func (c *procCluster) spawn() (time.Time, error) {
	start := time.Now()
	for _, n := range c.nodes {
		if _, err := fmt.Fprintln(n.in, "spawn"); err != nil {
			return start, err
		}
	}
	for _, n := range c.nodes {
		if _, err := n.await("spawned", 5*time.Minute); err != nil {
			return start, fmt.Errorf("%s: %w", n.name, err)
		}
	}
	return start, nil
}

// kill ends node i's process with SIGKILL and returns the moment it was
// sent (a crash, its sockets closed by the kernel), and how long after it
// the process had exited: the kernel closes a process's sockets on its way
// out, so no survivor can see the crash before then.
func (c *procCluster) kill(i int) (time.Time, time.Duration) {
	n := c.nodes[i]
	at := time.Now()
	n.cmd.Process.Kill()
	n.cmd.Wait()
	exited := time.Since(at)
	c.mu.Lock()
	n.dead = true
	c.killedAt = at.UnixNano()
	c.firstLed = make([]procAgreement, c.groups)
	for g := range c.firstLed {
		c.firstLed[g] = procAgreement{leader: -1}
	}
	c.mu.Unlock()
	return at, exited
}

func (c *procCluster) close() {
	for _, n := range c.nodes {
		n.in.Close() // the process ends when its input does
	}
	for _, n := range c.nodes {
		if n.dead {
			continue
		}
		done := make(chan struct{})
		go func() { n.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			n.cmd.Process.Kill()
			<-done
		}
	}
}

// procAgreement is what the live members of one election agree on.
type procAgreement struct {
	leader int
	term   uint64
	at     int64 // the last callback that made it true
}

// agreedLocked reports whether every live member of election g recognises
// one live leader, that leader's member saying it leads; the term is the
// leader's. A follower's term is not compared: a leader that stood down and
// won again at the next term changes nothing its followers recognise, so
// they get no callback (and report the older term). Must hold c.mu.
func (c *procCluster) agreedLocked(g int) (procAgreement, bool) {
	a := procAgreement{leader: -1}
	for i, s := range c.state[g] {
		if c.nodes[i].dead {
			continue
		}
		if s.kind != 'L' && s.kind != 'F' {
			return a, false
		}
		lead := s.leader
		if s.kind == 'L' {
			lead = i
		}
		if lead < 0 || c.nodes[lead].dead || (a.leader >= 0 && lead != a.leader) {
			return procAgreement{leader: -1}, false
		}
		a.leader, a.at = lead, max(a.at, s.at)
	}
	if a.leader < 0 || c.state[g][a.leader].kind != 'L' {
		return procAgreement{leader: -1}, false
	}
	a.term = c.state[g][a.leader].term
	return a, true
}

// agreements returns every election's agreement (leader -1 for none).
func (c *procCluster) agreements() []procAgreement {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := make([]procAgreement, c.groups)
	for g := range all {
		all[g], _ = c.agreedLocked(g)
	}
	return all
}

// waitAllLed waits until every election has an agreed leader whose
// agreement formed after since, or within passes, and returns the moment
// the last one formed.
func (c *procCluster) waitAllLed(since time.Time, within time.Duration) (time.Time, int, error) {
	deadline, lastReport := time.Now().Add(within), time.Now()
	for {
		last, unled := since.UnixNano(), 0
		for _, a := range c.agreements() {
			switch {
			case a.leader < 0:
				unled++
			case a.at > last:
				last = a.at
			}
		}
		if unled == 0 {
			return time.Unix(0, last), 0, nil
		}
		if time.Since(lastReport) > 10*time.Second && c.progress != nil {
			lastReport = time.Now()
			c.progress("%d of %d elections without an agreed leader%s", unled, c.groups, c.hubCounters())
		}
		if time.Now().After(deadline) {
			return time.Time{}, unled, fmt.Errorf("%d of %d elections without an agreed leader after %s", unled, c.groups, within)
		}
		select {
		case <-c.changed:
		case <-time.After(100 * time.Millisecond):
		}
		time.Sleep(50 * time.Millisecond) // let a burst of callbacks land before the next pass
	}
}

// waitReLed waits until each election of groups has agreed on a leader
// since the last kill, or within passes.
func (c *procCluster) waitReLed(groups []int, within time.Duration) {
	deadline := time.Now().Add(within)
	for {
		c.mu.Lock()
		unled := 0
		for _, g := range groups {
			if c.firstLed == nil || c.firstLed[g].leader < 0 {
				unled++
			}
		}
		c.mu.Unlock()
		if unled == 0 || time.Now().After(deadline) {
			return
		}
		select {
		case <-c.changed:
		case <-time.After(100 * time.Millisecond):
		}
		time.Sleep(50 * time.Millisecond) // let a burst of callbacks land before the next pass
	}
}

// reLed returns the first agreement of election g since the last kill.
func (c *procCluster) reLed(g int) (procAgreement, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.firstLed == nil || c.firstLed[g].leader < 0 {
		return procAgreement{leader: -1}, false
	}
	return c.firstLed[g], true
}

// leadCount is the HandleBecomeLeader calls so far, all nodes.
func (c *procCluster) leadCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, n := range c.leads {
		total += n
	}
	return total
}

// describe says what the live members of election g say of themselves.
func (c *procCluster) describe(g int) string {
	var parts []string
	for _, node := range c.nodes {
		if node.dead {
			continue
		}
		reply, err := node.ask(fmt.Sprintf("describe %d", g), 10*time.Second)
		if err != nil {
			reply = err.Error()
		}
		parts = append(parts, fmt.Sprintf("perf-%d on %s: %s", g, node.name, reply))
	}
	return strings.Join(parts, "\n")
}

// describeUnled says what the members of up to n unled elections say of
// themselves.
func (c *procCluster) describeUnled(n int) string {
	var parts []string
	for g, a := range c.agreements() {
		if a.leader >= 0 {
			continue
		}
		parts = append(parts, c.describe(g))
		if n--; n == 0 {
			break
		}
	}
	return strings.Join(parts, "\n")
}

// reportWarnings shows the last warnings of every live node, if any.
func (c *procCluster) reportWarnings(p *plan) {
	for _, node := range c.nodes {
		if node.dead {
			continue
		}
		if reply, err := node.ask("warnings", 10*time.Second); err == nil && reply != "" {
			p.progress("procs: the last warnings of %s: %s", node.name, reply)
		}
	}
}
