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
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/platform/netlab"
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
	// LinkerdBuild and LinkerdCerts: --linkerd-build and --linkerd-certs.
	LinkerdBuild, LinkerdCerts string
	IdleTimeout, ReadyTimeout  time.Duration
	MetricsSource              string
	KubeletInterval            time.Duration
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
	b := &benchRun{cfg: cfg, p: cfg.Plan, onKube: cfg.Plan.Platform == plan.PlatformKube}
	// The plan's lab API server, if its labs started one: stopped once
	// the cells ran, also when they failed or were interrupted.
	defer b.closeSubstrate()
	for _, step := range prepareSteps {
		if err := step.do(b, ctx); err != nil {
			return err
		}
	}
	if b.p.Search != nil {
		return runSearch(ctx, cfg, b.bin, b.sub, b.substrate)
	}
	// The identity files meshbench made for Linkerd are read by `linkerd
	// install` only: gone once the plan ran.
	defer b.linkerdDone()
	for _, step := range planRunSteps {
		if err := step.do(b, ctx); err != nil {
			return err
		}
	}
	return nil
}

// benchStep is a named step of Run.
type benchStep struct {
	name string
	do   func(*benchRun, context.Context) error
}

// prepareSteps find what every plan runs on, fixed rates or a capacity
// search, in order.
var prepareSteps = []benchStep{
	{"file limit", (*benchRun).fileLimit},       // the lab's load generator's connections fit
	{"order", (*benchRun).orderCells},           // the cells in the seeded order
	{"substrate", (*benchRun).chooseSubstrate},  // the lab's network
	{"cluster", (*benchRun).connect},            // the cluster answers
	{"envoy", (*benchRun).findEnvoy},            // the Envoy the lab's cells need
	{"control plane", (*benchRun).controlPlane}, // who configures the lab's sidecars
	{"lab line", (*benchRun).labLine},           // what is real and what stands in on the lab
}

// planRunSteps run a plan of fixed rates after prepareSteps, in order.
var planRunSteps = []benchStep{
	{"istio", (*benchRun).istioBuild},           // how Istio installs (--istio-build)
	{"linkerd", (*benchRun).linkerdBuild},       // how Linkerd installs (--linkerd-build)
	{"cells", (*benchRun).cellSettings},         // every cell's settings
	{"mesh installs", (*benchRun).meshInstalls}, // the cells that install their mesh
	{"header", (*benchRun).header},              // what runs where, and the resume
	{"run", (*benchRun).runCells},               // the cells on their platform
	{"reports", (*benchRun).writeReports},       // the analysis and every report
	{"verdict", (*benchRun).verdict},            // invalid cells, partial plans, --fail-on
}

// benchRun is a plan being run by Run's steps.
type benchRun struct {
	cfg    Config
	p      *plan.Plan
	onKube bool
	// order is the plan's cells in their order; sub and substrate the
	// lab's network (nil and local.SubstrateLoopback on loopback, "" on a
	// cluster), fellBack why auto fell back to loopback; cluster the
	// cluster; bin the Envoy the lab's cells need.
	order               []plan.Cell
	sub                 local.Substrate
	substrate, fellBack string
	cluster             *kube.Cluster
	bin                 *envoy.Binary
	// istio and linkerd are how Istio and Linkerd install; rcells the
	// cells as they run, installs and istioProfile the cluster's mesh
	// installs.
	istio, linkerd *install.MeshInstall
	rcells         []platform.Cell
	installs       map[string]bool
	istioProfile   string
	// started is when the cells started; pd and a the plan directory read
	// back and its analysis.
	started time.Time
	pd      *analysis.Plan
	a       *analysis.Analysis
}

// fileLimit: the lab's load generator runs here, so its connections must
// fit this machine's open-file limit (checked as load checks it).
func (b *benchRun) fileLimit(context.Context) error {
	if b.onKube {
		return nil
	}
	if err := loadgen.EnsureFileLimit(b.p.Connections); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

func (b *benchRun) orderCells(context.Context) error {
	b.order = b.p.Order(*b.p.Seed, b.p.ReuseTopology)
	return nil
}

// chooseSubstrate chooses the lab's network for every cell (a plan never
// mixes them).
func (b *benchRun) chooseSubstrate(context.Context) error {
	if b.onKube {
		return nil
	}
	opts := make([]topology.Options, len(b.order))
	for i, c := range b.order {
		opts[i] = c.Mesh
	}
	sub, fellBack, err := ChooseSubstrate(b.p.Substrate, b.cfg.ZtunnelFlag, b.cfg.LinkerdProxyFlag, opts)
	if err != nil {
		return err
	}
	b.sub, b.substrate, b.fellBack = sub, local.SubstrateLoopback, fellBack
	if sub != nil {
		b.substrate = sub.Name()
	}
	if ns, ok := sub.(*netlab.Substrate); ok {
		// One lab API server for the plan's labs, not one per topology.
		ns.ShareAPI = true
	}
	return nil
}

// apiUntil is on, stopping the plan's shared lab API server (ns's) once
// the last of cells that needs one has run: the cells after it (mesh
// none, or a lab's own control plane) run without it beside them.
func apiUntil(on platform.Platform, ns *netlab.Substrate, cells []platform.Cell, warn io.Writer) platform.Platform {
	last := ""
	for _, c := range cells {
		if ns.NeedsAPI(c.Settings.Mesh) {
			last = c.ID
		}
	}
	if last == "" {
		return on
	}
	return &apiClosing{Platform: on, ns: ns, last: last, warn: warn}
}

// apiClosing is a platform whose cell last is the plan's last to need
// the shared lab API server.
type apiClosing struct {
	platform.Platform
	ns   *netlab.Substrate
	last string
	warn io.Writer
}

// RunCell runs r's cell; after the last that needs the API server, it
// stops that cell's lab (which gives the server back: a failed reset is
// in the plan manifest's lab record) and the server (a failure to stop
// it is said, the cell stands).
func (p *apiClosing) RunCell(ctx context.Context, r platform.CellRun) (*platform.Result, error) {
	res, err := p.Platform.RunCell(ctx, r)
	if r.Cell.ID == p.last && ctx.Err() == nil {
		p.Platform.Teardown("")
		if cerr := p.ns.Close(); cerr != nil && p.warn != nil {
			fmt.Fprintf(p.warn, "meshbench bench: stopping the plan's lab API server: %v\n", cerr)
		}
	}
	return res, err
}

// closeSubstrate stops what the plan's labs shared on the substrate (the
// lab API server); an error is said, not returned: the results stand.
func (b *benchRun) closeSubstrate() {
	if ns, ok := b.sub.(*netlab.Substrate); ok {
		if err := ns.Close(); err != nil {
			fmt.Fprintf(b.cfg.Stderr, "meshbench bench: stopping the plan's lab API server: %v\n", err)
		}
	}
}

func (b *benchRun) connect(ctx context.Context) error {
	if !b.onKube {
		return nil
	}
	var err error
	b.cluster, err = kube.Connect(ctx, b.cfg.Kube.Connect)
	return err
}

// envoy finds Envoy when a lab cell runs one.
func (b *benchRun) findEnvoy(ctx context.Context) error {
	needEnvoy := false
	for _, c := range b.order {
		if !b.onKube && NeedsEnvoy(c.Mesh, b.sub) {
			needEnvoy = true
		}
	}
	if !needEnvoy {
		return nil
	}
	var err error
	b.bin, err = FindEnvoy(ctx, b.cfg.EnvoyFlag, b.cfg.Getenv)
	return err
}

// controlPlane sets who configures the lab's sidecars (plan key
// control_plane) and checks that every cell can run so.
func (b *benchRun) controlPlane(context.Context) error {
	if b.onKube {
		return nil
	}
	opts := make([]topology.Options, len(b.order))
	for i, c := range b.order {
		opts[i] = c.Mesh
	}
	envoyPath := ""
	if b.bin != nil {
		envoyPath = b.bin.Path
	}
	return UseControlPlane(b.sub, b.p.ControlPlane, opts, envoyPath, b.p.Hops)
}

// labLine says first what is real and what stands in on the lab, then
// why, if auto fell back to loopback.
func (b *benchRun) labLine(context.Context) error {
	if b.onKube {
		return nil
	}
	line := "meshbench bench: " + LabLine(b.sub, planModes(b.order), b.bin)
	if n := ControlPlaneNote(b.sub, b.p.ControlPlane, planModes(b.order)); n != "" {
		line += "; " + n
	}
	fmt.Fprintln(b.cfg.Stderr, line)
	if b.fellBack != "" {
		fmt.Fprintln(b.cfg.Stderr, b.fellBack)
	}
	return nil
}

func (b *benchRun) istioBuild(ctx context.Context) error {
	if !b.onKube {
		return nil
	}
	var err error
	b.istio, err = IstioInstall(ctx, b.cfg.Kube.IstioBuild, b.cfg.Kube.InstallMesh, b.cfg.EnvoyFlag, b.cfg.Getenv)
	return err
}

func (b *benchRun) linkerdBuild(context.Context) error {
	if !b.onKube {
		return nil
	}
	var err error
	b.linkerd, err = LinkerdInstall(b.cfg.Kube.LinkerdBuild, b.cfg.Kube.LinkerdCerts, b.cfg.Kube.InstallMesh)
	return err
}

// linkerdDone removes the identity files meshbench made for Linkerd's
// install (install.MeshInstall.Done), if it made them.
func (b *benchRun) linkerdDone() {
	if err := b.linkerd.Done(); err != nil {
		fmt.Fprintf(b.cfg.Stderr, "meshbench bench: %v\n", err)
	}
}

func (b *benchRun) cellSettings(context.Context) error {
	b.rcells = make([]platform.Cell, len(b.order))
	for i, c := range b.order {
		b.rcells[i] = platform.Cell{ID: c.ID, Settings: b.cfg.settings(c)}
		if b.p.ReuseTopology {
			b.rcells[i].Topology = c.TopologyKey
		}
	}
	return nil
}

func (b *benchRun) meshInstalls(context.Context) error {
	if !b.onKube {
		return nil
	}
	var err error
	b.installs, b.istioProfile, err = planMeshInstalls(b.cfg.Dir, b.cfg.Resume, b.rcells, b.cfg.Kube.InstallMesh)
	return err
}

// header says how many cells run where, for about how long, and on
// resume how many are already finished.
func (b *benchRun) header(context.Context) error {
	p, cfg := b.p, b.cfg
	est := p.Estimate(p.CellOverhead())
	where := ""
	if b.cluster != nil {
		where = fmt.Sprintf(" on %s (context %q, Kubernetes %s)", b.cluster.Server, b.cluster.Context, b.cluster.Version)
	}
	switch {
	case b.substrate == local.SubstrateLoopback && planHasStandIn(b.order):
		where = " on the loopback substrate (ambient and waypoint: Envoy stand-in for ztunnel)"
	case b.substrate != "":
		where = " on the " + b.substrate + " substrate"
	}
	fmt.Fprintf(cfg.Stderr, "meshbench bench: %d cells (%d skipped combinations)%s, seed %d, about %s; results in %s\n",
		len(b.order), len(p.Skipped()), where, *p.Seed, est.Round(time.Second), cfg.Dir)
	for _, sk := range p.Skipped() {
		if !sk.Fault.Zero() { // a fault that means nothing for a mesh, with why
			fmt.Fprintf(cfg.Stderr, "meshbench bench: skipped %s: %s\n", sk.TopologyKey, sk.Reason)
		}
	}
	if !cfg.Resume {
		return nil
	}
	if m, err := results.ReadPlanManifest(cfg.Dir); err == nil {
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
	return nil
}

// restoreZtunnel puts ztunnel's worker threads back as they were before
// the plan, when one of its cluster cells set them (kube.SetZtunnelThreads
// changes them per value, not per cell); also after an interrupt.
func (b *benchRun) restoreZtunnel() error {
	if !b.onKube || b.cluster == nil || !slices.ContainsFunc(b.order, func(c plan.Cell) bool {
		return c.Mesh.ProxyThreads > 0 && (mesh.Is(string(c.Mesh.Mode), mesh.KindNodeProxy) || mesh.Is(string(c.Mesh.Mode), mesh.KindWaypoint))
	}) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ch, err := b.cluster.RestoreZtunnelThreads(ctx, 5*time.Minute)
	if ch != nil {
		fmt.Fprintf(b.cfg.Stderr, "meshbench bench: ztunnel's worker threads restored: %s\n", ch)
	}
	return err
}

// run runs the cells on their platform, followed by the observer Watch
// returns. A cut-short plan goes on to its reports.
func (b *benchRun) runCells(ctx context.Context) error {
	p, cfg := b.p, b.cfg
	ro := runner.Options{Dir: cfg.Dir, Resume: cfg.Resume, PlanYAML: p.YAML(), Seed: *p.Seed, Cells: b.rcells, Version: cfg.Version, Platform: p.Platform, Substrate: b.substrate}
	if b.bin != nil {
		ro.EnvoyVersion = b.bin.Version
	}
	b.started = time.Now()
	var obs Observer
	if cfg.Watch != nil {
		obs = cfg.Watch(Start{Cells: len(b.rcells), OnKube: b.onKube, Substrate: b.substrate, Dir: cfg.Dir, MetricsSource: cfg.Kube.MetricsSource, Started: b.started})
	}
	if obs != nil {
		ro.Progress = obs.Cell
	}
	if b.onKube {
		ro.On = &kube.Platform{Options: cfg.kubeOptions(b.istio, b.linkerd, obs), Installs: b.installs, IstioProfile: b.istioProfile}
	} else {
		ro.On = local.NewPlatform(cfg.labOptions(b.bin, b.sub, obs))
		if ns, ok := b.sub.(*netlab.Substrate); ok {
			ro.On = apiUntil(ro.On, ns, b.rcells, cfg.Stderr)
		}
	}
	_, runErr := runner.Run(ctx, ro)
	if rerr := b.restoreZtunnel(); rerr != nil && runErr == nil {
		runErr = rerr
	}
	if obs != nil {
		obs.Finish()
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	return nil
}

// reports analyses the plan directory and writes every report; an
// interrupted plan ends here, resumable.
func (b *benchRun) writeReports(ctx context.Context) error {
	p, cfg := b.p, b.cfg
	pd, err := analysis.ReadPlan(cfg.Dir)
	if err != nil {
		return err
	}
	b.pd = pd
	b.a = analysis.Analyze(pd, analysis.Options{Level: p.Confidence, Baseline: string(p.Baseline), Seed: uint64(*p.Seed), Compare: p.Compare})
	if len(pd.Cells) > 0 {
		if err := WriteReports(cfg.Stdout, b.a, false); err != nil {
			return err
		}
	}
	fmt.Fprintf(cfg.Stdout, "Plan took %s.\n", time.Since(b.started).Round(time.Second))
	if ctx.Err() != nil {
		fmt.Fprintf(cfg.Stderr, "meshbench bench: interrupted; resume with: meshbench bench --resume %s\n", cfg.Dir)
		return ErrInterrupted
	}
	return nil
}

// verdict: invalid or failed cells (exit 1) outrank thresholds, since the
// measurement itself is in doubt (the crossed conditions are still said);
// then a partial plan; then --fail-on.
func (b *benchRun) verdict(context.Context) error {
	cfg, a, pd := b.cfg, b.a, b.pd
	var crossed []string
	if len(cfg.FailOn) > 0 {
		var err error
		if crossed, err = threshold.PlanCrossed(a, cfg.FailOn); err != nil {
			return err
		}
	}
	if len(a.Invalid) > 0 || len(pd.Failed) > 0 {
		msg := fmt.Sprintf("%d cell(s) invalid or failed (shown in the report; results kept in %s)", len(a.Invalid)+len(pd.Failed), cfg.Dir)
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
// metrics source; istio and linkerd are how Istio and Linkerd are
// installed (nil: as usual); obs (nil: none) follows the cells and gets
// their progress lines.
func (cfg Config) kubeOptions(istio, linkerd *install.MeshInstall, obs Observer) kube.Options {
	k := cfg.Kube
	o := kube.Options{Connect: k.Connect,
		Spec:         kube.Spec{AppNamespace: k.NamespacePrefix + "-app", LoadNamespace: k.NamespacePrefix + "-load", Image: k.Image, AppImage: k.AppImage, FacesChart: k.FacesChart},
		AllowForeign: k.AllowForeign, Keep: k.Keep, IdleTimeout: k.IdleTimeout, ReadyTimeout: k.ReadyTimeout,
		MetricsSource: k.MetricsSource, KubeletInterval: k.KubeletInterval, IstioInstall: istio, LinkerdInstall: linkerd, Version: cfg.Version}
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
