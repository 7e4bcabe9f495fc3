package lib

import (
	"sync/atomic"
)

// QueueMPSC is a FIFO queue with many producers and a single consumer.
type QueueMPSC interface {
	// Push appends value; it returns false when a limited queue is full.
	Push(value any) bool
	// Pop removes the oldest value; (nil, false) when the queue is empty.
	Pop() (any, bool)
	// Item peeks at the oldest item; nil when the queue is empty.
	Item() ItemMPSC
	// Len is the number of queued values.
	Len() int64
	// Size is the limit of the queue; -1 means unlimited.
	Size() int64
	// Latency is -1: latency measurement is not compiled in.
	Latency() int64
	// Lock sets the lock flag; false if it was already set.
	Lock() bool
	// Unlock clears the lock flag; false if it was not set.
	Unlock() bool
}

// ItemMPSC is one element of a QueueMPSC.
type ItemMPSC interface {
	// Next is the item queued after this one, nil if none yet.
	Next() ItemMPSC
	// Value is the value the item carries.
	Value() any
	// Clear drops the value the item carries.
	Clear()
}

type itemMPSC struct {
	value any
	next  atomic.Pointer[itemMPSC]
}

func (i *itemMPSC) Next() ItemMPSC {
	if n := i.next.Load(); n != nil {
		return n
	}
	return nil
}

func (i *itemMPSC) Value() any { return i.value }
func (i *itemMPSC) Clear()     { i.value = nil }

// queueMPSC is a Vyukov-style intrusive queue: producers swap the head
// pointer, the consumer follows next links from the tail sentinel.
type queueMPSC struct {
	head   atomic.Pointer[itemMPSC]
	tail   atomic.Pointer[itemMPSC]
	length atomic.Int64
	limit  int64
	lock   atomic.Bool
}

// NewQueueMPSC returns an unlimited queue.
func NewQueueMPSC() QueueMPSC {
	return NewQueueLimitMPSC(0)
}

// NewQueueLimitMPSC returns a queue holding at most limit values; limit < 1
// means unlimited.
func NewQueueLimitMPSC(limit int64) QueueMPSC {
	q := &queueMPSC{limit: limit}
	if limit < 1 {
		q.limit = -1
	}
	sentinel := &itemMPSC{}
	q.head.Store(sentinel)
	q.tail.Store(sentinel)
	return q
}

func (q *queueMPSC) Push(value any) bool {
	n := q.length.Add(1)
	if q.limit > 0 && n > q.limit {
		q.length.Add(-1)
		return false
	}
	item := &itemMPSC{value: value}
	prev := q.head.Swap(item)
	prev.next.Store(item)
	return true
}

func (q *queueMPSC) Pop() (any, bool) {
	tail := q.tail.Load()
	next := tail.next.Load()
	if next == nil {
		return nil, false
	}
	value := next.value
	next.value = nil
	q.tail.Store(next)
	q.length.Add(-1)
	return value, true
}

func (q *queueMPSC) Item() ItemMPSC {
	next := q.tail.Load().next.Load()
	if next == nil {
		return nil
	}
	return next
}

func (q *queueMPSC) Len() int64     { return q.length.Load() }
func (q *queueMPSC) Size() int64    { return q.limit }
func (q *queueMPSC) Latency() int64 { return -1 }
func (q *queueMPSC) Lock() bool     { return q.lock.CompareAndSwap(false, true) }
func (q *queueMPSC) Unlock() bool   { return q.lock.CompareAndSwap(true, false) }
