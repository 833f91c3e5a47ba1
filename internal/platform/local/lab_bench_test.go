package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sys/process"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// Settings of BenchmarkLabSidecar90 (see bench/lab/README.md).
const (
	// benchReplicasEnv overrides the number of server replicas (default 90).
	benchReplicasEnv = "MESHBENCH_BENCH_REPLICAS"
	// benchRoundsEnv overrides the number of idle sampling rounds, one per
	// second, that the memory and sampler figures average (default 5).
	benchRoundsEnv = "MESHBENCH_BENCH_ROUNDS"
	// benchLoopbackNet is the lab's 127.<net>.0.0/16; no test uses it.
	benchLoopbackNet = 50
	// benchReadRounds is how many back-to-back passes measure the cost of
	// each /proc file on its own.
	benchReadRounds = 10
	// benchSleepers is the process count of the synthetic sampler round.
	benchSleepers = 200
)

// BenchmarkLabSidecar90 brings up a sidecar lab of 90 replicas (90 apps,
// 91 Envoys) with the lab's own prepare, then reports what the product
// promises about it:
//
//   - ready_s: topology.Plan to every Envoy answering /ready, split into
//     config_s (plan, certs, render, `envoy --mode validate`; validate_s is
//     the validation alone), apps_s (app replicas started, READY) and
//     envoys_s (first Envoy spawned to the last /ready); teardown_s;
//   - pss_MiB/sidecar, rss_MiB/sidecar (and per app), averaged over
//     MESHBENCH_BENCH_ROUNDS rounds at 1 s once the lab is idle;
//   - the sampler's own CPU per round over the lab's processes
//     (sampler_ms/round, = millicores at the default 1 s interval), the
//     share of it spent reading smaps_rollup (PSS), and a round over 200
//     idle sleep processes.
//
// It is a measurement, not a test: nothing fails on a slow figure. It runs
// the lab once whatever b.N is; use -benchtime 1x (bench/lab/run.sh does).
// Every process it starts is stopped by PID, also when it fails.
func BenchmarkLabSidecar90(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("the local lab and its /proc sampler need Linux")
	}
	replicas := benchEnvInt(b, benchReplicasEnv, 90)
	rounds := benchEnvInt(b, benchRoundsEnv, 5)
	wd, _ := os.Getwd()
	bin, err := envoy.Find(envoy.FindOptions{ProjectDir: filepath.Join(wd, "..", "..", "..")})
	if err != nil {
		b.Skipf("Envoy 1.40 is needed for the lab benchmark (`make envoy` installs it): %v", err)
	}

	mo := topology.DefaultOptions()
	mo.Mode, mo.Replicas, mo.LoopbackNet = topology.ModeSidecar, replicas, benchLoopbackNet
	o := Options{Settings: platform.Settings{Mesh: mo, Duration: time.Second, SampleInterval: sample.DefaultInterval},
		Envoy: bin, OutDir: filepath.Join(b.TempDir(), "run"), Meshbench: testutil.BuildMeshbench(b), IdleTimeout: 60 * time.Second, Log: logWriter{b}, Version: "bench"}
	ctx := context.Background()

	// Ready: everything Run does before its sampler starts.
	t0 := time.Now()
	if err := o.defaults(); err != nil {
		b.Fatal(err)
	}
	topo, err := topology.Plan(o.Mesh)
	if err != nil {
		b.Fatal(err)
	}
	if err := envoy.CheckAddrsFree(bindPlan(topo)); err != nil {
		b.Fatalf("the benchmark's addresses (127.%d.0.0/16) are taken, is another lab benchmark running? %v", benchLoopbackNet, err)
	}
	dir, err := results.CreateRunDir(o.OutDir)
	if err != nil {
		b.Fatal(err)
	}
	l := newLab(o, topo, dir.Path)
	c := l.newCell(o, dir)
	var stopSampling func()
	b.Cleanup(func() {
		// Registered after b.TempDir, so it runs before the directory goes.
		if stopSampling != nil {
			stopSampling()
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := l.Stop(cctx); err != nil {
			b.Errorf("teardown in cleanup: %v", err)
		}
		for _, p := range labPIDs(l) {
			if alive(p.pid) {
				b.Errorf("%s (pid %d) still running after the teardown", p.name, p.pid)
			}
		}
	})

	if err := l.prepare(ctx); err != nil {
		b.Fatalf("prepare (everything started so far is stopped by the cleanup): %v", err)
	}
	ready := time.Now()
	phases, err := readyPhases(l, t0, ready)
	if err != nil {
		b.Fatal(err)
	}

	// Idle: the lab's own sampler and idle rule, then rounds at 1 s.
	s := sample.New(sample.DefaultInterval, nil)
	s.Out = io.Discard // JSON lines are encoded (and counted), not kept
	c.sampler = s
	targets := c.targets()
	for _, t := range targets {
		if err := s.Add(t); err != nil {
			b.Fatal(err)
		}
	}
	sctx, cancel := context.WithCancel(context.Background())
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		_ = s.Run(sctx)
	}()
	stopSampling = sync.OnceFunc(func() { cancel(); <-samplerDone })
	// waitIdle judges the last round; round 0 holds only baselines.
	if err := waitRounds(s, 2, 10*time.Second); err != nil {
		b.Fatal(err)
	}
	if err := c.waitIdle(ctx); err != nil {
		b.Logf("warning: %v; measuring anyway", err)
	}
	idle := time.Now()
	from := len(s.Rounds())
	if err := waitRounds(s, from+rounds, time.Duration(rounds+10)*s.Interval()); err != nil {
		b.Fatal(err)
	}
	stopSampling()
	window := s.Rounds()[from:]
	idleFig := idleFigures(window)
	for _, g := range idleFig.gaps {
		b.Errorf("sampler gap while idle: %s", g)
	}

	// Cost of each /proc file alone, over the same processes (the
	// sampler's own included), beside whole rounds taken back to back.
	rc, err := measureReadCost(s, append(targets, s.Self), benchReadRounds)
	if err != nil {
		b.Fatal(err)
	}
	// The lab's own schedule (PSS about every 5 s), measured, not derived.
	defaultRound, err := sampleDefaultSchedule(targets, 2*sample.PSSEveryFor(sample.DefaultInterval, sample.DefaultPSSPeriod))
	if err != nil {
		b.Fatal(err)
	}

	// Teardown, as Run does it.
	before := labPIDs(l)
	tdStart := time.Now()
	tdCtx, tdCancel := context.WithTimeout(context.Background(), 15*time.Second)
	tdErr := l.Stop(tdCtx)
	tdCancel()
	teardown := time.Since(tdStart)
	if tdErr != nil {
		b.Errorf("teardown: %v", tdErr)
	}
	for _, p := range before {
		if alive(p.pid) {
			b.Errorf("%s (pid %d) still running after the teardown", p.name, p.pid)
		}
	}

	// The sampler over 200 idle processes, with the lab gone.
	sleep200, err := sampleSleepers(b, benchSleepers, benchReadRounds)
	if err != nil {
		b.Fatal(err)
	}

	sec := func(d time.Duration) float64 { return d.Seconds() }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	perRound := idleFig.samplerCPU / time.Duration(len(window))
	perProc := perRound / time.Duration(max(idleFig.processes, 1))
	pssRead := rc.smaps / time.Duration(rc.rounds)
	otherRead := (rc.stat + rc.status) / time.Duration(rc.rounds)
	b2bRound := rc.round / time.Duration(rc.rounds)

	b.Logf("lab: %d replicas, %d apps, %d Envoys, %d processes sampled (the sampler's own included)",
		replicas, idleFig.apps, idleFig.sidecars, idleFig.processes)
	b.Logf("ready %.2fs = config %.2fs (plan+certs+render %.2fs, validate %.2fs of %v) + apps %.2fs + Envoys %.2fs (slowest /ready %.2fs after its start); idle %.1fs after ready",
		sec(ready.Sub(t0)), sec(phases.config), sec(phases.config-phases.validate), sec(phases.validate), l.validated,
		sec(phases.apps), sec(phases.envoys), sec(phases.slowestEnvoy), sec(idle.Sub(ready)))
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	b.Logf("sampler per round at 1 s: %.2f ms CPU (%.1f µs/process); back to back: %.2f ms, of which alone: stat %.2f ms, status %.2f ms, smaps_rollup %.2f ms (per Envoy %.0f µs, per app %.0f µs, own process %.0f µs)",
		ms(perRound), us(perProc), ms(b2bRound), ms(rc.stat)/float64(rc.rounds), ms(rc.status)/float64(rc.rounds), ms(pssRead),
		us(rc.perProc(sample.CategoryDataPlane)), us(rc.perProc(sample.CategoryApp)), us(rc.perProc(sample.CategoryOverhead)))
	if replicas == 90 {
		verdict := "within"
		if ready.Sub(t0) > 20*time.Second {
			verdict = "OVER"
		}
		b.Logf("ready in %.1fs: %s the 20 s target", sec(ready.Sub(t0)), verdict)
	}

	b.ReportMetric(0, "ns/op") // one lab per run: the wall time of the whole is not a figure
	b.ReportMetric(float64(replicas), "replicas")
	b.ReportMetric(float64(idleFig.processes), "procs")
	b.ReportMetric(sec(ready.Sub(t0)), "ready_s")
	b.ReportMetric(sec(phases.config), "config_s")
	b.ReportMetric(sec(phases.validate), "validate_s")
	b.ReportMetric(sec(phases.apps), "apps_s")
	b.ReportMetric(sec(phases.envoys), "envoys_s")
	b.ReportMetric(sec(idle.Sub(ready)), "idle_s")
	b.ReportMetric(sec(teardown), "teardown_s")
	b.ReportMetric(idleFig.sidecarPSS/(1<<20), "pss_MiB/sidecar")
	b.ReportMetric(idleFig.sidecarRSS/(1<<20), "rss_MiB/sidecar")
	b.ReportMetric(idleFig.appPSS/(1<<20), "pss_MiB/app")
	b.ReportMetric(idleFig.appRSS/(1<<20), "rss_MiB/app")
	b.ReportMetric(ms(perRound), "sampler_ms/round")
	b.ReportMetric(ms(perRound)/s.Interval().Seconds(), "sampler_millicores")
	b.ReportMetric(us(perProc), "sampler_us/proc")
	b.ReportMetric(ms(b2bRound), "sampler_b2b_ms/round")
	b.ReportMetric(ms(pssRead), "pss_read_ms/round")
	b.ReportMetric(us(rc.perProc(sample.CategoryDataPlane)), "pss_read_us/sidecar")
	b.ReportMetric(us(rc.perProc(sample.CategoryApp)), "pss_read_us/app")
	b.ReportMetric(ms(otherRead), "nopss_read_ms/round")
	b.ReportMetric(ms(max(b2bRound-pssRead, 0)), "sampler_nopss_ms/round")
	b.ReportMetric(ms(perProc*benchSleepers), "sampler200est_ms/round")
	b.ReportMetric(ms(sleep200), "sampler200sleep_ms/round")
	b.ReportMetric(ms(defaultRound), "sampler_default_ms/round")
}

// benchEnvInt reads a positive integer from the environment.
func benchEnvInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// logWriter passes the lab's log lines to the benchmark's log.
type logWriter struct{ tb testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// readySplit is the time to ready, by phase of prepare.
type readySplit struct {
	config, validate, apps, envoys time.Duration
	slowestEnvoy                   time.Duration // longest start-to-/ready of one Envoy
}

// readyPhases splits t0..ready without a hook in prepare: the apps phase
// starts when the first app process was forked (/proc/PID/stat start time,
// 10 ms resolution), the Envoy phase when the Supervisor spawned the first
// Envoy; config rendering ends with the last Envoy config written (its
// mtime), validation between that and the first app.
func readyPhases(l *Lab, t0, ready time.Time) (readySplit, error) {
	var firstApp time.Time
	for _, c := range l.apps {
		if c.category != sample.CategoryApp {
			continue
		}
		at, err := procStarted(c.pid())
		if err != nil {
			return readySplit{}, fmt.Errorf("start time of %s: %w", c.name, err)
		}
		if firstApp.IsZero() || at.Before(firstApp) {
			firstApp = at
		}
	}
	var firstEnvoy time.Time
	var slowest time.Duration
	for _, p := range l.procs {
		if firstEnvoy.IsZero() || p.Started.Before(firstEnvoy) {
			firstEnvoy = p.Started
		}
		slowest = max(slowest, p.ReadyAfter)
	}
	if firstApp.IsZero() || firstEnvoy.IsZero() {
		return readySplit{}, errors.New("the lab started no app or no Envoy")
	}
	var rendered time.Time
	configs, _ := filepath.Glob(filepath.Join(l.dir, results.EnvoyDir, "*.json"))
	for _, f := range configs {
		if st, err := os.Stat(f); err == nil && st.ModTime().After(rendered) {
			rendered = st.ModTime()
		}
	}
	// Clamp: the start time is rounded down to 10 ms.
	if firstApp.Before(t0) {
		firstApp = t0
	}
	if firstApp.After(firstEnvoy) {
		firstApp = firstEnvoy
	}
	sp := readySplit{config: firstApp.Sub(t0), apps: firstEnvoy.Sub(firstApp), envoys: ready.Sub(firstEnvoy), slowestEnvoy: slowest}
	if !rendered.IsZero() && rendered.Before(firstApp) {
		sp.validate = firstApp.Sub(rendered)
	}
	return sp, nil
}

// procStarted is when a running process was forked, from field 22 of
// /proc/PID/stat (clock ticks of CLOCK_BOOTTIME).
func procStarted(pid int) (time.Time, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	st, err := sample.ParseStat(b)
	if err != nil {
		return time.Time{}, err
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Time{}, err
	}
	now := time.Now()
	age := time.Duration(ts.Nano()) - time.Duration(st.StartTicks)*(time.Second/sample.ClockTicksPerSecond)
	return now.Add(-age), nil
}

// waitRounds waits until the sampler has taken n rounds.
func waitRounds(s *sample.Sampler, n int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for len(s.Rounds()) < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("sampler: %d rounds after %v, want %d", len(s.Rounds()), limit, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// idleFig is what the idle rounds show.
type idleFig struct {
	sidecarPSS, sidecarRSS float64 // mean bytes per data-plane process
	appPSS, appRSS         float64 // mean bytes per app process
	sidecars, apps         int     // processes of each kind in the last round
	processes              int     // processes read per round, the sampler's own included
	samplerCPU             time.Duration
	gaps                   []string
}

func idleFigures(rounds []sample.Round) idleFig {
	var f idleFig
	var nDP, nApp int
	for _, r := range rounds {
		f.samplerCPU += r.Overhead.CPU
		f.processes = r.Overhead.Processes
		f.sidecars, f.apps = 0, 0
		for _, x := range r.Samples {
			switch x.Category {
			case sample.CategoryDataPlane:
				f.sidecarPSS += float64(x.PSSBytes)
				f.sidecarRSS += float64(x.RSSBytes)
				nDP++
				f.sidecars++
			case sample.CategoryApp:
				f.appPSS += float64(x.PSSBytes)
				f.appRSS += float64(x.RSSBytes)
				nApp++
				f.apps++
			}
		}
		for _, g := range r.Gaps {
			f.gaps = append(f.gaps, fmt.Sprintf("round %d: %s: %s", r.Index, g.Name, g.Reason))
		}
	}
	if nDP > 0 {
		f.sidecarPSS /= float64(nDP)
		f.sidecarRSS /= float64(nDP)
	}
	if nApp > 0 {
		f.appPSS /= float64(nApp)
		f.appRSS /= float64(nApp)
	}
	return f
}

// readCost is the CPU time of reading (and parsing) each /proc file of
// every process, summed over rounds passes, beside whole sampler rounds
// taken between the passes.
type readCost struct {
	rounds              int
	round               time.Duration // sampler rounds (SampleNow), back to back with the passes
	stat, status, smaps time.Duration
	smapsBy             map[string]time.Duration // smaps_rollup by category
	procsBy             map[string]int           // processes by category
}

// measureReadCost takes rounds sampler rounds and, after each, reads stat,
// status and smaps_rollup of every target, one file kind per pass (and
// smaps_rollup one category at a time), on one locked thread whose CPU
// clock times each pass. It reads the way the sampler does (open, read
// into a reused buffer, close; the sample package's parsers) but is not
// the sampler: the sampler has no switch to leave PSS out, so this tells
// how much of a round the PSS read is.
func measureReadCost(s *sample.Sampler, targets []sample.Target, rounds int) (readCost, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rc := readCost{rounds: rounds, smapsBy: map[string]time.Duration{}, procsBy: map[string]int{}}
	byCat := map[string][]int{}
	var all []int
	for _, t := range targets {
		byCat[t.Category] = append(byCat[t.Category], t.PID)
		rc.procsBy[t.Category]++
		all = append(all, t.PID)
	}
	var buf []byte
	pass := func(pids []int, file string, parse func([]byte) error) (time.Duration, error) {
		c0 := threadCPU()
		for _, pid := range pids {
			var err error
			buf, err = readProcFile(buf, "/proc/"+strconv.Itoa(pid)+"/"+file)
			if err == nil {
				err = parse(buf)
			}
			if err != nil {
				return 0, fmt.Errorf("reading process %d: %w", pid, err)
			}
		}
		return threadCPU() - c0, nil
	}
	parseStat := func(b []byte) error { _, err := sample.ParseStat(b); return err }
	parseStatus := func(b []byte) error { _, err := sample.ParseStatus(b); return err }
	parseSmaps := func(b []byte) error { _, err := sample.ParseSmapsRollup(b); return err }
	for range rounds {
		r := s.SampleNow()
		if len(r.Gaps) > 0 {
			return rc, fmt.Errorf("sampler round %d: %d gaps (%s: %s)", r.Index, len(r.Gaps), r.Gaps[0].Name, r.Gaps[0].Reason)
		}
		rc.round += r.Overhead.CPU
		d, err := pass(all, "stat", parseStat)
		if err != nil {
			return rc, err
		}
		rc.stat += d
		if d, err = pass(all, "status", parseStatus); err != nil {
			return rc, err
		}
		rc.status += d
		for cat, pids := range byCat {
			if d, err = pass(pids, "smaps_rollup", parseSmaps); err != nil {
				return rc, err
			}
			rc.smaps += d
			rc.smapsBy[cat] += d
		}
	}
	return rc, nil
}

// perProc is the mean cost of one process of category cat per round.
func (rc readCost) perProc(cat string) time.Duration {
	if rc.procsBy[cat] == 0 || rc.rounds == 0 {
		return 0
	}
	return rc.smapsBy[cat] / time.Duration(rc.rounds*rc.procsBy[cat])
}

// readProcFile reads path whole into buf's storage with plain system calls.
func readProcFile(buf []byte, path string) ([]byte, error) {
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4096)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return buf[:0], &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer syscall.Close(fd)
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := syscall.Read(fd, buf[len(buf):cap(buf)])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return buf[:0], &os.PathError{Op: "read", Path: path, Err: err}
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// threadCPU is the calling thread's CPU time (user+system).
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// sampleSleepers starts n `sleep` processes and returns the sampler's mean
// CPU per round over them (after a baseline round), like
// BenchmarkSampleRound200. The sleeps are killed by PID before it returns,
// or by the cleanup if it fails half-way.
func sampleSleepers(b *testing.B, n, rounds int) (time.Duration, error) {
	var cmds []*exec.Cmd
	kill := sync.OnceFunc(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	b.Cleanup(kill)
	defer kill()
	s := sample.New(sample.DefaultInterval, nil)
	s.Out = io.Discard
	for i := range n {
		c := exec.Command("sleep", "600")
		// Like the lab's children: a parent-death signal, so that not even
		// a killed test binary leaves them behind.
		if err := process.Start(c); err != nil {
			return 0, fmt.Errorf("starting sleep %d: %w", i, err)
		}
		cmds = append(cmds, c)
		if err := s.Add(sample.Target{PID: c.Process.Pid, Name: "sleep-" + strconv.Itoa(i), Component: "sleep", Category: sample.CategoryApp}); err != nil {
			return 0, err
		}
	}
	s.SampleNow() // baselines
	var cpu time.Duration
	for range rounds {
		r := s.SampleNow()
		if len(r.Samples) != n+1 {
			return 0, fmt.Errorf("sleep round %d: %d samples, %d gaps; want %d samples", r.Index, len(r.Samples), len(r.Gaps), n+1)
		}
		cpu += r.Overhead.CPU
	}
	return cpu / time.Duration(rounds), nil
}

// labProc is one process the lab started.
type labProc struct {
	name string
	pid  int
}

// labPIDs lists the lab's processes: apps and Envoys.
func labPIDs(l *Lab) []labProc {
	var out []labProc
	for _, c := range l.apps {
		out = append(out, labProc{c.name, c.pid()})
	}
	for _, p := range l.procs {
		out = append(out, labProc{p.Name, p.PID})
	}
	return out
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	st, err := sample.ParseStat(b)
	return err == nil && !st.Exited()
}

// sampleDefaultSchedule takes rounds back to back with a sampler reading
// PSS on the lab's default schedule and returns the mean CPU of a round
// that has samples (the first, baselines only, left out).
func sampleDefaultSchedule(targets []sample.Target, rounds int) (time.Duration, error) {
	s := sample.New(sample.DefaultInterval, nil)
	s.PSSEvery = sample.PSSEveryFor(sample.DefaultInterval, sample.DefaultPSSPeriod)
	for _, t := range targets {
		if err := s.Add(t); err != nil {
			return 0, err
		}
	}
	s.SampleNow() // baselines
	var cpu time.Duration
	for range rounds {
		r := s.SampleNow()
		if len(r.Gaps) > 0 {
			return 0, fmt.Errorf("sampler round %d: %d gaps", r.Index, len(r.Gaps))
		}
		cpu += r.Overhead.CPU
	}
	return cpu / time.Duration(rounds), nil
}
