package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/netns"
)

// stopGrace is how long a process gets after SIGTERM before SIGKILL. A
// kubelet stops in well under a second; containerd waits for its plugins.
const stopGrace = 10 * time.Second

// Process is one running node component.
type Process struct {
	Name    string // "kubelet-0", "containerd-1", "coredns", ...
	PID     int    // the binary itself (also its process group ID)
	LogFile string // its stdout and stderr
}

type proc struct {
	Process
	done chan struct{}
	err  error
}

// startProc starts bin in its own process group, in ns when ns is not nil
// (the child is forked from a thread inside the namespace, so it is born
// there: no nsenter, and the mount namespace with /sys/fs/cgroup stays the
// host's), with stdout and stderr in logDir/NAME.log.
func startProc(ns *netns.NS, name, logDir, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := cmd.Start
	if ns != nil {
		start = func() error { return ns.Do(cmd.Start) }
	}
	if err := start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{Process: Process{Name: name, PID: cmd.Process.Pid, LogFile: logPath}, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// signal sends sig to the process group unless the leader has been reaped
// (its PID, and so the group ID, may have been reused since).
func (p *proc) signal(sig syscall.Signal) {
	if !p.exited() {
		_ = syscall.Kill(-p.PID, sig)
	}
}

// stop sends SIGTERM to the group, SIGKILL after grace, and waits until the
// process is reaped.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// failure describes a process that exited, with the tail of its log.
func (p *proc) failure() error {
	err := p.err
	if err == nil {
		err = errors.New("exit status 0")
	}
	return fmt.Errorf("%s (pid %d) exited: %w\n--- last lines of %s ---\n%s", p.Name, p.PID, err, p.LogFile, tailFile(p.LogFile, 20))
}

func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > 64<<10 {
		b = b[len(b)-64<<10:]
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
