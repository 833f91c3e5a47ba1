package process

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// sysProcAttr puts a child in its own process group and asks the kernel to
// send it SIGTERM when the thread that started it dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// setGid makes the child run as group gid (its uid unchanged).
func setGid(a *syscall.SysProcAttr, gid int) {
	a.Credential = &syscall.Credential{Uid: uint32(syscall.Getuid()), Gid: uint32(gid), NoSetGroups: true}
}

// setUser makes the child run as uid and gid, with no supplementary groups.
func setUser(a *syscall.SysProcAttr, uid, gid int) {
	a.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// killGroup sends SIGKILL to the process group led by pid.
func killGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}

// termGroup sends SIGTERM to the process group led by pid.
func termGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
	}
}

// The parent-death signal fires when the *thread* that forked the child
// exits, and Go may end a thread (when a goroutine locked to it returns).
// So every child is forked from one goroutine locked to its thread for the
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
