//go:build linux

package loadgen

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a non-blocking socket with raw system calls inside
// Go's poller callbacks (syscall.RawConn). Waiting for readiness and
// deadlines still go through the poller; what changes is that the read and
// write calls themselves skip the runtime's entersyscall/exitsyscall. On a
// 2-core VM that matters: the runtime's monitor hands the processor to
// another OS thread whenever it catches one inside a system call, which
// costs two thread wake-ups per request at a few thousand requests per
// second. A non-blocking socket call never blocks, so the raw form is safe.
type rawIO struct {
	rc     syscall.RawConn
	remote net.Addr
}

func newRawIO(c *net.TCPConn) io.ReadWriter {
	rc, err := c.SyscallConn()
	if err != nil {
		return c
	}
	return &rawIO{rc: rc, remote: c.RemoteAddr()}
}

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait for readability through the poller
			}
			n, errno = int(m), e
			return true
		}
	})
	if err != nil {
		return 0, r.opErr("read", err)
	}
	if errno != 0 {
		return 0, r.opErr("read", os.NewSyscallError("read", errno))
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

func (r *rawIO) Write(p []byte) (int, error) {
	written := 0
	var errno syscall.Errno
	err := r.rc.Write(func(fd uintptr) bool {
		for written < len(p) {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&p[written])), uintptr(len(p)-written))
			switch e {
			case 0:
				written += int(m)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait for writability through the poller
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return written, r.opErr("write", err)
	}
	if errno != 0 {
		return written, r.opErr("write", os.NewSyscallError("write", errno))
	}
	return written, nil
}

func (r *rawIO) opErr(op string, err error) error {
	// The poller's own error (a deadline) comes as an OpError naming both
	// ends ("raw-read tcp A->B: i/o timeout"): keep only its cause, so the
	// message names the target and not the ephemeral local port.
	var inner *net.OpError
	if errors.As(err, &inner) && inner.Err != nil {
		err = inner.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Addr: r.remote, Err: err}
}
