package linkerd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/controlplane"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/sys/pki"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// ControlPlaneCommand is the hidden meshbench subcommand that serves the
// control plane in a process of its own (ServeControlPlane).
const ControlPlaneCommand = "linkerd-control-plane"

// ControlPlaneReadyTimeout bounds how long the child may take to say it
// serves: a Go binary starting and loading a JSON file, which takes a few
// ms idle and stays well under a second on a loaded 2-core machine.
const ControlPlaneReadyTimeout = 30 * time.Second

// ChildConfig is the control plane's configuration as the child reads it
// (JSON, written by the parent with mode 0600: it names the CA key).
type ChildConfig struct {
	CA        pki.CAFiles             `json:"ca"`
	Workloads []controlplane.Workload `json:"workloads"`
	Services  []controlplane.Service  `json:"services"`
	Rules     []topology.Policy       `json:"rules"`
	AdminPort int                     `json:"admin_port"`
	Tokens    map[string]string       `json:"tokens"`
	// Listeners is how many listening sockets the child inherits, as fds
	// 3, 4, … (one on 127.0.0.1 inside every meshed pod's namespace).
	Listeners int `json:"listeners"`
}

// readyLine starts what the child prints once it serves.
const readyLine = "READY " + ControlPlaneCommand

// ControlPlaneProcess is the control plane's own process.
type ControlPlaneProcess struct {
	cmd    *exec.Cmd
	exited chan struct{}
	// Log is its stderr's file.
	Log string
}

// PID is the child's process id.
func (c *ControlPlaneProcess) PID() int { return c.cmd.Process.Pid }

// Exited is closed when the child has exited.
func (c *ControlPlaneProcess) Exited() <-chan struct{} { return c.exited }

// Stop sends SIGTERM to the child's group and waits up to grace before
// killing it.
func (c *ControlPlaneProcess) Stop(grace time.Duration) error {
	process.Stop(c.cmd.Process.Pid, c.exited, grace)
	return nil
}

// startControlPlane starts `meshbench linkerd-control-plane` serving cfg
// on listeners and waits for its ready line.
func startControlPlane(ctx context.Context, meshbench, dir string, cfg controlplane.Config, listeners []net.Listener) (_ *ControlPlaneProcess, err error) {
	cpDir := filepath.Join(dir, "control-plane")
	caFiles, err := cfg.CA.WriteFiles(cpDir) // 0700: the CA key stays root's
	if err != nil {
		return nil, err
	}
	cc := ChildConfig{CA: caFiles, Workloads: cfg.Workloads, Services: cfg.Services, Rules: cfg.Rules,
		AdminPort: cfg.AdminPort, Tokens: cfg.Tokens, Listeners: len(listeners)}
	js, err := json.Marshal(cc)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(cpDir, "config.json")
	if err := os.WriteFile(cfgPath, js, 0o600); err != nil {
		return nil, err
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	for _, l := range listeners {
		tl, ok := l.(*net.TCPListener)
		if !ok {
			return nil, fmt.Errorf("control plane listener %s is no TCP listener", l.Addr())
		}
		f, err := tl.File()
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	logPath := filepath.Join(dir, "control-plane.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(meshbench, ControlPlaneCommand, "--config", cfgPath)
	cmd.ExtraFiles = files
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := process.Start(cmd); err != nil {
		return nil, fmt.Errorf("starting the Linkerd control plane (%s %s): %w", meshbench, ControlPlaneCommand, err)
	}
	c := &ControlPlaneProcess{cmd: cmd, exited: make(chan struct{}), Log: logPath}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), readyLine) {
				ready <- nil
				_, _ = io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- errors.New("the control plane exited before it was ready")
	}()
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	defer func() {
		if err != nil {
			_ = c.Stop(StopGrace)
		}
	}()
	t := time.NewTimer(ControlPlaneReadyTimeout)
	defer t.Stop()
	select {
	case err = <-ready:
	case <-t.C:
		err = fmt.Errorf("the control plane was not ready within %v", ControlPlaneReadyTimeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("linkerd control plane: %w; log %s:\n%s", err, logPath, process.TailFile(logPath, 10, 4096))
	}
	return c, nil
}

// ServeControlPlane is the child's side: it reads the configuration at
// configPath, serves the control plane on the inherited listeners (fds 3,
// 4, …), writes its ready line to ready, and serves until ctx ends or
// SIGTERM or SIGINT arrives.
func ServeControlPlane(ctx context.Context, configPath string, ready io.Writer) error {
	js, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	var cc ChildConfig
	if err := json.Unmarshal(js, &cc); err != nil {
		return fmt.Errorf("%s: %w", configPath, err)
	}
	if cc.Listeners < 1 {
		return fmt.Errorf("%s: listeners %d: allowed 1 or more inherited sockets", configPath, cc.Listeners)
	}
	ca, err := pki.LoadCA(cc.CA)
	if err != nil {
		return err
	}
	srv, err := controlplane.New(controlplane.Config{CA: ca, Workloads: cc.Workloads, Services: cc.Services, Rules: cc.Rules,
		AdminPort: cc.AdminPort, Tokens: cc.Tokens})
	if err != nil {
		return err
	}
	for i := range cc.Listeners {
		f := os.NewFile(uintptr(3+i), fmt.Sprintf("listener-%d", i))
		if f == nil {
			return errors.Join(fmt.Errorf("no inherited socket at fd %d", 3+i), srv.Close())
		}
		l, err := net.FileListener(f)
		_ = f.Close()
		if err != nil {
			return errors.Join(fmt.Errorf("inherited socket at fd %d: %w", 3+i, err), srv.Close())
		}
		srv.Serve(l)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	fmt.Fprintf(ready, "%s %d listeners, %d workloads\n", readyLine, cc.Listeners, len(cc.Workloads))
	<-ctx.Done()
	return srv.Close()
}
