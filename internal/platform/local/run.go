// Package local is meshbench's embedded platform: a mesh lab of real
// processes on one machine. Workloads are `meshbench serve` processes on
// loopback "pod" addresses, proxies are real Envoys, the load generator is a
// `meshbench load` process, and a /proc sampler measures every one of them.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/envoy"
	"github.com/meshbench/meshbench/internal/envoy/bootstrap"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/pki"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sample"
)

// Options is one benchmark cell on the local lab.
type Options struct {
	Mesh mesh.Options
	Rate string // load rate as `meshbench load --rate` reads it
	Max  bool   // closed loop (`meshbench load --max`) instead of Rate
	// LoadCPUMax is the load generator's CPU, as a fraction of one core,
	// above which the run counts as CPU-starved and invalid (0:
	// DefaultLoadCPUMax).
	LoadCPUMax float64
	// RateShortfall is the fraction of its schedule an open-loop run may
	// fall short by before it is invalid (0: results.RateShortfallTolerance).
	RateShortfall float64
	// ErrorRatio is the fraction of failed requests above which a run is
	// invalid (0: DefaultErrorRatio).
	ErrorRatio  float64
	Duration    time.Duration // measured window
	Warmup      time.Duration // load before the window, not counted
	Connections int           // load generator connections (0: 16, at least one per target)
	Timeout     time.Duration // per request (0: 10 s)

	// OutDir is the results directory to create (must not hold results).
	OutDir string
	// Meshbench is the meshbench executable run for apps and the load.
	Meshbench string
	// Envoy is the Envoy binary (from envoy.Find); nil only for mode none.
	Envoy *envoy.Binary

	SampleInterval time.Duration // /proc sampling period (0: 1 s)
	// PSSEvery reads PSS (smaps_rollup, ~1.3 ms of CPU per Envoy) every
	// this many sampling rounds; CPU and RSS are read every round. 0 or
	// less: about every 5 s, sample.PSSEveryFor(SampleInterval,
	// sample.DefaultPSSPeriod).
	PSSEvery int
	// IdleMillicores is the app CPU under which the lab counts as idle
	// before the load starts (0: 50m per replica… capped, see Run), waited
	// for at most IdleTimeout (0: 10 s).
	IdleMillicores float64
	IdleTimeout    time.Duration
	Drain          time.Duration // sampling after the load ends (0: 2 s)

	// Log receives one line per phase (nil: discard).
	Log io.Writer
	// Phase, when not nil, is called with each phase's name as it starts
	// (prepare, prepare/render…, idle, warmup, measure, drain, collect,
	// teardown), where Log gets "phase NAME". It may be called from
	// another goroutine than Run's (measure starts on a timer).
	Phase func(name string)
	// OnRound, when not nil, receives every sampling round as it is taken
	// (sample.Sampler.OnRound), on the sampler's goroutine.
	OnRound func(sample.Round)
	// Version is meshbench's version for the manifest.
	Version string
}

// Result is what a run wrote and measured.
type Result struct {
	Dir      string
	Manifest *results.RunManifest
	Load     *results.LoadResult
	Summary  sample.Summary
	Topology *mesh.Topology
	// EnvoyStats maps each Envoy's name to the summary of its /stats at the
	// end of the run (also in results.EnvoyStatsFile); nil without Envoys.
	EnvoyStats map[string]envoy.ProxyStats
}

// DefaultErrorRatio is Options.ErrorRatio's default: 1% of the requests.
const DefaultErrorRatio = 0.01

// DefaultLoadCPUMax is Options.LoadCPUMax's default: 90% of one core.
const DefaultLoadCPUMax = 0.9

// ErrInvalid marks a run that finished but must not be used as a
// measurement; the manifest says why.
var ErrInvalid = errors.New("run invalid")

type lab struct {
	opts     Options
	topo     *mesh.Topology
	dir      *results.RunDir
	sup      *envoy.Supervisor
	procs    []*envoy.Proc
	children []*child
	sampler  *sample.Sampler
	manifest *results.RunManifest
	mu       sync.Mutex
	// envoyStats is filled by collectStats.
	envoyStats map[string]envoy.ProxyStats
}

func (l *lab) logf(format string, a ...any) {
	if l.opts.Log != nil {
		fmt.Fprintf(l.opts.Log, format+"\n", a...)
	}
}

// enter announces that phase name starts: to Log and to Phase.
func (l *lab) enter(name string) {
	l.logf("phase %s", name)
	if l.opts.Phase != nil {
		l.opts.Phase(name)
	}
}

func (l *lab) phase(name string) func() {
	l.enter(name)
	p := results.Phase{Name: name, Started: time.Now().UTC()}
	return func() {
		p.Ended = time.Now().UTC()
		l.mu.Lock()
		l.manifest.Phases = append(l.manifest.Phases, p)
		l.mu.Unlock()
	}
}

// Run brings the topology up, waits until it is ready and idle, runs the
// load while sampling, drains, collects, tears everything down and writes
// the results directory. Everything it started is stopped before it
// returns, whatever happens. A cancelled ctx still writes what was
// measured and returns ctx's error.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	topo, err := mesh.Plan(o.Mesh)
	if err != nil {
		return nil, err
	}
	if len(topo.Proxies) > 0 && o.Envoy == nil {
		return nil, errors.New("no Envoy binary: install it with `make envoy`")
	}
	// Every address must be free before anything starts.
	if err := envoy.CheckAddrsFree(bindPlan(topo)); err != nil {
		return nil, err
	}
	dir, err := results.CreateRunDir(o.OutDir)
	if err != nil {
		return nil, err
	}
	l := &lab{opts: o, topo: topo, dir: dir, manifest: &results.RunManifest{
		Schema: results.RunSchema, MeshbenchVersion: o.Version, Platform: "local",
		StartedAt: time.Now().UTC(), Host: results.ReadHost(), Options: optionsMap(o, topo), Valid: true,
	}}
	if o.Envoy != nil {
		l.manifest.EnvoyVersion = o.Envoy.Version
	}
	res, runErr := l.run(ctx)
	// Teardown always runs, with a fresh context: an interrupt must still
	// stop every process.
	stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	endTeardown := l.phase("teardown")
	tdErr := l.teardown(stopCtx)
	endTeardown()
	l.manifest.EndedAt = time.Now().UTC()
	if runErr != nil {
		l.invalid(runErr.Error())
	}
	if err := l.dir.WriteJSON(results.ManifestFile, l.manifest); err != nil && runErr == nil {
		runErr = err
	}
	if res != nil {
		res.Manifest = l.manifest
	}
	return res, errors.Join(runErr, tdErr)
}

func (o *Options) defaults() error {
	if o.Duration <= 0 {
		return fmt.Errorf("duration %v: must be > 0", o.Duration)
	}
	if o.Connections == 0 {
		o.Connections = 16
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.SampleInterval == 0 {
		o.SampleInterval = time.Second
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 10 * time.Second
	}
	if o.Drain == 0 {
		o.Drain = 2 * time.Second
	}
	if o.Meshbench == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the meshbench executable: %w", err)
		}
		o.Meshbench = exe
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join("results", time.Now().Format("20060102-150405")+"-"+string(o.Mesh.Mode))
	}
	return nil
}

func (l *lab) invalid(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.manifest.Valid = false
	l.manifest.Invalid = append(l.manifest.Invalid, reason)
}

func (l *lab) run(ctx context.Context) (*Result, error) {
	endPrepare := l.phase("prepare")
	if err := l.prepare(ctx); err != nil {
		endPrepare()
		return nil, err
	}
	endPrepare()

	samplesFile, err := os.Create(filepath.Join(l.dir.Path, results.SamplesFile))
	if err != nil {
		return nil, err
	}
	defer samplesFile.Close()
	l.sampler = sample.New(l.opts.SampleInterval, sample.SystemClock())
	l.sampler.Out = samplesFile
	l.sampler.PSSEvery = l.opts.pssEvery()
	l.sampler.OnRound = l.opts.OnRound
	for _, t := range l.targets() {
		if err := l.sampler.Add(t); err != nil {
			return nil, err
		}
	}
	sctx, stopSampling := context.WithCancel(context.Background())
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		_ = l.sampler.Run(sctx)
	}()
	defer func() {
		stopSampling()
		<-samplerDone
	}()

	endIdle := l.phase("idle")
	if err := l.waitIdle(ctx); err != nil {
		l.invalid(err.Error())
		l.logf("warning: %v", err)
	}
	endIdle()

	loadRes, measureFrom, measureTo, loadErr := l.runLoad(ctx)

	endDrain := l.phase("drain")
	select {
	case <-time.After(l.opts.Drain):
	case <-ctx.Done():
	}
	endDrain()
	stopSampling()
	<-samplerDone

	endCollect := l.phase("collect")
	l.collectStats(context.WithoutCancel(ctx))
	rounds := l.sampler.Rounds()
	window := sample.Window(rounds, measureFrom, measureTo)
	summary := sample.Summarize(window)
	if err := l.dir.WriteJSON(results.ResourcesFile, map[string]any{
		"window": map[string]any{"from": measureFrom, "to": measureTo,
			"rule": "rounds whose sampling time falls inside the measured window (warm-up and drain excluded)"},
		"summary": summary,
	}); err != nil {
		endCollect()
		return nil, err
	}
	for _, g := range countGaps(window) {
		l.invalid(g)
	}
	endCollect()
	if loadErr != nil {
		return &Result{Dir: l.dir.Path, Load: loadRes, Summary: summary, Topology: l.topo, EnvoyStats: l.envoyStats}, loadErr
	}
	l.checkValidity(loadRes)
	l.checkLoadCPU(summary)
	l.manifest.Derived = derive(l.topo, loadRes, summary)
	return &Result{Dir: l.dir.Path, Load: loadRes, Summary: summary, Topology: l.topo, EnvoyStats: l.envoyStats}, ctx.Err()
}

// prepare writes certificates and configs, validates them, and starts the
// apps and the Envoys.
//
// Its steps are sub-phases in the manifest (prepare/render,
// prepare/validate, prepare/apps, prepare/envoys), so a slow start says
// where the time went.
func (l *lab) prepare(ctx context.Context) error {
	configs := map[string]string{}
	if len(l.topo.Proxies) > 0 {
		endRender := l.phase("prepare/render")
		certs, err := writeCerts(l.topo, filepath.Join(l.dir.Path, "pki"))
		if err != nil {
			return err
		}
		rendered, err := bootstrap.Render(l.topo, certs)
		if err != nil {
			return err
		}
		for name, js := range rendered {
			rel := filepath.Join(results.EnvoyDir, name+".json")
			if err := l.dir.WriteFile(rel, js); err != nil {
				return err
			}
			configs[name] = filepath.Join(l.dir.Path, rel)
		}
		endRender()
		endValidate := l.phase("prepare/validate")
		err = l.validateConfigs(ctx, configs)
		endValidate()
		if err != nil {
			return err
		}
	}
	endApps := l.phase("prepare/apps")
	// Apps first: sidecars and node proxies connect to them.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, 8)
	for _, p := range l.topo.ServerPods() {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			svc := l.topo.Svc(p.Service)
			args := append([]string{svc.Serve, "--listen", p.AppAddr().String(), "--grace", "2s"}, callArgs(p)...)
			c, err := startServe(ctx, l.opts.Meshbench, p.Name+" app", svc.Component,
				filepath.Join(l.dir.Path, results.LogsDir, p.Name+".log"), args...)
			mu.Lock()
			defer mu.Unlock()
			if c != nil {
				l.children = append(l.children, c)
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	endApps()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if len(l.topo.Proxies) == 0 {
		return nil
	}
	defer l.phase("prepare/envoys")()
	l.sup = envoy.NewSupervisor(l.opts.Envoy, envoy.SupervisorOptions{})
	var specs []envoy.Spec
	for _, p := range l.topo.Proxies {
		specs = append(specs, envoy.Spec{Name: p.Name, ConfigPath: configs[p.Name], AdminAddr: p.Admin.String(),
			LogPath: filepath.Join(l.dir.Path, results.LogsDir, p.Name+".log")})
	}
	start := time.Now()
	procs, err := l.sup.StartAll(ctx, specs)
	if err != nil {
		return err
	}
	l.procs = procs
	l.logf("%d Envoys ready in %v", len(procs), time.Since(start).Round(time.Millisecond))
	return nil
}

// callArgs are the `meshbench serve` flags that tell an app pod where to
// call its backends (the face workload: smiley over HTTP, color over
// gRPC).
func callArgs(p mesh.Pod) []string {
	var out []string
	for _, c := range p.Calls {
		switch c.Service {
		case "smiley":
			out = append(out, "--smiley-url", "http://"+c.Addr.String()+"/")
		case "color":
			out = append(out, "--color-addr", c.Addr.String())
		}
	}
	return out
}

// validateConfigs runs `envoy --mode validate` on every config when there
// are few, and on one config per (role, component) when there are many:
// configs of one role differ only in addresses.
func (l *lab) validateConfigs(ctx context.Context, configs map[string]string) error {
	seen := map[string]bool{}
	var names []string
	for _, p := range l.topo.Proxies {
		key := string(p.Role) + "/" + p.Component
		if len(l.topo.Proxies) > 12 && seen[key] {
			continue
		}
		seen[key] = true
		names = append(names, p.Name)
	}
	var errs []error
	for _, n := range names {
		if err := envoy.Validate(ctx, l.opts.Envoy, configs[n]); err != nil {
			errs = append(errs, fmt.Errorf("Envoy config of %s: %w", n, err))
		}
	}
	l.manifest.Options["validated_configs"] = names
	return errors.Join(errs...)
}

// targets lists every process to sample.
func (l *lab) targets() []sample.Target {
	var out []sample.Target
	for _, c := range l.children {
		out = append(out, sample.Target{PID: c.pid(), Name: c.name, Component: c.component, Category: c.category})
		l.manifest.Processes = append(l.manifest.Processes, results.ProcessInfo{Name: c.name, Component: c.component,
			Category: c.category, PID: c.pid(), Command: strings.Join(c.cmd.Args, " ")})
	}
	for _, p := range l.procs {
		mp := l.topo.Proxy(p.Name)
		out = append(out, sample.Target{PID: p.PID, Name: p.Name, Component: mp.Component, Category: string(mp.Category)})
		l.manifest.Processes = append(l.manifest.Processes, results.ProcessInfo{Name: p.Name, Component: mp.Component,
			Category: string(mp.Category), PID: p.PID, Command: "envoy -c " + p.ConfigPath})
	}
	return out
}

// waitIdle waits until the apps' and proxies' CPU falls under the
// threshold (start-up work done), up to IdleTimeout.
func (l *lab) waitIdle(ctx context.Context) error {
	threshold := l.opts.IdleMillicores
	if threshold == 0 {
		// An idle Envoy or app uses ~1–2m (LAB.md: 30 idle Envoys ≈ 4% of a core).
		threshold = 50 + 2*float64(len(l.children)+len(l.procs))
	}
	deadline := time.Now().Add(l.opts.IdleTimeout)
	last := -1.0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.opts.SampleInterval):
		}
		// A round without samples holds only baselines (a process's first
		// reading): no CPU figure yet, so no evidence of idleness.
		rounds := l.sampler.Rounds()
		if len(rounds) == 0 || len(rounds[len(rounds)-1].Samples) == 0 {
			continue
		}
		var total float64
		for _, s := range rounds[len(rounds)-1].Samples {
			if s.Category == sample.CategoryApp || s.Category == sample.CategoryDataPlane || s.Category == sample.CategoryGateway {
				total += s.CPUMillicores
			}
		}
		last = total
		if total < threshold {
			l.logf("idle: lab CPU %.0fm < %.0fm", total, threshold)
			return nil
		}
	}
	return fmt.Errorf("lab not idle before the load: CPU %.0fm, threshold %.0fm after %v", last, threshold, l.opts.IdleTimeout)
}

// runLoad runs `meshbench load` as its own (sampled) process and reads its
// result. It watches every other process: one dying ends the load.
func (l *lab) runLoad(ctx context.Context) (*results.LoadResult, time.Time, time.Time, error) {
	endWarm := l.phase("warmup")
	loadPath := filepath.Join(l.dir.Path, results.LoadFile)
	pace := []string{"--rate", l.opts.Rate}
	if l.opts.Max {
		pace = []string{"--max"}
	}
	args := append([]string{"load"}, pace...)
	args = append(args, "--duration", l.opts.Duration.String(), "--warmup", l.opts.Warmup.String(),
		"--timeout", l.opts.Timeout.String(), "--quiet", "--output-format", "json", "-o", loadPath)
	conns := max(l.opts.Connections, len(l.topo.LoadTargets))
	args = append(args, "--connections", strconv.Itoa(conns))
	if len(l.topo.LoadTargets) > 0 && strings.HasPrefix(l.topo.LoadTargets[0].URL, "https://") {
		args = append(args, "--cacert", filepath.Join(l.dir.Path, "pki", "ca.pem"))
	}
	// With protocol tcp the app and the load still speak HTTP: only the
	// proxies treat the traffic as opaque TCP, as Istio does for a port
	// named tcp-*.
	for _, t := range l.topo.LoadTargets {
		args = append(args, t.URL)
	}
	c, _, err := startChild(l.opts.Meshbench, "load", "load", sample.CategoryLoad, filepath.Join(l.dir.Path, results.LogsDir, "load.log"), args...)
	if err != nil {
		endWarm()
		return nil, time.Time{}, time.Time{}, err
	}
	l.children = append(l.children, c)
	l.manifest.Processes = append(l.manifest.Processes, results.ProcessInfo{Name: "load", Component: "load", Category: sample.CategoryLoad,
		PID: c.pid(), Command: strings.Join(c.cmd.Args, " ")})
	_ = l.sampler.Add(sample.Target{PID: c.pid(), Name: "load", Component: "load", Category: sample.CategoryLoad})
	started := time.Now()
	measureFrom := started.Add(l.opts.Warmup)
	warmTimer := time.AfterFunc(l.opts.Warmup, func() { endWarm(); l.enter("measure") })
	defer warmTimer.Stop()

	// Watch for a process dying mid-run.
	var died error
	watch := time.NewTicker(100 * time.Millisecond)
	defer watch.Stop()
loop:
	for {
		select {
		case <-c.done:
			break loop
		case <-ctx.Done():
			_ = c.cmd.Process.Signal(os.Interrupt)
			<-c.done
			break loop
		case <-watch.C:
			if err := l.somethingDied(); err != nil {
				died = err
				_ = c.cmd.Process.Signal(os.Interrupt)
				<-c.done
				break loop
			}
		}
	}
	measureTo := time.Now()
	if warmTimer.Stop() {
		endWarm() // ended during the warm-up: no measured window
	} else {
		l.mu.Lock()
		l.manifest.Phases = append(l.manifest.Phases, results.Phase{Name: "measure", Started: measureFrom.UTC(), Ended: measureTo.UTC()})
		l.mu.Unlock()
	}
	lr, rerr := results.ReadFile(loadPath)
	switch {
	case died != nil:
		return lr, measureFrom, measureTo, fmt.Errorf("the run ended early: %w", died)
	case rerr != nil:
		return nil, measureFrom, measureTo, fmt.Errorf("load generator: %v%s", rerr, c.tail())
	}
	return lr, measureFrom, measureTo, nil
}

func (l *lab) somethingDied() error {
	for _, p := range l.procs {
		select {
		case <-p.Done():
			return fmt.Errorf("Envoy %s died: %v", p.Name, p.ExitErr())
		default:
		}
	}
	for _, c := range l.children {
		if c.name == "load" {
			continue
		}
		if err := c.unexpectedExit(); err != nil {
			return err
		}
	}
	return nil
}

// collectStats scrapes every Envoy's admin /stats into the results: the
// raw answer per proxy, and one file of every proxy's summary, kept for
// the Result too.
func (l *lab) collectStats(ctx context.Context) {
	summaries := map[string]envoy.ProxyStats{}
	// Histograms are merged at a flush, which completes just after the
	// flushing request is answered: flush all, wait, then scrape.
	flushed := 0
	for _, p := range l.procs {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if envoy.FlushStats(cctx, p.AdminAddr) == nil {
			flushed++
		}
		cancel()
	}
	if flushed > 0 {
		time.Sleep(300 * time.Millisecond)
	}
	for _, p := range l.procs {
		select {
		case <-p.Done():
			continue
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := envoy.Stats(cctx, p.AdminAddr)
		cancel()
		if err != nil {
			l.logf("stats of %s: %v", p.Name, err)
			continue
		}
		_ = l.dir.WriteFile(filepath.Join(results.EnvoyDir, p.Name+".stats.json"), st.Raw)
		summaries[p.Name] = envoy.Summarize(st)
	}
	if len(l.procs) == 0 {
		return
	}
	l.envoyStats = summaries
	if err := l.dir.WriteJSON(results.EnvoyStatsFile, summaries); err != nil {
		l.logf("envoy stats summary: %v", err)
	}
}

// checkLoadCPU marks the run invalid when the load generator was
// CPU-starved: its average CPU over the measured window above
// LoadCPUMax of one core (its engine runs on one thread by default), where
// its own scheduling, not the mesh, would shape the latencies.
//
// Closed loop (Max) is exempt: there the generator runs flat out by design,
// and the output already labels its latencies as queueing-dominated.
func (l *lab) checkLoadCPU(s sample.Summary) {
	if l.opts.Max {
		return
	}
	limit := l.opts.LoadCPUMax
	if limit <= 0 {
		limit = DefaultLoadCPUMax
	}
	if c := s.Category(sample.CategoryLoad); c != nil && c.CPUMillicores.Avg > limit*1000 {
		l.invalid(fmt.Sprintf("load generator CPU-starved: %.0fm on average, over %.0fm (%.0f%% of one core)",
			c.CPUMillicores.Avg, limit*1000, limit*100))
	}
}

func (l *lab) checkValidity(r *results.LoadResult) {
	if r == nil {
		return
	}
	// Scheduled covers the whole window asked for: an interrupted run falls
	// short of it because it stopped, not because the rate was missed.
	shortfall, errRatio := l.opts.RateShortfall, l.opts.ErrorRatio
	if shortfall <= 0 {
		shortfall = results.RateShortfallTolerance
	}
	if errRatio <= 0 {
		errRatio = DefaultErrorRatio
	}
	if !r.Interrupted && r.Scheduled > 0 && float64(r.Sent) < float64(r.Scheduled)*(1-shortfall) {
		l.invalid(fmt.Sprintf("target rate not reached: sent %d of %d scheduled", r.Sent, r.Scheduled))
	}
	if failed := r.Completed - r.Success; failed > 0 && float64(failed) > errRatio*float64(r.Completed) {
		l.invalid(fmt.Sprintf("%d of %d requests failed", failed, r.Completed))
	}
	if r.Interrupted {
		l.invalid("interrupted")
	}
}

func (l *lab) teardown(ctx context.Context) error {
	var errs []error
	if l.sup != nil {
		if err := l.sup.StopAll(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	var wg sync.WaitGroup
	for _, c := range l.children {
		wg.Add(1)
		go func() { defer wg.Done(); c.stop(3 * time.Second) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// countGaps lists processes the sampler could not read while they were
// still running. A process that exited is not a gap here: the load
// generator ends with the measured window, and a process that died early is
// caught (and the run invalidated) by the watch in runLoad.
func countGaps(rounds []sample.Round) []string {
	n := map[string]int{}
	for _, r := range rounds {
		for _, g := range r.Gaps {
			if !g.Gone {
				n[g.Name]++
			}
		}
	}
	var out []string
	for name, k := range n {
		out = append(out, fmt.Sprintf("sampler gap: %s missing from %d rounds", name, k))
	}
	sort.Strings(out)
	return out
}

// bindPlan lists every address the lab will bind, with its owner.
func bindPlan(t *mesh.Topology) []envoy.AddrOwner {
	var out []envoy.AddrOwner
	for _, p := range t.ServerPods() {
		out = append(out, envoy.AddrOwner{Addr: p.AppAddr().String(), Owner: p.Name + " app"})
	}
	for _, p := range t.Proxies {
		out = append(out, envoy.AddrOwner{Addr: p.Admin.String(), Owner: p.Name + " admin"})
		for _, li := range p.Listeners {
			out = append(out, envoy.AddrOwner{Addr: li.Addr.String(), Owner: p.Name + " " + li.Name})
		}
	}
	return out
}

// writeCerts issues the lab's certificates into dir.
func writeCerts(t *mesh.Topology, dir string) (bootstrap.CertPaths, error) {
	ca, err := pki.NewCA(mesh.TrustDomain)
	if err != nil {
		return bootstrap.CertPaths{}, err
	}
	caFiles, err := ca.WriteFiles(dir)
	if err != nil {
		return bootstrap.CertPaths{}, err
	}
	cp := bootstrap.CertPaths{CAFile: caFiles.Cert, Workloads: map[mesh.Identity]bootstrap.KeyPair{}, Serving: map[string]bootstrap.KeyPair{}}
	for _, id := range t.Identities {
		w, err := ca.Issue(pki.SPIFFEID{TrustDomain: mesh.TrustDomain, Namespace: id.Namespace, ServiceAccount: id.ServiceAccount}, pki.Options{})
		if err != nil {
			return cp, err
		}
		b, err := w.WriteFiles(dir, id.Namespace+"-"+id.ServiceAccount)
		if err != nil {
			return cp, err
		}
		cp.Workloads[id] = bootstrap.KeyPair{CertFile: b.CertChain, KeyFile: b.PrivateKey}
	}
	for _, p := range t.Proxies {
		if len(p.ServingHosts) == 0 {
			continue
		}
		var ips []netip.Addr
		for _, h := range p.ServingHosts {
			if a, err := netip.ParseAddr(h); err == nil {
				ips = append(ips, a)
			}
		}
		kp, err := issueServing(ca, dir, p.Name, ips)
		if err != nil {
			return cp, err
		}
		cp.Serving[p.Name] = kp
	}
	return cp, nil
}

// issueServing writes a gateway serving certificate (IP SANs) for name.
func issueServing(ca *pki.CA, dir, name string, ips []netip.Addr) (bootstrap.KeyPair, error) {
	w, err := ca.IssueServing(name, ips, pki.Options{})
	if err != nil {
		return bootstrap.KeyPair{}, err
	}
	b, err := w.WriteFiles(dir, name+"-serving")
	if err != nil {
		return bootstrap.KeyPair{}, err
	}
	return bootstrap.KeyPair{CertFile: b.CertChain, KeyFile: b.PrivateKey}, nil
}

func optionsMap(o Options, t *mesh.Topology) map[string]any {
	m := t.Options
	return map[string]any{
		"mesh": string(m.Mode), "app": string(m.App), "replicas": m.Replicas, "nodes": m.Nodes,
		"policies": m.Policies, "gateway": m.Gateway, "protocol": string(m.Protocol), "mtls": m.MTLS,
		"rate": o.Rate, "closed_loop": o.Max, "duration": o.Duration.String(), "warmup": o.Warmup.String(), "connections": o.Connections,
		"sample_interval": o.SampleInterval.String(), "pss_every_rounds": o.pssEvery(), "drain": o.Drain.String(),
	}
}
