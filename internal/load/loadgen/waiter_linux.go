//go:build linux

package loadgen

import (
	"context"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fdWaiter sleeps on a non-blocking timerfd registered with Go's poller, so
// the goroutine parks like any network read but wakes with the kernel's
// high-resolution timer. The timer is armed with a raw system call (see
// rawIO for why) inside the poller's read callback, after the poller's
// readiness was reset: the expiry is the only thing that can wake the wait
// then, so it is never read (arming the timer again clears it), and the
// read that would only find it not yet expired is not made either: one
// system call per sleep. A wake-up without the expiry (none is known) would
// only make the pacer ask again. The callback is a method value made once:
// a wait allocates nothing.
type fdWaiter struct {
	fd     int
	f      *os.File
	rc     syscall.RawConn
	spec   unix.ItimerSpec
	armed  bool
	armErr syscall.Errno
	readFn func(fd uintptr) bool
}

func newWaiter() waiter {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimerWaiter()
	}
	f := os.NewFile(uintptr(fd), "meshbench-pacer-timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return newTimerWaiter()
	}
	w := &fdWaiter{fd: fd, f: f, rc: rc}
	w.readFn = w.doRead
	return w
}

func (w *fdWaiter) wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Setting the timer also clears the last expiry, never read.
	w.spec = unix.ItimerSpec{Value: unix.NsecToTimespec(int64(max(d, 1)))}
	w.armed, w.armErr = false, 0
	if err := w.rc.Read(w.readFn); err != nil || w.armErr != 0 {
		time.Sleep(d)
	}
	return ctx.Err()
}

// doRead arms the timer on its first call (the wait follows); the second
// comes with the expiry.
func (w *fdWaiter) doRead(fd uintptr) bool {
	if w.armed {
		return true
	}
	w.armed = true
	_, _, e := syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&w.spec)), 0, 0, 0)
	if e != 0 {
		w.armErr = e
		return true
	}
	return false // not expired yet: wait for it
}

func (w *fdWaiter) close() { w.f.Close() }
