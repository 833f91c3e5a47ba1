package nodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/netns"
	"github.com/meshbench/meshbench/internal/process"
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

// startProc starts bin in its own process group with a parent-death
// signal (process.StartIn), in ns when ns is not nil (the child is forked
// from package process's spawner thread while it is inside the namespace,
// so it is born there: no nsenter, and the mount namespace with
// /sys/fs/cgroup stays the host's), with stdout and stderr in
// logDir/NAME.log.
func startProc(ns *netns.NS, name, logDir, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var in func(func() error) error
	if ns != nil {
		in = ns.Do
	}
	if err := process.StartIn(cmd, in); err != nil {
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

// kill sends SIGKILL to the process group unless the leader has been
// reaped (its PID, and so the group ID, may have been reused since).
func (p *proc) kill() {
	if !p.exited() {
		process.KillGroup(p.PID)
	}
}

// stop sends SIGTERM to the group, SIGKILL after grace, and waits until the
// process is reaped (process.Stop).
func (p *proc) stop(grace time.Duration) {
	process.Stop(p.PID, p.done, grace)
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
	if _, err := os.Stat(path); err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return process.TailFile(path, n, 64<<10)
}
