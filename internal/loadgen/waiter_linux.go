//go:build linux

package loadgen

import (
	"context"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// fdWaiter sleeps on a non-blocking timerfd registered with Go's poller, so
// the goroutine parks like any network read but wakes with the kernel's
// high-resolution timer.
type fdWaiter struct {
	fd  int
	f   *os.File
	buf [8]byte
}

func newWaiter() waiter {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerWaiter()
	}
	return &fdWaiter{fd: fd, f: os.NewFile(uintptr(fd), "meshbench-pacer-timerfd")}
}

func (w *fdWaiter) wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(w.fd, 0, &spec, nil); err != nil {
		time.Sleep(d)
	} else if _, err := w.f.Read(w.buf[:]); err != nil {
		time.Sleep(d)
	}
	return ctx.Err()
}

func (w *fdWaiter) close() { w.f.Close() }
