package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/workload"
)

// kubeFlags are the Kubernetes platform's flags, shared by run and doctor.
type kubeFlags struct {
	kubeconfig, context  string
	namespacePrefix      string
	image, appImage      string
	facesChart           bool
	workers              int
	installMesh          bool
	allowForeign, keep   bool
	kubeSampleInterval   time.Duration
	metricsSource        string        // --metrics-source
	kubeletInterval      time.Duration // --kubelet-interval
	idleTimeout, timeout time.Duration
	generator            string // the load workers' --generator
	istioBuild           string // --istio-build
	linkerdBuild         string // --linkerd-build
	linkerdCerts         string // --linkerd-certs
}

// Which kubeFlags a command takes.
const (
	kubeConnect = iota // doctor: the cluster and the namespaces
	kubeRun            // run: all of them
	kubeBench          // bench: all but those the plan holds (workers, metrics interval)
)

func (k *kubeFlags) add(cmd *cobra.Command, which int) {
	fl := cmd.Flags()
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "kubeconfig file (kube platform; default: $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&k.context, "context", "", "kubeconfig context (kube platform; default: the current one)")
	fl.StringVar(&k.namespacePrefix, "namespace-prefix", "meshbench", "namespaces PREFIX-app and PREFIX-load (kube platform)")
	fl.StringVar(&k.metricsSource, "metrics-source", kube.SourceAuto, "CPU and memory from: kubelet (the kubelet's counters through the node proxy; RBAC: get nodes/proxy), metrics-api (metrics.k8s.io), or auto: kubelet when allowed and answering (kube platform)")
	if which == kubeConnect {
		return
	}
	fl.DurationVar(&k.kubeletInterval, "kubelet-interval", kube.DefaultKubeletInterval, "reading period of the kubelet's counters (kube platform, --metrics-source kubelet or auto)")
	fl.StringVar(&k.image, "image", kube.DefaultImage, "meshbench image for the app and the load workers (kube platform; built by make image)")
	fl.StringVar(&k.appImage, "app-image", "", "image for the static app instead of meshbench's, e.g. nginx pinned by digest (kube platform)")
	fl.BoolVar(&k.facesChart, "faces-chart", true, "app faces: install Buoyant's Faces chart "+kube.FacesChartVersion+" with helm, as the seed tool does; false: meshbench's own face/smiley/color (kube platform)")
	if which == kubeRun {
		fl.IntVar(&k.workers, "workers", 1, "load generator pods; the rate and connections are split among them (kube platform)")
	}
	fl.BoolVar(&k.installMesh, "install-mesh", false, "install the mesh with its own CLI (istioctl, linkerd) first; default: verify the one installed (kube platform)")
	fl.StringVar(&k.istioBuild, "istio-build", "", "with --install-mesh: install Istio's modes from the Istio built here in `DIR` (make istio-tools; images from meshbench image istio) with the upstream-Envoy overlay (kube platform)")
	fl.StringVar(&k.linkerdBuild, "linkerd-build", "", "with --install-mesh: install Linkerd from the Linkerd built here in `DIR` (make linkerd-tools; images from meshbench image linkerd) (kube platform)")
	fl.StringVar(&k.linkerdCerts, "linkerd-certs", "", "with --linkerd-build: Linkerd's trust anchor and issuer from `DIR` (ca.crt, issuer.crt, issuer.key); default: a pair meshbench makes (kube platform)")
	fl.BoolVar(&k.allowForeign, "allow-foreign-workloads", false, "run even if the namespaces hold workloads meshbench did not create (kube platform)")
	fl.BoolVar(&k.keep, "keep", false, "leave the namespaces after the run (kube platform)")
	if which == kubeRun {
		fl.DurationVar(&k.kubeSampleInterval, "metrics-interval", 10*time.Second, "metrics.k8s.io polling period (kube platform)")
		fl.StringVar(&k.generator, "generator", extgen.Meshbench, "load generator: meshbench, oha, wrk2, vegeta or fortio (HTTP/1.1; on the local lab their own processes sampled as load; on a cluster from the workers' image: vegeta and fortio by default, oha and wrk2 with meshbench image --extra)")
	}
	fl.DurationVar(&k.idleTimeout, "idle-timeout", 2*time.Minute, "longest wait for the app to be idle before the load (kube platform)")
	fl.DurationVar(&k.timeout, "ready-timeout", 5*time.Minute, "longest wait for the app and the load Job (kube platform)")
}

func (k *kubeFlags) connect() kube.ConnectOptions {
	return kube.ConnectOptions{Kubeconfig: k.kubeconfig, Context: k.context}
}

// kubeMeshOptions checks the topology flags for the kube platform, where
// linkerd is a mesh too: a mode with no local form is checked by the rules
// of the local mode it follows (mesh.Rules: Linkerd's options are a
// sidecar mesh's).
func kubeMeshOptions(mo topology.Options) error {
	check := mo
	check.Mode = topology.Mode(mesh.Rules(string(mo.Mode)))
	if mo.Gateway {
		return errors.New("--gateway: not on the kube platform yet")
	}
	return check.Validate()
}

func runKube(ctx context.Context, env *Env, f *runFlags) error {
	mo := topology.DefaultOptions()
	mo.Mode, mo.App = topology.Mode(f.mesh), topology.App(f.app)
	mo.Replicas, mo.Nodes, mo.Policies = f.replicas, f.nodes, f.policy
	mo.Gateway, mo.MTLS, mo.Protocol = f.gateway, f.mtls, topology.Protocol(f.protocol)
	var errs []error
	if err := kubeMeshOptions(mo); err != nil {
		errs = append(errs, err)
	}
	if f.duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %v: must be > 0", f.duration))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %v: must be > 0", f.timeout))
	}
	if f.kube.workers < 1 {
		errs = append(errs, fmt.Errorf("--workers %d: allowed: 1 or more", f.kube.workers))
	}
	if f.kube.kubeSampleInterval <= 0 {
		errs = append(errs, fmt.Errorf("--metrics-interval %v: must be > 0", f.kube.kubeSampleInterval))
	}
	errs = append(errs, f.kube.checkSource()...)
	if !slices.Contains(extgen.Names, f.kube.generator) {
		errs = append(errs, fmt.Errorf("--generator %q: allowed: %s", f.kube.generator, strings.Join(extgen.Names, ", ")))
	}
	load, loadErrs := checkLoadFlags(f.rate, f.connections, false)
	errs = append(errs, loadErrs...)
	errs = append(errs, checkSendTick(f.sendTick, f.kube.generator)...)
	if f.bodySizeSet {
		switch {
		case f.bodySize < 1 || f.bodySize > workload.MaxBodySize:
			errs = append(errs, fmt.Errorf("--body-size %d: allowed: 1 to %d bytes", f.bodySize, workload.MaxBodySize))
		case mo.App != topology.AppStatic:
			errs = append(errs, fmt.Errorf("--body-size %d: applies to the static app only (faces answers what its callers ask for)", f.bodySize))
		case f.kube.appImage != "":
			errs = append(errs, fmt.Errorf("--body-size %d: applies to meshbench's static app only: --app-image %s runs as it is", f.bodySize, f.kube.appImage))
		}
	}
	if err := results.CheckNewDir(f.out); err != nil {
		errs = append(errs, fmt.Errorf("--out %w", err))
	}
	flt, err := kubeFault(f)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return &UsageError{Err: errors.Join(errs...)}
	}
	// Run is a plan of one cell: its flags are the plan's settings. --drain
	// unset or 0 on a cluster: the default maximum (the flag's own
	// default, 2s, is the lab's).
	p := &plan.Plan{Platform: plan.PlatformKube, Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout,
		Connections: f.connections, Workers: f.kube.workers, SampleInterval: f.kube.kubeSampleInterval,
		Drain: plan.KubeDrain(f.kube.kubeSampleInterval), SendTick: f.sendTick}
	if f.drain > 0 && f.drainSet {
		p.Drain = f.drain
	}
	if f.bodySizeSet {
		p.BodySize = f.bodySize
	}
	s := p.Settings(plan.Cell{Mesh: mo, Rate: plan.RateOf(load), Generator: f.kube.generator, Fault: flt})
	spec := kube.Spec{AppNamespace: f.kube.namespacePrefix + "-app", LoadNamespace: f.kube.namespacePrefix + "-load",
		Image: f.kube.image, AppImage: f.kube.appImage, FacesChart: f.kube.facesChart && mo.App == topology.AppFaces}
	o := kube.Options{Settings: s, Connect: f.kube.connect(), Spec: spec, InstallMesh: f.kube.installMesh,
		AllowForeign: f.kube.allowForeign, Keep: f.kube.keep, MetricsSource: f.kube.metricsSource, KubeletInterval: f.kube.kubeletInterval,
		IdleTimeout: f.kube.idleTimeout, ReadyTimeout: f.kube.timeout, OutDir: f.out, Log: env.Stderr, Version: Version}
	ii, err := bench.IstioInstall(ctx, f.kube.istioBuild, f.kube.installMesh, f.envoyPath, env.Getenv)
	if err != nil {
		return err
	}
	o.IstioInstall = ii
	li, err := bench.LinkerdInstall(f.kube.linkerdBuild, f.kube.linkerdCerts, f.kube.installMesh)
	if err != nil {
		return err
	}
	o.LinkerdInstall = li
	res, err := kube.Run(ctx, o)
	if derr := li.Done(); derr != nil && err == nil {
		err = derr
	}
	if res != nil {
		printKubeRun(env, mo, res)
	}
	if ctx.Err() != nil {
		return errInterrupted
	}
	if err != nil {
		return err
	}
	if !res.Manifest.Valid {
		return fmt.Errorf("run invalid (results kept in %s): %s", res.Dir, strings.Join(res.Manifest.Invalid, "; "))
	}
	return nil
}

func printKubeRun(env *Env, mo topology.Options, res *kube.Result) {
	w := env.Stdout
	fmt.Fprintf(w, "meshbench run (kube): mesh %s, app %s, %d replica(s), policies %d, protocol %s\n\n",
		mo.Mode, mo.App, mo.Replicas, mo.Policies, mo.Protocol)
	if res.Source != "" {
		fmt.Fprintf(w, "Resources from %s (%s).\n\n", kubeSourceName(res.Source), res.SourceReason)
	}
	mem := sample.WorkingSet
	if res.Source == kube.SourceKubelet {
		mem = sample.CounterWorkingSet
	}
	printMeasured(w, res.Load, res.Summary, mem)
	if res.Load != nil && res.Manifest != nil {
		if fc, ok, err := analysis.FaultCostOf(res.Manifest, res.Load); err == nil && ok {
			fmt.Fprintf(w, "Fault        %s\n", fc)
		}
	}
	if len(res.Namespaces.Rows) > 0 {
		fmt.Fprintln(w)
		_ = report.NamespaceTable(w, res.Namespaces, mem)
		_ = report.NamespaceNote(w, mem)
	}
	if len(res.Nodes) > 0 {
		fmt.Fprintln(w)
		_ = report.NodeTable(w, res.Nodes, res.Source == kube.SourceKubelet)
	}
	if res.NodeKernel != nil || res.NodeKernelNote != "" {
		fmt.Fprintln(w)
		_ = report.NodeKernelTable(w, res.NodeKernel, res.NodeKernelNote)
	}
	if res.Source == kube.SourceKubelet {
		printCounters(w, res)
	} else if res.Summary.Rounds > 0 || len(res.Nodes) > 0 {
		fmt.Fprintf(w, "Metrics samples seen again (stale, not counted twice): %d pod, %d node.\n", res.StalePods, res.StaleNodes)
		fmt.Fprintf(w, "Metrics rounds where only some pods had a new sample: %d (those rounds' totals leave out the pods whose sample was old).\n", res.MixedRounds)
	}
	if res.Drain.Ended != "" {
		fmt.Fprintf(w, "Drain: %s.\n", res.Drain)
	}
	printRunEnd(w, res.Manifest, res.Dir)
}

// checkSource checks --metrics-source and --kubelet-interval.
func (k *kubeFlags) checkSource() []error {
	var errs []error
	if !slices.Contains(kube.MetricsSources, k.metricsSource) {
		errs = append(errs, fmt.Errorf("--metrics-source %q: allowed: %s", k.metricsSource, strings.Join(kube.MetricsSources, ", ")))
	}
	if k.kubeletInterval < 0 || (k.kubeletInterval == 0 && k.metricsSource != kube.SourceMetricsAPI) {
		errs = append(errs, fmt.Errorf("--kubelet-interval %v: must be > 0", k.kubeletInterval))
	}
	return errs
}

func kubeSourceName(source string) string {
	if source == kube.SourceKubelet {
		return "the kubelet's counters"
	}
	return "metrics.k8s.io"
}

// printCounters says what the kubelet's counters found besides the
// tables, and what metrics.k8s.io said over the same window.
func printCounters(w io.Writer, res *kube.Result) {
	c := res.Counters
	if c == nil {
		return
	}
	fmt.Fprintf(w, "Counter readings: %d new, %d with no new information (their timestamp had not advanced); ", c.FreshReadings, c.StaleReadings)
	if c.Lag.Samples > 0 {
		fmt.Fprintf(w, "counter age when read: median %s, max %s.\n", c.Lag.Median.Round(time.Millisecond), c.Lag.Max.Round(time.Millisecond))
	} else {
		fmt.Fprintln(w, "the counters carry no timestamps (counter age unknown).")
	}
	fmt.Fprintf(w, "Sampler: every %s, %d node(s), %.1f ms CPU per round on average (max %.1f ms); %d failed read(s).\n",
		time.Duration(c.PeriodNs), c.Nodes, c.RoundCPUNs.Avg/1e6, c.RoundCPUNs.Max/1e6, c.Errors)
	for _, x := range c.Resets {
		fmt.Fprintf(w, "Counter reset: %s on %s at %s (%.3f → %.3f core-seconds): the container restarted; its CPU between its last reading and the restart is not counted.\n",
			x.Key, x.Node, x.Time.Format("15:04:05"), x.From, x.To)
	}
	for _, p := range c.Partial {
		fmt.Fprintf(w, "Counted for part of the window only: %s, %s to %s of %s to %s (appeared, disappeared or restarted).\n",
			p.Key, p.From.Format("15:04:05"), p.To.Format("15:04:05"), res.Load.StartedAt.Format("15:04:05"), res.Load.EndedAt.Format("15:04:05"))
	}
	if a := res.MetricsAPI; a != nil {
		app := func(s sample.Summary) string {
			if g := s.Category(sample.CategoryApp); g != nil && g.Rounds > 0 {
				return fmt.Sprintf("%.1fm", g.CPUMillicores.Avg)
			}
			return "-"
		}
		if a.FreshPodSamples+a.StalePodSamples == 0 {
			fmt.Fprintln(w, "metrics.k8s.io over the same run (cross-check): no pod sample yet (metrics-server shows a new pod after two or three scrapes).")
		} else {
			fmt.Fprintf(w, "metrics.k8s.io over the same run (cross-check): app CPU %s (counters: %s); %d of %d pod samples stale (%.0f%%).\n",
				app(a.Summary), app(res.Summary), a.StalePodSamples, a.StalePodSamples+a.FreshPodSamples, a.StaleFraction*100)
		}
	}
}

type doctorFlags struct {
	platform string
	mesh     string
	nodes    int
	kube     kubeFlags
	// local: the binaries the lab would use.
	envoyPath, ztunnel, linkerdProxy string
}

func newDoctorCmd(env *Env) *cobra.Command {
	f := &doctorFlags{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check that a platform can run benchmarks (preflight), as a table",
		Long: `Run the preflight checks of a platform and print them as a table.

--platform kube: the API server answers, metrics.k8s.io is available and
fresh, which source a run's CPU and memory will come from (the kubelet's
counters when get on nodes/proxy is allowed and /metrics/resource answers,
else metrics.k8s.io; --metrics-source), enough nodes are ready for the placement (load and app apart), the
mesh CLIs (istioctl, linkerd) and their versions, the namespaces meshbench
would create hold nothing it did not create, and RBAC grants what a run
needs. Exits 1 when a check fails.

--install-mesh means what it means to run: the meshes of --mesh will be
installed, so their CLIs are required. Without it the meshes must already
run on the cluster: each one of --mesh is verified as run verifies it
(istiod, the ztunnel DaemonSet, the Gateway API for waypoints, Linkerd's
control plane), and a missing CLI is only a warning.

--platform local: what the local lab needs for the modes of --mesh (all
when none is given): Envoy, the netns substrate (root, network namespaces,
a kernel that takes the nftables capture rules), Istio's ztunnel for
ambient on netns, and whether mesh linkerd can run here (linkerd2-proxy
found and its version read, namespaces possible). A mode not asked for
only warns.`,
		Example: `  meshbench doctor --platform kube --kubeconfig ~/.kube/k3d.yaml --mesh sidecar,ambient
  meshbench doctor --platform kube --mesh linkerd --install-mesh
  sudo meshbench doctor --platform local --mesh linkerd`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.platform == "local" {
				var modes []string
				for _, m := range strings.Split(f.mesh, ",") {
					if m = strings.TrimSpace(m); m == "" {
						continue
					}
					if !slices.Contains(mesh.Names(true), m) {
						return usagef("--mesh %q: allowed: %s", m, strings.Join(mesh.Names(true), ", "))
					}
					modes = append(modes, m)
				}
				return printLocalDoctor(env, localDoctor(cmd.Context(), env, modes, f.envoyPath, f.ztunnel, f.linkerdProxy))
			}
			if f.platform != "kube" {
				return usagef("--platform %q: allowed: kube, local", f.platform)
			}
			if !slices.Contains(kube.MetricsSources, f.kube.metricsSource) {
				return usagef("--metrics-source %q: allowed: %s", f.kube.metricsSource, strings.Join(kube.MetricsSources, ", "))
			}
			var modes []string
			if f.mesh != "" {
				for _, m := range strings.Split(f.mesh, ",") {
					m = strings.TrimSpace(m)
					if _, ok := mesh.Get(m); !ok {
						return usagef("--mesh %q: allowed: %s", m, kubeModeList())
					}
					modes = append(modes, m)
				}
			}
			clis := map[string]string{}
			if f.kube.istioBuild != "" {
				if !f.kube.installMesh {
					return usagef("--istio-build %s: needs --install-mesh (as run: the build's istioctl installs Istio)", f.kube.istioBuild)
				}
				b, err := istio.Open(f.kube.istioBuild)
				if err != nil {
					return usagef("--istio-build: %v", err)
				}
				clis["istioctl"] = b.Path("istioctl")
			}
			if f.kube.linkerdBuild != "" {
				if !f.kube.installMesh {
					return usagef("--linkerd-build %s: needs --install-mesh (as run: the build's linkerd installs Linkerd)", f.kube.linkerdBuild)
				}
				b, err := release.Open(f.kube.linkerdBuild)
				if err != nil {
					return usagef("--linkerd-build: %v", err)
				}
				clis["linkerd"] = b.Path(release.CLI)
			}
			ns := []string{f.kube.namespacePrefix + "-app", f.kube.namespacePrefix + "-load"}
			checks, _ := kube.Doctor(cmd.Context(), kube.DoctorOptions{Connect: f.kube.connect(), Meshes: modes,
				InstallMesh: f.kube.installMesh, Nodes: f.nodes, Namespaces: ns, MetricsSource: f.kube.metricsSource, CLIs: clis})
			rows := make([]report.DoctorCheck, len(checks))
			for i, c := range checks {
				st := "ok"
				switch {
				case c.OK:
				case c.Warn:
					st = "warn"
				default:
					st = "FAIL"
				}
				rows[i] = report.DoctorCheck{Name: c.Name, Status: st, Detail: c.Detail}
			}
			failed, _ := report.DoctorTable(env.Stdout, rows)
			if failed > 0 {
				return fmt.Errorf("%d of %d checks failed", failed, len(checks))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.platform, "platform", "kube", "platform to check: kube, or local (the lab on this machine)")
	cmd.Flags().StringVar(&f.envoyPath, "envoy", "", "Envoy binary (local; default: $MESHBENCH_ENVOY, .tools/envoy, PATH)")
	cmd.Flags().StringVar(&f.ztunnel, "ztunnel", "", "ztunnel binary (local; default: $MESHBENCH_ZTUNNEL, .tools/ztunnel/ztunnel, ../shared/bin/ztunnel)")
	addLinkerdProxyFlag(cmd.Flags(), &f.linkerdProxy)
	cmd.Flags().StringVar(&f.mesh, "mesh", "", "meshes you will run, verified on the cluster (with --install-mesh: their CLIs are required instead): "+kubeModeList())
	cmd.Flags().IntVar(&f.nodes, "nodes", 2, "ready nodes needed (2: load and app on different nodes)")
	f.kube.add(cmd, kubeConnect)
	cmd.Flags().BoolVar(&f.kube.installMesh, "install-mesh", false, "the run will install the meshes (as run --install-mesh): require their CLIs instead of verifying the installed meshes")
	cmd.Flags().StringVar(&f.kube.istioBuild, "istio-build", "", "with --install-mesh: the run will install Istio from the build in DIR (as run --istio-build): its istioctl is checked, not PATH's")
	cmd.Flags().StringVar(&f.kube.linkerdBuild, "linkerd-build", "", "with --install-mesh: the run will install Linkerd from the build in DIR (as run --linkerd-build): its linkerd is checked, not PATH's")
	return cmd
}

// kubeModeList lists the kube platform's mesh modes for messages.
func kubeModeList() string { return strings.Join(mesh.Names(false), ", ") }

// bench is how a plan runs on the cluster the flags name.
func (k *kubeFlags) bench() bench.Kube {
	return bench.Kube{Connect: k.connect(), NamespacePrefix: k.namespacePrefix, Image: k.image, AppImage: k.appImage,
		FacesChart: k.facesChart, AllowForeign: k.allowForeign, Keep: k.keep, InstallMesh: k.installMesh, IstioBuild: k.istioBuild,
		LinkerdBuild: k.linkerdBuild, LinkerdCerts: k.linkerdCerts,
		IdleTimeout: k.idleTimeout, ReadyTimeout: k.timeout, MetricsSource: k.metricsSource, KubeletInterval: k.kubeletInterval}
}

// kubeFault is run --fault on a cluster: inside the window, of a part the mesh has, with meshbench's engine (its
// intervals are what the cost is read from).
func kubeFault(f *runFlags) (fault.Fault, error) {
	flt, err := fault.Parse(f.fault)
	switch {
	case err != nil:
		return flt, fmt.Errorf("--%w", err)
	case flt.Zero():
		return flt, nil
	}
	if err := flt.Check(f.duration); err != nil {
		return flt, fmt.Errorf("--%w", err)
	}
	if m, ok := mesh.Get(f.mesh); ok {
		if why := fault.Skip(flt, m, topology.App(f.app), f.replicas, false); why != "" {
			return flt, fmt.Errorf("--fault %s with --mesh %s: %s", flt, f.mesh, why)
		}
	}
	if f.kube.generator != "" && f.kube.generator != extgen.Meshbench {
		return flt, fmt.Errorf("--fault %s with --generator %s: allowed with --generator meshbench only (the fault's cost is read from its engine's intervals)", flt, f.kube.generator)
	}
	if flt.Kind == fault.SlowReplica && f.kube.appImage != "" {
		return flt, fmt.Errorf("--fault %s with --app-image: allowed with meshbench's own app only (the slowed replicas serve its control API)", flt)
	}
	if f.kube.facesChart && f.app == string(topology.AppFaces) {
		return flt, fmt.Errorf("--fault %s with the Faces chart: not yet (its pods are not meshbench's); use --faces-chart=false", flt)
	}
	return flt, nil
}
