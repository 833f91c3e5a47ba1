package loadgen

import (
	"context"
	"time"
)

// waiter sleeps with the best precision the platform offers. Go's own
// timers wake through the network poller with millisecond granularity on
// Linux (a 200 µs sleep lasts about 1 ms), which would add up to a
// millisecond of schedule lag to every request at high rates; the Linux
// waiter uses a timerfd read through the poller instead (tens of µs).
type waiter interface {
	wait(ctx context.Context, d time.Duration) error
	close()
}

// maxWaitChunk bounds one sleep so cancellation is noticed promptly.
const maxWaitChunk = 50 * time.Millisecond

// timerWaiter is the portable fallback.
type timerWaiter struct{ t *time.Timer }

func newTimerWaiter() *timerWaiter {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerWaiter{t: t}
}

func (w *timerWaiter) wait(ctx context.Context, d time.Duration) error {
	w.t.Reset(d)
	select {
	case <-w.t.C:
		return nil
	case <-ctx.Done():
		w.t.Stop()
		return ctx.Err()
	}
}

func (w *timerWaiter) close() { w.t.Stop() }
