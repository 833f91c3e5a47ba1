package app

import (
	"sync"
	"time"
)

// MaxConcurrency is the largest Config.Concurrency: the queue keeps one
// timestamp per slot.
const MaxConcurrency = 100000

// serviceQueue models a server of bounded capacity: at most k requests are
// in service at once, each for exactly the service time s; the others wait
// in arrival order (first come, first served). Its capacity is exactly k/s
// requests per second.
//
// It is a virtual-time K-server queue: each slot records when it is next
// free, an arriving request takes the slot that frees first, starts at
// max(arrival, free) and ends s later, and the caller sleeps until that end.
// Because ends are computed, not accumulated from sleeps, the lateness of
// the OS timer (≈1 ms on some machines) delays each answer a little but
// never lowers the capacity below k/s.
type serviceQueue struct {
	service time.Duration

	mu   sync.Mutex
	free []time.Time // per slot: when its current request ends; guarded by mu
}

// newServiceQueue returns a queue of k slots of service time s; nil when k
// is 0 (no bound).
func newServiceQueue(k int, s time.Duration) *serviceQueue {
	if k <= 0 {
		return nil
	}
	return &serviceQueue{service: s, free: make([]time.Time, k)}
}

// admit enters a request arriving at now and returns how long it waits
// until its service ends (queueing plus service time).
func (q *serviceQueue) admit(now time.Time) time.Duration {
	q.mu.Lock()
	defer q.mu.Unlock()
	best := 0
	for i := 1; i < len(q.free); i++ {
		if q.free[i].Before(q.free[best]) {
			best = i
		}
	}
	start := now
	if q.free[best].After(start) {
		start = q.free[best]
	}
	end := start.Add(q.service)
	q.free[best] = end
	return end.Sub(now)
}
