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
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/threshold"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
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
	// the header printed; the Observer it returns (nil: none) follows the
	// run: every cell's (a capacity search's probe's, Start.Search) start
	// and end, and each cell as its platform runs it.
	Watch func(Start) Observer
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
	// Cells is the number of cells in the plan (0 for a capacity search,
	// Search, whose probes are not known before they run); OnKube says
	// they run on a cluster, Substrate on which network on the lab
	// (local.SubstrateLoopback, "netns"); Dir is the results directory;
	// MetricsSource the cluster's --metrics-source.
	Cells         int
	Search        bool
	OnKube        bool
	Substrate     string
	Dir           string
	MetricsSource string
	// Started is when the plan started running.
	Started time.Time
}

// Observer follows a running plan: every cell's start and end, and each
// cell as its platform runs it (platform.Observer: phases, sampling
// rounds, node rounds, the metrics source; the load's running figures
// when it is a platform.LoadObserver). Its methods may be called from
// several goroutines.
type Observer interface {
	platform.Observer
	// Cell: a cell (a capacity search's probe) starts (ev.Done false) or
	// ends.
	Cell(ev runner.Event)
	// Log is where a cluster cell's progress lines go (nil: nowhere).
	Log() io.Writer
	// Finish: the cells have run; the reports follow.
	Finish()
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
	substrate := ""
	if !onKube {
		opts := make([]topology.Options, len(cells))
		for i, c := range cells {
			opts[i] = c.Mesh
		}
		var fellBack string
		var err error
		if sub, fellBack, err = ChooseSubstrate(p.Substrate, cfg.ZtunnelFlag, cfg.LinkerdProxyFlag, opts); err != nil {
			return err
		}
		if fellBack != "" {
			fmt.Fprintln(cfg.Stderr, fellBack)
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
	if p.Search != nil {
		return runSearch(ctx, cfg, bin, sub, substrate)
	}
	var istioInstall *install.MeshInstall
	if onKube {
		var err error
		if istioInstall, err = IstioInstall(ctx, cfg.Kube.IstioBuild, cfg.Kube.InstallMesh, cfg.EnvoyFlag, cfg.Getenv); err != nil {
			return err
		}
	}
	rcells := make([]platform.Cell, len(cells))
	for i, c := range cells {
		rcells[i] = platform.Cell{ID: c.ID, Settings: cfg.settings(c)}
		if p.ReuseTopology {
			rcells[i].Topology = c.TopologyKey
		}
	}
	var installs map[string]bool
	istioProfile := ""
	if onKube {
		var err error
		if installs, istioProfile, err = planMeshInstalls(dir, cfg.Resume, rcells, cfg.Kube.InstallMesh); err != nil {
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
	var obs Observer
	if cfg.Watch != nil {
		obs = cfg.Watch(Start{Cells: len(rcells), OnKube: onKube, Substrate: substrate, Dir: dir, MetricsSource: cfg.Kube.MetricsSource, Started: started})
	}
	if obs != nil {
		ro.Progress = obs.Cell
	}
	if onKube {
		ro.On = &kube.Platform{Options: cfg.kubeOptions(istioInstall, obs), Installs: installs, IstioProfile: istioProfile}
	} else {
		ro.On = local.NewPlatform(cfg.labOptions(bin, sub, obs))
	}
	_, runErr := runner.Run(ctx, ro)
	if obs != nil {
		obs.Finish()
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

// settings are plan cell c's settings (plan.Plan.Settings), on the lab's
// loopback net when it runs on the lab.
func (cfg Config) settings(c plan.Cell) platform.Settings {
	if cfg.Plan.Platform != plan.PlatformKube {
		c.Mesh.LoopbackNet = cfg.LoopbackNet
	}
	return cfg.Plan.Settings(c)
}

// labOptions are what the lab runs every cell with, but its settings;
// obs (nil: none) follows the cells.
func (cfg Config) labOptions(bin *envoy.Binary, sub local.Substrate, obs Observer) local.Options {
	o := local.Options{Envoy: bin, Substrate: sub, Version: cfg.Version}
	if obs != nil {
		o.Observer = obs
	}
	return o
}

// kubeOptions are what the cluster runs every cell with, but its
// settings: the cluster, the namespaces and images, the timeouts, the
// metrics source; mi is how Istio is installed (nil: as usual); obs (nil:
// none) follows the cells and gets their progress lines.
func (cfg Config) kubeOptions(mi *install.MeshInstall, obs Observer) kube.Options {
	k := cfg.Kube
	o := kube.Options{Connect: k.Connect,
		Spec:         kube.Spec{AppNamespace: k.NamespacePrefix + "-app", LoadNamespace: k.NamespacePrefix + "-load", Image: k.Image, AppImage: k.AppImage, FacesChart: k.FacesChart},
		AllowForeign: k.AllowForeign, Keep: k.Keep, IdleTimeout: k.IdleTimeout, ReadyTimeout: k.ReadyTimeout,
		MetricsSource: k.MetricsSource, KubeletInterval: k.KubeletInterval, IstioInstall: mi, Version: cfg.Version}
	if obs != nil {
		o.Observer, o.Log = obs, obs.Log()
	}
	return o
}

// planMeshInstalls, with installing, has the first cell of each mesh to
// install (Istio's modes share one install, Linkerd has its own) install
// it with its CLI; the others verify it. On resume only the unfinished
// cells count. It returns those cells' IDs and the profile Istio's modes
// install with: when the plan holds ambient or waypoint cells, Istio is
// installed with the ambient profile for every Istio mode: it runs
// sidecars too, and switching profiles between cells would remove ztunnel.
func planMeshInstalls(dir string, resume bool, cells []platform.Cell, installing bool) (map[string]bool, string, error) {
	finished := map[string]bool{}
	if resume {
		m, err := results.ReadPlanManifest(dir)
		if err != nil {
			return nil, "", err
		}
		for id, st := range m.Cells {
			finished[id] = st.Finished()
		}
	}
	// Istio is installed once for the plan: with the ambient profile when
	// any cell needs it (it runs sidecars too).
	profile := ""
	for _, c := range cells {
		if m, ok := mesh.Get(string(c.Settings.Mesh.Mode)); ok && m.Cluster.IstioProfile == mesh.IstioProfileAmbient {
			profile = mesh.IstioProfileAmbient
		}
	}
	installs := map[string]bool{}
	installed := map[string]bool{}
	for _, c := range cells {
		cli := install.MeshCLI(string(c.Settings.Mesh.Mode))
		if !installing || cli == "" || finished[c.ID] || installed[cli] {
			continue
		}
		installed[cli] = true
		installs[c.ID] = true
	}
	return installs, profile, nil
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
