//go:build linux

package loadgen

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawIO reads and writes a non-blocking socket with raw system calls inside
// Go's poller callbacks (syscall.RawConn). Waiting for readiness and
// deadlines still go through the poller; what changes is that the read and
// write calls themselves skip the runtime's entersyscall/exitsyscall. On a
// 2-core VM that matters: the runtime's monitor hands the processor to
// another OS thread whenever it catches one inside a system call, which
// costs two thread wake-ups per request at a few thousand requests per
// second. A non-blocking socket call never blocks, so the raw form is safe.
//
// Two more savings per request, and one measurement:
//   - A request is written inside the wait for its answer (send, then
//     Read): the poller's readiness is reset before the write, so the
//     answer's arrival cannot be missed, and the read that would only
//     find nothing yet (EAGAIN) is not made.
//   - The callbacks are method values made once, with the operation's
//     state in the struct: nothing is allocated per call.
//   - Reads are recvmsg with the kernel's receive timestamp
//     (SO_TIMESTAMPNS): arrival tells when the last bytes read reached the
//     socket, whenever this goroutine got to read them.
//   - With a harvest (an open loop), an answer is read at the pacer's next
//     wake-up rather than its own (see harvest).
//
// One goroutine uses a rawIO at a time (the connection's owner).
type rawIO struct {
	rc     syscall.RawConn
	remote net.Addr

	// The operation in progress, for the callbacks.
	buf   []byte
	n     int
	errno syscall.Errno
	// send is a request to write inside the next Read's callback;
	// sendErr is its write's error, sendFailed whether it failed.
	send       []byte
	sendErr    syscall.Errno
	sendFailed bool

	readFn, writeFn func(fd uintptr) bool

	// Reading at the pacer's wake-ups (harvest): try makes the read
	// callback return at once, setting again when nothing came; quiet
	// tells that the socket's SO_RCVLOWAT is raised (arrivals do not wake
	// the thread); noLazy, that this connection waits on its socket only
	// (the kernel gave no receive time, or refused the option).
	lazy   *harvest
	wake   chan struct{}
	try    bool
	again  bool
	quiet  bool
	noLazy bool
	// eagerFor counts down the answers read on the socket after one
	// outlasted lazyMaxTries ticks (a target slower than the pacer's
	// period): trying lazily again only now and then.
	eagerFor int
	lowat    int
	lowFn    func(fd uintptr)

	iov   syscall.Iovec
	msg   syscall.Msghdr
	oob   [64]byte
	stamp int64 // wall-clock ns (CLOCK_REALTIME) the last bytes read arrived; 0: unknown
}

func newRawIO(c *net.TCPConn) *rawIO {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil
	}
	r := &rawIO{rc: rc, remote: c.RemoteAddr()}
	r.readFn, r.writeFn, r.lowFn = r.doRead, r.doWrite, r.setLowat
	// The kernel stamps each received packet; without it (an old kernel)
	// arrival stays 0 and the caller times the answer itself.
	_ = rc.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	})
	return r
}

// queue makes the next Read write p first (see rawIO).
func (r *rawIO) queue(p []byte) {
	r.send, r.sendErr, r.sendFailed = p, 0, false
}

// writeFailed reports whether the request queued last could not be
// written (the error Read returned is a write error).
func (r *rawIO) writeFailed() bool { return r.sendFailed }

// arrival is the wall-clock time, in ns, at which the kernel received the
// last bytes Read returned; 0 when it did not say.
func (r *rawIO) arrival() int64 { return r.stamp }

// useHarvest lets the connection read answers at the pacer's wake-ups
// while h is on; wake is the connection's own channel of capacity 1.
func (r *rawIO) useHarvest(h *harvest, wake chan struct{}) {
	r.lazy, r.wake = h, wake
}

// quietLowat is the SO_RCVLOWAT of a quiet socket: an answer smaller than
// this arriving does not wake the thread (a larger one does, harmlessly).
// The kernel grows the socket's receive buffer to hold it, so it is kept
// near the default buffer's size.
const quietLowat = 64 << 10

func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	// Lazily only once the kernel has stamped an answer of this connection.
	if r.lazy != nil && !r.noLazy && r.stamp != 0 && r.lazy.active() {
		if r.eagerFor > 0 {
			if len(r.send) > 0 {
				r.eagerFor--
			}
		} else if n, err, done := r.readLazy(p); done {
			return n, err
		}
	}
	if r.quiet && !r.setQuiet(false) {
		return 0, r.opErr("read", os.NewSyscallError("setsockopt", r.errno))
	}
	return r.readEager(p)
}

// setQuiet raises (quiet) or lowers SO_RCVLOWAT; lowering it when bytes
// are already there signals the poller, so a wait that follows sees them.
func (r *rawIO) setQuiet(quiet bool) bool {
	r.lowat, r.errno = 1, 0
	if quiet {
		r.lowat = quietLowat
	}
	if err := r.rc.Control(r.lowFn); err != nil && r.errno == 0 {
		r.errno = syscall.EBADF
	}
	if r.errno != 0 {
		r.noLazy = true
		return false
	}
	r.quiet = quiet
	return true
}

func (r *rawIO) setLowat(fd uintptr) {
	v := int32(r.lowat)
	_, _, e := syscall.RawSyscall6(syscall.SYS_SETSOCKOPT, fd, syscall.SOL_SOCKET, syscall.SO_RCVLOWAT,
		uintptr(unsafe.Pointer(&v)), unsafe.Sizeof(v), 0)
	r.errno = e
}

// readLazy reads at the pacer's wake-ups: it writes a queued request and
// parks until the next tick, then tries to read, up to lazyMaxTries ticks.
// done is false when the caller must wait on the socket instead (the
// harvest went off, the tries ran out, or the write did not fit).
func (r *rawIO) readLazy(p []byte) (n int, err error, done bool) {
	if !r.quiet && !r.setQuiet(true) {
		return 0, nil, false
	}
	for tries := 0; tries <= lazyMaxTries; tries++ {
		r.buf, r.n, r.errno, r.try, r.again = p, 0, 0, true, false
		err := r.rc.Read(r.readFn)
		r.buf, r.try = nil, false
		switch {
		case err != nil || r.sendErr != 0:
			n, err := r.result(err)
			return n, err, true
		case len(r.send) > 0:
			return 0, nil, false // the send buffer was full: the usual way
		case r.again:
			if tries == lazyMaxTries {
				r.eagerFor = lazyBackoff
				return 0, nil, false
			}
			if !r.lazy.wait(r.wake) {
				return 0, nil, false
			}
			continue
		}
		if r.n > 0 {
			lazyAnswers.Add(1)
			if r.stamp == 0 {
				r.noLazy = true // no receive time: this answer is timed when read
			}
		}
		n, err := r.result(nil)
		return n, err, true
	}
	return 0, nil, false
}

// readEager reads, waiting on the socket through the poller.
func (r *rawIO) readEager(p []byte) (int, error) {
	for {
		r.buf, r.n, r.errno = p, 0, 0
		err := r.rc.Read(r.readFn)
		r.buf = nil
		switch {
		case err != nil || r.sendErr != 0:
			return r.result(err)
		case len(r.send) > 0:
			// The socket's send buffer was full: finish writing the usual
			// way, then read.
			rest := r.send
			r.send = nil
			if _, err := r.Write(rest); err != nil {
				r.sendFailed = true
				return 0, err
			}
			continue
		}
		return r.result(nil)
	}
}

// result is what a read callback's run comes to: err is the poller's.
func (r *rawIO) result(err error) (int, error) {
	switch {
	case err != nil:
		op := "read"
		if len(r.send) > 0 { // a deadline or Abort came before the write
			op, r.send, r.sendFailed = "write", nil, true
		}
		return 0, r.opErr(op, err)
	case r.sendErr != 0:
		r.send, r.sendFailed = nil, true
		return 0, r.opErr("write", os.NewSyscallError("write", r.sendErr))
	case r.errno != 0:
		return 0, r.opErr("read", os.NewSyscallError("recvmsg", r.errno))
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

// doRead is the read callback: the queued request first, then recvmsg.
func (r *rawIO) doRead(fd uintptr) bool {
	if len(r.send) > 0 {
		for len(r.send) > 0 {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.send[0])), uintptr(len(r.send)))
			switch e {
			case 0:
				r.send = r.send[m:]
			case syscall.EINTR:
			case syscall.EAGAIN:
				return true // Read finishes the write outside the callback
			default:
				r.sendErr = e
				return true
			}
		}
		// Written after the poller's readiness was reset: the answer's
		// arrival wakes the wait. It cannot be here yet; don't look.
		if r.try {
			r.again = true
			return true
		}
		return false
	}
	r.iov.Base = &r.buf[0]
	r.iov.SetLen(len(r.buf))
	r.msg.Iov = &r.iov
	r.msg.Iovlen = 1
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	for {
		m, _, e := syscall.RawSyscall(syscall.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), syscall.MSG_DONTWAIT)
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if r.try {
				r.again = true
				return true
			}
			return false // wait for readability through the poller
		case 0:
			r.n = int(m)
			if m > 0 {
				r.stamp = r.rxStamp()
			}
		default:
			r.errno = e
		}
		return true
	}
}

// rxStamp reads the SO_TIMESTAMPNS control message of the last recvmsg:
// the time the kernel received the last of its bytes.
func (r *rawIO) rxStamp() int64 {
	n := int(r.msg.Controllen)
	b := r.oob[:min(n, len(r.oob))]
	for len(b) >= unix.SizeofCmsghdr {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
		l := int(h.Len)
		if l < unix.SizeofCmsghdr || l > len(b) {
			break
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))) {
			ts := (*unix.Timespec)(unsafe.Pointer(&b[unix.CmsgLen(0)]))
			return ts.Nano()
		}
		b = b[min(unix.CmsgSpace(l-unix.CmsgLen(0)), len(b)):]
	}
	return 0
}

func (r *rawIO) Write(p []byte) (int, error) {
	r.buf, r.n, r.errno = p, 0, 0
	err := r.rc.Write(r.writeFn)
	n := r.n
	r.buf = nil
	if err != nil {
		return n, r.opErr("write", err)
	}
	if r.errno != 0 {
		return n, r.opErr("write", os.NewSyscallError("write", r.errno))
	}
	return n, nil
}

func (r *rawIO) doWrite(fd uintptr) bool {
	for r.n < len(r.buf) {
		m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.buf[r.n])), uintptr(len(r.buf)-r.n))
		switch e {
		case 0:
			r.n += int(m)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // wait for writability through the poller
		default:
			r.errno = e
			return true
		}
	}
	return true
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
