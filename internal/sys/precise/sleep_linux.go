//go:build linux

package precise

import (
	"context"
	"os"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Sleep waits d, or until ctx ends (returning its error). Each call uses
// its own non-blocking timerfd registered with Go's poller: the goroutine
// parks like a network read and wakes on the kernel's high-resolution
// timer. Cancellation closes the timerfd, which ends the read at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return timerSleep(ctx, d)
	}
	f := os.NewFile(uintptr(fd), "meshbench-precise-timerfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return timerSleep(ctx, d)
	}
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
		return timerSleep(ctx, d)
	}
	stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	var buf [8]byte
	err = rc.Read(func(fd uintptr) bool {
		for {
			_, _, e := syscall.Syscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), 8)
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false
			}
			return true
		}
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return timerSleep(ctx, d)
	}
	return nil
}
