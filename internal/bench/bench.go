// Package bench runs a benchmark plan from start to finish: it turns a
// parsed plan and the run's settings (Config, built by the CLI from flags)
// into cells for the platform the plan names (the local lab on its
// substrate, or a Kubernetes cluster), runs them with runner (resuming a
// directory), analyses the finished directory (analysis) and writes every
// report (report, plot). A capacity-search plan runs its searches probe by
// probe instead. The CLI keeps the flags, the typed Config, the progress
// printers and the exit codes; this package owns the orchestration.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/threshold"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
)

// Config is one `meshbench bench` invocation, typed: the plan and what is
// not part of it.
type Config struct {
	// Plan is the parsed plan; its Seed is set.
	Plan *plan.Plan
	// Dir is the plan's results directory; Resume says it exists and is
	// resumed (finished cells are never run again).
	Dir    string
	Resume bool
	// Version is meshbench's version, recorded in every manifest.
	Version string
	// LoopbackNet is the second octet of the lab's addresses, 127.N.x.y
	// (0: the default).
	LoopbackNet uint8
	// EnvoyFlag, ZtunnelFlag and LinkerdProxyFlag are the binaries given
	// on the command line ("": found as usual).
	EnvoyFlag, ZtunnelFlag, LinkerdProxyFlag string
	// Kube is the cluster's settings (platform kube only).
	Kube Kube
	// FailOn are the --fail-on conditions, judged per configuration.
	FailOn []threshold.Condition
	// Getenv reads the environment; Stdout gets the reports, Stderr the
	// header and notes.
	Getenv         func(string) string
	Stdout, Stderr io.Writer
	// Watch, when not nil, is called once the plan's cells are known and
	// the header printed; the Hooks it returns follow the run.
	Watch func(Start) Hooks
	// SearchProgress, when not nil, follows a capacity search: every
	// probe's start and end (Event), with the probe's verdict (ProbeVerdict).
	SearchProgress func(runner.Event)
}

// Kube is how a plan runs on a cluster: which cluster, how its objects
// are made, whether the meshes are installed.
type Kube struct {
	Connect                          kube.ConnectOptions
	NamespacePrefix, Image, AppImage string
	FacesChart, AllowForeign, Keep   bool
	InstallMesh                      bool
	IstioBuild                       string
	IdleTimeout, ReadyTimeout        time.Duration
	MetricsSource                    string
	KubeletInterval                  time.Duration
}

// Start is what a plan's progress display needs to know as it starts.
type Start struct {
	// Cells is the number of cells in the plan; OnKube says they run on a
	// cluster; Dir is the results directory; MetricsSource the cluster's
	// --metrics-source.
	Cells         int
	OnKube        bool
	Dir           string
	MetricsSource string
	// Started is when the plan started running.
	Started time.Time
}

// Hooks follow a running plan; any may be nil.
type Hooks struct {
	// Progress gets every cell's start and end.
	Progress func(runner.Event)
	// Phase gets every lab phase's name; OnRound every sampling round;
	// OnLoadProgress (local lab) the load's progress.
	Phase          func(string)
	OnRound        func(sample.Round)
	OnLoadProgress func(results.LoadProgress)
	// OnNodeRound gets a cluster cell's node samples; OnMetricsSource the
	// metrics source a cluster cell chose (kube.Options' hooks).
	OnNodeRound     func(sample.NodeRound)
	OnMetricsSource func(string)
	// Log gets the cluster's progress lines (nil: none).
	Log io.Writer
	// Finish is called when the cells have run, before the reports.
	Finish func()
}

// Run runs cfg's plan into cfg.Dir, then analyses it and writes its
// reports. The error is a UsageError for bad input, ErrInterrupted when ctx
// was cancelled (the results and reports written so far are kept), a
// PartialError when cells could not be read, a ThresholdError when
// --fail-on conditions were met; invalid or failed cells are a plain error.
func Run(ctx context.Context, cfg Config) error {
	p, dir := cfg.Plan, cfg.Dir
	onKube := p.Platform == plan.PlatformKube
	if !onKube {
		// The lab's load generator runs here: its connections must fit
		// this machine's open-file limit (checked as load checks it).
		if err := loadgen.EnsureFileLimit(p.Connections); err != nil {
			return &UsageError{Err: err}
		}
	}
	cells := p.Order(*p.Seed, p.ReuseTopology)
	var sub local.Substrate
	substrate, fellBack := "", ""
	if !onKube {
		opts := make([]topology.Options, len(cells))
		for i, c := range cells {
			opts[i] = c.Mesh
		}
		var err error
		if sub, fellBack, err = ChooseSubstrate(p.Substrate, cfg.ZtunnelFlag, cfg.LinkerdProxyFlag, opts); err != nil {
			return err
		}
		substrate = local.SubstrateLoopback
		if sub != nil {
			substrate = sub.Name()
		}
	}
	needEnvoy := false
	for _, c := range cells {
		if !onKube && NeedsEnvoy(c.Mesh, sub) {
			needEnvoy = true
		}
	}
	var cluster *kube.Cluster
	if onKube {
		var err error
		if cluster, err = kube.Connect(ctx, cfg.Kube.Connect); err != nil {
			return err
		}
	}
	var bin *envoy.Binary
	if needEnvoy {
		var err error
		if bin, err = FindEnvoy(ctx, cfg.EnvoyFlag, cfg.Getenv); err != nil {
			return err
		}
	}
	if !onKube {
		// First what is real and what stands in, then why, if auto fell
		// back to loopback.
		fmt.Fprintln(cfg.Stderr, "meshbench bench: "+LabLine(sub, planModes(cells), bin))
		if fellBack != "" {
			fmt.Fprintln(cfg.Stderr, fellBack)
		}
	}
	if p.Search != nil {
		return runSearch(ctx, cfg, bin, sub)
	}
	var istioInstall *install.MeshInstall
	if onKube {
		var err error
		if istioInstall, err = IstioInstall(ctx, cfg.Kube.IstioBuild, cfg.Kube.InstallMesh, cfg.EnvoyFlag, cfg.Getenv); err != nil {
			return err
		}
	}
	rcells := make([]runner.Cell, len(cells))
	for i, c := range cells {
		mo := c.Mesh
		mo.LoopbackNet = cfg.LoopbackNet
		lo := local.Options{Mesh: mo, Load: c.Rate.Load(), Duration: p.Duration, Warmup: p.Warmup,
			Connections: p.Connections, SampleInterval: p.SampleInterval, PSSEvery: p.PSSEvery, Drain: p.Drain,
			LoadCPUMax: p.Thresholds.LoadCPU, RateShortfall: p.Thresholds.RateShortfall, ErrorRatio: p.Thresholds.Errors, Envoy: bin, Version: cfg.Version,
			AppConcurrency: p.AppConcurrency, AppServiceTime: p.AppServiceTime, Substrate: sub, BodySize: p.BodySize, AppFaults: p.AppFaults, Hops: p.Hops,
			Generator: c.Generator}
		rcells[i] = runner.Cell{ID: c.ID, Lab: lo}
		if p.ReuseTopology {
			rcells[i].Topology = c.TopologyKey
		}
		if onKube {
			ko := kubeOptions(p, c, &cfg.Kube, cfg.Version)
			ko.IstioInstall = istioInstall
			rcells[i].Kube = &ko
		}
	}
	if onKube {
		if err := planMeshInstalls(dir, cfg.Resume, rcells, cfg.Kube.InstallMesh); err != nil {
			return err
		}
	}
	est := p.Estimate(p.CellOverhead())
	where := ""
	if cluster != nil {
		where = fmt.Sprintf(" on %s (context %q, Kubernetes %s)", cluster.Server, cluster.Context, cluster.Version)
	}
	switch {
	case substrate == local.SubstrateLoopback && planHasStandIn(cells):
		where = " on the loopback substrate (ambient and waypoint: Envoy stand-in for ztunnel)"
	case substrate != "":
		where = " on the " + substrate + " substrate"
	}
	fmt.Fprintf(cfg.Stderr, "meshbench bench: %d cells (%d skipped combinations)%s, seed %d, about %s; results in %s\n",
		len(cells), len(p.Skipped()), where, *p.Seed, est.Round(time.Second), dir)
	ro := runner.Options{Dir: dir, Resume: cfg.Resume, PlanYAML: p.YAML(), Seed: *p.Seed, Cells: rcells, Version: cfg.Version, Platform: p.Platform, Substrate: substrate}
	if bin != nil {
		ro.EnvoyVersion = bin.Version
	}
	if cfg.Resume {
		if m, err := results.ReadPlanManifest(dir); err == nil {
			done, failed := 0, 0
			for _, st := range m.Cells {
				switch st.State {
				case results.CellDone:
					done++
				case results.CellFailed:
					failed++
				}
			}
			fmt.Fprintf(cfg.Stderr, "resuming: %d of %d cells already finished", done, len(m.Order))
			if failed > 0 {
				fmt.Fprintf(cfg.Stderr, "; %d that failed without a measurement run again (what they left is kept as cells/ID%sN)", failed, runner.FailedSuffix)
			}
			fmt.Fprintln(cfg.Stderr)
		}
	}
	started := time.Now()
	var hooks Hooks
	if cfg.Watch != nil {
		hooks = cfg.Watch(Start{Cells: len(rcells), OnKube: onKube, Dir: dir, MetricsSource: cfg.Kube.MetricsSource, Started: started})
	}
	ro.Progress = hooks.Progress
	for i := range ro.Cells {
		ro.Cells[i].Lab.Phase, ro.Cells[i].Lab.OnRound = hooks.Phase, hooks.OnRound
		ro.Cells[i].Lab.OnLoadProgress = hooks.OnLoadProgress
		if k := ro.Cells[i].Kube; k != nil {
			k.Phase, k.OnRound, k.OnNodeRound = hooks.Phase, hooks.OnRound, hooks.OnNodeRound
			k.OnLoadProgress, k.OnMetricsSource = hooks.OnLoadProgress, hooks.OnMetricsSource
			if hooks.Log != nil {
				k.Log = hooks.Log
			}
		}
	}
	_, runErr := runner.Run(ctx, ro)
	if hooks.Finish != nil {
		hooks.Finish()
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	pd, err := analysis.ReadPlan(dir)
	if err != nil {
		return err
	}
	a := analysis.Analyze(pd, analysis.Options{Level: p.Confidence, Baseline: string(p.Baseline), Seed: uint64(*p.Seed), Compare: p.Compare})
	if len(pd.Cells) > 0 {
		if err := WriteReports(cfg.Stdout, a, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(cfg.Stdout, "Plan took %s.\n", time.Since(started).Round(time.Second))
	if ctx.Err() != nil {
		fmt.Fprintf(cfg.Stderr, "meshbench bench: interrupted; resume with: meshbench bench --resume %s\n", dir)
		return ErrInterrupted
	}
	var crossed []string
	if len(cfg.FailOn) > 0 {
		if crossed, err = threshold.PlanCrossed(a, cfg.FailOn); err != nil {
			return err
		}
	}
	if len(a.Invalid) > 0 || len(pd.Failed) > 0 {
		// Invalid cells outrank thresholds (exit 1): the measurement
		// itself is in doubt. The crossed conditions are still said.
		msg := fmt.Sprintf("%d cell(s) invalid or failed (shown in the report; results kept in %s)", len(a.Invalid)+len(pd.Failed), dir)
		if len(crossed) > 0 {
			msg += "; --fail-on: " + strings.Join(crossed, "; ")
		}
		return errors.New(msg)
	}
	if err := Partial(pd); err != nil {
		return err
	}
	if len(crossed) > 0 {
		return &ThresholdError{Crossed: crossed}
	}
	return nil
}

// kubeOptions are the options of plan p's cell c on a cluster.
func kubeOptions(p *plan.Plan, c plan.Cell, k *Kube, version string) kube.Options {
	o := kube.Options{Connect: k.Connect,
		Spec: kube.Spec{AppNamespace: k.NamespacePrefix + "-app", LoadNamespace: k.NamespacePrefix + "-load",
			Mesh: c.Mesh, Image: k.Image, AppImage: k.AppImage, FacesChart: k.FacesChart && c.Mesh.App == topology.AppFaces},
		Load: c.Rate.Load(), Workers: p.Workers, Generator: c.Generator, Duration: p.Duration, Warmup: p.Warmup,
		Connections: p.Connections, AllowForeign: k.AllowForeign, Keep: k.Keep,
		SampleInterval: p.SampleInterval, Drain: p.Drain, IdleTimeout: k.IdleTimeout, ReadyTimeout: k.ReadyTimeout,
		MetricsSource: k.MetricsSource, KubeletInterval: k.KubeletInterval,
		RateShortfall: p.Thresholds.RateShortfall, ErrorRatio: p.Thresholds.Errors, Version: version}
	return o
}

// planMeshInstalls, with install, has the first cell of each mesh to
// install (Istio's modes share one install, Linkerd has its own) install
// it with its CLI; the others verify it. On resume only the unfinished
// cells count. When the plan holds ambient or waypoint cells, Istio is
// installed with the ambient profile for every Istio mode: it runs
// sidecars too, and switching profiles between cells would remove ztunnel.
func planMeshInstalls(dir string, resume bool, cells []runner.Cell, installing bool) error {
	finished := map[string]bool{}
	if resume {
		m, err := results.ReadPlanManifest(dir)
		if err != nil {
			return err
		}
		for id, st := range m.Cells {
			finished[id] = st.Finished()
		}
	}
	// Istio is installed once for the plan: with the ambient profile when
	// any cell needs it (it runs sidecars too).
	ambient := false
	for _, c := range cells {
		if m, ok := mesh.Get(string(c.Kube.Spec.Mesh.Mode)); ok && m.Cluster.IstioProfile == mesh.IstioProfileAmbient {
			ambient = true
		}
	}
	installed := map[string]bool{}
	for _, c := range cells {
		m, _ := mesh.Get(string(c.Kube.Spec.Mesh.Mode))
		cli := install.MeshCLI(string(c.Kube.Spec.Mesh.Mode))
		if m != nil && m.Product == mesh.Istio && ambient {
			c.Kube.IstioProfile = mesh.IstioProfileAmbient
		}
		if !installing || cli == "" || finished[c.ID] || installed[cli] {
			continue
		}
		installed[cli] = true
		c.Kube.InstallMesh = true
	}
	return nil
}

// planModes are the mesh modes of cells, in the meshes' order.
func planModes(cells []plan.Cell) []topology.Mode {
	var out []topology.Mode
	for _, c := range cells {
		if !slices.Contains(out, c.Mesh.Mode) {
			out = append(out, c.Mesh.Mode)
		}
	}
	slices.SortFunc(out, func(a, b topology.Mode) int { return mesh.Order(string(a)) - mesh.Order(string(b)) })
	return out
}

// planHasStandIn reports whether a cell runs ambient or waypoint, whose
// node proxy the loopback substrate has Envoy stand in for.
func planHasStandIn(cells []plan.Cell) bool {
	for _, c := range cells {
		if c.Mesh.Mode == topology.ModeAmbient || c.Mesh.Mode == topology.ModeWaypoint {
			return true
		}
	}
	return false
}
