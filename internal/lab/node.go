package lab

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Node is one node process of a Cluster (restartable: each start is a new
// incarnation with the same name and address).
type Node struct {
	c     *Cluster
	Index int
	Name  string
	IP    string

	mu          sync.Mutex
	incarnation int
	proc        *os.Process
	commands    *os.File
	exited      chan struct{}
	ready       chan report
	latest      Status
	pending     map[uint64]chan report
	nextID      uint64
	stalled     bool
	started     bool
	exitedAt    time.Time
	// params of this node's next starts on top of Config.Params
	// (RestartWith)
	params map[string]string
}

func (n *Node) logFile(incarnation int) string {
	return filepath.Join(n.c.dir, fmt.Sprintf("n%d.%d.log", n.Index+1, incarnation))
}

func (n *Node) spawn() error {
	var peers []peerConfig
	for _, o := range n.c.nodes {
		if o != n {
			peers = append(peers, peerConfig{Name: o.Name, IP: o.IP, Port: n.c.cfg.Port})
		}
	}
	config, err := json.Marshal(childConfig{
		Index: n.Index, Name: n.Name, IP: n.IP, Port: n.c.cfg.Port, Cookie: n.c.cfg.Cookie,
		Peers: peers, Params: n.mergedParams(), WorkLog: n.c.worklog,
		Pingers: n.c.cfg.Pingers, Poll: n.c.cfg.Poll,
	})
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	n.mu.Lock()
	if n.started {
		n.incarnation++
	}
	n.started = true
	incarnation := n.incarnation
	n.mu.Unlock()
	logf, err := os.Create(n.logFile(incarnation))
	if err != nil {
		return err
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		return err
	}
	repR, repW, err := os.Pipe()
	if err != nil {
		return err
	}
	// ip netns exec enters the namespace and execs the program in place, so
	// the process it starts is the node itself: signals go straight to it.
	cmd := exec.Command("ip", "netns", "exec", n.c.NS(n.Index), self)
	cmd.Env = append(os.Environ(), EnvNode+"="+string(config))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{cmdR, repW} // fd 3, fd 4
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		cmdR.Close()
		cmdW.Close()
		repR.Close()
		repW.Close()
		logf.Close()
		return err
	}
	cmdR.Close()
	repW.Close()
	exited := make(chan struct{})
	n.mu.Lock()
	n.proc = cmd.Process
	n.commands = cmdW
	n.exited = exited
	n.ready = make(chan report, 1)
	n.pending = make(map[uint64]chan report)
	n.latest = Status{Node: n.Name, Err: "not ready"}
	n.stalled = false
	n.exitedAt = time.Time{}
	n.mu.Unlock()
	go func() {
		cmd.Wait()
		n.mu.Lock()
		n.exitedAt = time.Now()
		n.mu.Unlock()
		logf.Close()
		cmdW.Close()
		close(exited)
	}()
	go n.read(repR)
	return nil
}

func (n *Node) read(r *os.File) {
	defer r.Close()
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for scanner.Scan() {
		var rep report
		if err := json.Unmarshal(scanner.Bytes(), &rep); err != nil {
			continue
		}
		n.mu.Lock()
		if rep.Status != nil && rep.Status.At >= n.latest.At {
			n.latest = *rep.Status
		}
		var waiter chan report
		switch rep.Kind {
		case "ready":
			select {
			case n.ready <- rep:
			default:
			}
		case "reply":
			waiter = n.pending[rep.ID]
			delete(n.pending, rep.ID)
		}
		n.mu.Unlock()
		if waiter != nil {
			waiter <- rep
		}
		if rep.Kind == "event" && rep.Event != nil {
			n.c.mu.Lock()
			n.c.events = append(n.c.events, *rep.Event)
			n.c.mu.Unlock()
		}
	}
}

func (n *Node) awaitReady(timeout time.Duration) error {
	n.mu.Lock()
	ready, exited := n.ready, n.exited
	n.mu.Unlock()
	select {
	case rep := <-ready:
		if rep.Err != "" {
			return errors.New(rep.Err)
		}
		return nil
	case <-exited:
		return fmt.Errorf("exited before it was ready; log:\n%s", tail(n.logFile(n.incarnation), 30))
	case <-time.After(timeout):
		return fmt.Errorf("not ready within %s", timeout)
	}
}

// Status is the latest status the node pushed or returned.
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.latest
}

// Pid is the node process's OS pid.
func (n *Node) Pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return 0
	}
	return n.proc.Pid
}

// Alive reports whether the node process is running (stalled counts).
func (n *Node) Alive() bool {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return false
	}
	select {
	case <-exited:
		return false
	default:
		return true
	}
}

// ExitedAt is when the test process saw the node process exit (reaped it),
// zero while it runs. A killed process closes its sockets, which is what
// its peers notice, only as it exits; on a loaded box that can come well
// after the signal.
func (n *Node) ExitedAt() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.exitedAt
}

// Stalled reports whether the node is stopped with SIGSTOP.
func (n *Node) Stalled() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stalled
}

// Do runs an operation on the node (OpStatus, OpGo or one of the
// program's) and returns its result; it waits up to 30 s.
func (n *Node) Do(op string, args ...string) (string, error) {
	rep, err := n.do(30*time.Second, op, args...)
	return rep.Result, err
}

// Refresh asks the node for a fresh status.
func (n *Node) Refresh() (Status, error) {
	rep, err := n.do(30*time.Second, OpStatus)
	if err != nil {
		return Status{}, err
	}
	return *rep.Status, nil
}

func (n *Node) do(timeout time.Duration, op string, args ...string) (report, error) {
	n.mu.Lock()
	n.nextID++
	id := n.nextID
	waiter := make(chan report, 1)
	n.pending[id] = waiter
	commands, exited := n.commands, n.exited
	n.mu.Unlock()
	line, _ := json.Marshal(command{ID: id, Op: op, Args: args})
	if _, err := commands.Write(append(line, '\n')); err != nil {
		return report{}, fmt.Errorf("%s %s: %w", n.Name, op, err)
	}
	select {
	case rep := <-waiter:
		if rep.Err != "" {
			return rep, fmt.Errorf("%s %s: %s", n.Name, op, rep.Err)
		}
		return rep, nil
	case <-exited:
		return report{}, fmt.Errorf("%s %s: the node exited", n.Name, op)
	case <-time.After(timeout):
		return report{}, fmt.Errorf("%s %s: no reply within %s", n.Name, op, timeout)
	}
}

func (n *Node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.proc == nil {
		return errors.New("not started")
	}
	if err := n.proc.Signal(sig); err != nil {
		return fmt.Errorf("%s: %s: %w", n.Name, sig, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.stalled = true
	case syscall.SIGCONT:
		n.stalled = false
	}
	return nil
}

// Kill crashes the node: SIGKILL, then it waits for the process to be
// gone. It returns the time the signal was sent.
func (n *Node) Kill() time.Time {
	n.c.t.Helper()
	return n.signalAndWait(syscall.SIGKILL, 10*time.Second)
}

// Terminate sends SIGTERM, as an orchestrator stopping a pod does (the
// framework answers it with a graceful Stop), and waits for the process to
// exit. It returns the time the signal was sent.
func (n *Node) Terminate() time.Time {
	n.c.t.Helper()
	return n.signalAndWait(syscall.SIGTERM, 30*time.Second)
}

// signalAndWait sends sig and waits up to within for the process to exit;
// it returns the time the signal was sent.
func (n *Node) signalAndWait(sig syscall.Signal, within time.Duration) time.Time {
	n.c.t.Helper()
	at := time.Now()
	if err := n.signal(sig); err != nil {
		n.c.t.Fatalf("lab: %v", err)
	}
	if n.waitExit(within) == false {
		n.c.t.Fatalf("lab: %s did not exit within %s of %s", n.Name, within, sig)
	}
	return at
}

// Stall freezes the node with SIGSTOP and returns the time it was sent.
func (n *Node) Stall() time.Time {
	n.c.t.Helper()
	at := time.Now()
	if err := n.signal(syscall.SIGSTOP); err != nil {
		n.c.t.Fatalf("lab: stall: %v", err)
	}
	return at
}

// Resume continues a stalled node with SIGCONT and returns the time it
// was sent.
func (n *Node) Resume() time.Time {
	n.c.t.Helper()
	at := time.Now()
	if err := n.signal(syscall.SIGCONT); err != nil {
		n.c.t.Fatalf("lab: resume: %v", err)
	}
	return at
}

// Stop stops the node gracefully (node.Stop in the child) and waits for
// the process to exit.
//
// A graceful Stop that takes the node's whole ShutdownTimeout means a
// process never ended (the framework lets a stopping node spawn a process,
// sends it no exit, and kills it only when the timeout runs out): Stop
// fails the test then.
func (n *Node) Stop() {
	n.c.t.Helper()
	start := time.Now()
	defer func() {
		if took := time.Since(start); took > ShutdownTimeout*9/10 {
			n.c.t.Errorf("lab: graceful Stop of %s took %s (ShutdownTimeout %s): a process of the node never ended; one spawned while the node stopped gets no exit", n.Name, took.Round(time.Millisecond), ShutdownTimeout)
		}
	}()
	n.mu.Lock()
	n.nextID++
	line, _ := json.Marshal(command{ID: n.nextID, Op: OpStop})
	commands := n.commands
	n.mu.Unlock()
	if _, err := commands.Write(append(line, '\n')); err != nil {
		n.c.t.Fatalf("lab: stop %s: %v", n.Name, err)
	}
	if n.waitExit(30*time.Second) == false {
		n.c.t.Fatalf("lab: %s did not stop within 30 s", n.Name)
	}
}

// Restart starts a new incarnation of a node that exited, with the same
// name and address, waits until it is ready and tells it to go.
func (n *Node) Restart() {
	n.c.t.Helper()
	if n.Alive() {
		n.c.t.Fatalf("lab: restart %s: it is still running", n.Name)
	}
	if err := n.spawn(); err != nil {
		n.c.t.Fatalf("lab: restart %s: %v", n.Name, err)
	}
	if err := n.awaitReady(60 * time.Second); err != nil {
		n.c.t.Fatalf("lab: restart %s: %v", n.Name, err)
	}
	if _, err := n.Do(OpGo); err != nil {
		n.c.t.Fatalf("lab: restart %s: go: %v", n.Name, err)
	}
}

// mergedParams is Config.Params with the node's own on top.
func (n *Node) mergedParams() map[string]string {
	if len(n.params) == 0 {
		return n.c.cfg.Params
	}
	merged := make(map[string]string, len(n.c.cfg.Params)+len(n.params))
	for k, v := range n.c.cfg.Params {
		merged[k] = v
	}
	for k, v := range n.params {
		merged[k] = v
	}
	return merged
}

// RestartWith restarts a node that exited (Restart) with params on top of
// the cluster's for this start and the next ones.
func (n *Node) RestartWith(params map[string]string) {
	n.c.t.Helper()
	n.params = params
	n.Restart()
}

// RestartAs starts a new incarnation of a node that exited under a new
// node name, in the same namespace and at the same address (a pod
// rescheduled under a new name), waits until it is ready and tells it to
// go. The other nodes route the new name already (by host); they learn it
// only when the test tells them (a discovery's Join).
func (n *Node) RestartAs(name string) {
	n.c.t.Helper()
	if n.Alive() {
		n.c.t.Fatalf("lab: restart %s as %s: it is still running", n.Name, name)
	}
	n.Name = name
	n.Restart()
}

func (n *Node) kill() {
	n.mu.Lock()
	proc := n.proc
	n.mu.Unlock()
	if proc != nil && n.Alive() {
		proc.Signal(syscall.SIGKILL)
	}
}

func (n *Node) waitExit(timeout time.Duration) bool {
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	if exited == nil {
		return true
	}
	select {
	case <-exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// Stalls returns the scheduling stalls of the node process (see Stall)
// that ended at or after since. A stalled (SIGSTOP) or exited node cannot
// answer: it returns nothing.
func (n *Node) Stalls(since time.Time) []Stall {
	if n.Alive() == false || n.Stalled() {
		return nil
	}
	rep, err := n.do(10*time.Second, OpStalls)
	if err != nil {
		return nil
	}
	var all []Stall
	if err := json.Unmarshal([]byte(rep.Result), &all); err != nil {
		return nil
	}
	var out []Stall
	for _, s := range all {
		if s.EndTime().Before(since) == false {
			out = append(out, s)
		}
	}
	return out
}
