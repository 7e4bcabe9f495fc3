package lab

import (
	"bufio"
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// echo serves line echo on a loopback port until the test ends.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	return l.Addr().String()
}

func roundTrip(c net.Conn) error {
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "ping\n" {
		return errors.New("echo answered " + line)
	}
	return nil
}

// TestLink checks what the demos rely on: an open link forwards, cutting it
// breaks the connections it carries, a cut link refuses new ones at once,
// and reopening it lets them through again.
func TestLink(t *testing.T) {
	target := echo(t)
	l, err := newLink(func() string { return target }, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	addr := l.listener.Addr().String()

	// closed until opened: the lab opens a link once its target is set up
	refused, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	if roundTrip(refused) == nil {
		t.Fatal("a link that was never opened forwarded a connection")
	}
	refused.Close()

	l.setOpen(true)
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := roundTrip(c); err != nil {
		t.Fatalf("open link: %v", err)
	}

	l.setOpen(false)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a cut link kept its connection")
	}
	cut, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if roundTrip(cut) == nil {
		t.Fatal("a cut link forwarded a new connection")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a cut link took %s to refuse: a dial must fail fast", took)
	}
	cut.Close()

	l.setOpen(true)
	again, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if err := roundTrip(again); err != nil {
		t.Fatalf("reopened link: %v", err)
	}
}

// TestLinkDrop checks the drop mode: a cut link holds a new connection
// without answering, and lets it go when reopened.
func TestLinkDrop(t *testing.T) {
	target := echo(t)
	l, err := newLink(func() string { return target }, true)
	if err != nil {
		t.Fatal(err)
	}
	defer l.close()
	c, err := net.Dial("tcp4", l.listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	var netErr net.Error
	if _, err := c.Read(make([]byte, 1)); errors.As(err, &netErr) == false || netErr.Timeout() == false {
		t.Fatalf("a held connection answered: %v", err)
	}
	l.setOpen(true)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("a held connection stayed open after the link reopened")
	}
}
