package lab

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// CutMode is how Cut stops traffic between two nodes.
type CutMode int

const (
	// CutSilent installs a blackhole route on both sides: every packet
	// between the two nodes is dropped without a trace, on every link,
	// existing or new. Existing TCP connections do not reset: both runtimes
	// keep them and their sends keep succeeding into the socket buffers, so
	// nothing reports the loss (noticing it is the library's job: heartbeats
	// and check-quorum). A new dial hangs until its timeout. After Heal the
	// old connections carry traffic again at the next TCP retransmission,
	// which after a long cut can be seconds away (exponential back-off).
	// This is a switch or cable failure, or a firewall that drops.
	CutSilent CutMode = iota
	// CutAbort installs an unreachable route on both sides and then aborts
	// every established TCP socket between the two nodes in both namespaces
	// (ss -K, the kernel's sock_destroy). Both runtimes see their links fail
	// at once (a read error, so the framework reports ErrNoConnection downs)
	// and every redial fails immediately with "no route to host" until
	// Heal. This is a failure that the hosts notice at once: a peer's host
	// rebooting, an interface going away, a firewall that rejects.
	CutAbort
	// CutAbortOneSided is an abort that only one side sees: a reset that
	// never reaches the other end (conntrack or NAT state lost in between,
	// a firewall that rejects on one side only). The quiet side (the first
	// group passed to PartitionWith, or i in CutWith(mode, i, j)) gets
	// blackhole routes, so whatever it sends is dropped without a trace,
	// and none of its sockets is aborted: its runtime keeps its links and
	// its sends keep succeeding, so it reports nothing. The other side gets
	// unreachable routes and its sockets to the quiet side aborted (ss -K):
	// it sees its links fail at once and every redial fail, and the resets
	// its aborts and its kernel send cannot leave its namespace. Pairs of
	// which neither side is quiet are cut as with CutAbort.
	CutAbortOneSided
	// CutAbortResetLost is an abort whose resets are sent and lost on the
	// way in: the other side (as with CutAbortOneSided) aborts its sockets
	// to the quiet side, and its resets do leave its host, but an nftables
	// rule in the quiet side's namespace drops every incoming TCP segment
	// with the RST flag from it. To keep the two apart, the other side's
	// namespace sends the quiet side nothing but TCP resets: the rest is
	// rejected locally (so its redials fail at once), and what the quiet
	// side still sends on its old links is answered by resets that are
	// dropped in turn. The quiet side sees silence and reports nothing. It needs the
	// nft command; without it the test is skipped, or fails under
	// LEADER_LAB=require. Pairs of which neither side is quiet are cut as
	// with CutAbort.
	CutAbortResetLost
)

func (m CutMode) String() string {
	switch m {
	case CutAbort:
		return "abort"
	case CutAbortOneSided:
		return "abort-one-sided"
	case CutAbortResetLost:
		return "abort-reset-lost"
	}
	return "silent"
}

// oneSided reports whether the mode has a quiet side.
func (m CutMode) oneSided() bool { return m == CutAbortOneSided || m == CutAbortResetLost }

// Prefixes of everything the lab creates, so that a later run can recognise
// and remove what a killed run left behind. Namespaces are
// "leaderlab-<pid>-<seq>-<i>", bridges "llb<pid base36>x<seq base36>",
// host-side veths "llv<pid base36>x<seq base36>x<i base36>".
const (
	nsPrefix     = "leaderlab-"
	bridgePrefix = "llb"
	vethPrefix   = "llv"
)

var netSeq atomic.Int64

// Net is a set of network namespaces, one per node, joined by a bridge in
// the root namespace. Node i has the address IP(i) on its eth0 and its own
// loopback; the bridge has no address, so labs of concurrent runs, even
// with the same subnet, never see each other. Everything is removed in
// t.Cleanup.
type Net struct {
	t      testing.TB
	bridge string
	ns     []string
	ips    []string

	mu   sync.Mutex
	cuts map[[2]int]CutMode
	deaf map[int]bool
	// the nftables rules of CutAbortResetLost, per namespace: the
	// addresses whose incoming resets it drops, and the addresses to which
	// it sends nothing but resets
	dropRST map[int]map[string]bool
	onlyRST map[int]map[string]bool
	// the last cut: when its first route or rule went in, when its aborts
	// were done
	cutBegun, cutAborted time.Time
}

// Available reports why the lab cannot run here, or "" if it can: it needs
// root (to create namespaces) and the ip and ss commands.
func Available() string {
	if os.Geteuid() != 0 {
		return "the lab needs root to create network namespaces (run go test as root)"
	}
	for _, tool := range []string{"ip", "ss"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("the lab needs the %q command (iproute2): %v", tool, err)
		}
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Sprintf("ip netns is unavailable: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// Require skips t when the lab cannot run here, or fails it when the
// environment variable LEADER_LAB is "require".
func Require(t testing.TB) {
	t.Helper()
	why := Available()
	if why == "" {
		return
	}
	if os.Getenv("LEADER_LAB") == "require" {
		t.Fatalf("LEADER_LAB=require but %s", why)
	}
	t.Skipf("skipping the process lab: %s (set LEADER_LAB=require to fail instead)", why)
}

// NewNet creates n namespaces on a fresh bridge, after removing what killed
// earlier runs left behind.
func NewNet(t testing.TB, n int) *Net {
	t.Helper()
	Require(t)
	RemoveStale()
	pid := os.Getpid()
	seq := netSeq.Add(1)
	tag := strconv.FormatInt(int64(pid), 36) + "x" + strconv.FormatInt(seq, 36)
	subnet := 1 + int(seq%250)
	nt := &Net{
		t:       t,
		bridge:  bridgePrefix + tag,
		cuts:    make(map[[2]int]CutMode),
		deaf:    make(map[int]bool),
		dropRST: make(map[int]map[string]bool),
		onlyRST: make(map[int]map[string]bool),
	}
	t.Cleanup(nt.remove)
	nt.must("ip", "link", "add", nt.bridge, "type", "bridge")
	nt.must("ip", "link", "set", nt.bridge, "up")
	for i := 0; i < n; i++ {
		ns := fmt.Sprintf("%s%d-%d-%d", nsPrefix, pid, seq, i)
		ip := fmt.Sprintf("10.77.%d.%d", subnet, i+1)
		veth := vethPrefix + tag + "x" + strconv.FormatInt(int64(i), 36)
		nt.ns = append(nt.ns, ns)
		nt.ips = append(nt.ips, ip)
		nt.must("ip", "netns", "add", ns)
		nt.must("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
		nt.must("ip", "link", "set", veth, "master", nt.bridge, "up")
		nt.must("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
		nt.must("ip", "netns", "exec", ns, "ip", "addr", "add", ip+"/24", "dev", "eth0")
		nt.must("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
	}
	return nt
}

// Len is the number of namespaces.
func (nt *Net) Len() int { return len(nt.ns) }

// NS is the name of node i's namespace.
func (nt *Net) NS(i int) string { return nt.ns[i] }

// IP is node i's address.
func (nt *Net) IP(i int) string { return nt.ips[i] }

// Exec runs a command inside node i's namespace and returns its combined
// output.
func (nt *Net) Exec(i int, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", nt.ns[i]}, args...)...).CombinedOutput()
	return string(out), err
}

// Cut stops all traffic between nodes i and j, both ways, silently
// (CutSilent).
func (nt *Net) Cut(i, j int) { nt.CutWith(CutSilent, i, j) }

// CutFast stops all traffic between nodes i and j and makes their existing
// links fail at once (CutAbort).
func (nt *Net) CutFast(i, j int) { nt.CutWith(CutAbort, i, j) }

// CutWith stops all traffic between nodes i and j in the given mode. A pair
// already cut is re-cut in the new mode. With CutAbortOneSided and
// CutAbortResetLost, i is the quiet side.
func (nt *Net) CutWith(mode CutMode, i, j int) {
	nt.t.Helper()
	if i == j {
		return
	}
	nt.requireTools(mode)
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.cutPairs(mode, [][2]int{pairKey(i, j)}, map[int]bool{i: true})
}

// requireTools skips the test, or fails it under LEADER_LAB=require, when
// mode needs a command that is missing.
func (nt *Net) requireTools(mode CutMode) {
	nt.t.Helper()
	if mode != CutAbortResetLost {
		return
	}
	if _, err := exec.LookPath("nft"); err != nil {
		if os.Getenv("LEADER_LAB") == "require" {
			nt.t.Fatalf("lab: %s needs the nft command (apt-get install nftables): %v", mode, err)
		}
		nt.t.Skipf("lab: %s needs the nft command (apt-get install nftables): %v", mode, err)
	}
}

// cutPairs cuts every pair in the given mode; nt.mu is held.
//
// Every namespace with something to change gets a shell first, which
// says it is ready and waits; once all of them wait, one write per shell
// releases them together, and each installs its routes or rules and then,
// for the aborting modes, aborts its TCP sockets to the nodes it is cut
// from (ss -K, the kernel's sock_destroy). Spawning a process per
// namespace takes tens of milliseconds on a loaded box; this way what
// remains apart is a shell's wake-up and its few execs, and the aborts
// follow the routes within milliseconds, so a cut is not a silent
// partition for a while before it is an abort.
//
// A namespace installs its own routes before it aborts, so the resets its
// aborts send cannot leave it (CutAbort: each side learns from its own
// abort, as a connection that fails is seen by both hosts within a network
// round trip in the field). The library's safety does not depend on when
// either end notices (docs/safety.md); its opt-in
// AssumeSymmetricConnectionLoss does, and the one-sided modes are the
// faults that break it. With CutAbortResetLost the quiet side's rule that
// drops the incoming resets goes in before anyone is released.
//
// With the one-sided modes, quiet holds the namespaces of the quiet side:
// a pair with exactly one quiet side is cut one-sidedly (the quiet side is
// never aborted), any other pair as with CutAbort.
func (nt *Net) cutPairs(mode CutMode, pairs [][2]int, quiet map[int]bool) {
	nt.t.Helper()
	work := make(map[int]*nsCut)
	at := func(i int) *nsCut {
		if work[i] == nil {
			work[i] = &nsCut{}
		}
		return work[i]
	}
	nftFirst := make(map[int]bool) // quiet sides whose rules go in before the release
	for _, key := range pairs {
		i, j := key[0], key[1]
		pairMode := mode
		if mode.oneSided() && quiet[i] == quiet[j] {
			pairMode = CutAbort
		}
		// a re-cut pair drops the nftables rules of its previous mode,
		// unless it is cut that way again
		if nt.cuts[key] == CutAbortResetLost && pairMode != CutAbortResetLost {
			nt.clearNft(i, j)
			at(i).nft, at(j).nft = true, true
		}
		nt.cuts[key] = pairMode
		q, o := i, j // the quiet side and the other, in the one-sided modes
		if quiet[j] {
			q, o = j, i
		}
		switch pairMode {
		case CutSilent:
			at(i).route("blackhole", nt.ips[j])
			at(j).route("blackhole", nt.ips[i])
		case CutAbort:
			at(i).route("unreachable", nt.ips[j])
			at(j).route("unreachable", nt.ips[i])
			at(i).abort = append(at(i).abort, nt.ips[j])
			at(j).abort = append(at(j).abort, nt.ips[i])
		case CutAbortOneSided:
			at(q).route("blackhole", nt.ips[o])
			at(o).route("unreachable", nt.ips[q])
			at(o).abort = append(at(o).abort, nt.ips[q])
		case CutAbortResetLost:
			nt.addNft(nt.dropRST, q, nt.ips[o])
			nt.addNft(nt.onlyRST, o, nt.ips[q])
			nftFirst[q] = true
			at(o).nft = true
			// after the rules, in case the pair was cut by routes before
			at(q).unroute = append(at(q).unroute, nt.ips[o])
			at(o).unroute = append(at(o).unroute, nt.ips[q])
			at(o).abort = append(at(o).abort, nt.ips[q])
		}
	}
	if len(nftFirst) > 0 {
		nt.applyNft(nftFirst)
	}
	scripts := make(map[int]string)
	for i, w := range work {
		if nftFirst[i] {
			w.nft = false // in already
		}
		if script := nt.cutScript(i, w); script != "" {
			scripts[i] = script
		}
	}
	shells := nt.prepareShells(scripts)
	defer shells.close()
	nt.cutBegun = time.Now()
	shells.release()
	nt.cutAborted = time.Now()
}

// nsCut is what one namespace changes in a cut.
type nsCut struct {
	routes  []string // "kind address" routes to install (replace)
	unroute []string // addresses whose routes to remove, if any
	nft     bool     // rewrite its CutAbortResetLost table
	abort   []string // addresses whose TCP sockets to abort, last
}

func (c *nsCut) route(kind, ip string) { c.routes = append(c.routes, kind+" "+ip) }

// cutScript is the shell script that makes namespace i's changes once
// released, or "" if it has none.
func (nt *Net) cutScript(i int, c *nsCut) string {
	if c.nft == false && len(c.routes) == 0 && len(c.unroute) == 0 && len(c.abort) == 0 {
		return ""
	}
	var b strings.Builder
	if c.nft {
		fmt.Fprintf(&b, "printf %%s %s | nft -f - || exit 1; ", shellQuote(nt.nftScript(i)))
	}
	if len(c.unroute) > 0 {
		// a route that is not there is fine
		var batch strings.Builder
		for _, ip := range c.unroute {
			fmt.Fprintf(&batch, "route del %s/32\n", ip)
		}
		fmt.Fprintf(&b, "printf %%s %s | ip -force -batch - 2>/dev/null; ", shellQuote(batch.String()))
	}
	if len(c.routes) > 0 {
		// "replace" re-cuts a pair already cut in place: no instant in
		// which the two can reach each other (a redial would slip through)
		var batch strings.Builder
		for _, route := range c.routes {
			fmt.Fprintf(&batch, "route replace %s/32\n", route)
		}
		fmt.Fprintf(&b, "printf %%s %s | ip -batch - || exit 1; ", shellQuote(batch.String()))
	}
	if len(c.abort) > 0 {
		b.WriteString("exec ss -K -t " + shellQuote("dst "+strings.Join(c.abort, " or dst ")))
	} else {
		b.WriteString("exit 0")
	}
	return b.String()
}

// LastCut returns when the last cut (CutWith, PartitionWith and the
// like) released its changes in every namespace together, and when they
// were all done, its aborts included.
func (nt *Net) LastCut() (begun, done time.Time) {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	return nt.cutBegun, nt.cutAborted
}

// cutTable is the nftables table of CutAbortResetLost in a namespace.
const cutTable = "leaderlab-cut"

func (nt *Net) addNft(rules map[int]map[string]bool, ns int, ip string) {
	if rules[ns] == nil {
		rules[ns] = make(map[string]bool)
	}
	rules[ns][ip] = true
}

// clearNft removes the CutAbortResetLost rules between i and j from the
// bookkeeping (the tables of both namespaces are to be rewritten); nt.mu
// is held.
func (nt *Net) clearNft(i, j int) {
	for _, side := range [][2]int{{i, j}, {j, i}} {
		delete(nt.dropRST[side[0]], nt.ips[side[1]])
		delete(nt.onlyRST[side[0]], nt.ips[side[1]])
	}
}

// nftScript is the nft transaction that rewrites namespace i's
// CutAbortResetLost table from the bookkeeping: incoming TCP resets from
// the addresses of dropRST are dropped, and to the addresses of onlyRST
// nothing but TCP resets is sent. What else is sent there is rejected, not
// dropped: a dropped SYN leaves a redial hanging until the framework's
// dial timeout, while the framework keeps reporting the node connected
// (it redials a lost link of its pool before it gives the connection up),
// and a rejected one fails it at once, like an unreachable route.
func (nt *Net) nftScript(i int) string {
	set := func(ips map[string]bool) string {
		list := make([]string, 0, len(ips))
		for ip := range ips {
			list = append(list, ip)
		}
		slices.Sort(list)
		return "{ " + strings.Join(list, ", ") + " }"
	}
	var b strings.Builder
	// create it if absent, so that the delete cannot fail
	fmt.Fprintf(&b, "table inet %s\ndelete table inet %s\n", cutTable, cutTable)
	if len(nt.dropRST[i]) > 0 || len(nt.onlyRST[i]) > 0 {
		fmt.Fprintf(&b, "table inet %s {\n", cutTable)
		if len(nt.dropRST[i]) > 0 {
			fmt.Fprintf(&b, " chain input {\n  type filter hook input priority 0; policy accept;\n  ip saddr %s tcp flags & rst == rst drop\n }\n", set(nt.dropRST[i]))
		}
		if len(nt.onlyRST[i]) > 0 {
			fmt.Fprintf(&b, " chain output {\n  type filter hook output priority 0; policy accept;\n  ip daddr %s tcp flags & rst == rst accept\n  ip daddr %s reject with icmpx type host-unreachable\n }\n", set(nt.onlyRST[i]), set(nt.onlyRST[i]))
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// applyNft rewrites the CutAbortResetLost table of every namespace in ns,
// atomically per namespace (one nft transaction), in all of them at the
// same time; nt.mu is held.
func (nt *Net) applyNft(ns map[int]bool) {
	nt.t.Helper()
	work := make(map[int][]string)
	for i := range ns {
		work[i] = nil
	}
	nt.inEvery(work, func(i int, _ []string) ([]string, string) { return []string{"nft", "-f", "-"}, nt.nftScript(i) })
}

// delRoute removes node i's route to node j, if any; nt.mu is held.
func (nt *Net) delRoute(i, j int) {
	nt.t.Helper()
	out, err := exec.Command("ip", "netns", "exec", nt.ns[i], "ip", "route", "del", nt.ips[j]+"/32").CombinedOutput()
	if err != nil && strings.Contains(string(out), "No such process") == false {
		nt.t.Errorf("lab: remove the route %d->%d: %v: %s", i, j, err, out)
	}
}

// shells is a set of shells, one per namespace, each waiting to run its
// script (prepareShells).
type shells struct {
	nt   *Net
	list []waitingShell
}

type waitingShell struct {
	cmd     *exec.Cmd
	release io.WriteCloser
	out     *bytes.Buffer
	ready   *bufio.Reader
}

// prepareShells starts, in every namespace of scripts, a shell that says
// it is ready and then waits to run its script, and waits until all of
// them are ready. Close it (deferred) whether or not it was released.
func (nt *Net) prepareShells(scripts map[int]string) *shells {
	nt.t.Helper()
	a := &shells{nt: nt}
	ok := false
	defer func() {
		if ok == false {
			a.close()
		}
	}()
	for i, script := range scripts {
		cmd := exec.Command("ip", "netns", "exec", nt.ns[i], "sh", "-c", "echo ready; read go || exit 0; "+script)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			nt.t.Fatalf("lab: cut in %s: %v", nt.ns[i], err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			nt.t.Fatalf("lab: cut in %s: %v", nt.ns[i], err)
		}
		out := &bytes.Buffer{}
		cmd.Stderr = out
		if err := cmd.Start(); err != nil {
			nt.t.Fatalf("lab: cut in %s: %v", nt.ns[i], err)
		}
		a.list = append(a.list, waitingShell{cmd: cmd, release: stdin, out: out, ready: bufio.NewReader(stdout)})
	}
	for _, w := range a.list {
		if line, err := w.ready.ReadString('\n'); err != nil || line != "ready\n" {
			nt.t.Fatalf("lab: cut: %s: %q, %v: %s", w.cmd, line, err, w.out)
		}
	}
	ok = true
	return a
}

// release makes every shell run its script at once and waits for them.
func (a *shells) release() {
	a.nt.t.Helper()
	for _, w := range a.list {
		io.WriteString(w.release, "go\n")
	}
	list := a.list
	a.list = nil
	for _, w := range list {
		w.release.Close()
		io.Copy(io.Discard, w.ready)
		if err := w.cmd.Wait(); err != nil {
			a.nt.t.Fatalf("lab: cut: %s: %v: %s", w.cmd, err, w.out)
		}
	}
}

// close ends the shells not released (they exit without running their
// scripts: the read fails at the end of their input).
func (a *shells) close() {
	for _, w := range a.list {
		w.release.Close()
		w.cmd.Wait()
	}
	a.list = nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// inEvery runs, in every namespace i of work at the same time, the command
// that command returns for it and its entries (with the given standard
// input), and fails the test if any of them fails; nt.mu is held.
func (nt *Net) inEvery(work map[int][]string, command func(i int, entries []string) (args []string, stdin string)) {
	nt.t.Helper()
	var wg sync.WaitGroup
	failures := make(chan string, len(work))
	for i, ips := range work {
		args, stdin := command(i, ips)
		args = append([]string{"ip", "netns", "exec", nt.ns[i]}, args...)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stdin = strings.NewReader(stdin)
			if out, err := cmd.CombinedOutput(); err != nil {
				failures <- fmt.Sprintf("lab: %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}()
	}
	wg.Wait()
	close(failures)
	for failure := range failures {
		nt.t.Fatal(failure)
	}
}

// Heal restores traffic between nodes i and j.
func (nt *Net) Heal(i, j int) {
	nt.t.Helper()
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.heal(pairKey(i, j))
}

func (nt *Net) heal(key [2]int) {
	nt.t.Helper()
	mode, ok := nt.cuts[key]
	if ok == false {
		return
	}
	if mode == CutAbortResetLost {
		nt.clearNft(key[0], key[1])
		nt.applyNft(map[int]bool{key[0]: true, key[1]: true})
	} else {
		nt.delRoute(key[0], key[1])
		nt.delRoute(key[1], key[0])
	}
	delete(nt.cuts, key)
}

// Partition cuts (CutSilent) every pair of nodes in different groups. Nodes
// in no group are cut from everyone. Pairs inside a group are healed.
func (nt *Net) Partition(groups ...[]int) { nt.PartitionWith(CutSilent, groups...) }

// PartitionWith is Partition with the given cut mode. With
// CutAbortOneSided and CutAbortResetLost the first group is the quiet side
// toward every other group: it keeps silent links and is never aborted,
// while the other groups see their links to it fail (see the modes); pairs
// between two other groups are cut as with CutAbort.
func (nt *Net) PartitionWith(mode CutMode, groups ...[]int) {
	nt.t.Helper()
	nt.requireTools(mode)
	quiet := make(map[int]bool)
	if mode.oneSided() && len(groups) > 0 {
		for _, i := range groups[0] {
			quiet[i] = true
		}
	}
	group := make([]int, len(nt.ns))
	for i := range group {
		group[i] = -1 - i // alone
	}
	for g, members := range groups {
		for _, i := range members {
			group[i] = g
		}
	}
	nt.mu.Lock()
	defer nt.mu.Unlock()
	var cut [][2]int
	for i := range nt.ns {
		for j := i + 1; j < len(nt.ns); j++ {
			if group[i] == group[j] {
				nt.heal(pairKey(i, j))
			} else {
				cut = append(cut, pairKey(i, j))
			}
		}
	}
	// one cut of all the pairs: with CutAbort, every link between the
	// groups fails at the same moment (cutPairs)
	nt.cutPairs(mode, cut, quiet)
}

// HealAll removes every cut and every Deafen.
func (nt *Net) HealAll() {
	nt.t.Helper()
	nt.mu.Lock()
	defer nt.mu.Unlock()
	for key := range nt.cuts {
		nt.heal(key)
	}
	for i := range nt.deaf {
		nt.undeafen(i)
	}
}

// deafTable is the nftables table Deafen installs in a namespace.
const deafTable = "leaderlab"

// Deafen makes every link to node i half-open: what i sends is delivered
// (and acknowledged), what the others send to i is lost. Node i's kernel
// drops every incoming TCP segment from another lab node that carries the
// PSH flag, which every segment ending a write has, while pure
// acknowledgements, which never have it, pass. The first data segment
// dropped leaves a hole in the byte stream that TCP never fills, so nothing
// sent toward i after it reaches i's runtime, on any link, existing or new
// (a dial's TCP handshake completes, the framework's handshake does not):
// i cannot hear anyone, and everyone still hears i. Undeafen and HealAll
// restore it; connections that hit the hole recover by retransmission.
//
// It needs the nft command (Debian package nftables); without it Deafen
// skips the test, or fails it when LEADER_LAB=require.
func (nt *Net) Deafen(i int) {
	nt.t.Helper()
	if _, err := exec.LookPath("nft"); err != nil {
		if os.Getenv("LEADER_LAB") == "require" {
			nt.t.Fatalf("lab: Deafen needs the nft command (apt-get install nftables): %v", err)
		}
		nt.t.Skipf("lab: Deafen needs the nft command (apt-get install nftables): %v", err)
	}
	nt.mu.Lock()
	defer nt.mu.Unlock()
	if nt.deaf[i] {
		return
	}
	subnet := nt.ips[i][:strings.LastIndexByte(nt.ips[i], '.')] + ".0/24"
	rules := fmt.Sprintf("table inet %s {\n chain input {\n  type filter hook input priority 0; policy accept;\n  ip saddr %s ip saddr != %s tcp flags & psh == psh drop\n }\n}\n",
		deafTable, subnet, nt.ips[i])
	cmd := exec.Command("ip", "netns", "exec", nt.ns[i], "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(rules)
	if out, err := cmd.CombinedOutput(); err != nil {
		nt.t.Fatalf("lab: deafen %d: %v: %s", i, err, out)
	}
	nt.deaf[i] = true
}

// Undeafen removes what Deafen(i) installed.
func (nt *Net) Undeafen(i int) {
	nt.t.Helper()
	nt.mu.Lock()
	defer nt.mu.Unlock()
	nt.undeafen(i)
}

func (nt *Net) undeafen(i int) {
	if nt.deaf[i] == false {
		return
	}
	if out, err := exec.Command("ip", "netns", "exec", nt.ns[i], "nft", "delete", "table", "inet", deafTable).CombinedOutput(); err != nil {
		nt.t.Errorf("lab: undeafen %d: %v: %s", i, err, out)
	}
	delete(nt.deaf, i)
}

// Cuts returns the pairs cut now, with their modes.
func (nt *Net) Cuts() map[[2]int]CutMode {
	nt.mu.Lock()
	defer nt.mu.Unlock()
	out := make(map[[2]int]CutMode, len(nt.cuts))
	for k, v := range nt.cuts {
		out[k] = v
	}
	return out
}

// Links counts the established TCP connections between nodes i and j, as
// node i's kernel sees them.
func (nt *Net) Links(i, j int) (int, error) {
	out, err := nt.Exec(i, "ss", "-t", "-n", "-H", "state", "established", "dst", nt.ips[j])
	if err != nil {
		return 0, fmt.Errorf("ss in %s: %v: %s", nt.ns[i], err, out)
	}
	count := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) != "" {
			count++
		}
	}
	return count, nil
}

func (nt *Net) must(args ...string) {
	nt.t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		nt.t.Fatalf("lab: %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// remove deletes the namespaces (which takes their veth pairs with them)
// and the bridge. Processes still inside a namespace are killed first.
func (nt *Net) remove() {
	for _, ns := range nt.ns {
		removeNamespace(ns)
	}
	exec.Command("ip", "link", "del", nt.bridge).Run()
}

func removeNamespace(ns string) {
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for _, field := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(field); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	exec.Command("ip", "netns", "del", ns).Run()
}

// RemoveStale removes the namespaces and bridges of lab runs whose process
// is gone (a run killed before its cleanup).
func RemoveStale() {
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) == 0 || strings.HasPrefix(fields[0], nsPrefix) == false {
				continue
			}
			ns := fields[0]
			owner, _, _ := strings.Cut(strings.TrimPrefix(ns, nsPrefix), "-")
			if pid, err := strconv.Atoi(owner); err == nil && alive(pid) == false {
				removeNamespace(ns)
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			name := strings.TrimSuffix(fields[1], ":")
			if strings.HasPrefix(name, bridgePrefix) == false {
				continue
			}
			owner, _, _ := strings.Cut(strings.TrimPrefix(name, bridgePrefix), "x")
			if pid, err := strconv.ParseInt(owner, 36, 64); err == nil && alive(int(pid)) == false {
				exec.Command("ip", "link", "del", name).Run()
			}
		}
	}
}

// alive reports whether process pid exists and is not a zombie (a killed
// run whose parent has not reaped it yet is gone all the same).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err) == false
	}
	// "pid (comm) state ...": the state follows the last ')'
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		state := stat[i+2]
		return state != 'Z' && state != 'X'
	}
	return true
}

func pairKey(i, j int) [2]int {
	if i > j {
		i, j = j, i
	}
	return [2]int{i, j}
}
