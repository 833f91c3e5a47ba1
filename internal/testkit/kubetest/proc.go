package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/sys/process"
)

// stopGrace is how long a component gets to exit after SIGTERM before it is
// killed. kube-apiserver's graceful shutdown can hang for good once etcd is
// gone, so there must be a limit.
const stopGrace = 10 * time.Second

// Process is one running component of a Cluster.
type Process struct {
	Name    string // "etcd", "kube-apiserver", ...
	PID     int    // also its process group ID
	LogFile string // its stdout and stderr
}

// proc is a running component (process.Child: its log, reaping,
// stopping).
type proc struct {
	*process.Child
}

// info is the component as Processes lists it.
func (p *proc) info() Process { return Process{Name: p.Name, PID: p.PID, LogFile: p.LogFile} }

// startProc starts bin in its own process group with stdout and stderr in
// logDir/NAME.log (process.StartLogged). The context is not tied to the
// process: components are stopped only by stop, in order.
func startProc(name, logDir, bin string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own group, so a terminal's Ctrl-C reaches only the test
		// (which then stops everything in order) and stop can signal
		// anything the component forked.
		Setpgid: true,
		// If the test binary dies without calling Stop (a go test
		// timeout panic, SIGKILL), the kernel kills the component rather
		// than leaving an orphaned etcd or apiserver behind.
		Pdeathsig: syscall.SIGKILL,
	}
	c, err := process.StartLogged(name, logDir, cmd, nil) // from package process's long-lived thread, so Pdeathsig fires only when the test binary dies
	if err != nil {
		return nil, err
	}
	return &proc{c}, nil
}

// stop sends SIGTERM to the process group, waits up to stopGrace, then
// SIGKILLs the group, and always waits until the process is reaped. It
// reports whether SIGKILL was needed. (Once the leader is reaped its PID,
// and so the group ID, may be reused: nothing is signalled after that.)
func (p *proc) stop() (killed bool) {
	return p.Stop(stopGrace)
}

// errPortInUse marks a failure caused by a port that another process took
// between choosing it and binding it; Start retries with new ports.
var errPortInUse = errors.New("port already in use")

// failure describes a component that exited or did not get ready, with the
// tail of its log.
func (p *proc) failure(what string, cause error) error {
	tail := p.Tail(25)
	err := fmt.Errorf("%s: %w\n--- last lines of %s ---\n%s", what, cause, p.LogFile, tail)
	if strings.Contains(tail, "address already in use") {
		return errors.Join(err, errPortInUse)
	}
	return err
}

// waitReady polls check every interval until it succeeds, the process
// exits, the timeout passes or ctx ends, whichever comes first.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration, check func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		last = check(cctx)
		ccancel()
		if last == nil {
			return nil
		}
		var bs backoffStop
		if errors.As(last, &bs) {
			return bs.err // waiting cannot help
		}
		select {
		case <-p.Done():
			return p.failure(p.Name+" exited before it was ready", exitError(p.Err()))
		case <-ctx.Done():
			return p.failure(fmt.Sprintf("%s not ready after %v", p.Name, timeout), fmt.Errorf("%w (last check: %v)", ctx.Err(), last))
		case <-tick.C:
		}
	}
}

func exitError(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// runCmd runs a short-lived command and returns its stdout; the error
// carries its stderr.
func runCmd(ctx context.Context, stdin []byte, bin string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
