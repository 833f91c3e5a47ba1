// Package process starts, watches and stops the child processes meshbench
// runs (Envoys, app replicas, load generators, external load tools, the
// test control plane's components) and keeps the tail of their output for
// error messages. Every child gets its own process group and a
// parent-death signal, so a terminal's Ctrl-C reaches only meshbench (which
// then stops its children in order) and a crash of meshbench leaves no
// child behind; Stop ends a child by its PID, with a grace period.
package process

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Start starts cmd in its own process group with a parent-death signal
// (SIGTERM; a cmd whose SysProcAttr is already set keeps it), from one
// thread that lives as long as the program: the kernel sends the
// parent-death signal when the thread that forked the child ends, and Go
// ends threads, so forking from any other thread could kill a child early.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	return spawn(cmd)
}

// StartIn is Start with the spawner thread inside in while it forks: in
// runs its function on the calling thread in another namespace
// (netns.NS.Do) and restores the thread before it returns, so the child is
// born in that namespace and still gets the parent-death signal. A nil in
// is Start.
func StartIn(cmd *exec.Cmd, in func(func() error) error) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	return spawnIn(cmd, in)
}

// SetGid makes cmd's child run as group gid, its uid unchanged (Linux; a
// no-op elsewhere). Call it before Start.
func SetGid(cmd *exec.Cmd, gid int) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	setGid(cmd.SysProcAttr, gid)
}

// SetUser makes cmd's child run as uid and gid with no supplementary
// groups (Linux; a no-op elsewhere), e.g. a proxy whose own packets its
// capture rules exempt by uid. Call it before Start.
func SetUser(cmd *exec.Cmd, uid, gid int) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	setUser(cmd.SysProcAttr, uid, gid)
}

// KillGroup sends SIGKILL to the process group led by pid (a child started
// by Start). It does nothing for pid <= 0.
func KillGroup(pid int) { killGroup(pid) }

// Stop sends SIGTERM to the process group led by pid, waits up to grace for
// done to close (the caller closes it once it has reaped the process), then
// sends SIGKILL to the group and waits for done. It reports whether SIGKILL
// was needed. Nothing is signalled once done is closed: the PID may have
// been reused.
func Stop(pid int, done <-chan struct{}, grace time.Duration) (killed bool) {
	select {
	case <-done:
		return false
	default:
	}
	termGroup(pid)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		killGroup(pid)
		<-done
		return true
	}
}

// TailFile returns the last lines of the file at path (at most maxLines
// lines of its last maxBytes bytes), trimmed of its final newline, for
// error messages; "" when the file cannot be read or is empty.
func TailFile(path string, maxLines int, maxBytes int64) string {
	return TailLines(ReadTail(path, maxBytes), maxLines)
}

// TailLines returns the last maxLines lines of b (all of them for
// maxLines <= 0), without trailing newlines.
func TailLines(b []byte, maxLines int) string {
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if maxLines > 0 && len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	return strings.Join(lines, "\n")
}

// ReadTail returns up to the last n bytes of the file at path (nil when it
// cannot be read).
func ReadTail(path string, n int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(st.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return nil
	}
	return b
}

// TailBuffer is an io.Writer keeping the last Max bytes written, for a
// child's stdout and stderr. It is safe for concurrent use.
type TailBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

// NewTailBuffer returns a TailBuffer keeping the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

// Write keeps the end of b; it never fails.
func (t *TailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.max {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-t.max:]...)
	}
	return len(b), nil
}

// Bytes returns a copy of the last max bytes written.
func (t *TailBuffer) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	return append([]byte(nil), b...)
}
