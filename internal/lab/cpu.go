package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CPU quotas: a node process confined to a share of one CPU by a control
// group, as a container's CPU limit confines it. The process runs in bursts:
// with a quota of q per period p, it runs at most q and then waits for the
// next period, so its timers, its reads and its own checks of the clock
// come up to p - q late, again and again, which a single SIGSTOP does not
// reproduce.

// cpuPeriod is the quota's accounting period: the kernel's default.
const cpuPeriod = 100 * time.Millisecond

// cgroupRoot returns the directory under which a CPU-limited group can be
// made, and whether it is cgroup v2 (cpu.max) rather than v1
// (cpu.cfs_quota_us); an error says why there is none.
func cgroupRoot() (string, bool, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		if strings.Contains(" "+strings.TrimSpace(string(b))+" ", " cpu ") {
			return "/sys/fs/cgroup", true, nil
		}
	}
	if _, err := os.Stat("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"); err == nil {
		return "/sys/fs/cgroup/cpu", false, nil
	}
	return "", false, errors.New("no cgroup with the cpu controller (neither v2 /sys/fs/cgroup/cgroup.controllers listing cpu nor v1 /sys/fs/cgroup/cpu)")
}

// LimitCPU confines the node's running process to share of one CPU (0.1
// is 10 ms of every 100 ms) until the returned function lifts the limit,
// which it does at the latest when the cluster closes. It uses a cgroup's
// CPU quota where it can make one; elsewhere it runs the process in the
// same bursts with SIGSTOP and SIGCONT (how says which), as it does when
// LEADER_LAB_CPU_LIMIT=signals.
func (n *Node) LimitCPU(share float64) (lift func(), how string) {
	n.c.t.Helper()
	root, v2, err := cgroupRoot()
	if err == nil {
		probe := filepath.Join(root, fmt.Sprintf("leader-lab-probe-%d", os.Getpid()))
		if err = os.Mkdir(probe, 0o755); err == nil {
			os.Remove(probe)
		}
	}
	if err == nil && os.Getenv("LEADER_LAB_CPU_LIMIT") == "signals" {
		err = errors.New("LEADER_LAB_CPU_LIMIT=signals")
	}
	if err != nil {
		return n.dutyCycle(share), fmt.Sprintf("a SIGSTOP/SIGCONT duty cycle (%v)", err)
	}
	how = "cgroup v1 cpu.cfs_quota_us"
	if v2 {
		how = "cgroup v2 cpu.max"
	}
	pid := n.Pid()
	dir := filepath.Join(root, fmt.Sprintf("leader-lab-%d-%d", os.Getpid(), pid))
	if err := os.Mkdir(dir, 0o755); err != nil {
		n.c.t.Fatalf("lab: limit %s's CPU: %v", n.Name, err)
	}
	quota := int64(float64(cpuPeriod/time.Microsecond) * share)
	write := func(file, value string) error {
		return os.WriteFile(filepath.Join(dir, file), []byte(value), 0o644)
	}
	if v2 {
		err = write("cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriod/time.Microsecond))
	} else {
		err = write("cpu.cfs_period_us", strconv.FormatInt(int64(cpuPeriod/time.Microsecond), 10))
		if err == nil {
			err = write("cpu.cfs_quota_us", strconv.FormatInt(quota, 10))
		}
	}
	if err == nil {
		// cgroup.procs moves every thread of the process
		err = write("cgroup.procs", strconv.Itoa(pid))
	}
	lifted := false
	lift = func() {
		if lifted {
			return
		}
		lifted = true
		// back to the root group, if the process still runs, then away
		os.WriteFile(filepath.Join(root, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	}
	n.c.t.Cleanup(lift)
	if err != nil {
		lift()
		n.c.t.Fatalf("lab: limit %s's CPU to %.0f%%: %v", n.Name, share*100, err)
	}
	return lift, how
}

// dutyCycle stops the node's process for all but share of every cpuPeriod
// (SIGSTOP, SIGCONT) until the returned function ends it, resumed.
func (n *Node) dutyCycle(share float64) (lift func()) {
	run := time.Duration(float64(cpuPeriod) * share)
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		defer n.signal(syscall.SIGCONT)
		for {
			select {
			case <-done:
				return
			case <-time.After(run):
			}
			n.signal(syscall.SIGSTOP)
			select {
			case <-done:
				return
			case <-time.After(cpuPeriod - run):
			}
			n.signal(syscall.SIGCONT)
		}
	}()
	lifted := false
	lift = func() {
		if lifted == false {
			lifted = true
			close(done)
			<-ended
		}
	}
	n.c.t.Cleanup(lift)
	return lift
}
