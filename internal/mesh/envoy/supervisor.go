package envoy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/sys/process"
)

// Defaults of SupervisorOptions and Spec.
const (
	// DefaultReadyTimeout is how long Start waits for GET /ready to answer
	// 200. One Envoy is ready in 0.1–0.7 s on a busy 2-core host; 30
	// started together took up to 6.3 s.
	DefaultReadyTimeout = 20 * time.Second
	// DefaultStopGrace is how long StopAll waits after SIGTERM before it
	// sends SIGKILL.
	DefaultStopGrace = 5 * time.Second
	// DefaultMaxParallelStarts is how many Envoys StartAll starts at once.
	DefaultMaxParallelStarts = 8
	// DefaultLogLevel is Envoy's --log-level when Spec.LogLevel is empty.
	DefaultLogLevel = "warn"
)

const (
	// reapTimeout bounds the wait for a SIGKILLed process to be reaped.
	reapTimeout = 5 * time.Second
	// outputTailBytes is how much of an Envoy's stdout/stderr is kept.
	outputTailBytes = 16 << 10
	// pollMin and pollMax bound the readiness poll interval (it doubles).
	pollMin = 5 * time.Millisecond
	pollMax = 50 * time.Millisecond
	// probeTimeout bounds one GET /ready.
	probeTimeout = 2 * time.Second
)

// SupervisorOptions tunes a Supervisor; zero fields take the defaults.
type SupervisorOptions struct {
	// ReadyTimeout bounds the wait from starting an Envoy to its /ready
	// answering 200 (default DefaultReadyTimeout, 20 s).
	ReadyTimeout time.Duration
	// StopGrace is the wait between SIGTERM and SIGKILL when stopping
	// (default DefaultStopGrace, 5 s).
	StopGrace time.Duration
	// MaxParallelStarts bounds how many Envoys StartAll starts at once
	// (default DefaultMaxParallelStarts, 8).
	MaxParallelStarts int
	// Environ is the base environment of every Envoy, as KEY=VALUE; nil
	// means os.Environ(). Spec.Env is added to it.
	Environ []string
	// RunDir holds the Supervisor's own small files (one admin address
	// file per Envoy, removed when it exits). Empty: a fresh directory in
	// os.TempDir(), removed by StopAll.
	RunDir string
}

// Spec describes one Envoy process to start.
type Spec struct {
	// Name identifies the process in errors and reports, e.g.
	// "sidecar server-0". Required.
	Name string
	// ConfigPath is the bootstrap config file (YAML or JSON). Required.
	ConfigPath string
	// AdminAddr is the admin listener as ip:port; it must match the
	// config's admin address and be on loopback (127.0.0.0/8 or ::1), with
	// a fixed port.
	AdminAddr string
	// LogPath is Envoy's --log-path; empty leaves Envoy's log on its
	// stderr, of which the last 16 KiB are kept for error messages.
	LogPath string
	// LogLevel is Envoy's --log-level: trace, debug, info, warning/warn,
	// error, critical or off (default DefaultLogLevel, "warn").
	LogLevel string
	// Env adds KEY=VALUE entries to the process environment.
	Env []string
	// In, when set, runs its function inside the network namespace the
	// Envoy belongs in (a pod's: netns.NS.Do); the Envoy is started there
	// and its admin address is reached there (AdminIn). nil: this one.
	In func(func() error) error
	// Gid, when above 0, is the group the Envoy runs as (Istio's
	// istio-proxy group 1337, which istio-init's capture exempts).
	Gid int
	// Concurrency is Envoy's --concurrency, its worker threads; 0 is 1,
	// the lab's default (LAB.md: each more worker is another connection
	// pool and another HBONE connection per peer).
	Concurrency int
}

// Supervisor starts Envoy processes and keeps track of every one, so that
// StopAll can stop them all by PID. Each Envoy runs in its own process
// group with `--concurrency N --disable-hot-restart` (Spec.Concurrency, 1
// by default). On Linux each Envoy
// also gets SIGTERM if meshbench itself dies (parent-death signal), so a
// crash or a test timeout leaves no Envoy behind. A Supervisor is safe for
// concurrent use. StopAll is final: use a new Supervisor for the next set
// of Envoys.
type Supervisor struct {
	bin  *Binary
	opts SupervisorOptions

	mu      sync.Mutex
	procs   []*Proc
	stopped bool
	runDir  string // admin address files; made on first Start
	ownDir  bool   // runDir was made here, StopAll removes it
	seq     int
}

// NewSupervisor returns a Supervisor that runs bin (from Find).
func NewSupervisor(bin *Binary, opts SupervisorOptions) *Supervisor {
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.MaxParallelStarts <= 0 {
		opts.MaxParallelStarts = DefaultMaxParallelStarts
	}
	return &Supervisor{bin: bin, opts: opts}
}

// Proc is one Envoy process started by a Supervisor. Its exported fields
// are set before Start returns it and never change.
type Proc struct {
	// Name is Spec.Name.
	Name string
	// PID is the process id (also its process group id on Linux).
	PID int
	// AdminAddr is the admin ip:port, checked to be where the Envoy bound
	// its admin listener.
	AdminAddr string
	// ConfigPath is Spec.ConfigPath.
	ConfigPath string
	// LogPath is Spec.LogPath (may be empty).
	LogPath string
	// Started is when the process was started.
	Started time.Time
	// ReadyAfter is the time from start to the first 200 from /ready.
	ReadyAfter time.Duration

	cmd      *exec.Cmd
	done     chan struct{}
	output   *process.TailBuffer
	addrFile string // --admin-address-path

	mu            sync.Mutex
	stopRequested bool
	exitErr       error
}

// Done returns a channel closed once the process has exited and been
// reaped; select on it to notice an Envoy dying mid-run.
func (p *Proc) Done() <-chan struct{} { return p.done }

// ExitErr is nil while the process runs and after an exit the Supervisor
// asked for. Otherwise it says how the process ended (exit status or
// signal) with Envoy's last error message, e.g.
// `envoy "sidecar server-0" (pid 4242) exited unexpectedly (signal: killed)`.
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

func (p *Proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// validLogLevels are the values Envoy 1.40 accepts for --log-level.
var validLogLevels = map[string]bool{
	"trace": true, "debug": true, "info": true, "warning": true, "warn": true,
	"error": true, "critical": true, "off": true,
}

// check reports every problem of a spec at once.
func (sp Spec) check() error {
	var errs []error
	if strings.TrimSpace(sp.Name) == "" {
		errs = append(errs, errors.New("spec has no name"))
	}
	if sp.ConfigPath == "" {
		errs = append(errs, errors.New("config path is empty"))
	} else if st, err := os.Stat(sp.ConfigPath); err != nil {
		errs = append(errs, fmt.Errorf("config %s: %w", sp.ConfigPath, unwrapPathError(err)))
	} else if !st.Mode().IsRegular() {
		errs = append(errs, fmt.Errorf("config %s is not a regular file", sp.ConfigPath))
	}
	if _, err := checkLoopbackAddr("admin address", sp.AdminAddr); err != nil {
		errs = append(errs, err)
	}
	if sp.LogLevel != "" && !validLogLevels[sp.LogLevel] {
		errs = append(errs, fmt.Errorf("log level %q is not one of trace, debug, info, warning, warn, error, critical, off", sp.LogLevel))
	}
	for _, kv := range sp.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			errs = append(errs, fmt.Errorf("environment entry %q is not KEY=VALUE", kv))
		}
	}
	return errors.Join(errs...)
}

func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Start starts one Envoy:
//
//	envoy -c CONFIG --concurrency 1 --disable-hot-restart --log-level LEVEL
//	      [--log-path LOG] --admin-address-path FILE
//
// and waits until it has bound its admin listener at spec.AdminAddr and
// GET /ready answers 200, within SupervisorOptions.ReadyTimeout. If the
// process exits first, the error carries its exit status and Envoy's own
// message; on a timeout or a cancelled ctx the process is stopped before
// Start returns. ctx bounds only the wait, not the process's life.
func (s *Supervisor) Start(ctx context.Context, spec Spec) (*Proc, error) {
	p, err := s.start(ctx, spec)
	if err != nil {
		name := spec.Name
		if name == "" {
			name = spec.ConfigPath
		}
		return nil, fmt.Errorf("starting envoy %q: %w", name, err)
	}
	return p, nil
}

func (s *Supervisor) start(ctx context.Context, spec Spec) (*Proc, error) {
	if s.bin == nil || s.bin.Path == "" {
		return nil, errors.New("no envoy binary (use envoy.Find)")
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	adminAP, _ := checkLoopbackAddr("admin address", spec.AdminAddr)
	level := spec.LogLevel
	if level == "" {
		level = DefaultLogLevel
	}
	env := s.opts.Environ
	if env == nil {
		env = os.Environ()
	}

	s.mu.Lock()
	p, addrFile, err := s.spawnLocked(spec, level, env)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	go p.wait()

	if err := s.waitReady(ctx, p, addrFile, adminAP); err != nil {
		// A process that failed its start is stopped here, by PID.
		_ = stopProcs(context.Background(), []*Proc{p}, s.opts.StopGrace)
		return nil, err
	}
	p.ReadyAfter = time.Since(p.Started)
	return p, nil
}

// spawnLocked starts the process and tracks it; s.mu is held, so StopAll
// either sees the process or refuses it from starting.
func (s *Supervisor) spawnLocked(spec Spec, level string, env []string) (*Proc, string, error) {
	if s.stopped {
		return nil, "", errors.New("the supervisor has been stopped (StopAll); use a new one")
	}
	if s.runDir == "" && s.opts.RunDir != "" {
		s.runDir = s.opts.RunDir
	}
	if s.runDir == "" {
		dir, err := os.MkdirTemp("", "meshbench-envoy-")
		if err != nil {
			return nil, "", fmt.Errorf("making a directory for envoy's admin address files: %w", err)
		}
		s.runDir, s.ownDir = dir, true
	}
	s.seq++
	addrFile := filepath.Join(s.runDir, "admin-"+strconv.Itoa(s.seq)+".addr")
	if err := os.Remove(addrFile); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("removing a stale admin address file: %w", err)
	}

	args := []string{
		"-c", spec.ConfigPath,
		"--concurrency", strconv.Itoa(max(spec.Concurrency, 1)),
		"--disable-hot-restart",
		"--log-level", level,
	}
	if spec.LogPath != "" {
		args = append(args, "--log-path", spec.LogPath)
	}
	args = append(args, "--admin-address-path", addrFile)

	out := process.NewTailBuffer(outputTailBytes)
	cmd := exec.Command(s.bin.Path, args...)
	cmd.Env = append(append([]string(nil), env...), spec.Env...)
	cmd.Stdout = out
	cmd.Stderr = out
	cmd.WaitDelay = 2 * time.Second
	if spec.Gid > 0 {
		process.SetGid(cmd, spec.Gid)
	}
	started := time.Now()
	if spec.In != nil {
		// Its admin address lives in that namespace: reach it there.
		AdminIn(spec.AdminAddr, spec.In)
	}
	if err := process.StartIn(cmd, spec.In); err != nil {
		return nil, "", fmt.Errorf("running %s: %w", s.bin.Path, err)
	}
	p := &Proc{
		Name:       spec.Name,
		PID:        cmd.Process.Pid,
		AdminAddr:  spec.AdminAddr,
		ConfigPath: spec.ConfigPath,
		LogPath:    spec.LogPath,
		Started:    started,
		cmd:        cmd,
		done:       make(chan struct{}),
		output:     out,
		addrFile:   addrFile,
	}
	s.procs = append(s.procs, p)
	return p, addrFile, nil
}

// wait reaps the process and records why it ended.
func (p *Proc) wait() {
	_ = p.cmd.Wait()
	_ = os.Remove(p.addrFile)
	state := p.cmd.ProcessState
	p.mu.Lock()
	requested := p.stopRequested
	p.mu.Unlock()

	var exitErr error
	if !requested || !endedByStop(state) {
		how := "unexpectedly"
		if requested {
			how = "while stopping"
		}
		exitErr = fmt.Errorf("envoy %q (pid %d) exited %s (%s)%s", p.Name, p.PID, how, state, p.lastWords())
	}
	p.mu.Lock()
	p.exitErr = exitErr
	p.mu.Unlock()
	close(p.done)
}

// endedByStop reports whether a requested stop explains the exit: a clean
// exit (Envoy exits 0 on SIGTERM) or death by SIGTERM/SIGKILL.
func endedByStop(state *os.ProcessState) bool {
	if state == nil {
		return false
	}
	if state.Success() {
		return true
	}
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL
	}
	return false
}

// lastWords is ": <Envoy's message> (log: PATH)" for error messages, or
// the part of it that exists.
func (p *Proc) lastWords() string {
	msg := envoyMessage(string(p.output.Bytes()), false)
	if msg == "" && p.LogPath != "" {
		msg = envoyMessage(string(process.ReadTail(p.LogPath, outputTailBytes)), false)
	}
	var b strings.Builder
	if msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if p.LogPath != "" {
		b.WriteString(" (log: " + p.LogPath + ")")
	}
	return b.String()
}

// waitReady polls, first for the admin address file Envoy writes once its
// admin listener is bound (checked against want), then GET /ready, until
// 200, the process's exit, ctx's end or the ready timeout.
func (s *Supervisor) waitReady(ctx context.Context, p *Proc, addrFile string, want netip.AddrPort) error {
	deadline := time.NewTimer(s.opts.ReadyTimeout)
	defer deadline.Stop()
	interval := pollMin
	addrBound := false
	mismatches := 0
	lastProblem := "admin listener not bound yet"
	for {
		if !addrBound {
			if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
				got, perr := netip.ParseAddrPort(strings.TrimSpace(string(b)))
				switch {
				case perr == nil && got == want:
					addrBound = true
				case perr == nil:
					// Two reads in a row rule out a half-written file.
					if mismatches++; mismatches >= 2 {
						return fmt.Errorf("envoy bound its admin listener at %s, but the spec says %s: make the config's admin address match", got, want)
					}
				}
			}
		}
		if addrBound {
			ok, problem := probeReady(ctx, want)
			if ok {
				return nil
			}
			lastProblem = problem
		}
		select {
		case <-p.done:
			p.mu.Lock()
			stopped := p.stopRequested
			p.mu.Unlock()
			if stopped {
				return errors.New("stopped (StopAll) before it was ready")
			}
			return fmt.Errorf("envoy exited before it was ready (%s)%s", p.cmd.ProcessState, p.lastWords())
		case <-ctx.Done():
			return fmt.Errorf("waiting for envoy to be ready: %w", ctx.Err())
		case <-deadline.C:
			return fmt.Errorf("envoy not ready within %s (%s)%s", s.opts.ReadyTimeout, lastProblem, p.lastWords())
		case <-time.After(interval):
		}
		interval = min(2*interval, pollMax)
	}
}

// probeReady asks GET /ready once; Envoy answers 200 "LIVE" when ready.
func probeReady(ctx context.Context, admin netip.AddrPort) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin.String()+"/ready", nil)
	if err != nil {
		return false, err.Error()
	}
	req.Close = true // leave no idle admin connection behind the poll
	resp, err := adminClient.Do(req)
	if err != nil {
		return false, "GET /ready: " + oneLine(err.Error(), 200)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 256))
	state := strings.TrimSpace(string(body))
	if resp.StatusCode == http.StatusOK && state == "LIVE" {
		return true, ""
	}
	return false, fmt.Sprintf("GET /ready answered %d %s", resp.StatusCode, oneLine(state, 60))
}

// StartAll starts every spec, at most MaxParallelStarts at a time, and
// returns the processes (in spec order) once all are ready. The specs are
// checked first and every problem is reported at once (names and admin
// addresses must be distinct). If any start fails, StartAll stops every
// process it already started and returns the first error, which names the
// failing spec.
func (s *Supervisor) StartAll(ctx context.Context, specs []Spec) ([]*Proc, error) {
	if err := checkSpecs(specs); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	procs := make([]*Proc, len(specs))
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	fail := func(err error) {
		errOnce.Do(func() {
			firstErr = err
			cancel()
		})
	}
	sem := make(chan struct{}, s.opts.MaxParallelStarts)
	for i, spec := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				return
			}
			if ctx.Err() != nil {
				return
			}
			p, err := s.Start(ctx, spec)
			if err != nil {
				fail(err)
				return
			}
			procs[i] = p
		}()
	}
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("starting envoys: %w", ctx.Err())
	}
	if firstErr != nil {
		var started []*Proc
		for _, p := range procs {
			if p != nil {
				started = append(started, p)
			}
		}
		if err := stopProcs(context.Background(), started, s.opts.StopGrace); err != nil {
			return nil, errors.Join(firstErr, err)
		}
		return nil, firstErr
	}
	return procs, nil
}

// checkSpecs reports every problem of a set of specs at once.
func checkSpecs(specs []Spec) error {
	var errs []error
	names := map[string]bool{}
	admins := map[netip.AddrPort]string{}
	for _, sp := range specs {
		if err := sp.check(); err != nil {
			errs = append(errs, fmt.Errorf("envoy %q: %w", sp.Name, err))
		}
		if sp.Name != "" {
			if names[sp.Name] {
				errs = append(errs, fmt.Errorf("envoy name %q is used twice", sp.Name))
			}
			names[sp.Name] = true
		}
		if ap, err := netip.ParseAddrPort(sp.AdminAddr); err == nil {
			if other, dup := admins[ap]; dup {
				errs = append(errs, fmt.Errorf("envoys %q and %q have the same admin address %s", other, sp.Name, ap))
			}
			admins[ap] = sp.Name
		}
	}
	return errors.Join(errs...)
}

// PIDs lists the process ids of the tracked processes still running, in
// start order (for the resource sampler).
func (s *Supervisor) PIDs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, p := range s.procs {
		if !p.exited() {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// StopAll stops every process the Supervisor started: SIGTERM to each PID
// (Envoy flushes its logs and exits 0), a wait of up to StopGrace (cut
// short when ctx ends), then SIGKILL to the PID and its process group for
// any still running, and a wait (up to 5 s) until each is reaped. It
// returns an error naming every process that needed SIGKILL or could not
// be reaped. From its first call on, the Supervisor starts nothing more.
// It is idempotent and safe to call concurrently with Start, StartAll and
// itself, e.g. from a signal handler's goroutine.
func (s *Supervisor) StopAll(ctx context.Context) error {
	s.mu.Lock()
	s.stopped = true
	procs := append([]*Proc(nil), s.procs...)
	s.mu.Unlock()

	err := stopProcs(ctx, procs, s.opts.StopGrace)

	s.mu.Lock()
	live := s.procs[:0]
	for _, p := range s.procs {
		if !p.exited() {
			live = append(live, p)
		}
	}
	clear(s.procs[len(live):])
	s.procs = live
	var dir string
	if len(live) == 0 && s.ownDir {
		dir, s.runDir, s.ownDir = s.runDir, "", false
	}
	s.mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	return err
}

// stopProcs stops procs by PID: SIGTERM, up to grace (or ctx's end), then
// SIGKILL (PID and process group), then waits for the reaping.
func stopProcs(ctx context.Context, procs []*Proc, grace time.Duration) error {
	var live []*Proc
	for _, p := range procs {
		p.mu.Lock()
		p.stopRequested = true
		p.mu.Unlock()
		if p.exited() {
			continue
		}
		// Process.Signal goes through a pidfd on Linux: it cannot hit a
		// recycled PID.
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		live = append(live, p)
	}
	if len(live) == 0 {
		return nil
	}
	termAt := time.Now()
	left := waitDone(ctx, live, grace)
	waited := time.Since(termAt).Round(time.Millisecond)
	var errs []error
	for _, p := range left {
		if p.exited() {
			continue
		}
		process.KillGroup(p.PID)
		_ = p.cmd.Process.Kill()
		errs = append(errs, fmt.Errorf("envoy %q (pid %d) was still running %s after SIGTERM: sent SIGKILL", p.Name, p.PID, waited))
	}
	for _, p := range waitDone(context.Background(), left, reapTimeout) {
		errs = append(errs, fmt.Errorf("envoy %q (pid %d) did not exit within %s of SIGKILL", p.Name, p.PID, reapTimeout))
	}
	return errors.Join(errs...)
}

// waitDone waits until every proc has exited, d has passed or ctx ends,
// and returns the procs still running.
func waitDone(ctx context.Context, procs []*Proc, d time.Duration) []*Proc {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for i, p := range procs {
		select {
		case <-p.done:
		case <-timer.C:
			return running(procs[i:])
		case <-ctx.Done():
			return running(procs[i:])
		}
	}
	return nil
}

func running(procs []*Proc) []*Proc {
	var out []*Proc
	for _, p := range procs {
		if !p.exited() {
			out = append(out, p)
		}
	}
	return out
}
