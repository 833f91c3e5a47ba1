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
