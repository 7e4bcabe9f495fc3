package main

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// spinEnv makes this binary (the command, or its test binary) a load
// generator: it spins that many goroutines until its stdin closes. It is how
// the stability run loads the machine from another process, where the
// kernel rather than this process's Go scheduler shares out the CPU.
const spinEnv = "LEADER_PERF_SPIN"

func init() {
	if v := os.Getenv(spinEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			os.Exit(2)
		}
		startLoad(n)
		// the parent closes our stdin when it is done, or by dying
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
}

// startLoad spins n goroutines in this process until stop is called.
func startLoad(n int) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spins := 0
			for done.Load() == false {
				spins++
			}
			spinSink.Add(int64(spins))
		}()
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// spinSink keeps the busy loops from being optimised away.
var spinSink atomic.Int64

// startLoadProcess runs n spinning goroutines in a child process (this
// binary again) until stop is called.
func startLoadProcess(n int) (stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), spinEnv+"="+strconv.Itoa(n), "GOMAXPROCS="+strconv.Itoa(runtime.NumCPU()))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() {
		stdin.Close()
		cmd.Wait()
	}, nil
}

// latencyProbe measures how late this process's goroutines wake up: it
// sleeps 10 ms in a loop and records by how much each sleep overran. A
// heartbeat takes several such wake-ups, and a leader's tick is one, so the
// tail of this distribution is what the election timeouts must absorb.
type latencyProbe struct {
	stop chan struct{}
	done chan []time.Duration
}

func startLatencyProbe() *latencyProbe {
	l := &latencyProbe{stop: make(chan struct{}), done: make(chan []time.Duration, 1)}
	go func() {
		var late []time.Duration
		for {
			select {
			case <-l.stop:
				l.done <- late
				return
			default:
			}
			start := time.Now()
			time.Sleep(10 * time.Millisecond)
			late = append(late, max(time.Since(start)-10*time.Millisecond, 0))
		}
	}()
	return l
}

// finish stops the probe and returns the overruns.
func (l *latencyProbe) finish() dist {
	close(l.stop)
	return newDist(<-l.done)
}
