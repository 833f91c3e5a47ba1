package sample

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procReader reads /proc files into one reused buffer with plain system
// calls (open, read until EOF, close): no *os.File, no allocation per file
// once the buffer has grown. Not safe for concurrent use.
type procReader struct{ buf []byte }

// readFile returns the file's content in r.buf, valid until the next call.
func (r *procReader) readFile(path string) ([]byte, error) {
	if r.buf == nil {
		r.buf = make([]byte, 4096)
	}
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := syscall.Read(fd, r.buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

// isNotExist reports whether err says the process is not there (any more).
func isNotExist(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ESRCH)
}

// threadCPUTime returns the CPU time (user+system) the calling OS thread has
// used, from CLOCK_THREAD_CPUTIME_ID (nanosecond resolution). The caller
// locks its goroutine to the thread.
func threadCPUTime() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
