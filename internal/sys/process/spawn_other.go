//go:build !linux

package process

import (
	"os/exec"
	"syscall"
)

// sysProcAttr: outside Linux meshbench's children share its process group
// and get no parent-death signal.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// killGroup is a no-op outside Linux (children have no group of their own).
func killGroup(int) {}

// termGroup is a no-op outside Linux.
func termGroup(int) {}

// spawn starts cmd.
func spawn(cmd *exec.Cmd) error { return cmd.Start() }

// spawnIn starts cmd inside in (nil: here).
func spawnIn(cmd *exec.Cmd, in func(func() error) error) error {
	if in == nil {
		return cmd.Start()
	}
	return in(cmd.Start)
}

// setGid is a no-op outside Linux (sysProcAttr is nil there).
func setGid(*syscall.SysProcAttr, int) {}

// setUser is a no-op outside Linux (sysProcAttr is nil there).
func setUser(*syscall.SysProcAttr, int, int) {}
