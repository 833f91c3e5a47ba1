package envoy

import (
	"os/exec"

	"github.com/meshbench/meshbench/internal/process"
)

// StartChild starts cmd the way the Supervisor starts Envoys (process.Start:
// its own process group, a parent-death signal, forked from one long-lived
// thread). New code calls process.Start; this stays for callers not yet moved
// (the ztunnel package).
func StartChild(cmd *exec.Cmd) error { return process.Start(cmd) }

// KillGroup sends SIGKILL to the process group led by pid (process.KillGroup).
func KillGroup(pid int) { process.KillGroup(pid) }
