package kube

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/kube/client"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
	"github.com/meshbench/meshbench/internal/platform/kube/kubelet"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
	"github.com/meshbench/meshbench/internal/results"
)

// Options is one benchmark cell on a cluster: its settings (the same type
// on every platform) and what the cluster runs them with. On a cluster,
// Settings.SampleInterval is the metrics API's polling period (0: 10 s),
// and Settings.Drain is the most the run keeps sampling after the load
// ends, since the metrics API lags: it stops as soon as a fresh sample of
// every app pod taken wholly after the load's end shows the app idle (the
// IdleMillicores threshold), and says how it ended (results.Drain); 0: no
// drain (the same meaning as the plan's drain; the default is
// plan.KubeDrain).
type Options struct {
	platform.Settings

	Connect ConnectOptions
	// Spec is what to deploy (RunID is set by Run when empty, Mesh from
	// Settings.Mesh).
	Spec Spec

	// InstallMesh runs the mesh's own CLI to install it; false: the mesh
	// must already run, and is verified.
	InstallMesh bool
	// AllowForeign runs even when the target namespaces hold workloads
	// meshbench did not create.
	AllowForeign bool
	// Keep leaves the namespaces in place after the run (for debugging).
	Keep bool

	// MetricsSource is where CPU and memory come from: SourceKubelet,
	// SourceMetricsAPI or SourceAuto ("": auto). See ChooseSource.
	MetricsSource string
	// KubeletInterval is the kubelet counters' reading period (0:
	// DefaultKubeletInterval).
	KubeletInterval time.Duration
	// IdleMillicores is the app CPU under which the cluster counts as idle
	// before the load starts (0: 10m per app pod), waited for at most
	// IdleTimeout (0: 2 min).
	IdleMillicores float64
	IdleTimeout    time.Duration
	// ReadyTimeout bounds the wait for the app and the Job (0: 5 min).
	ReadyTimeout time.Duration

	// IstioProfile, when set, is the profile istioctl installs with
	// instead of the mode's own (default for sidecar, ambient for ambient
	// and waypoint): a plan running sidecar and ambient cells installs
	// ambient once, which runs sidecars too, rather than switching
	// profiles, which would remove ztunnel.
	IstioProfile string
	// IstioInstall and LinkerdInstall, when set, change how InstallMesh
	// installs Istio's modes and Linkerd (see install.MeshInstall).
	IstioInstall, LinkerdInstall *install.MeshInstall

	OutDir string
	// Log gets the run's progress lines (nil: none), and "phase NAME" as
	// each phase starts when there is no Observer.
	Log io.Writer
	// Observer, when set, follows the cell: each phase as it starts, every
	// metrics round as it is taken (the kubelet's counters, or
	// metrics.k8s.io's), metrics.k8s.io's node samples, the metrics source
	// the run chose (ChooseSource), and, for a platform.LoadObserver, the
	// load workers' running figures merged (followLoadProgress).
	Observer platform.Observer
	Version  string
}

// Result is what a run wrote and measured.
type Result struct {
	Dir      string
	Manifest *results.RunManifest
	Load     *results.LoadResult
	Summary  sample.Summary
	// Nodes summarises each node's usage over the measured window.
	Nodes []sample.NodeSummary
	// Stale counts metrics samples seen again (not counted twice).
	StalePods, StaleNodes int
	// MixedRounds counts metrics rounds in which some pods had a fresh
	// sample and others only the previous one again: those rounds' sums
	// leave the stale pods out.
	MixedRounds int
	// Drain says how the sampling after the load ended.
	Drain results.Drain
	// Source is where Summary and Nodes come from (SourceKubelet or
	// SourceMetricsAPI), SourceReason why.
	Source, SourceReason string
	// Counters, with SourceKubelet: resets, partial containers, stale
	// readings, lag and the sampler's cost.
	Counters *sample.CounterReport
	// MetricsAPI, with SourceKubelet: what metrics.k8s.io said over the
	// same window, side by side (nil when it was not available).
	MetricsAPI *sample.MetricsAPIReport
	// Namespaces is the seed reports' per-namespace table of the measured
	// window (namespaceTable); empty without a load result.
	Namespaces sample.NamespaceTable
	// NodeKernel is the kernel CPU the node readers measured per machine
	// over the window (nil when they did not run or there was no window);
	// NodeKernelNote says why a figure is missing ("" when none is).
	NodeKernel     *sample.NodeKernelReport
	NodeKernelNote string
}

// run is one cell on a cluster (Run): what runSteps share.
type run struct {
	o        Options
	source   string // SourceKubelet or SourceMetricsAPI
	c        *Cluster
	dir      *results.RunDir
	manifest *results.RunManifest
	mu       sync.Mutex

	sampling sampling
	// ztBase are ztunnel's counters before the load (ambient).
	ztBase map[string]ztunnel.Counters
	// deleted are the pods ("namespace/name") a fault deleted: the
	// drain does not wait for their samples; replacements the pods Ready
	// in their place, whose mTLS checks may find nothing served.
	deleted, replacements []string
	// loadRes and loadErr are the load's merged result and error;
	// samplerErr the source's error when it stopped.
	loadRes             *results.LoadResult
	loadErr, samplerErr error
	// from, to and window are the measured window (the load's) and the
	// source's rounds in it; resources and measured are what collect's
	// steps make of them, res what the cell returns (collect).
	from, to  time.Time
	window    []sample.Round
	resources sample.Resources
	measured  *Result
	res       *Result
	// readers are the node readers of the kernel CPU (nodekernel.go),
	// nil when none runs; readings what they read, by node; readersNote
	// why a node's figure is missing.
	readers     *nodeReaders
	readings    map[string][]sample.NodeReading
	readersNote string
}

func (r *run) logf(format string, a ...any) {
	if r.o.Log != nil {
		fmt.Fprintf(r.o.Log, format+"\n", a...)
	}
}

func (r *run) phase(name string) func() {
	if r.o.Observer != nil {
		r.o.Observer.Phase(name) // the observer shows it
	} else {
		r.logf("phase %s", name)
	}
	p := results.Phase{Name: name, Started: time.Now().UTC()}
	return func() {
		p.Ended = time.Now().UTC()
		r.mu.Lock()
		r.manifest.Phases = append(r.manifest.Phases, p)
		r.mu.Unlock()
	}
}

// kept checks that evidence file name was written: a write that failed
// is logged and marks the cell invalid (its results are incomplete).
func (r *run) kept(name string, err error) {
	if err == nil {
		return
	}
	r.logf("warning: %s not kept: %v", name, err)
	r.invalid(fmt.Sprintf("evidence not kept: %s: %v", name, err))
}

// keepJSON writes v as evidence file name (kept).
func (r *run) keepJSON(name string, v any) { r.kept(name, r.dir.WriteJSON(name, v)) }

func (r *run) invalid(reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifest.Valid = false
	r.manifest.Invalid = append(r.manifest.Invalid, reason)
}

func (o *Options) defaults() error {
	var errs []error
	if o.Duration <= 0 {
		errs = append(errs, fmt.Errorf("duration %v: must be > 0", o.Duration))
	}
	if o.Workers == 0 {
		o.Workers = 1
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("workers %d: allowed: 1 or more", o.Workers))
	}
	if o.Connections == 0 {
		o.Connections = loadgen.DefaultConnections
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	if o.SampleInterval == 0 {
		o.SampleInterval = 10 * time.Second
	}
	if o.KubeletInterval == 0 {
		o.KubeletInterval = DefaultKubeletInterval
	}
	if o.KubeletInterval < 0 {
		errs = append(errs, fmt.Errorf("kubelet interval %v: must be > 0", o.KubeletInterval))
	}
	if o.MetricsSource != "" && !slices.Contains(MetricsSources, o.MetricsSource) {
		errs = append(errs, fmt.Errorf("metrics source %q: allowed: %s", o.MetricsSource, strings.Join(MetricsSources, ", ")))
	}
	if o.Drain < 0 {
		errs = append(errs, fmt.Errorf("drain %v: allowed: 0 (none) or more", o.Drain))
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 2 * time.Minute
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = 5 * time.Minute
	}
	o.Spec.Mesh, o.Spec.BodySize = o.Mesh, o.BodySize
	if o.Fault.Kind == fault.SlowReplica && o.Spec.ControlService == "" {
		// The slowed service's replicas serve their control API
		// (faultslow.go); the others run as in every cell.
		o.Spec.ControlService = cmp.Or(o.Fault.Service, o.Spec.WithDefaults().appServiceList()[0].name)
	}
	if o.Spec.RunID == "" {
		o.Spec.RunID = time.Now().UTC().Format("20060102-150405")
	}
	o.Spec = o.Spec.WithDefaults()
	if err := o.Spec.Validate(); err != nil {
		errs = append(errs, err)
	} else if (o.Generator != "" || o.RequestsPerConnection != 0 || o.Arrivals != "" || o.SendTick != 0 || o.Load.Bulk()) && o.Workers > 0 && o.Duration > 0 {
		// What the generator or the load's shape cannot do, before
		// anything is deployed.
		if err := o.loadSpec().Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.OutDir == "" {
		o.OutDir = filepath.Join("results", o.Spec.RunID+"-kube-"+string(o.Spec.Mesh.Mode))
	}
	return errors.Join(errs...)
}

// loadSpec is the cell's load: its workers' load (the rate, window,
// connections, requests per connection, arrivals, send tick and
// generator) against the app's entry service (LoadSpec's default target:
// the endless answer for bulk).
func (o Options) loadSpec() LoadSpec {
	return LoadSpec{Spec: o.Spec, Work: loadjob.Spec{Load: o.Load, Workers: o.Workers, Duration: o.Duration,
		Warmup: o.Warmup, Timeout: o.Timeout, Connections: o.Connections, Generator: o.Generator,
		RequestsPerConnection: o.RequestsPerConnection, Arrivals: o.Arrivals, Seed: o.ArrivalsSeed,
		SendTick: o.SendTick, Interval: o.loadInterval()}}
}

// loadInterval is the load result's interval length: fault.LoadInterval
// in a cell with a fault (its cost is read from the intervals), else the
// CLI's default.
func (o Options) loadInterval() time.Duration {
	if !o.Fault.Zero() {
		return fault.LoadInterval
	}
	return 0
}

// Run runs one cell on the cluster: preflight, mesh install or check, the
// app, the idle gate, the load Job (warm-up and measured window inside
// each worker), a drain of metrics samples, log collection and an exact
// merge of the workers' results, and the deletion of everything it
// created. Everything is written as in the local lab's results directory.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	c, err := Connect(ctx, o.Connect)
	if err != nil {
		return nil, err
	}
	if !o.AllowForeign {
		if err := c.CheckNamespaces(ctx, []string{o.Spec.AppNamespace, o.Spec.LoadNamespace}); err != nil {
			return nil, err
		}
	}
	source, why, err := ChooseSource(ctx, c, o.MetricsSource)
	if err != nil {
		return nil, err
	}
	if o.Spec.NodeCount == 0 {
		if o.Spec.NodeCount, err = c.placeNodes(ctx, o.Spec.RunID); err != nil {
			return nil, err
		}
	}
	if o.Spec.Mesh.Placement == topology.PlacementCrossNode && o.Spec.NodeCount < AntiAffinityMinNodes {
		// placeNodes labels nothing below NodeSelectorMinNodes.
		return nil, fmt.Errorf("placement cross-node: the cluster has %d ready node(s); the load and the app need %d apart", o.Spec.NodeCount, AntiAffinityMinNodes)
	}
	dir, err := results.CreateRunDir(o.OutDir)
	if err != nil {
		return nil, err
	}
	r := &run{o: o, source: source, c: c, dir: dir, manifest: &results.RunManifest{
		Schema: results.RunSchema, MeshbenchVersion: o.Version, Platform: "kube",
		StartedAt: time.Now().UTC(), Host: results.ReadHost(), Options: optionsMap(o, c), Valid: true,
	}}
	r.manifest.Options["metrics_source"], r.manifest.Options["metrics_source_reason"] = source, why
	r.logf("resources from %s (%s)", sourceName(source), why)
	if o.Observer != nil {
		o.Observer.Source(shortSourceName(source))
	}
	res, runErr := r.run(ctx)
	// Teardown always runs, with a fresh context: an interrupt must not
	// leave the run's namespaces behind.
	endTeardown := r.phase("teardown")
	var tdErr error
	if !o.Keep {
		tctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		tdErr = errors.Join(c.DeleteRun(tctx, o.Spec.RunID, 3*time.Minute), c.unlabelNodes(tctx, o.Spec.RunID))
		cancel()
	}
	endTeardown()
	r.manifest.EndedAt = time.Now().UTC()
	if runErr != nil {
		r.invalid(runErr.Error())
	}
	if err := dir.WriteJSON(results.ManifestFile, r.manifest); err != nil && runErr == nil {
		runErr = err
	}
	if res != nil {
		res.Manifest = r.manifest
	}
	return res, errors.Join(runErr, tdErr)
}

// runSteps are a cell on a cluster once Run has checked the cluster and
// made its results directory, in order; Run's teardown follows them
// whatever happens. A step that is a phase is recorded in the manifest
// under its name (and shown as it starts); the load's step records its own
// phases, warmup and measure.
var runSteps = []struct {
	name  string
	phase bool
	do    func(*run, context.Context) error
}{
	{"prepare/mesh", true, (*run).prepareMesh},           // install the mesh or check the one installed
	{"ztunnel threads", false, (*run).setZtunnelThreads}, // ztunnel's worker threads rolled out (ambient, waypoint)
	{"prepare/app", true, (*run).prepareApp},             // the app's objects, ready
	{"prepare/verify", true, (*run).verifyEnrolment},     // the app's pods enrolled in the mesh
	{"threads", false, (*run).checkThreads},              // their proxies' worker threads, when the cell sets them
	{"node readers", false, (*run).startNodeReaders},     // a kernel CPU reader on every node
	{"sampling", false, (*run).startSampling},            // metrics from here to the drain's end
	{"idle", true, (*run).idle},                          // the app idle before the load
	{"load", false, (*run).load},                         // the load Job: warmup and measure
	{"drain", true, (*run).drain},                        // sampling after the load
	{"sampling end", false, (*run).endSampling},          // the samplers stopped
	{"node readers end", false, (*run).readNodeReaders},  // the readers read and deleted
	{"attacker", false, (*run).probeAttacker},            // a foreign identity against the policies (its own phase)
	{"collect", true, (*run).collect},                    // checks, samples, resources, validity
}

// run runs runSteps and returns what the cell measured (nil when it failed
// before it had a result).
func (r *run) run(ctx context.Context) (*Result, error) {
	defer r.closeSampling()
	defer r.deleteNodeReaders()
	for _, step := range runSteps {
		end := func() {}
		if step.phase {
			end = r.phase(step.name)
		}
		err := step.do(r, ctx)
		end()
		if err != nil {
			return r.res, err
		}
	}
	return r.res, ctx.Err()
}

// prepareMesh installs the mesh with its own CLI (InstallMesh) and checks
// the mesh the cell runs on, keeping the checks.
func (r *run) prepareMesh(ctx context.Context) error {
	o, c := r.o, r.c
	mode := string(o.Spec.Mesh.Mode)
	if err := r.installMesh(ctx); err != nil {
		return err
	}
	checks, err := c.VerifyMesh(ctx, mode)
	r.keepJSON(filepath.Join("k8s", "mesh-checks.json"), checks)
	return err
}

// waypointOverlay are the objects the run's waypoint needs besides its
// Gateway: the mesh install's (meshbench's upstream-Envoy overlay, when
// this run installs meshbench's Istio), or, when the cluster's Istio
// already carries the overlay (installed by an earlier run or `meshbench
// mesh install` with --istio-build), the same per-waypoint EnvoyFilter;
// none for an Istio of the upstream images.
func (r *run) waypointOverlay(ctx context.Context) ([]runtime.Object, error) {
	if mi := r.o.IstioInstall; mi != nil {
		if mi.WaypointObjects == nil {
			return nil, nil
		}
		return mi.WaypointObjects(r.o.Spec.AppNamespace, WaypointName), nil
	}
	has, err := r.c.hasUpstreamEnvoyOverlay(ctx)
	if err != nil || !has {
		return nil, err
	}
	r.logf("the cluster's Istio carries meshbench's upstream-Envoy overlay: the waypoint gets its EnvoyFilter too")
	return istio.WaypointEnvoyFilter(r.o.Spec.AppNamespace, WaypointName), nil
}

// hasUpstreamEnvoyOverlay says whether the cluster holds the mesh-wide
// EnvoyFilter of meshbench's upstream-Envoy overlay
// (install.UpstreamEnvoyOverlay); a cluster without Istio's CRDs holds
// none.
func (c *Cluster) hasUpstreamEnvoyOverlay(ctx context.Context) (bool, error) {
	gvk, ns, name, err := install.UpstreamEnvoyOverlay()
	if err != nil {
		return false, err
	}
	ri, err := c.Resource(gvk, ns)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, err
	}
	if _, err := ri.Get(ctx, name, metav1.GetOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking for meshbench's upstream-Envoy overlay (%s %s/%s): %w", gvk.Kind, ns, name, err)
	}
	return true, nil
}

// prepareApp applies the app's objects (and the waypoint's, or installs
// the Faces chart), keeping them, and waits until it is ready.
func (r *run) prepareApp(ctx context.Context) error {
	o, c := r.o, r.c
	objs, err := AppObjects(o.Spec)
	if err == nil {
		var access []runtime.Object
		access, err = c.meshReadAccess(ctx, o.Spec)
		objs = append(objs, access...)
	}
	if err == nil && mesh.Is(string(o.Spec.Mesh.Mode), mesh.KindWaypoint) {
		var overlay []runtime.Object
		overlay, err = r.waypointOverlay(ctx)
		objs = append(objs, overlay...)
	}
	if err == nil {
		err = r.writeObjects("app.yaml", objs)
	}
	if err == nil {
		err = c.Apply(ctx, objs)
	}
	if err == nil && o.Spec.FacesChart {
		err = r.installFacesChart(ctx)
	}
	if err == nil {
		err = c.waitDeployments(ctx, o.Spec.AppNamespace, o.ReadyTimeout)
	}
	return err
}

// verifyEnrolment checks that the app's pods are in the mesh, keeping the
// checks.
func (r *run) verifyEnrolment(ctx context.Context) error {
	checks, err := r.c.VerifyEnrolment(ctx, string(r.o.Spec.Mesh.Mode), r.o.Spec.AppNamespace)
	r.keepJSON(filepath.Join("k8s", "enrolment-checks.json"), checks)
	return err
}

// sampling is what the cell samples from its start to the drain's end:
// metrics.k8s.io always (the cross-check beside the kubelet's counters),
// the kubelet's counters when they are the source.
type sampling struct {
	fromKubelet bool
	api         *metricsapi.MetricsSampler
	counters    *kubelet.Sampler
	// rounds are the source's rounds, read by the idle gate and the
	// drain.
	rounds roundSource
	files  []*os.File
	// stopSampling ends the samplers' context; apiDone and countersDone
	// get their Run's error.
	stopSampling          context.CancelFunc
	apiDone, countersDone chan error
	stopped               bool
	apiErr, countersErr   error
}

// startSampling starts the samplers, each writing its raw readings.
func (r *run) startSampling(context.Context) error {
	o, c := r.o, r.c
	mode := string(o.Spec.Mesh.Mode)
	s := &r.sampling
	rawFile, err := os.Create(filepath.Join(r.dir.Path, "metrics-raw.jsonl"))
	if err != nil {
		return err
	}
	s.files = append(s.files, rawFile)
	cls, err := metricsapi.NewClassifier(mode, metricsapi.Namespaces{App: o.Spec.AppNamespace, Load: o.Spec.LoadNamespace})
	if err != nil {
		return err
	}
	s.fromKubelet = r.source == SourceKubelet
	var onRound func(sample.Round)
	var onNodeRound func(sample.NodeRound)
	if o.Observer != nil {
		onRound, onNodeRound = o.Observer.Round, o.Observer.NodeRound
	}
	apiOnRound := onRound
	if s.fromKubelet {
		apiOnRound = nil // the observer follows the counters
	}
	s.api, err = metricsapi.NewMetricsSampler(c.Metrics, c.Core, metricsapi.MetricsOptions{Period: o.SampleInterval, Classifier: cls, Raw: rawFile, OnRound: apiOnRound,
		OnNodeRound: onNodeRound})
	if err != nil {
		return err
	}
	s.rounds = s.api
	if s.fromKubelet {
		kubeletFile, err := os.Create(filepath.Join(r.dir.Path, KubeletRawFile))
		if err != nil {
			return err
		}
		s.files = append(s.files, kubeletFile)
		s.counters, err = kubelet.New(c.Core, kubelet.Options{Period: o.KubeletInterval, Classify: kubeletClassify(cls),
			Raw: kubeletFile, OnRound: onRound})
		if err != nil {
			return err
		}
		s.rounds = s.counters
	}
	sctx, stop := context.WithCancel(context.Background())
	s.stopSampling, s.apiDone, s.countersDone = stop, make(chan error, 1), make(chan error, 1)
	go func() { s.apiDone <- s.api.Run(sctx) }()
	if s.fromKubelet {
		go func() { s.countersDone <- s.counters.Run(sctx) }()
	} else {
		s.countersDone <- nil
	}
	return nil
}

// stopSamplers stops the samplers (once) and returns the source's error.
func (r *run) stopSamplers() error {
	s := &r.sampling
	if s.stopSampling == nil {
		return nil
	}
	if !s.stopped {
		s.stopped = true
		s.stopSampling()
		s.apiErr, s.countersErr = <-s.apiDone, <-s.countersDone
	}
	if s.fromKubelet {
		// metrics.k8s.io is only the cross-check then.
		if s.apiErr != nil && !errors.Is(s.apiErr, context.Canceled) {
			r.logf("warning: metrics.k8s.io (the cross-check): %v", s.apiErr)
		}
		return s.countersErr
	}
	return s.apiErr
}

// closeSampling stops the samplers if a step failed before the drain, and
// closes their raw files.
func (r *run) closeSampling() {
	_ = r.stopSamplers()
	for _, f := range r.sampling.files {
		f.Close()
	}
}

// idle waits for the app to be idle; if it is not, the cell is invalid
// but goes on.
func (r *run) idle(ctx context.Context) error {
	if err := r.waitIdle(ctx, r.sampling.rounds); err != nil {
		r.invalid(err.Error())
		r.logf("warning: %v", err)
	}
	return nil
}

// load runs the load Job. ztunnel outlives the cells: its counters before
// the load, so the cell's mTLS check reads its own connections only. A
// load that failed still drains and collects.
func (r *run) load(ctx context.Context) error {
	if isAmbient(string(r.o.Spec.Mesh.Mode)) {
		r.ztBase = r.c.ZtunnelCounters(ctx)
	}
	r.loadRes, r.loadErr = r.runLoad(ctx)
	return nil
}

// drain samples after the load until the app is idle again (drainFor).
func (r *run) drain(ctx context.Context) error {
	loadEnd := time.Now().UTC()
	if r.loadRes != nil {
		loadEnd = r.loadRes.EndedAt
	}
	drain := r.drainFor(ctx, r.sampling.rounds, loadEnd)
	r.logf("drain: %s", drain)
	r.mu.Lock()
	r.manifest.Drain = &drain
	r.mu.Unlock()
	return nil
}

// endSampling stops the samplers after the drain.
func (r *run) endSampling(context.Context) error {
	r.samplerErr = r.stopSamplers()
	return nil
}

// collectSteps are the collect phase, in order.
var collectSteps = []struct {
	name string
	do   func(*run, context.Context) error
}{
	{"mtls", (*run).checkMTLS},            // the proxies' own counters say mTLS
	{"placement", (*run).checkPlacement},  // the nodes the pods ran on
	{"samples", (*run).writeSamples},      // every round of the source
	{"figures", (*run).figures},           // the measured window's summary and nodes
	{"counters", (*run).counterFigures},   // the kubelet's counters over it, when they are the source
	{"kernel", (*run).nodeKernel},         // the node readers' kernel CPU over it
	{"namespaces", (*run).namespaces},     // the per-namespace table over the window
	{"resources", (*run).writeResources},  // resources.json
	{"validity", (*run).checkMeasurement}, // sampling errors in the window, the load's own problems
}

// collect runs collectSteps: the cell's Result, and the load's error if
// it had one. A step that fails leaves no Result.
func (r *run) collect(ctx context.Context) error {
	for _, step := range collectSteps {
		if err := step.do(r, ctx); err != nil {
			return err
		}
	}
	r.res = r.measured
	return r.loadErr
}

// checkMTLS verifies mTLS from the sidecars' or ztunnel's own counters,
// keeping the checks; a cell they contradict is invalid.
func (r *run) checkMTLS(ctx context.Context) error {
	o, c := r.o, r.c
	mode := string(o.Spec.Mesh.Mode)
	if checks, err := c.VerifyMTLS(ctx, mode, o.Spec.AppNamespace); len(checks) > 0 {
		r.mu.Lock()
		reps := slices.Clone(r.replacements)
		r.mu.Unlock()
		if len(reps) > 0 {
			checks, err = excuseReplacements(checks, o.Spec.AppNamespace, reps)
		}
		r.keepJSON(filepath.Join("k8s", "mtls-checks.json"), checks)
		if err != nil && o.Spec.Mesh.MTLS {
			r.invalid("mTLS not verified: " + err.Error())
		} else if err == nil && o.Log != nil {
			fmt.Fprintf(o.Log, "mTLS verified from the sidecars' own counters on %d app pod(s)\n", len(checks))
			logChecks(o.Log, checks)
		}
	}
	if isAmbient(mode) {
		checks, err := c.VerifyAmbientMTLS(ctx, r.ztBase)
		r.keepJSON(filepath.Join("k8s", "mtls-checks.json"), checks)
		if err != nil {
			r.invalid("mTLS not verified: " + err.Error())
		} else if o.Log != nil {
			fmt.Fprintf(o.Log, "mTLS verified from ztunnel's own counters: %s\n", checks[len(checks)-1].Detail)
		}
	}
	return nil
}

// writeSamples writes every round of the source (samples.jsonl).
func (r *run) writeSamples(context.Context) error {
	samplesFile, err := os.Create(filepath.Join(r.dir.Path, results.SamplesFile))
	if err != nil {
		return err
	}
	for _, rd := range r.sampling.rounds.Rounds() {
		if err := sample.WriteRound(samplesFile, rd); err != nil {
			samplesFile.Close()
			return err
		}
	}
	return samplesFile.Close()
}

// figures are the measured window's figures from metrics.k8s.io (the
// Result and resources.json). Without a load result there is no measured
// window, and so no figure: the raw samples are still kept.
func (r *run) figures(ctx context.Context) error {
	c, sampler, loadRes := r.c, r.sampling.api, r.loadRes
	var nodes []sample.NodeSummary
	if loadRes != nil {
		r.from, r.to = loadRes.StartedAt, loadRes.EndedAt
		r.window = sampler.Within(r.from, r.to)
		nodes = sample.SummarizeNodes(sampler.NodesWithin(r.from, r.to))
		if err := c.addBootIDs(context.WithoutCancel(ctx), nodes); err != nil {
			r.logf("reading the nodes' boot IDs: %v", err)
		}
	}
	summary := sample.Summarize(r.window)
	stalePods, staleNodes := sampler.Stale()
	drain := *r.manifest.Drain
	r.resources = sample.Resources{Schema: results.ResourcesSchema, Source: r.source, Drain: &drain, Summary: summary,
		Window: sample.ResourcesWindow{From: r.from, To: r.to,
			Rule: "metrics samples whose [timestamp - window, timestamp] lies inside the measured window of the merged load result"},
		Memory: "working set (metrics.k8s.io), not PSS", Nodes: sample.Write(nodes)}
	if !r.sampling.fromKubelet {
		apiErrors, mixed := len(sampler.Errors()), sampler.MixedRounds()
		r.resources.Stale, r.resources.MixedRounds, r.resources.APIErrors = &sample.StaleSamples{Pods: stalePods, Nodes: staleNodes}, &mixed, &apiErrors
	}
	r.measured = &Result{Dir: r.dir.Path, Load: loadRes, Summary: summary, Nodes: nodes, StalePods: stalePods, StaleNodes: staleNodes,
		MixedRounds: sampler.MixedRounds(), Drain: drain, Source: r.source, SourceReason: fmt.Sprint(r.manifest.Options["metrics_source_reason"])}
	return nil
}

// counterFigures, when the kubelet's counters are the source, are the
// window's figures from them, with what metrics.k8s.io said beside.
func (r *run) counterFigures(ctx context.Context) error {
	if !r.sampling.fromKubelet {
		return nil
	}
	c, res, loadRes := r.c, r.measured, r.loadRes
	res.MetricsAPI = metricsAPIReport(r.sampling.api, res.Summary, loadRes != nil)
	r.resources.MetricsAPI = sample.Write(res.MetricsAPI)
	r.resources.Memory = "working set (the kubelet's counters), not PSS"
	r.resources.Window.Rule = "the kubelet's cumulative CPU counters interpolated to the measured window's edges; equal intervals of about the reading period"
	if loadRes != nil {
		var err error
		res.Summary, res.Nodes, res.Counters, r.window, err = counterWindow(ctx, c, r.sampling.counters, r.from, r.to)
		if err != nil {
			return err
		}
		if len(res.Counters.Containers) == 0 {
			r.invalid("kubelet counters: no container had readings on both sides of the measured window")
		}
		// The counters carry no boot ID: the Node objects do, as on the
		// metrics API's path (the shared-machine note).
		if err := c.addBootIDs(context.WithoutCancel(ctx), res.Nodes); err != nil {
			r.logf("reading the nodes' boot IDs: %v", err)
		}
	} else {
		res.Summary, res.Nodes = sample.Summarize(nil), nil
	}
	r.resources.Summary, r.resources.Nodes, r.resources.Counters = res.Summary, sample.Write(res.Nodes), sample.Write(res.Counters)
	if res.Counters != nil {
		for _, x := range res.Counters.Resets {
			r.logf("counter reset: %s on %s at %s (%.3f → %.3f core-seconds): restarted; its CPU between its last reading and the restart is not counted",
				x.Key, x.Node, x.Time.Format(time.RFC3339), x.From, x.To)
		}
		if n := len(res.Counters.Partial); n > 0 {
			r.logf("%d container(s) counted for part of the measured window only (appeared, disappeared or restarted): see resources.json counters.partial", n)
		}
	}
	return nil
}

// namespaces is the seed reports' per-namespace table of the measured
// window, when the load ran.
func (r *run) namespaces(context.Context) error {
	if r.loadRes != nil {
		r.measured.Namespaces = r.namespaceTable(r.window)
		r.resources.Namespaces = &r.measured.Namespaces
	}
	return nil
}

// writeResources writes resources.json.
func (r *run) writeResources(context.Context) error {
	return r.dir.WriteJSON(results.ResourcesFile, r.resources)
}

// checkMeasurement marks the cell invalid for what its sampling lost in
// the measured window (an API error there is the kube form of the local
// sampler's gap) and, when the load ran, for the load's own problems.
func (r *run) checkMeasurement(context.Context) error {
	loadRes, from, to, fromKubelet := r.loadRes, r.from, r.to, r.sampling.fromKubelet
	if loadRes != nil && !fromKubelet {
		n := 0
		for _, e := range r.sampling.api.Errors() {
			if !e.Time.Before(from) && !e.Time.After(to) {
				n++
			}
		}
		if n > 0 {
			r.invalid(fmt.Sprintf("metrics sampling: %d API errors in the measured window (see metrics-raw.jsonl)", n))
		}
	}
	if loadRes != nil && fromKubelet {
		n := 0
		for _, e := range r.sampling.counters.Errors() {
			if t := time.Unix(0, e.TUnixNs); !t.Before(from) && !t.After(to) {
				n++
			}
		}
		if n > 0 {
			r.invalid(fmt.Sprintf("kubelet counters: %d failed reads in the measured window (see %s)", n, KubeletRawFile))
		}
	}
	if r.samplerErr != nil && !errors.Is(r.samplerErr, context.Canceled) {
		r.invalid("metrics sampling: " + r.samplerErr.Error())
	}
	if len(r.window) == 0 && loadRes != nil && !fromKubelet {
		r.invalid(fmt.Sprintf("no fresh metrics sample fell inside the measured window (%s): run longer than the metrics resolution", to.Sub(from).Round(time.Second)))
	}
	if r.loadErr == nil {
		r.checkValidity(loadRes)
	}
	return nil
}

// installFacesChart runs helm to install the Faces chart into the app
// namespace, keeping the command, its output and helm's version under k8s/.
func (r *run) installFacesChart(ctx context.Context) error {
	path, err := exec.LookPath(HelmVersionCommand[0])
	if err != nil {
		return fmt.Errorf("helm not found on PATH (needed to install the Faces chart %s %s; or run meshbench's own faces app without --faces-chart)", FacesChart, FacesChartVersion)
	}
	if v, err := exec.CommandContext(ctx, path, HelmVersionCommand[1:]...).Output(); err == nil {
		r.mu.Lock()
		r.manifest.Options["helm_version"] = strings.TrimSpace(string(v))
		r.mu.Unlock()
	}
	cmds, err := r.c.Install(ctx, []install.Command{FacesChartCommand(r.o.Spec, r.o.Connect.Kubeconfig, r.o.Connect.Context)}, r.o.Log)
	r.keepJSON(filepath.Join("k8s", "app-install.json"), cmds)
	if err != nil {
		return err
	}
	return r.scaleFacesGUI(ctx)
}

// scaleFacesGUI keeps the chart's GUI at one replica (ScaleFacesGUI) and
// records which Deployments it scaled, or that none carried the label.
func (r *run) scaleFacesGUI(ctx context.Context) error {
	names, err := ScaleFacesGUI(ctx, r.c.Core, r.o.Spec.WithDefaults().AppNamespace, FacesGUIWait)
	note := strings.Join(names, ",")
	if len(names) == 0 {
		note = "none labelled " + FacesGUISelector
		r.logf("note: no Deployment labelled %s in the app namespace: no Faces GUI scaled to one replica", FacesGUISelector)
	} else {
		r.logf("Faces GUI at one replica, out of the app's figures: %s", note)
	}
	r.mu.Lock()
	r.manifest.Options["faces_gui_scaled_to_one"] = note
	r.mu.Unlock()
	return err
}

// withIstioProfile sets istioctl's profile in cmds to profile ("": as
// they are).
func withIstioProfile(cmds []install.Command, profile string) []install.Command {
	if profile == "" {
		return cmds
	}
	out := make([]install.Command, len(cmds))
	for i, c := range cmds {
		c.Args = slices.Clone(c.Args)
		for j, a := range c.Args {
			if c.Args[0] == "istioctl" && strings.HasPrefix(a, "profile=") {
				c.Args[j] = "profile=" + profile
			}
		}
		out[i] = c
	}
	return out
}

// writeObjects keeps what meshbench applies, as YAML, under k8s/.
func (r *run) writeObjects(name string, objs []runtime.Object) error {
	var b bytes.Buffer
	for _, obj := range objs {
		u, _, err := client.ToUnstructured(obj)
		if err != nil {
			return err
		}
		y, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	if err := os.MkdirAll(filepath.Join(r.dir.Path, "k8s"), 0o755); err != nil {
		return err
	}
	return r.dir.WriteFile(filepath.Join("k8s", name), b.Bytes())
}

// waitIdle waits until the app pods' CPU (fresh metrics samples only) is
// under the threshold.
func (r *run) waitIdle(ctx context.Context, s roundSource) error {
	threshold := r.o.IdleMillicores
	deadline := time.Now().Add(r.o.IdleTimeout)
	seen := 0
	last := -1.0
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		rounds := s.Rounds()
		if len(rounds) == seen {
			continue
		}
		seen = len(rounds)
		var total float64
		pods := 0
		for _, x := range rounds[len(rounds)-1].Samples {
			if x.Category == sample.CategoryApp {
				total += x.CPUMillicores
				pods++
			}
		}
		if pods == 0 {
			continue
		}
		limit := idleLimit(threshold, pods)
		last = total
		if total < limit {
			r.logf("idle: app CPU %.0fm < %.0fm", total, limit)
			return nil
		}
	}
	return fmt.Errorf("app not idle before the load: CPU %.0fm after %v (or no fresh app metrics)", last, r.o.IdleTimeout)
}

// idleLimit is the app CPU under which the app counts as idle: threshold,
// or 10m per app pod when it is 0.
func idleLimit(threshold float64, pods int) float64 {
	if threshold > 0 {
		return threshold
	}
	return 10 * float64(pods)
}

// drainFor keeps sampling after the load's end until the app is idle again
// by samples taken wholly after it (appIdleAfter, with the idle gate's
// threshold), at most o.Drain (the seed tool's rule: it drains until the
// app is idle, for at most 60 s). It says how it ended.
func (r *run) drainFor(ctx context.Context, s roundSource, loadEnd time.Time) results.Drain {
	start := time.Now()
	d := results.Drain{MaxSeconds: r.o.Drain.Seconds(), LoadEnded: loadEnd}
	check := func() bool {
		r.mu.Lock()
		gone := slices.Clone(r.deleted)
		r.mu.Unlock()
		st := appIdleAfter(s.Rounds(), s.Within(loadEnd, time.Time{}), r.o.IdleMillicores, gone...)
		d.AppPods, d.AppPodsSampled, d.AppCPUMillicores, d.IdleMillicores, d.SampleTime = st.pods, st.sampled, st.cpuMillicores, st.limitMillicores, st.sampleTime
		return st.idle
	}
	end := func(how string) results.Drain {
		d.Ended, d.Seconds = how, time.Since(start).Seconds()
		return d
	}
	if r.o.Drain <= 0 {
		check()
		return end(results.DrainOff)
	}
	deadline := time.NewTimer(r.o.Drain)
	defer deadline.Stop()
	poll := time.NewTicker(time.Second)
	defer poll.Stop()
	seen := -1
	for {
		// A new round is the only thing that can change the answer.
		if n := len(s.Rounds()); n != seen {
			seen = n
			if check() {
				return end(results.DrainIdle)
			}
		}
		select {
		case <-ctx.Done():
			return end(results.DrainInterrupted)
		case <-deadline.C:
			check()
			return end(results.DrainMaximum)
		case <-poll.C:
		}
	}
}

// idleState is what appIdleAfter found.
type idleState struct {
	idle bool
	// pods: app pods sampled in the run; sampled: those with a sample
	// wholly after the load's end.
	pods, sampled int
	// cpuMillicores: the app's CPU by each app container's newest sample
	// wholly after the load's end; limitMillicores: the idle threshold.
	cpuMillicores, limitMillicores float64
	sampleTime                     time.Time // the newest sample counted
}

// appIdleAfter reports whether the app is idle again after the load: every
// app pod seen in all has at least one fresh sample in after (the samples
// whose whole window lies after the load's end, MetricsSampler.Within),
// and the sum of each app container's newest such sample is under the
// idle threshold (idleLimit). A pod that has stopped being sampled keeps
// it from being idle (the drain then lasts its maximum) unless it is one
// of gone ("namespace/name"), the pods a fault deleted. It is a pure
// function of the rounds.
func appIdleAfter(all, after []sample.Round, threshold float64, gone ...string) idleState {
	pods := map[string]bool{}
	for _, r := range all {
		for _, x := range r.Samples {
			if x.Category == sample.CategoryApp && !slices.Contains(gone, podOf(x.Name)) {
				pods[podOf(x.Name)] = true
			}
		}
	}
	newest := map[string]sample.Sample{} // app container -> its newest sample after the load
	for _, r := range after {
		for _, x := range r.Samples {
			if x.Category != sample.CategoryApp {
				continue
			}
			if prev, ok := newest[x.Name]; !ok || x.Time.After(prev.Time) {
				newest[x.Name] = x
			}
		}
	}
	st := idleState{pods: len(pods), limitMillicores: idleLimit(threshold, len(pods))}
	sampled := map[string]bool{}
	for name, x := range newest {
		sampled[podOf(name)] = true
		st.cpuMillicores += x.CPUMillicores
		if x.Time.After(st.sampleTime) {
			st.sampleTime = x.Time
		}
	}
	st.sampled = len(sampled)
	st.idle = st.pods > 0 && st.sampled >= st.pods && st.cpuMillicores < st.limitMillicores
	return st
}

// podOf is the namespace/pod of a metrics sample's name
// (namespace/pod/container).
func podOf(sampleName string) string {
	if i := strings.LastIndexByte(sampleName, '/'); i >= 0 {
		return sampleName[:i]
	}
	return sampleName
}

// runLoad creates the load Job, waits for it to finish, collects every
// worker's JSON result from its log and merges them.
func (r *run) runLoad(ctx context.Context) (*results.LoadResult, error) {
	o, c := r.o, r.c
	endWarm := r.phase("warmup")
	job, err := LoadJob(o.loadSpec())
	if err != nil {
		endWarm()
		return nil, err
	}
	if err := r.writeObjects("load-job.yaml", []runtime.Object{job}); err != nil {
		endWarm()
		return nil, err
	}
	if err := c.Apply(ctx, []runtime.Object{job}); err != nil {
		endWarm()
		return nil, err
	}
	if lo, ok := o.Observer.(platform.LoadObserver); ok {
		stopFollowing := c.followLoadProgress(ctx, o.Spec.LoadNamespace, job.Name, lo.LoadProgress)
		defer stopFollowing()
	}
	syncDone := make(chan struct{})
	var sync *install.SyncReport
	var syncErr error
	warmTimer := time.AfterFunc(o.Warmup, func() {
		endWarm()
		r.enter("measure")
		// istiod's ACK table, read in the window once the load's pods
		// are ready: every proxy of the cell (the app's and the load's,
		// ztunnel, the waypoint) is connected then. (The warm-up counts
		// from the Job's creation: its pods may still be starting.)
		if syncz := r.syncz(); syncz != nil {
			go func() {
				defer close(syncDone)
				sctx, cancel := context.WithTimeout(ctx, time.Minute+o.Duration)
				defer cancel()
				if err := c.waitPodsReady(sctx, o.Spec.LoadNamespace, o.Duration/2); err != nil {
					r.logf("istiod's ACK table: %v; read anyway", err)
				}
				sync, syncErr = syncz(sctx, o.Connect.Kubeconfig, o.Connect.Context)
			}()
			return
		}
		close(syncDone)
	})
	faulted := r.startFault(ctx, job.Name)
	jobErr := loadjob.Wait(ctx, c.Client, o.Spec.LoadNamespace, job.Name, o.Spec.AppNamespace, o.Warmup+o.Duration+o.Timeout+o.ReadyTimeout)
	faulted.stop(r)
	if warmTimer.Stop() {
		endWarm()
	} else {
		<-syncDone
		r.writeSync(sync, syncErr)
	}
	parts, logErr := loadjob.Collect(context.WithoutCancel(ctx), c.Core, job, o.Workers, func(name string, body []byte) {
		r.kept(name, r.dir.WriteFile(name, body))
	})
	if jobErr != nil && len(parts) == 0 {
		return nil, errors.Join(jobErr, logErr)
	}
	if logErr != nil {
		return nil, logErr
	}
	merged, err := results.Merge(parts)
	if err != nil {
		return nil, fmt.Errorf("merging %d worker results: %w", len(parts), err)
	}
	r.mu.Lock()
	r.manifest.Phases = append(r.manifest.Phases, results.Phase{Name: "measure", Started: merged.StartedAt, Ended: merged.EndedAt})
	r.mu.Unlock()
	if err := loadjob.WriteResult(r.dir, merged); err != nil {
		return nil, err
	}
	return merged, jobErr
}

// waitPodsReady waits up to timeout until ns has pods and every one is
// ready.
func (c *Cluster) waitPodsReady(ctx context.Context, ns string, timeout time.Duration) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		ready := 0
		for i := range pods.Items {
			if PodReady(&pods.Items[i]) {
				ready++
			}
		}
		last = fmt.Sprintf("%d of %d pods ready in %s", ready, len(pods.Items), ns)
		return len(pods.Items) > 0 && ready == len(pods.Items), nil
	})
	if err != nil {
		return fmt.Errorf("%s after %s", last, timeout)
	}
	return nil
}

// syncz is the install's reader of istiod's ACK table when this run's
// mesh is Istio installed by meshbench with one (nil otherwise).
func (r *run) syncz() func(context.Context, string, string) (*install.SyncReport, error) {
	mi := r.o.IstioInstall
	if mi == nil || mi.Syncz == nil || install.MeshCLI(string(r.o.Spec.Mesh.Mode)) != "istioctl" {
		return nil
	}
	return mi.Syncz
}

// writeSync keeps istiod's ACK table in the results (k8s/istiod-acks.txt,
// k8s/istiod-syncz.json), prints it, and records in the manifest how many
// proxies there were and which types were not ACKed.
func (r *run) writeSync(s *install.SyncReport, err error) {
	if err != nil {
		r.logf("istiod's ACK table: %v", err)
		r.mu.Lock()
		r.manifest.Options["istiod_syncz_error"] = err.Error()
		r.mu.Unlock()
		return
	}
	if s == nil {
		return
	}
	r.keepJSON(filepath.Join("k8s", "istiod-syncz.json"), s.Proxies)
	r.kept(filepath.Join("k8s", "istiod-acks.txt"), r.dir.WriteFile(filepath.Join("k8s", "istiod-acks.txt"), []byte(s.Table)))
	r.logf("istiod's ACK table (%d proxies, read in the measured window):\n%s", s.Count, strings.TrimRight(s.Table, "\n"))
	r.mu.Lock()
	r.manifest.Options["istiod_proxies"] = s.Count
	if len(s.NotACKed) > 0 {
		r.manifest.Options["istiod_not_acked"] = s.NotACKed
	}
	r.mu.Unlock()
	if len(s.NotACKed) > 0 {
		r.logf("warning: istiod's config not ACKed: %s", strings.Join(s.NotACKed, "; "))
	}
}

func (r *run) enter(name string) {
	if r.o.Observer != nil {
		r.o.Observer.Phase(name)
	} else {
		r.logf("phase %s", name)
	}
}

func (r *run) checkValidity(lr *results.LoadResult) {
	if lr == nil {
		return
	}
	errorRatio := r.o.ErrorRatio
	if !r.o.Fault.Zero() {
		// A fault's failed requests are what the cell measures (its
		// cost), not a sign the run went wrong.
		errorRatio = 1
	}
	for _, p := range lr.Problems(r.o.RateShortfall, errorRatio) {
		r.invalid(p)
	}
}

// addBootIDs fills in each node's boot ID (see sample.NodeSummary.BootID).
func (c *Cluster) addBootIDs(ctx context.Context, nodes []sample.NodeSummary) error {
	if len(nodes) == 0 {
		return nil
	}
	list, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	boot := map[string]string{}
	for _, n := range list.Items {
		boot[n.Name] = n.Status.NodeInfo.BootID
	}
	for i := range nodes {
		nodes[i].BootID = boot[nodes[i].Name]
	}
	return nil
}

// waitDeployments waits until every Deployment in ns has all its replicas
// available.
func (c *Cluster) waitDeployments(ctx context.Context, ns string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ds, err := c.Core.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var waiting []string
		for _, d := range ds.Items {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			if d.Status.AvailableReplicas < want || d.Status.ObservedGeneration < d.Generation {
				waiting = append(waiting, fmt.Sprintf("%s %d/%d", d.Name, d.Status.AvailableReplicas, want))
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		// A pod whose image cannot be pulled or that keeps crashing will
		// not get ready: say so now, not after the timeout.
		if p, err := c.PodProblem(ctx, ns, ""); err != nil {
			return err
		} else if p != nil {
			return fmt.Errorf("app not ready: %w", p)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("app not ready after %v: %s", timeout, strings.Join(waiting, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func optionsMap(o Options, c *Cluster) map[string]any {
	return o.Record(o.Spec.Mesh).Options(map[string]any{
		"workers": o.Workers, "kubelet_interval": o.KubeletInterval.String(),
		"cluster": map[string]any{"server": c.Server, "context": c.Context, "version": c.Version},
		"run_id":  o.Spec.RunID, "namespaces": []string{o.Spec.AppNamespace, o.Spec.LoadNamespace},
		"image": o.Spec.Image, "install_mesh": o.InstallMesh, "faces_chart": o.Spec.FacesChart,
	})
}

// placeNodes counts the ready, schedulable nodes and, from
// NodeSelectorMinNodes on, labels them as the seed tool does: three for
// the app (LabelNodeRole=RoleApp), the rest for the load; each label it
// sets is marked with the run, and unlabelNodes takes it off again.
func (c *Cluster) placeNodes(ctx context.Context, runID string) (int, error) {
	nodes, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	var ready []corev1.Node
	for _, n := range nodes.Items {
		if client.NodeReady(&n) && !n.Spec.Unschedulable {
			ready = append(ready, n)
		}
	}
	if len(ready) < NodeSelectorMinNodes {
		return len(ready), nil
	}
	sort.Slice(ready, func(i, j int) bool { return ready[i].Name < ready[j].Name })
	for i, n := range ready {
		role := RoleLoad
		if i < 3 {
			role = RoleApp
		}
		if n.Labels[LabelNodeRole] != "" && n.Labels[LabelNodeRole] != role {
			continue // labelled by the user: theirs to keep
		}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q,%q:%q}}}`, LabelNodeRole, role, LabelRun, runID)
		if _, err := c.Core.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
			return 0, fmt.Errorf("labelling node %s: %w", n.Name, err)
		}
	}
	return len(ready), nil
}

// unlabelNodes removes the node-role labels run runID set.
func (c *Cluster) unlabelNodes(ctx context.Context, runID string) error {
	nodes, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + runID})
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range nodes.Items {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null,%q:null}}}`, LabelNodeRole, LabelRun)
		if _, err := c.Core.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("unlabelling node %s: %w", n.Name, err))
		}
	}
	return errors.Join(errs...)
}

// isAmbient: mode runs on ztunnel (ambient, waypoint).
func isAmbient(mode string) bool {
	m, ok := mesh.Get(mode)
	return ok && m.Kind == mesh.KindNodeProxy || mode == "waypoint"
}
