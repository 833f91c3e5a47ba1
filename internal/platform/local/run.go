// Package local is meshbench's embedded platform: a mesh lab of real
// processes on one machine. Workloads are `meshbench serve` processes on
// loopback "pod" addresses, proxies are real Envoys, the load generator is a
// `meshbench load` process, and a /proc sampler measures every one of them.
package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/workload"
)

// Options is one benchmark cell on the local lab: its settings (the same
// type on every platform) and what the lab runs them with.
type Options struct {
	platform.Settings

	// OutDir is the results directory to create (must not hold results).
	OutDir string
	// Meshbench is the meshbench executable run for apps and the load.
	Meshbench string
	// Envoy is the Envoy binary (from envoy.Find); nil only for mode none.
	Envoy *envoy.Binary
	// Substrate is the network the lab runs in; nil: loopback.
	Substrate Substrate

	// IdleMillicores is the app CPU under which the lab counts as idle
	// before the load starts (0: 50m per replica… capped, see Run), waited
	// for at most IdleTimeout (0: 10 s).
	IdleMillicores float64
	IdleTimeout    time.Duration

	// Log receives one line per phase (nil: discard).
	Log io.Writer
	// Observer, when not nil, follows the cell: each phase as it starts
	// (prepare, prepare/render…, idle, warmup, measure, drain, collect,
	// teardown; Log gets "phase NAME" too), every sampling round as it is
	// taken, and, for a platform.LoadObserver, the load's running figures
	// (meshbench's engine only: `load --progress-file`).
	Observer platform.Observer
	// Version is meshbench's version for the manifest.
	Version string
}

// Result is what a run wrote and measured.
type Result struct {
	Dir      string
	Manifest *results.RunManifest
	Load     *results.LoadResult
	Summary  sample.Summary
	Topology *topology.Topology
	// EnvoyStats maps each Envoy's name to the summary of its /stats at the
	// end of the run (also in results.EnvoyStatsFile); nil without Envoys.
	EnvoyStats map[string]envoy.ProxyStats
	// NodeProxyStats maps each substrate node proxy (ztunnel) to its own
	// counters over the cell (also in results.NodeProxyStatsFile); nil
	// without them.
	NodeProxyStats map[string]results.NodeProxyStats
	// Hops is the per-hop attribution (Options.Hops), nil without it.
	Hops *hops.Result
	// MeshCheck is the mesh proxies' own mTLS verdict (Linkerd's, on the
	// netns substrate), nil without one.
	MeshCheck *MeshCheck
}

// DefaultLoadCPUMax is Options.LoadCPUMax's default: 90% of one core.
const DefaultLoadCPUMax = 0.9

// ErrInvalid marks a run that finished but must not be used as a
// measurement; the manifest says why (platform.ErrInvalid).
var ErrInvalid = platform.ErrInvalid

// cell is one run on a lab: its results directory, manifest and sampler.
type cell struct {
	lab      *Lab
	opts     Options
	dir      *results.RunDir
	sampler  *sample.Sampler
	manifest *results.RunManifest
	load     *child
	mu       sync.Mutex
	// envoyStats and nodeProxyStats are filled by collectStats.
	envoyStats     map[string]envoy.ProxyStats
	nodeProxyStats map[string]results.NodeProxyStats
	meshCheck      *MeshCheck
	// number is the cell's place on its lab (1 for the first);
	// requestPrefix the ids its load gives (Options.Hops).
	number        int
	requestPrefix string
	// hopOffsets are the sizes of the proxies' hop logs when the cell's
	// load started (Options.Hops).
	hopOffsets map[string]int64
	// kernel are the kernel snapshots at the measured window's start and
	// near its end (kernelCPU), nil when not taken.
	kernel [2]*sample.KernelSnapshot
}

// snapKernel takes the kernel snapshot i (0: the window's start, 1: its
// end) of the machine and of every process of the cell so far.
func (c *cell) snapKernel(i int) {
	c.mu.Lock()
	// meshbench itself too: its sampler's reads of /proc (smaps_rollup
	// above all) are kernel work of its own, reported as its overhead.
	pids := []int{os.Getpid()}
	for _, p := range c.manifest.Processes {
		if p.PID > 0 {
			pids = append(pids, p.PID)
		}
	}
	c.mu.Unlock()
	s, err := sample.ReadKernel(pids)
	if err != nil {
		c.logf("kernel CPU: %v", err)
		return
	}
	c.mu.Lock()
	c.kernel[i] = &s
	c.mu.Unlock()
}

// kernelCPU puts the kernel's CPU over the measured window into the
// manifest's derived figures (sample.KernelBetween): the whole machine's
// system, irq and softirq time, and that part no sampled process was
// charged with. The end snapshot is taken shortly before the load ends,
// while every process still runs.
func (c *cell) kernelCPU() {
	c.mu.Lock()
	a, b := c.kernel[0], c.kernel[1]
	c.mu.Unlock()
	if a == nil || b == nil {
		return
	}
	k, err := sample.KernelBetween(*a, *b)
	if err != nil {
		c.logf("%v", err)
		return
	}
	if c.manifest.Derived == nil {
		c.manifest.Derived = map[string]float64{}
	}
	c.manifest.Derived[sample.KernelNodeCPU] = k.Node
	c.manifest.Derived[sample.KernelSoftIRQCPU] = k.SoftIRQ
	c.manifest.Derived[sample.KernelOutsideCPU] = k.Outside
}

func (c *cell) logf(format string, a ...any) {
	if c.opts.Log != nil {
		fmt.Fprintf(c.opts.Log, format+"\n", a...)
	}
}

func (c *cell) phase(name string) func() {
	enter(c.opts, name)
	p := results.Phase{Name: name, Started: time.Now().UTC()}
	return func() {
		p.Ended = time.Now().UTC()
		c.mu.Lock()
		c.manifest.Phases = append(c.manifest.Phases, p)
		c.mu.Unlock()
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
	// Every address must be free before anything starts.
	topo, err := planTopology(o)
	if err != nil {
		return nil, err
	}
	dir, err := results.CreateRunDir(o.OutDir)
	if err != nil {
		return nil, err
	}
	l := newLab(o, topo, dir.Path)
	c := l.newCell(o, dir)
	prepErr := l.prepare(ctx)
	var res *Result
	runErr := prepErr
	if prepErr == nil {
		res, runErr = c.run(ctx)
	} else {
		c.takeLabPhases()
	}
	// Teardown always runs, with a fresh context: an interrupt must still
	// stop every process.
	stopCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	endTeardown := c.phase("teardown")
	tdErr := l.stop(stopCtx)
	stopChildren([]*child{c.load})
	endTeardown()
	res, runErr = c.finish(res, runErr)
	return res, errors.Join(runErr, tdErr)
}

// Run runs one cell on the running lab: o must fit it (Fits). The cell's
// results go to o.OutDir; the lab's prepare phases go into the manifest of
// its first cell, and every manifest says which lab it ran on and how
// many cells it had run before. The lab is left running, even when the
// cell fails; check Healthy before the next.
func (l *Lab) Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if !l.Fits(o) {
		return nil, fmt.Errorf("cell %s: its topology differs from the running lab's", o.OutDir)
	}
	if err := l.Healthy(); err != nil {
		return nil, err
	}
	dir, err := results.CreateRunDir(o.OutDir)
	if err != nil {
		return nil, err
	}
	c := l.newCell(o, dir)
	res, runErr := c.run(ctx)
	stopChildren([]*child{c.load})
	return c.finish(res, runErr)
}

// newCell starts cell number l.cells+1 on the lab, with its manifest.
func (l *Lab) newCell(o Options, dir *results.RunDir) *cell {
	l.mu.Lock()
	l.cells++
	n := l.cells
	l.mu.Unlock()
	opts := optionsMap(o, l.topo)
	labDir, err := filepath.Rel(dir.Path, l.dir)
	if err != nil {
		labDir = l.dir
	}
	opts["lab"] = map[string]any{"dir": labDir, "started": l.started, "cell": n, "reused": n > 1}
	c := &cell{lab: l, opts: o, dir: dir, number: n, manifest: &results.RunManifest{
		Schema: results.RunSchema, MeshbenchVersion: o.Version, Platform: "local",
		StartedAt: time.Now().UTC(), Host: results.ReadHost(), Options: opts, Valid: true,
	}}
	if o.Envoy != nil {
		c.manifest.EnvoyVersion = o.Envoy.Version
	}
	return c
}

// takeLabPhases puts the lab's prepare phases (and its validated configs)
// into the manifest, once: the first cell on a lab carries them.
func (c *cell) takeLabPhases() {
	l := c.lab
	l.mu.Lock()
	phases := l.phases
	l.phases = nil
	validated := l.validated
	l.mu.Unlock()
	c.mu.Lock()
	c.manifest.Phases = append(phases, c.manifest.Phases...)
	if len(validated) > 0 {
		c.manifest.Options["validated_configs"] = validated
	}
	c.mu.Unlock()
}

// finish ends the manifest and writes it.
func (c *cell) finish(res *Result, runErr error) (*Result, error) {
	c.manifest.EndedAt = time.Now().UTC()
	if runErr != nil {
		// An interrupt is said once, in words: not also as "context
		// canceled" beside the load's own "interrupted".
		reason := runErr.Error()
		if errors.Is(runErr, context.Canceled) {
			reason = "interrupted"
		}
		c.mu.Lock()
		said := slices.Contains(c.manifest.Invalid, reason)
		c.mu.Unlock()
		if !said {
			c.invalid(reason)
		}
	}
	if err := c.dir.WriteJSON(results.ManifestFile, c.manifest); err != nil && runErr == nil {
		runErr = err
	}
	if res != nil {
		res.Manifest = c.manifest
	}
	return res, runErr
}

// bodySize is the static app's answer size in bytes (BodySize or the
// default).
func (o Options) bodySize() int {
	if o.BodySize > 0 {
		return o.BodySize
	}
	return workload.DefaultBodySize
}

func (o *Options) defaults() error {
	if o.Duration <= 0 {
		return fmt.Errorf("duration %v: must be > 0", o.Duration)
	}
	if o.Connections == 0 {
		o.Connections = loadgen.DefaultConnections
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
	if err := o.defaultMeshbench(); err != nil {
		return err
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join("results", time.Now().Format("20060102-150405")+"-"+string(o.Mesh.Mode))
	}
	return nil
}

// defaultMeshbench sets Meshbench to this executable when it is empty.
func (o *Options) defaultMeshbench() error {
	if o.Meshbench != "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the meshbench executable: %w", err)
	}
	o.Meshbench = exe
	return nil
}

// kept checks that evidence file name was written: a write that failed
// is logged and marks the cell invalid (its results are incomplete).
func (c *cell) kept(name string, err error) {
	if err == nil {
		return
	}
	c.logf("warning: %s not kept: %v", name, err)
	c.invalid(fmt.Sprintf("evidence not kept: %s: %v", name, err))
}

func (c *cell) invalid(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.manifest.Valid = false
	c.manifest.Invalid = append(c.manifest.Invalid, reason)
}

func (c *cell) run(ctx context.Context) (*Result, error) {
	c.takeLabPhases()
	l := c.lab
	if l.net != nil {
		c.mu.Lock()
		for k, v := range l.net.Manifest() {
			c.manifest.Options[k] = v
		}
		c.mu.Unlock()
	}
	// The Envoys' stats from here on are this cell's.
	if err := l.startInterval(ctx); err != nil {
		return nil, fmt.Errorf("starting the cell's Envoy stats interval: %w", err)
	}
	if l.net != nil {
		if err := l.net.StartInterval(ctx); err != nil {
			return nil, fmt.Errorf("starting the cell's node proxy stats interval: %w", err)
		}
	}

	samplesFile, err := os.Create(filepath.Join(c.dir.Path, results.SamplesFile))
	if err != nil {
		return nil, err
	}
	defer samplesFile.Close()
	c.sampler = sample.New(c.opts.SampleInterval, sample.SystemClock())
	c.sampler.Out = samplesFile
	c.sampler.PSSEvery = c.opts.pssEvery()
	if c.opts.Observer != nil {
		c.sampler.OnRound = c.opts.Observer.Round
	}
	for _, t := range c.targets() {
		if err := c.sampler.Add(t); err != nil {
			return nil, err
		}
	}
	sctx, stopSampling := context.WithCancel(context.Background())
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		_ = c.sampler.Run(sctx)
	}()
	defer func() {
		stopSampling()
		<-samplerDone
	}()

	endIdle := c.phase("idle")
	if err := c.waitIdle(ctx); err != nil {
		c.invalid(err.Error())
		c.logf("warning: %v", err)
	}
	endIdle()

	loadRes, measureFrom, measureTo, loadErr := c.runLoad(ctx)

	endDrain := c.phase("drain")
	select {
	case <-time.After(c.opts.Drain):
	case <-ctx.Done():
	}
	endDrain()
	stopSampling()
	<-samplerDone

	endCollect := c.phase("collect")
	c.collectStats(context.WithoutCancel(ctx))
	rounds := c.sampler.Rounds()
	window := sample.Window(rounds, measureFrom, measureTo)
	summary := sample.Summarize(window)
	if err := c.dir.WriteJSON(results.ResourcesFile, sample.Resources{Schema: results.ResourcesSchema, Summary: summary,
		Window: sample.ResourcesWindow{From: measureFrom, To: measureTo,
			Rule: "rounds whose sampling time falls inside the measured window (warm-up and drain excluded)"}}); err != nil {
		endCollect()
		return nil, err
	}
	for _, g := range countGaps(window) {
		c.invalid(g)
	}
	res := &Result{Dir: c.dir.Path, Load: loadRes, Summary: summary, Topology: l.topo, EnvoyStats: c.envoyStats, NodeProxyStats: c.nodeProxyStats, MeshCheck: c.meshCheck}
	if c.opts.Hops && loadRes != nil {
		hr, err := c.collectHops(context.WithoutCancel(ctx), loadRes, summary)
		if err != nil {
			c.invalid("hop timing: " + err.Error())
		}
		res.Hops = hr
	}
	endCollect()
	if loadErr != nil {
		return res, loadErr
	}
	c.checkValidity(loadRes)
	c.checkLoadCPU(summary)
	c.manifest.Derived = derive(l.topo, loadRes, summary)
	c.kernelCPU()
	c.checkNodeProxyMTLS()
	c.checkMesh()
	return res, ctx.Err()
}

// callArgs are the `meshbench serve` flags that tell an app pod where to
// call its backends (the face workload: smiley over HTTP, color over
// gRPC).
func callArgs(p topology.Pod) []string {
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

// targets lists every process to sample.
func (c *cell) targets() []sample.Target {
	var out []sample.Target
	l := c.lab
	for _, a := range l.apps {
		out = append(out, sample.Target{PID: a.pid(), Name: a.name, Component: a.component, Category: a.category})
		c.manifest.Processes = append(c.manifest.Processes, results.ProcessInfo{Name: a.name, Component: a.component,
			Category: a.category, PID: a.pid(), Command: strings.Join(a.cmd.Args, " ")})
	}
	for _, p := range l.procs {
		mp := l.topo.Proxy(p.Name)
		out = append(out, sample.Target{PID: p.PID, Name: p.Name, Component: mp.Component, Category: string(mp.Category)})
		c.manifest.Processes = append(c.manifest.Processes, results.ProcessInfo{Name: p.Name, Component: mp.Component,
			Category: string(mp.Category), PID: p.PID, Command: "envoy -c " + p.ConfigPath})
	}
	if l.net != nil {
		for _, t := range l.net.Proxies() {
			out = append(out, t)
			c.manifest.Processes = append(c.manifest.Processes, results.ProcessInfo{Name: t.Name, Component: t.Component,
				Category: t.Category, PID: t.PID, Command: t.Name})
		}
	}
	return out
}

// waitIdle waits until the apps' and proxies' CPU falls under the
// threshold (start-up work done), up to IdleTimeout.
func (c *cell) waitIdle(ctx context.Context) error {
	l := c.lab
	threshold := c.opts.IdleMillicores
	if threshold == 0 {
		// An idle Envoy or app uses ~1–2m (LAB.md: 30 idle Envoys ≈ 4% of a core).
		threshold = 50 + 2*float64(len(l.apps)+len(l.procs))
		if l.net != nil {
			threshold += 2 * float64(len(l.net.Proxies()))
		}
	}
	deadline := time.Now().Add(c.opts.IdleTimeout)
	last := -1.0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.opts.SampleInterval):
		}
		// A round without samples holds only baselines (a process's first
		// reading): no CPU figure yet, so no evidence of idleness.
		rounds := c.sampler.Rounds()
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
			c.logf("idle: lab CPU %.0fm < %.0fm", total, threshold)
			return nil
		}
	}
	return fmt.Errorf("lab not idle before the load: CPU %.0fm, threshold %.0fm after %v", last, threshold, c.opts.IdleTimeout)
}

// loadShapeArgs are the `meshbench load` flags of the cell's requests
// per connection, arrivals and send tick (none at their defaults).
func (c *cell) loadShapeArgs() []string {
	var args []string
	if c.opts.RequestsPerConnection > 0 {
		args = append(args, "--requests-per-connection", strconv.Itoa(c.opts.RequestsPerConnection))
	}
	if c.opts.Arrivals == loadgen.ArrivalsPoisson {
		args = append(args, "--arrivals", string(loadgen.ArrivalsPoisson), "--seed", strconv.FormatUint(c.opts.ArrivalsSeed, 10))
	}
	if c.opts.SendTick > 0 {
		args = append(args, "--send-tick", c.opts.SendTick.String())
	}
	return args
}

// runLoad runs `meshbench load` as its own (sampled) process and reads its
// result. It watches every other process: one dying ends the load.
func (c *cell) runLoad(ctx context.Context) (*results.LoadResult, time.Time, time.Time, error) {
	l := c.lab
	endWarm := c.phase("warmup")
	loadPath := filepath.Join(c.dir.Path, results.LoadFile)
	args := append([]string{"load"}, c.opts.Load.Flags()...)
	args = append(args, "--duration", c.opts.Duration.String(), "--warmup", c.opts.Warmup.String(),
		"--timeout", c.opts.Timeout.String(), "--quiet", "--output-format", "json", "-o", loadPath)
	conns := max(c.opts.Connections, len(l.topo.LoadTargets))
	args = append(args, "--connections", strconv.Itoa(conns))
	if len(l.topo.LoadTargets) > 0 && strings.HasPrefix(l.topo.LoadTargets[0].URL, "https://") {
		args = append(args, "--cacert", filepath.Join(l.dir, "pki", "ca.pem"))
	}
	// With protocol tcp the app and the load still speak HTTP: only the
	// proxies treat the traffic as opaque TCP, as Istio does for a port
	// named tcp-*.
	args = append(args, c.requestArgs()...)
	external := c.opts.external()
	if external {
		// The external tools report no per-second intervals: no .hlog.
		args = append(args, "--generator", c.opts.Generator)
	} else {
		args = append(args, "--hlog", filepath.Join(c.dir.Path, results.HlogFile))
		if !c.opts.Fault.Zero() {
			// A fault's cost is read from the intervals: finer than the
			// default second.
			args = append(args, "--interval", FaultInterval.String())
		}
	}
	progressPath := ""
	followLoad, _ := c.opts.Observer.(platform.LoadObserver)
	if followLoad != nil && !external {
		progressPath = filepath.Join(c.dir.Path, results.LogsDir, "load-progress.json")
		args = append(args, "--progress-file", progressPath)
	}
	args = append(args, c.loadShapeArgs()...)
	for _, t := range l.topo.LoadTargets {
		u := t.URL
		if c.opts.Load.Bulk() {
			// Bulk reads the static app's endless answer.
			u = strings.TrimSuffix(u, "/") + workload.StreamPath
		}
		args = append(args, u)
	}
	lc, _, err := startChild(l.enter(loadPod), c.opts.Meshbench, "load", "load", sample.CategoryLoad, filepath.Join(c.dir.Path, results.LogsDir, "load.log"), args...)
	if err != nil {
		endWarm()
		return nil, time.Time{}, time.Time{}, err
	}
	c.load = lc
	c.manifest.Processes = append(c.manifest.Processes, results.ProcessInfo{Name: "load", Component: "load", Category: sample.CategoryLoad,
		PID: lc.pid(), Command: strings.Join(lc.cmd.Args, " ")})
	_ = c.sampler.Add(sample.Target{PID: lc.pid(), Name: "load", Component: "load", Category: sample.CategoryLoad})
	started := time.Now()
	measureFrom := started.Add(c.opts.Warmup)
	// The fault, at its time in the window; undone when the load ends,
	// however it ends.
	faulted := c.scheduleFault(ctx, measureFrom)
	warmTimer := time.AfterFunc(c.opts.Warmup, func() {
		c.snapKernel(0)
		endWarm()
		enter(c.opts, "measure")
		l.resetAppDelays(ctx)
	})
	defer warmTimer.Stop()
	// The window's end for the kernel's CPU: a little before the load's,
	// so that every sampled process still runs and is read.
	kernelEnd := time.AfterFunc(c.opts.Warmup+c.opts.Duration-min(200*time.Millisecond, c.opts.Duration/5), func() { c.snapKernel(1) })
	defer kernelEnd.Stop()

	// Watch for a process dying mid-run.
	var died error
	// An external generator's processes are found while they run and
	// sampled from then on; a short period keeps the CPU of their first
	// moments (before a first reading) small.
	period := 100 * time.Millisecond
	if external {
		period = 20 * time.Millisecond
	}
	watch := time.NewTicker(period)
	defer watch.Stop()
	adopted := map[int]bool{}
	var progressRead time.Time
loop:
	for {
		select {
		case <-lc.done:
			break loop
		case <-ctx.Done():
			_ = lc.cmd.Process.Signal(os.Interrupt)
			<-lc.done
			break loop
		case <-watch.C:
			if external {
				c.adoptLoadChildren(lc.pid(), adopted)
			}
			if progressPath != "" && time.Since(progressRead) >= 500*time.Millisecond {
				progressRead = time.Now()
				if b, err := os.ReadFile(progressPath); err == nil {
					var p results.LoadProgress
					if json.Unmarshal(b, &p) == nil {
						followLoad.LoadProgress(p)
					}
				}
			}
			if err := l.somethingDied(); err != nil {
				died = err
				_ = lc.cmd.Process.Signal(os.Interrupt)
				<-lc.done
				break loop
			}
		}
	}
	measureTo := time.Now()
	c.stopFault(faulted)
	c.recordAppDelays(context.WithoutCancel(ctx))
	if warmTimer.Stop() {
		endWarm() // ended during the warm-up: no measured window
	} else {
		c.mu.Lock()
		c.manifest.Phases = append(c.manifest.Phases, results.Phase{Name: "measure", Started: measureFrom.UTC(), Ended: measureTo.UTC()})
		c.mu.Unlock()
	}
	lr, rerr := results.ReadFile(loadPath)
	switch {
	case died != nil:
		return lr, measureFrom, measureTo, fmt.Errorf("the run ended early: %w", died)
	case rerr != nil:
		return nil, measureFrom, measureTo, fmt.Errorf("load generator: %v%s", rerr, lc.tail())
	}
	return lr, measureFrom, measureTo, nil
}

// external reports whether the load runs an external generator.
func (o Options) external() bool { return o.Generator != "" && o.Generator != "meshbench" }

// adoptLoadChildren samples every descendant of the load process not yet
// adopted (the external generator `meshbench load` runs, each of its
// warm-up and measured runs a new process) as load: the tool's own CPU
// and memory, beside the meshbench process that waits for it.
func (c *cell) adoptLoadChildren(pid int, adopted map[int]bool) {
	for _, child := range descendants(pid) {
		if adopted[child] {
			continue
		}
		// A process between fork and exec (or exiting) has no command
		// line yet: it is looked at again on the next tick.
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child))
		if len(cmdline) == 0 {
			continue
		}
		adopted[child] = true
		name := fmt.Sprintf("load %s %d", c.opts.Generator, len(adopted))
		t := sample.Target{PID: child, Name: name, Component: "load", Category: sample.CategoryLoad}
		if err := c.sampler.AddNow(t); err != nil {
			continue // exited already: a process this short is not the measured run
		}
		c.mu.Lock()
		c.manifest.Processes = append(c.manifest.Processes, results.ProcessInfo{Name: name, Component: "load", Category: sample.CategoryLoad,
			PID: child, Command: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
		c.mu.Unlock()
	}
}

// descendants lists pid's children, their children and so on, from
// /proc/PID/task/TID/children (Linux 3.5+ with CONFIG_PROC_CHILDREN).
func descendants(pid int) []int {
	var out []int
	queue := []int{pid}
	for len(queue) > 0 && len(out) < 64 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", p))
		for _, f := range tasks {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, w := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(w); err == nil {
					out = append(out, n)
					queue = append(queue, n)
				}
			}
		}
	}
	return out
}

// collectStats scrapes every Envoy's admin /stats into the results: the
// raw answer per proxy, and one file of every proxy's summary, kept for
// the Result too.
func (c *cell) collectStats(ctx context.Context) {
	if c.lab.net != nil {
		st, err := c.lab.net.Stats(ctx, filepath.Join(c.dir.Path, results.NodeProxyDir))
		if err != nil {
			c.logf("node proxy stats: %v", err)
		}
		if len(st) > 0 {
			c.nodeProxyStats = st
			c.kept(results.NodeProxyStatsFile, c.dir.WriteJSON(results.NodeProxyStatsFile, st))
		}
	}
	if mc, ok := c.lab.net.(MeshChecker); ok {
		check, err := mc.CheckMesh(ctx, filepath.Join(c.dir.Path, results.NodeProxyDir))
		if err != nil {
			c.logf("mesh proxy stats: %v", err)
		}
		if len(check.Lines) > 0 {
			c.meshCheck = &check
			c.kept("mesh-check.json", c.dir.WriteJSON("mesh-check.json", check))
		}
	}
	summaries := map[string]envoy.ProxyStats{}
	// Histograms are merged at a flush, which completes just after the
	// flushing request is answered: flush all, wait, then scrape.
	flushed := 0
	for _, p := range c.lab.procs {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if envoy.FlushStats(cctx, p.AdminAddr) == nil {
			flushed++
		}
		cancel()
	}
	if flushed > 0 {
		time.Sleep(300 * time.Millisecond)
	}
	for _, p := range c.lab.procs {
		select {
		case <-p.Done():
			continue
		default:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := envoy.Stats(cctx, p.AdminAddr)
		cancel()
		if err != nil {
			c.logf("stats of %s: %v", p.Name, err)
			continue
		}
		name := filepath.Join(results.EnvoyDir, p.Name+".stats.json")
		c.kept(name, c.dir.WriteFile(name, st.Versioned()))
		summaries[p.Name] = envoy.Summarize(st)
	}
	if len(c.lab.procs) == 0 {
		return
	}
	c.envoyStats = summaries
	c.kept(results.EnvoyStatsFile, c.dir.WriteJSON(results.EnvoyStatsFile, summaries))
}

// checkNodeProxyMTLS verifies mTLS from the substrate node proxies' own
// counters over the cell: the cell's traffic opened connections through
// them, every one of them mutual TLS (connection_security_policy). The
// counts go into Derived; a cell where they say otherwise is invalid.
// Without node proxy stats (loopback, mode none) there is nothing to check.
func (c *cell) checkNodeProxyMTLS() {
	if len(c.nodeProxyStats) == 0 {
		return
	}
	var mtls, other uint64
	for _, s := range c.nodeProxyStats {
		mtls += s.MTLSOpened()
		other += s.PlaintextOpened()
	}
	if c.manifest.Derived == nil {
		c.manifest.Derived = map[string]float64{}
	}
	c.manifest.Derived["node_proxy_mtls_connections"] = float64(mtls)
	c.manifest.Derived["node_proxy_other_connections"] = float64(other)
	if mtls == 0 || other > 0 {
		c.invalid(fmt.Sprintf("mTLS not verified: the node proxies opened %d mutual TLS and %d other connections in the cell", mtls, other))
	}
}

// checkMesh applies the mesh proxies' own mTLS verdict (MeshChecker):
// its counts into Derived, its reasons into the invalid list.
func (c *cell) checkMesh() {
	if c.meshCheck == nil {
		return
	}
	if c.manifest.Derived == nil {
		c.manifest.Derived = map[string]float64{}
	}
	for k, v := range c.meshCheck.Derived {
		c.manifest.Derived[k] = v
	}
	for _, r := range c.meshCheck.Invalid {
		c.invalid(r)
	}
}

// checkLoadCPU marks the run invalid when the load generator was
// CPU-starved: its average CPU over the measured window above
// LoadCPUMax of one core (its engine runs on one thread by default), where
// its own scheduling, not the mesh, would shape the latencies.
//
// The closed loop and bulk are exempt: there the generator runs flat out
// by design, and the output already labels its latencies as
// queueing-dominated (bulk has none: its figure is bytes per second).
func (c *cell) checkLoadCPU(s sample.Summary) {
	if c.opts.Load.Closed() || c.opts.Load.Bulk() {
		return
	}
	limit := c.opts.LoadCPUMax
	if limit <= 0 {
		limit = DefaultLoadCPUMax
	}
	if g := s.Category(sample.CategoryLoad); g != nil && g.CPUMillicores.Avg > limit*1000 {
		c.invalid(fmt.Sprintf("load generator CPU-starved: %.0fm on average, over %.0fm (%.0f%% of one core)",
			g.CPUMillicores.Avg, limit*1000, limit*100))
	}
}

func (c *cell) checkValidity(r *results.LoadResult) {
	if r == nil {
		return
	}
	errorRatio := c.opts.ErrorRatio
	if !c.opts.Fault.Zero() {
		// A fault's failed requests are what the cell measures (its cost),
		// not a sign the run went wrong.
		errorRatio = 1
	}
	for _, p := range r.Problems(c.opts.RateShortfall, errorRatio) {
		c.invalid(p)
	}
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
func bindPlan(t *topology.Topology) []envoy.AddrOwner {
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

// generatorName is the generator recorded in the manifest: "" for
// meshbench's engine (as every manifest before the choice).
func (o Options) generatorName() string {
	if o.external() {
		return o.Generator
	}
	return ""
}

func optionsMap(o Options, t *topology.Topology) map[string]any {
	s := o.Record(t.Options)
	s.Substrate, s.Generator = o.substrateName(), o.generatorName()
	return s.Options(o.localOptions())
}
