package loadgen

import (
	"sync"
	"sync/atomic"
	"time"
)

// Reading answers at the pacer's wake-ups.
//
// An open loop at a fixed rate wakes its one engine thread twice per
// request: when the request is due, and when its answer arrives. On a VM a
// thread's sleep and wake-up is the largest part of a request's CPU (tens
// of µs, more than everything else the engine does for it). But the answer
// need not be read the moment it arrives: the kernel stamps when it did
// (see rawIO), so it can be read at the pacer's next wake-up, which comes
// anyway for the next request, with its latency exact. That halves the
// wake-ups at rates where answers come back before the next request is due
// (on loopback at 1000/s and 5000/s, say).
//
// The harvest is the meeting point. While it is on, a plain-TCP HTTP/1.1
// connection waiting for an answer keeps its socket quiet (SO_RCVLOWAT: an
// arrival does not wake the thread) and parks until the pacer's next
// wake-up (tick), then reads what has arrived. The pacer turns it off, and
// every waiting connection goes back to waiting on its socket, whenever an
// answer must be read as soon as it comes:
//   - a ticket waits for a free connection (they are all in use),
//   - the next request is more than lazyMaxGap away (a low rate: the
//     wake-ups saved are few and a slow tick would hold connections),
//   - the schedule has ended (the last answers, timeouts, cancellation).
//
// A connection also goes back to its socket after lazyMaxTries ticks
// without its answer (a target slower than the pacer's period), for its
// next lazyBackoff requests, and for good when the kernel gives no receive
// time.
type harvest struct {
	mu      sync.Mutex
	on      bool
	waiting []chan struct{} // parked connections, woken at the next tick
	spare   []chan struct{}
}

const (
	// lazyMaxGap: answers are read at the pacer's wake-ups only while the
	// next request is due within this: at 100 requests/s and more.
	lazyMaxGap = 10 * time.Millisecond
	// lazyMaxTries is how many ticks a connection waits for its answer
	// before it waits on its socket instead: each tick costs it a read.
	lazyMaxTries = 8
	// lazyBackoff is how many requests such a connection then waits on
	// its socket before it tries the ticks again.
	lazyBackoff = 32
)

func newHarvest() *harvest { return &harvest{} }

// lazyAnswers counts the reads that returned an answer's bytes at a pacer
// wake-up, for the tests to see the harvest at work.
var lazyAnswers atomic.Int64

// active reports whether connections may wait for the next tick. A nil
// harvest (the closed loop) never is.
func (h *harvest) active() bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.on
}

// wait parks until the next tick, on wake (the caller's own channel,
// capacity 1). It returns false at once, without parking, when the harvest
// is off; after it returns true the caller reads and, if nothing came,
// asks again.
func (h *harvest) wait(wake chan struct{}) bool {
	h.mu.Lock()
	if !h.on {
		h.mu.Unlock()
		return false
	}
	h.waiting = append(h.waiting, wake)
	h.mu.Unlock()
	<-wake
	return true
}

// set turns the harvest on or off; off wakes every parked connection,
// which then waits on its socket.
func (h *harvest) set(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.on == on {
		return
	}
	h.on = on
	if !on {
		h.wakeLocked()
	}
}

// tick wakes every parked connection and reports whether there was one.
func (h *harvest) tick() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wakeLocked()
}

func (h *harvest) wakeLocked() bool {
	if len(h.waiting) == 0 {
		return false
	}
	for _, w := range h.waiting {
		w <- struct{}{} // capacity 1, and one registration per wait: never blocks
	}
	h.waiting, h.spare = h.spare[:0], h.waiting
	return true
}
