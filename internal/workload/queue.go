package workload

import (
	"context"
	"time"

	"github.com/meshbench/meshbench/internal/sys/precise"
)

// MaxConcurrency is the largest Config.Concurrency.
const MaxConcurrency = 100000

// serviceQueue models a server of bounded capacity: at most k requests are
// in service at once, each for exactly the service time s; the others wait
// in arrival order (first come, first served), and a request whose client
// goes away while it waits leaves the queue without being served. Its
// capacity is exactly k/s requests per second.
//
// The k slots are tokens in a channel (Go serves a channel's waiting
// receivers in order). Each token carries the instant its last request's
// service ended in the model; a request that takes it starts at
// max(its arrival, that instant) and ends s later. Because starts and ends
// are computed, not taken from when the sleeping goroutine happened to
// wake, the OS timer's lateness (≈1 ms on some machines) delays each
// answer a little but never accumulates into a lower capacity.
type serviceQueue struct {
	service time.Duration
	tokens  chan time.Time // a free slot: when its last service ended
}

// newServiceQueue returns a queue of k slots of service time s; nil when k
// is 0 (no bound).
func newServiceQueue(k int, s time.Duration) *serviceQueue {
	if k <= 0 {
		return nil
	}
	q := &serviceQueue{service: s, tokens: make(chan time.Time, k)}
	for range k {
		q.tokens <- time.Time{}
	}
	return q
}

// serviceEnd is when a request arriving at arrival ends its service on a
// slot whose previous service ended at free.
func serviceEnd(arrival, free time.Time, s time.Duration) time.Time {
	start := arrival
	if free.After(start) {
		start = free
	}
	return start.Add(s)
}

// serve waits for a slot and the service time of a request that arrived at
// arrival, and returns when its service ends (the computed end, which it
// sleeps until with sl). It returns ctx's error if ctx ends while the
// request waits for a slot (it then takes none) or while it is in service
// (the slot is still busy until its computed end).
func (q *serviceQueue) serve(ctx context.Context, arrival time.Time, sl *precise.Sleeper) (time.Time, error) {
	var free time.Time
	select {
	case free = <-q.tokens:
	case <-ctx.Done():
		return time.Time{}, ctx.Err()
	}
	end := serviceEnd(arrival, free, q.service)
	defer func() { q.tokens <- end }()
	return end, sl.Until(ctx, end)
}
