//go:build !linux

package envoy

import (
	"os/exec"
	"syscall"
)

// sysProcAttr: outside Linux the lab is untested; Envoys share meshbench's
// process group and get no parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// setGid is a no-op outside Linux (sysProcAttr is nil there).
func setGid(*syscall.SysProcAttr, int) {}

// spawnIn starts cmd inside in (nil: here).
func spawnIn(cmd *exec.Cmd, in func(func() error) error) error {
	if in == nil {
		return cmd.Start()
	}
	return in(cmd.Start)
}

// killGroup is a no-op outside Linux (Envoys have no group of their own).
func killGroup(int) {}

// spawn starts cmd.
func spawn(cmd *exec.Cmd) error { return cmd.Start() }

// StartChild starts cmd (no process group or parent-death signal here).
func StartChild(cmd *exec.Cmd) error { return spawn(cmd) }

// StartChildIn starts cmd inside in (see the Linux version).
func StartChildIn(cmd *exec.Cmd, in func(func() error) error) error { return in(cmd.Start) }

// KillGroup is a no-op outside Linux.
func KillGroup(pid int) { killGroup(pid) }
