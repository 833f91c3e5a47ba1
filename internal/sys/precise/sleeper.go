package precise

import (
	"context"
	"runtime"
	"sync"
	"time"
)

// Sleeper sleeps until a deadline as closely as the machine allows: it
// asks the timer (Sleep) to wake it early by the smallest lateness the
// timer showed over its last LateWindow wake-ups, and spins (yielding to
// other goroutines) through whatever is left when it wakes before the
// deadline. Its sleeps therefore never end before their deadline, and on
// a machine whose timer is late by a steady amount (a virtual CPU that
// halts while nothing runs and takes a few hundred µs to wake) they end
// within a few µs of it instead of that late; the spin is short, since it
// covers only a wake-up that came sooner than the recent fastest one.
//
// The load engine's pacer learns its wake-up delay the same way (its
// wakeCompensator). A Sleeper is safe for concurrent use; share one per
// server, as the lateness is the machine's.
type Sleeper struct {
	mu   sync.Mutex
	late [LateWindow]time.Duration
	n    int
}

// LateWindow is how many recent wake-ups a Sleeper learns from, and
// MaxEarly the most it wakes early by.
const (
	LateWindow = 32
	MaxEarly   = time.Millisecond
)

// early is how much sooner than the deadline to ask the timer for: the
// smallest lateness of the last LateWindow wake-ups, 0 before there are
// that many.
func (s *Sleeper) early() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n < len(s.late) {
		return 0
	}
	m := s.late[0]
	for _, v := range s.late[1:] {
		m = min(m, v)
	}
	return m
}

func (s *Sleeper) observe(late time.Duration) {
	s.mu.Lock()
	s.late[s.n%len(s.late)] = max(0, min(late, MaxEarly))
	s.n++
	s.mu.Unlock()
}

// Until waits until deadline (it must carry a monotonic reading, as
// time.Now's do), or until ctx ends (returning its error).
func (s *Sleeper) Until(ctx context.Context, deadline time.Time) error {
	if d := time.Until(deadline) - s.early(); d > 0 {
		target := time.Now().Add(d)
		if err := Sleep(ctx, d); err != nil {
			return err
		}
		s.observe(time.Since(target))
	}
	for time.Now().Before(deadline) {
		if err := ctx.Err(); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return ctx.Err()
}

// Sleep waits d (Until now + d).
func (s *Sleeper) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	return s.Until(ctx, time.Now().Add(d))
}
