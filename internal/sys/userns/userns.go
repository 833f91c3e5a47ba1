// Package userns runs meshbench, unprivileged, as root of a user namespace
// of its own, so the lab's netns substrate (network namespaces, bridges,
// nftables capture rules, ztunnel's in-pod sockets) works without root
// where the kernel allows unprivileged user namespaces: the process re-executes itself in
// new user, mount and network namespaces, its uid and gid mapped to root,
// with a private tmpfs on /run for the named namespaces. Everything the
// lab makes lives in those namespaces and goes when the process ends, even
// after SIGKILL. Only the caller's own uid and gid are mapped, so a
// process cannot switch to another (the sidecars' group 1337).
package userns

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/vishvananda/netlink"
)

// EnvInside is set in the re-executed process.
const EnvInside = "MESHBENCH_USERNS"

// Inside reports whether this process is the re-executed one.
func Inside() bool { return os.Getenv(EnvInside) == "1" }

// Wanted reports whether args ask for the netns substrate explicitly
// (`run` or `bench` with --substrate netns) from a user who is not root:
// only then is meshbench re-executed. `auto` falls back to loopback
// instead, and nothing else is touched (a kube run needs the host's
// network).
func Wanted(args []string) bool {
	if os.Geteuid() == 0 || Inside() || len(args) == 0 || (args[0] != "run" && args[0] != "bench") {
		return false
	}
	for i, a := range args {
		if a == "--substrate=netns" || (a == "--substrate" && i+1 < len(args) && args[i+1] == "netns") {
			return true
		}
	}
	return false
}

// Reexec runs this executable with args in new user, mount and network
// namespaces, the caller's uid and gid mapped to 0, and returns its exit
// code. Interrupts reach the child (same process group) and are ignored
// here; the child's exit code is returned as is.
func Reexec(args []string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), EnvInside+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
	}
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("unprivileged user namespace: %w", err)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), nil
		}
		return ee.ExitCode(), nil
	}
	return 0, err
}

// Setup prepares the re-executed process: mounts private, a tmpfs on /run
// (so /run/netns and the lab's owner records are its own), and the
// loopback of its network namespace up.
func Setup() error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("user namespace: making mounts private: %w", err)
	}
	if err := syscall.Mount("tmpfs", "/run", "tmpfs", 0, "mode=0755"); err != nil {
		return fmt.Errorf("user namespace: tmpfs on /run: %w", err)
	}
	if err := os.MkdirAll("/run/netns", 0o755); err != nil {
		return err
	}
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(lo)
}
