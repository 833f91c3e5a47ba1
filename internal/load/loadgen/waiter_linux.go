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
// high-resolution timer. Arming and reading the timer are raw system calls
// (see rawIO for why).
type fdWaiter struct {
	fd  int
	f   *os.File
	rc  syscall.RawConn
	buf [8]byte
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
	return &fdWaiter{fd: fd, f: f, rc: rc}
}

func (w *fdWaiter) wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	_, _, e := syscall.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(w.fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if e != 0 {
		time.Sleep(d)
		return ctx.Err()
	}
	err := w.rc.Read(func(fd uintptr) bool {
		for {
			_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&w.buf[0])), 8)
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			return true
		}
	})
	if err != nil {
		time.Sleep(d)
	}
	return ctx.Err()
}

func (w *fdWaiter) close() { w.f.Close() }
