package envoy

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// sysProcAttr puts each Envoy in its own process group (so a terminal's
// Ctrl-C reaches only meshbench, which then stops the Envoys itself) and
// asks the kernel to send it SIGTERM when the thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// setGid makes the child run as group gid (its uid unchanged).
func setGid(a *syscall.SysProcAttr, gid int) {
	a.Credential = &syscall.Credential{Uid: uint32(syscall.Getuid()), Gid: uint32(gid), NoSetGroups: true}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// The parent-death signal fires when the *thread* that forked the child
// exits, and Go may end a thread (when a goroutine locked to it returns).
// So every Envoy is forked from one goroutine locked to its thread for the
// life of the program: the signal then fires only when meshbench dies.
var spawner struct {
	once sync.Once
	reqs chan spawnReq
}

type spawnReq struct {
	cmd  *exec.Cmd
	in   func(func() error) error // nil: start where the spawner is
	done chan error
}

// spawn starts cmd on the spawner thread.
func spawn(cmd *exec.Cmd) error { return spawnIn(cmd, nil) }

// spawnIn starts cmd on the spawner thread inside in (which runs its
// function on the calling thread, e.g. after a setns(2), and restores the
// thread before it returns); nil: as spawn.
func spawnIn(cmd *exec.Cmd, in func(func() error) error) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the program
			for r := range spawner.reqs {
				if r.in != nil {
					r.done <- r.in(r.cmd.Start)
				} else {
					r.done <- r.cmd.Start()
				}
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnReq{cmd: cmd, in: in, done: done}
	return <-done
}

// StartChild starts cmd the way the Supervisor starts Envoys: in its own
// process group, from the spawner thread, with a parent-death signal, so a
// crash of meshbench leaves no child behind. The local lab uses it for the
// app and load-generator processes it runs beside the Envoys.
func StartChild(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	return spawn(cmd)
}

// StartChildIn is StartChild with the spawner thread inside in while it
// forks: in runs its function on the calling thread in another namespace
// (netns.NS.Do) and restores the thread before it returns, so the child is
// born in that namespace and still gets the parent-death signal.
func StartChildIn(cmd *exec.Cmd, in func(func() error) error) error {
	cmd.SysProcAttr = sysProcAttr()
	return spawnIn(cmd, in)
}

// KillGroup sends SIGKILL to the process group led by pid (a child started
// by StartChild).
func KillGroup(pid int) { killGroup(pid) }
