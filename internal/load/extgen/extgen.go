// Package extgen runs external HTTP load generators — oha, wrk2, vegeta
// and fortio — as subprocesses in place of meshbench's own engine, and
// turns what they print into meshbench's load result
// (results.LoadResult), so that their runs are reported, merged across
// workers and judged like the engine's.
//
// Each tool runs twice: once for the warm-up (its output discarded), then
// for the measured window. A run is bounded in time and, when it overruns
// or meshbench is interrupted, stopped by process group (SIGINT first, so
// the tool prints what it measured, then SIGKILL); none is left behind.
//
// What each tool gives, and so how exact the result is, differs and is
// written into the result (results.Generator): oha 1.16 writes every
// answered request (intended and actual send time, end, status, body
// bytes) to an SQLite file, so the three histograms are exact; vegeta's
// per-request results give an exact latency histogram from the actual
// send; wrk2 prints only an HdrHistogram percentile spectrum and fortio
// only its own coarser buckets, from which the histograms are
// reconstructed, and neither reports the schedule lag. A figure a tool
// does not give is left at zero and listed in Generator.Notes.
package extgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/process"
)

// Generator names, as `meshbench load --generator` takes them.
const (
	Meshbench = "meshbench" // meshbench's own engine (internal/loadgen)
	Oha       = "oha"       // hatoo/oha, open loop with --latency-correction
	Wrk2      = "wrk2"      // giltene/wrk2, constant throughput (-R)
	Vegeta    = "vegeta"    // tsenart/vegeta, constant rate (-rate), the UDS seed reports' tool
	Fortio    = "fortio"    // fortio.org/fortio, -qps with -nocatchup, Istio's benchmark tool
)

// Names lists the generators meshbench's image can hold (the kube
// platform's choice), the default first: vegeta and fortio go in by
// default when the install step built them (ImageBinaries), oha and wrk2
// with `meshbench image --extra`.
var Names = []string{Meshbench, Oha, Wrk2, Vegeta, Fortio}

// LoadNames lists the generators `meshbench load` and the local lab run
// on this machine: the same as Names.
var LoadNames = Names

// OhaVersion is the oha release meshbench is written and tested against
// (its command line, JSON summary and SQLite table); the image installs
// it. Other versions run, and their version is recorded.
const OhaVersion = "1.16.0"

// Wrk2Commit is the giltene/wrk2 commit the image builds (2019, "Add
// support for higher concurrency").
const Wrk2Commit = "44a94c17d8e6a0bac8559b53da76848e430cb7a7"

// Config is one external run.
type Config struct {
	// Generator is Oha, Wrk2, Vegeta or Fortio.
	Generator string
	// Path is the tool's binary; "" looks it up on $PATH (oha; wrk2 then
	// wrk, checking that the wrk found is wrk2).
	Path string
	// Load is the run as meshbench's engine would do it: one HTTP/1.1
	// target, rate (or Closed), duration, warm-up, timeout, connections,
	// request, keep-alive. TLS is taken from TLSFiles, not Load.TLS.
	Load loadgen.Config
	// TLSFiles are the TLS flags as files (the tools read files).
	TLSFiles loadgen.TLSFiles
	// Threads is the tool's OS threads (0: 1), from --cpus as for
	// meshbench's engine: oha's --worker-threads (tokio's runtime) and
	// wrk2's -t, which must divide the rate and the connections (wrk2
	// splits both by integer division).
	Threads int
	// Version is meshbench's version, for the result.
	Version string
	// Now is the wall clock (nil: time.Now).
	Now func() time.Time
	// TempDir holds the tool's files for the run ("": a new directory
	// under os.TempDir, removed after).
	TempDir string
	// KeepResults, when set, is where the tool's own results of the
	// measured window are copied: vegeta's binary results (vegeta report /
	// plot read them), fortio's JSON.
	KeepResults string
	// Grace is how long a tool may run past its duration plus the
	// request timeout before it is killed (0: 30 s).
	Grace time.Duration
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Validate reports every reason the tool cannot run c, each naming the
// flag and what the tool can do instead.
func (c *Config) Validate() error {
	var errs []error
	name := c.Generator
	if name != Oha && name != Wrk2 && name != Vegeta && name != Fortio {
		return fmt.Errorf("--generator %q: allowed: %s", name, strings.Join(LoadNames, ", "))
	}
	l := &c.Load
	if len(l.Targets) != 1 {
		errs = append(errs, fmt.Errorf("--generator %s takes exactly one target, got %d: use --generator meshbench for several", name, len(l.Targets)))
	}
	for _, t := range l.Targets {
		if t.Protocol != loadgen.HTTP1 {
			errs = append(errs, fmt.Errorf("target %q speaks %s: --generator %s is used for HTTP/1.1 only (http:// or https:// without --http2); use --generator meshbench for h2, gRPC and tcp", t.Raw, t.Protocol, name))
		}
	}
	if c.TLSFiles.ServerName != "" {
		errs = append(errs, fmt.Errorf("--server-name: --generator %s cannot set the TLS server name; use --generator meshbench", name))
	}
	if l.Load.Bulk() {
		errs = append(errs, fmt.Errorf("--bulk: --generator %s measures requests, not bulk throughput; use --generator meshbench", name))
	}
	if l.Arrivals == loadgen.ArrivalsPoisson {
		errs = append(errs, fmt.Errorf("--arrivals poisson: --generator %s spaces requests evenly; use --generator meshbench", name))
	}
	if l.SendTick > 0 {
		errs = append(errs, fmt.Errorf("--send-tick %v: --generator %s paces by itself; use --generator meshbench", l.SendTick, name))
	}
	if l.RequestsPerConnection > 1 {
		errs = append(errs, fmt.Errorf("--requests-per-connection %d: --generator %s either keeps its connections or opens one per request (1); use --generator meshbench", l.RequestsPerConnection, name))
	}
	if name == Wrk2 {
		errs = append(errs, c.validateWrk2()...)
	}
	return errors.Join(errs...)
}

// binary resolves the tool's path: --generator-path; for vegeta and
// fortio the pinned build of the install step (InstallDir); then $PATH.
func (c *Config) binary() (string, error) {
	if c.Path != "" {
		p, err := exec.LookPath(c.Path)
		if err != nil {
			return "", fmt.Errorf("--generator-path %s: %w", c.Path, err)
		}
		return p, nil
	}
	if c.Generator == Vegeta || c.Generator == Fortio {
		if p := filepath.Join(InstallDir(), c.Generator); isExecutable(p) {
			return p, nil
		}
	}
	cands := []string{c.Generator}
	if c.Generator == Wrk2 {
		cands = append(cands, "wrk")
	}
	for _, n := range cands {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	hint := "cargo install oha --version " + OhaVersion + " --locked"
	where := "on $PATH"
	switch c.Generator {
	case Wrk2:
		hint = "build giltene/wrk2 (make) and put its wrk binary on $PATH as wrk2"
	case Vegeta, Fortio:
		hint = "make generators builds vegeta " + VegetaVersion + " and fortio " + FortioVersion
		where = "in " + InstallDir() + " or on $PATH"
	}
	return "", fmt.Errorf("--generator %s: no %s %s (%s, or pass --generator-path)", c.Generator, strings.Join(cands, " or "), where, hint)
}

// InstallDir is where the install step (`make generators`,
// hack/generators/install.sh) puts the pinned vegeta and fortio:
// $MESHBENCH_GENERATORS_BIN, else
// ~/.cache/meshbench/generators/vegeta-VegetaVersion-fortio-FortioVersion.
func InstallDir() string {
	if d := os.Getenv("MESHBENCH_GENERATORS_BIN"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "meshbench", "generators", "vegeta-"+VegetaVersion+"-fortio-"+FortioVersion)
}

// ImageBinaries are the pinned vegeta and fortio the install step built
// into InstallDir (static: CGO_ENABLED=0), which `meshbench image` and
// the test clusters' image put beside meshbench; missing lists those not
// there.
func ImageBinaries() (paths, missing []string) {
	for _, name := range []string{Vegeta, Fortio} {
		p := filepath.Join(InstallDir(), name)
		if isExecutable(p) {
			paths = append(paths, p)
		} else {
			missing = append(missing, name)
		}
	}
	return paths, missing
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Run runs the warm-up and the measured window with the tool and returns
// the measured window's result. When ctx is canceled during the measured
// window the tool is interrupted and the result holds what it reported,
// marked Interrupted.
func Run(ctx context.Context, c Config) (*results.LoadResult, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	bin, err := c.binary()
	if err != nil {
		return nil, err
	}
	dir := c.TempDir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "meshbench-"+c.Generator+"-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
	}
	var t tool
	switch c.Generator {
	case Oha:
		t = &oha{c: &c, bin: bin, dir: dir}
	case Vegeta:
		t = &vegeta{c: &c, bin: bin, dir: dir}
	case Fortio:
		t = &fortio{c: &c, bin: bin, dir: dir}
	default:
		t = &wrk2{c: &c, bin: bin, dir: dir}
	}
	version, err := t.version(ctx)
	if err != nil {
		return nil, err
	}
	if c.Load.Warmup > 0 {
		argv, err := t.args("warmup", c.Load.Warmup)
		if err != nil {
			return nil, err
		}
		out, err := c.exec(ctx, argv, c.Load.Warmup)
		if err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
		if out.interrupted {
			return nil, context.Canceled
		}
		t.cleanup("warmup")
	}
	argv, err := t.args("measure", c.Load.Duration)
	if err != nil {
		return nil, err
	}
	out, err := c.exec(ctx, argv, c.Load.Duration)
	if err != nil {
		return nil, err
	}
	res, err := t.result(out)
	if err != nil {
		return nil, fmt.Errorf("reading %s's output: %w (stderr: %s)", c.Generator, err, tail(out.stderr))
	}
	res.Interrupted = res.Interrupted || out.interrupted
	res.Generator.Name = c.Generator
	res.Generator.Version = version
	res.Generator.Commands = []string{shellJoin(argv)}
	return res, nil
}

// tool is one generator's command line and parser.
type tool interface {
	version(ctx context.Context) (string, error)
	// args is the command line of a run of d; phase "warmup" or "measure".
	args(phase string, d time.Duration) ([]string, error)
	// cleanup removes a phase's files.
	cleanup(phase string)
	// result parses the measured run.
	result(out *execOut) (*results.LoadResult, error)
}

// execOut is what one run of a tool left.
type execOut struct {
	stdout, stderr []byte
	started        time.Time // wall clock just before the process started
	ended          time.Time // wall clock when it exited
	interrupted    bool      // stopped by an interrupt (SIGINT to its group)
}

// maxOutput bounds the stdout kept from a tool (its summary is a few KiB).
const maxOutput = 64 << 20

// interruptGrace is how long a tool may take to print its report after
// SIGINT before its group is killed.
const interruptGrace = 10 * time.Second

// exec runs argv, which should last about d, in its own process group.
// It kills the group when the run overruns d + the request timeout +
// Grace, and interrupts it (SIGINT, then SIGKILL after interruptGrace)
// when ctx is canceled. It returns an error when the tool exits non-zero,
// unless interrupted.
func (c *Config) exec(ctx context.Context, argv []string, d time.Duration) (*execOut, error) {
	grace := c.Grace
	if grace <= 0 {
		grace = 30 * time.Second
	}
	limit := d + c.Load.Timeout + grace
	out := &execOut{}
	var stdout, stderr capped
	stdout.max, stderr.max = maxOutput, 64<<10
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	out.started = c.now()
	if err := process.Start(cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	pid := cmd.Process.Pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		out.interrupted = true
		_ = syscall.Kill(-pid, syscall.SIGINT)
		select {
		case err = <-done:
		case <-time.After(interruptGrace):
			process.KillGroup(pid)
			err = <-done
		}
	case <-timer.C:
		process.KillGroup(pid)
		<-done
		return nil, fmt.Errorf("%s ran past its time limit of %v (duration %v + timeout %v + %v) and was killed; stderr: %s",
			filepath.Base(argv[0]), limit, d, c.Load.Timeout, grace, tail(stderr.b.Bytes()))
	}
	out.ended = c.now()
	out.stdout, out.stderr = stdout.b.Bytes(), stderr.b.Bytes()
	if stdout.over {
		return nil, fmt.Errorf("%s printed more than %d bytes; not a summary", filepath.Base(argv[0]), maxOutput)
	}
	if err != nil && !out.interrupted {
		return nil, fmt.Errorf("%s failed: %w; stderr: %s", shellJoin(argv), err, tail(append(out.stderr, out.stdout...)))
	}
	return out, nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	b    bytes.Buffer
	max  int
	over bool
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - w.b.Len(); room < len(p) {
		w.over = true
		if room > 0 {
			w.b.Write(p[:room])
		}
		return len(p), nil
	}
	return w.b.Write(p)
}

// tail returns the last lines of b, for error messages.
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(empty)"
	}
	if len(s) > 600 {
		s = "…" + s[len(s)-600:]
	}
	return s
}

// shellJoin renders argv as one shell-quoted line.
func shellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
		}) < 0 {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// durationArg renders d for a tool's duration flag: whole seconds as
// "10s", else milliseconds, microseconds or nanoseconds.
func durationArg(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(d.Microseconds(), 10) + "us"
	}
	return strconv.FormatInt(int64(d), 10) + "ns"
}

// base fills what every external result shares: the run's configuration.
func (c *Config) base() *results.LoadResult {
	l := &c.Load
	r := &results.LoadResult{
		Schema: results.LoadSchema, MeshbenchVersion: c.Version, Model: results.ModelOf(l.Load),
		Protocol: string(l.Targets[0].Protocol), Connections: l.Connections,
		DurationNs: int64(l.Duration), WarmupNs: int64(l.Warmup), TimeoutNs: int64(l.Timeout),
		Workers: 1, StatusCodes: map[string]int64{}, Errors: []results.ErrorCount{},
		Generator: &results.Generator{},
	}
	for _, t := range l.Targets {
		r.Targets = append(r.Targets, t.Raw)
	}
	if !l.Load.Closed() {
		r.TargetRatePerSec = l.Load.Rate().PerSecond()
		r.Scheduled = int64(loadgen.Pacer{Rate: l.Load.Rate(), Duration: l.Duration}.Total())
	}
	return r
}

// bodyFile writes the request body to dir for a tool that reads it from
// a file, returning "" when there is none.
func (c *Config) bodyFile(dir string) (string, error) {
	if len(c.Load.Request.Body) == 0 {
		return "", nil
	}
	p := filepath.Join(dir, "body")
	if err := os.WriteFile(p, c.Load.Request.Body, 0o600); err != nil {
		return "", err
	}
	return p, nil
}

// errorKind classifies a tool's error message into results' error kinds.
func errorKind(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "refused"):
		return "refused"
	case strings.Contains(m, "reset"):
		return "reset"
	case strings.Contains(m, "timeout"), strings.Contains(m, "timed out"):
		return "timeout"
	case strings.Contains(m, "tls"), strings.Contains(m, "certificate"), strings.Contains(m, "handshake"):
		return "tls"
	case strings.Contains(m, "dns"), strings.Contains(m, "resolve"), strings.Contains(m, "lookup"):
		return "dns"
	case strings.Contains(m, "broken pipe"), strings.Contains(m, "closed"), strings.Contains(m, "eof"):
		return "closed"
	case strings.Contains(m, "parse"), strings.Contains(m, "invalid"), strings.Contains(m, "http"):
		return "protocol"
	}
	return "other"
}

// headerArgs are the request headers as both tools take them: -H "Name:
// value" for every value, names sorted (a stable command line).
func headerArgs(h map[string][]string) []string {
	var a []string
	for _, n := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[n] {
			a = append(a, "-H", n+": "+v)
		}
	}
	return a
}
