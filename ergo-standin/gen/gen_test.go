package gen

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestIdentifierStrings(t *testing.T) {
	a := Atom("node@host")
	if a.String() != "'node@host'" || a.Host() != "host" || Atom("x").Host() != "" {
		t.Fatalf("atom: %s %s", a, a.Host())
	}
	crc := a.CRC32()
	if len(crc) != 8 || strings.ToUpper(crc) != crc || a.CRC32() != crc {
		t.Fatalf("crc %q", crc)
	}
	pid := PID{Node: a, ID: 1<<32 | 1000, Creation: 1}
	if pid.String() != "<"+crc+".1.1000>" {
		t.Fatalf("pid %s", pid)
	}
	if s := (ProcessID{Name: "n", Node: a}).String(); s != "<"+crc+".n>" {
		t.Fatalf("processid %s", s)
	}
	ref := Ref{Node: a, ID: [3]uint64{1, 2, 3}}
	if ref.String() != "Ref#<"+crc+".1.2.3>" || Alias(ref).String() != "Alias#<"+crc+".1.2.3>" {
		t.Fatalf("ref %s %s", ref, Alias(ref))
	}
	if s := (Event{Name: "e", Node: a}).String(); s != "Event#<"+crc+":e>" {
		t.Fatalf("event %s", s)
	}
	if Env("abc").String() != "ABC" || ProcessStateWaitResponse.String() != "wait response" {
		t.Fatal("env/state strings")
	}
	if ref.Deadline() != 3 || ref.IsAlive() {
		t.Fatal("ref with a passed deadline is alive")
	}
	ref.ID[2] = uint64(time.Now().Unix() + 60)
	if !ref.IsAlive() || !(Ref{}).IsAlive() {
		t.Fatal("ref deadline")
	}
}

func TestErrorf(t *testing.T) {
	err := Errorf("wrapped %w and %w", ErrTimeout, ErrNoRoute)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, ErrNoRoute) || err.Error() != "wrapped timed out and no route" {
		t.Fatalf("errorf: %v", err)
	}
	var ge *Error
	if !errors.As(err, &ge) || len(ge.Wrapped) != 2 {
		t.Fatalf("as: %#v", err)
	}
	if e := Errorf("plain %d", 1); e.Error() != "plain 1" || errors.Unwrap(e) != nil {
		t.Fatal(fmt.Sprint(e))
	}
}

func TestMailboxMessagePool(t *testing.T) {
	m := TakeMailboxMessage()
	m.Message, m.Type, m.Tracing.SpanID = 1, MailboxMessageTypeExit, 5
	ReleaseMailboxMessage(m)
	if n := TakeMailboxMessage(); *n != (MailboxMessage{}) {
		t.Fatalf("not zeroed: %#v", n)
	}
}
