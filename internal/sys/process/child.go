package process

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Child is a long-lived child process started by StartLogged (a test
// cluster's etcd, a real node's kubelet): its stdout and stderr go to a
// log file, and a goroutine reaps it.
type Child struct {
	Name    string // for messages: "etcd", "kubelet-0", …
	PID     int    // the child itself, also its process group ID
	LogFile string // its stdout and stderr
	done    chan struct{}
	err     error
}

// StartLogged starts cmd as StartIn does (in nil: Start), with its stdout
// and stderr in logDir/NAME.log, and reaps it in the background. cmd's
// SysProcAttr, when set, is kept (e.g. a parent-death SIGKILL).
func StartLogged(name, logDir string, cmd *exec.Cmd, in func(func() error) error) (*Child, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := StartIn(cmd, in); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &Child{Name: name, PID: cmd.Process.Pid, LogFile: logPath, done: make(chan struct{})}
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.done)
	}()
	return c, nil
}

// Done is closed once the child has exited and been reaped.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the child has exited and been reaped.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Err is how the child ended (cmd.Wait's error), once Done is closed.
func (c *Child) Err() error { return c.err }

// Stop ends the child's process group as Stop does (SIGTERM, SIGKILL after
// grace) and waits until it is reaped; it reports whether SIGKILL was
// needed.
func (c *Child) Stop(grace time.Duration) (killed bool) { return Stop(c.PID, c.done, grace) }

// Kill sends SIGKILL to the child's process group unless the child has
// been reaped (its PID, and so the group ID, may have been reused since).
func (c *Child) Kill() {
	if !c.Exited() {
		KillGroup(c.PID)
	}
}

// Tail is the last n lines of the child's log (TailLog).
func (c *Child) Tail(n int) string { return TailLog(c.LogFile, n) }

// TailLog is the last n lines of the log file at path (of its last 64
// KiB), for error messages; "(no log: …)" when it cannot be read.
func TailLog(path string, n int) string {
	if _, err := os.Stat(path); err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return TailFile(path, n, 64<<10)
}
