package node

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ctrlc is the node's handling of SIGTERM and Interrupt (framework:
// node.SetCTRLC, enabled at the end of node.Start).
type ctrlc struct {
	mu   sync.Mutex
	ch   chan os.Signal
	quit chan struct{}
}

// SetCTRLC turns the handling of SIGTERM and Interrupt on or off. When on,
// either signal logs "node ... is starting a graceful shutdown..." and
// stops the node with Stop. ergo.StartNode turns it on; SetCTRLC(false)
// gives the signals back to the program (their default action, or the
// program's own signal.Notify).
func (n *node) SetCTRLC(enable bool) {
	c := &n.ctrlc
	c.mu.Lock()
	defer c.mu.Unlock()
	if enable == (c.ch != nil) {
		n.log.Info("handling SIGTERM is already set: %t", enable)
		return
	}
	if !enable {
		c.stopLocked()
		return
	}
	if !n.IsAlive() {
		return
	}
	ch := make(chan os.Signal, 1)
	quit := make(chan struct{})
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	c.ch, c.quit = ch, quit
	go func() {
		select {
		case <-quit:
			return
		case <-ch:
		}
		c.disable()
		n.log.Info("node %s is starting a graceful shutdown...", n.name)
		n.Stop()
	}()
}

// disable stops the handling, if on (the node is stopping).
func (c *ctrlc) disable() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopLocked()
}

func (c *ctrlc) stopLocked() {
	if c.ch == nil {
		return
	}
	signal.Stop(c.ch)
	close(c.quit)
	c.ch, c.quit = nil, nil
}
