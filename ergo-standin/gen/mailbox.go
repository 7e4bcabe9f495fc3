package gen

import (
	"sync"

	"ergo.services/ergo/lib"
)

// ProcessMailbox holds the four queues of a process.
type ProcessMailbox struct {
	Main   lib.QueueMPSC // *MailboxMessage, priority Normal
	System lib.QueueMPSC // *MailboxMessage, priority High
	Urgent lib.QueueMPSC // *MailboxMessage, priority Max
	Log    lib.QueueMPSC // MessageLog values
}

// Latency returns the maximum latency over the queues; -1 when latency
// measurement is not compiled in.
func (pm ProcessMailbox) Latency() int64 {
	var max int64 = -1
	for _, q := range []lib.QueueMPSC{pm.Main, pm.System, pm.Urgent, pm.Log} {
		if q == nil {
			continue
		}
		if l := q.Latency(); l > max {
			max = l
		}
	}
	return max
}

// MailboxMessageType says how a process handles a mailbox message.
type MailboxMessageType int

// Mailbox message types.
const (
	MailboxMessageTypeRegular MailboxMessageType = 0
	MailboxMessageTypeRequest MailboxMessageType = 1
	MailboxMessageTypeEvent   MailboxMessageType = 2
	MailboxMessageTypeSpan    MailboxMessageType = 3
	MailboxMessageTypeExit    MailboxMessageType = 10
	MailboxMessageTypeInspect MailboxMessageType = 11
)

// MailboxMessage is one entry of the Main, System or Urgent queue.
type MailboxMessage struct {
	From    PID
	Ref     Ref
	Type    MailboxMessageType
	Target  any
	Message any
	Tracing Tracing
}

var mailboxMessagePool = sync.Pool{New: func() any { return &MailboxMessage{} }}

// TakeMailboxMessage takes a zeroed message from the pool.
func TakeMailboxMessage() *MailboxMessage {
	return mailboxMessagePool.Get().(*MailboxMessage)
}

// ReleaseMailboxMessage zeroes the message and returns it to the pool.
func ReleaseMailboxMessage(m *MailboxMessage) {
	if m == nil {
		return
	}
	*m = MailboxMessage{}
	mailboxMessagePool.Put(m)
}
