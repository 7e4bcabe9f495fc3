package lib

import (
	"sync"
	"testing"
)

func TestQueueFIFOAndLimit(t *testing.T) {
	q := NewQueueLimitMPSC(2)
	if q.Size() != 2 || !q.Push(1) || !q.Push(2) || q.Push(3) || q.Len() != 2 {
		t.Fatal("limit")
	}
	if q.Item().Value() != 1 || q.Item().Next().Value() != 2 {
		t.Fatal("item order")
	}
	if v, _ := q.Pop(); v != 1 {
		t.Fatal("fifo")
	}
	if v, _ := q.Pop(); v != 2 {
		t.Fatal("fifo")
	}
	if _, ok := q.Pop(); ok || q.Item() != nil || q.Len() != 0 {
		t.Fatal("empty")
	}
	if NewQueueMPSC().Size() != -1 || !q.Lock() || q.Lock() || !q.Unlock() || q.Unlock() {
		t.Fatal("size/lock")
	}
}

func TestQueueConcurrentProducers(t *testing.T) {
	q := NewQueueMPSC()
	const producers, each = 8, 10000
	var wg sync.WaitGroup
	for p := 0; p < producers; p++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				q.Push([2]int{p, i})
			}
		}(p)
	}
	last := make([]int, producers)
	for i := range last {
		last[i] = -1
	}
	got := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for got < producers*each {
		v, ok := q.Pop()
		if !ok {
			select {
			case <-done:
				if q.Item() == nil && got < producers*each {
					t.Fatalf("lost items: %d", got)
				}
			default:
			}
			continue
		}
		pi := v.([2]int)
		if pi[1] != last[pi[0]]+1 {
			t.Fatalf("per-producer order broken: %v after %d", pi, last[pi[0]])
		}
		last[pi[0]] = pi[1]
		got++
	}
}
