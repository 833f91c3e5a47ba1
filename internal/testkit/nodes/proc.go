package nodes

import (
	"errors"
	"fmt"
	"os/exec"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/sys/netns"
	"github.com/meshbench/meshbench/internal/sys/process"
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

// proc is a running node component (process.Child: its log, reaping,
// stopping).
type proc struct {
	*process.Child
}

// info is the component as Processes lists it.
func (p *proc) info() Process { return Process{Name: p.Name, PID: p.PID, LogFile: p.LogFile} }

// startProc starts bin in its own process group with a parent-death
// SIGKILL (process.StartLogged), in ns when ns is not nil (the child is
// forked from package process's spawner thread while it is inside the
// namespace, so it is born there: no nsenter, and the mount namespace with
// /sys/fs/cgroup stays the host's), with stdout and stderr in
// logDir/NAME.log.
func startProc(ns *netns.NS, name, logDir, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var in func(func() error) error
	if ns != nil {
		in = ns.Do
	}
	c, err := process.StartLogged(name, logDir, cmd, in)
	if err != nil {
		return nil, err
	}
	return &proc{c}, nil
}

// failure describes a process that exited, with the tail of its log.
func (p *proc) failure() error {
	err := p.Err()
	if err == nil {
		err = errors.New("exit status 0")
	}
	return fmt.Errorf("%s (pid %d) exited: %w\n--- last lines of %s ---\n%s", p.Name, p.PID, err, p.LogFile, p.Tail(20))
}
