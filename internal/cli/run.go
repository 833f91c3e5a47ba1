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
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/workload"
)

type runFlags struct {
	mesh, app, protocol     string
	replicas, nodes, policy int
	gateway, mtls           bool
	rate                    string
	duration, warmup, drain time.Duration
	timeout                 time.Duration
	sendTick                time.Duration
	sampleInterval          time.Duration
	pssEvery                int
	connections             int
	out, envoyPath          string
	loopbackNet             int
	platform                string
	drainSet                bool
	kube                    kubeFlags
	sub                     substrateFlags
	bodySize                int
	bodySizeSet             bool
	appOpts                 appFlags
	hops                    bool
	fault                   string
}

func newRunCmd(env *Env) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one benchmark cell on the local lab: real proxies in network namespaces (or on loopback)",
		Long: `Bring up a mesh topology of real processes on this machine (apps, Envoy
sidecars, Istio's ztunnel, an Envoy waypoint or gateway, linkerd2-proxy; in
network namespaces as root, else on 127.0.N.0/24 "nodes" with Envoy standing
in for ztunnel), check first that everything the cell needs is here, wait
until it is ready and idle, warm up, send the load while sampling every
process's CPU and memory from /proc, drain, collect the proxies' stats, tear
it all down, and write a results directory. Then print the load report, the
resource tables and derived figures.

Mesh modes: none, sidecar (mTLS between sidecars), ambient (L4 node proxies,
HBONE), waypoint (ambient + an L7 waypoint), linkerd (Linkerd's real
linkerd2-proxy beside every pod with the lab's own stand-in for its control
plane; on the netns substrate only, as root).`,
		Example: `  meshbench run --mesh sidecar --replicas 10 --rate 50 --duration 60s
  meshbench run --mesh ambient --policies 4 --rate 100 --duration 10s
  sudo meshbench run --mesh linkerd --policies 4 --rate 1000 --substrate netns`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.drainSet = cmd.Flags().Changed("drain")
			f.bodySizeSet = cmd.Flags().Changed("body-size")
			switch f.platform {
			case "local":
				return runRun(cmd.Context(), env, f)
			case "kube":
				if cmd.Flags().Changed("hops") {
					return usagef("--hops: the local lab only for now; on a cluster see the README (Istio's Telemetry API)")
				}
				if set := f.appOpts.given(cmd.Flags()); set != "" {
					return usagef("--%s: the lab's apps only (--platform local); the cluster runs its own images", set)
				}
				return runKube(cmd.Context(), env, f)
			}
			return usagef("--platform %q: allowed: local, kube", f.platform)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.platform, "platform", "local", "where to run: local (this machine's lab) or kube (a cluster from a kubeconfig)")
	fl.StringVar(&f.mesh, "mesh", "none", meshFlagHelp())
	fl.StringVar(&f.app, "app", "static", "app: static (nginx's 615-byte page), faces (face calls smiley over HTTP and color over gRPC; --replicas pods of each)")
	fl.IntVar(&f.replicas, "replicas", 1, "app replicas")
	fl.IntVar(&f.nodes, "nodes", 1, "app nodes the replicas are spread over (the load generator has its own)")
	fl.IntVar(&f.policy, "policies", 0, "L4 ALLOW authorization rules (4 = the seed reports' layout)")
	fl.BoolVar(&f.gateway, "gateway", false, "load enters through a TLS-terminating ingress gateway Envoy")
	fl.StringVar(&f.protocol, "protocol", "http", "http, or tcp (L4 only: proxies do no HTTP)")
	fl.BoolVar(&f.mtls, "mtls", true, "mTLS between sidecars (false: plaintext, for comparison)")
	fl.StringVar(&f.rate, "rate", "50", "load rate per second (open loop)")
	fl.DurationVar(&f.duration, "duration", 10*time.Second, "measured duration")
	fl.DurationVar(&f.warmup, "warmup", 2*time.Second, "load before the measured window, not counted")
	fl.DurationVar(&f.timeout, "timeout", 10*time.Second, "per-request timeout; the load ends at most this long after its window")
	fl.DurationVar(&f.sendTick, "send-tick", 0, sendTickHelp)
	fl.DurationVar(&f.drain, "drain", 2*time.Second, "sampling after the load ends (kube platform: the most, 60s unless set; it stops once the app is idle again)")
	fl.DurationVar(&f.sampleInterval, "sample-interval", time.Second, "/proc sampling period")
	fl.IntVar(&f.pssEvery, "pss-every", 0, "read PSS (/proc/PID/smaps_rollup) every N sampling rounds; CPU and RSS are read every round. "+
		"PSS costs ~1.3 ms of CPU per Envoy and ~0.5 ms per app per reading, 96% of a round, taken from the processes measured "+
		"(~160m at 1 s with 90 replicas); 0 = about every 5 s (5 rounds at 1 s), 1 = every round")
	fl.IntVar(&f.connections, "connections", loadgen.DefaultConnections, "load generator connections")
	fl.StringVar(&f.out, "out", "", "results directory to create (default results/TIME-MESH)")
	fl.StringVar(&f.envoyPath, "envoy", "", "Envoy binary (default: $MESHBENCH_ENVOY, .tools/envoy, PATH)")
	// Hidden: moves the lab to 127.N.0.0/16 so tests (or two labs) can
	// run side by side.
	fl.IntVar(&f.loopbackNet, "loopback-net", 0, "second octet N of the lab's addresses 127.N.x.y")
	_ = fl.MarkHidden("loopback-net")
	f.kube.add(cmd, kubeRun)
	f.sub.add(fl)
	fl.IntVar(&f.bodySize, "body-size", workload.DefaultBodySize, fmt.Sprintf("the static app's answer in bytes, 1 to %d (as serve --body-size; 615 is nginx's welcome page)", workload.MaxBodySize))
	f.appOpts.add(fl)
	fl.StringVar(&f.fault, "fault", "none", "what goes wrong inside the measured window, undone when the load ends: "+fault.Syntax+" (kube: kill and cpu-limit only); recorded with what it did (options.fault_record)")
	fl.BoolVar(&f.hops, "hops", false, "time every hop: each Envoy logs every request with µs timings, joined per request into a waterfall (costs proxy CPU; off by default)")
	return cmd
}

func runRun(ctx context.Context, env *Env, f *runFlags) error {
	mo := topology.DefaultOptions()
	mo.Mode = topology.Mode(f.mesh)
	mo.App = topology.App(f.app)
	mo.Replicas, mo.Nodes, mo.Policies = f.replicas, f.nodes, f.policy
	mo.Gateway, mo.MTLS = f.gateway, f.mtls
	mo.Protocol = topology.Protocol(f.protocol)
	var errs []error
	if err := mo.Validate(); err != nil {
		errs = append(errs, err)
	}
	if f.duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %v: must be > 0", f.duration))
	}
	if f.timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %v: must be > 0", f.timeout))
	}
	if f.warmup < 0 || f.drain < 0 || f.sampleInterval <= 0 {
		errs = append(errs, errors.New("--warmup and --drain must be >= 0 and --sample-interval > 0"))
	}
	if f.pssEvery < 0 {
		errs = append(errs, fmt.Errorf("--pss-every %d: allowed: 0 (about every 5 s) or N >= 1 (every N sampling rounds)", f.pssEvery))
	}
	if f.loopbackNet < 0 || f.loopbackNet > 255 {
		errs = append(errs, fmt.Errorf("--loopback-net %d: allowed: 0 to 255", f.loopbackNet))
	}
	if !slices.Contains(extgen.LoadNames, f.kube.generator) {
		errs = append(errs, fmt.Errorf("--generator %q: allowed on the local lab: %s", f.kube.generator, strings.Join(extgen.LoadNames, ", ")))
	}
	load, loadErrs := checkLoadFlags(f.rate, f.connections, true)
	errs = append(errs, loadErrs...)
	errs = append(errs, checkSendTick(f.sendTick, f.kube.generator)...)
	if f.hops && mo.Mode == topology.ModeLinkerd {
		errs = append(errs, errors.New("--hops: times the Envoys' hops; mesh linkerd's proxies keep no per-request timing log"))
	}
	switch {
	case f.bodySize < 1 || f.bodySize > workload.MaxBodySize:
		errs = append(errs, fmt.Errorf("--body-size %d: allowed: 1 to %d bytes", f.bodySize, workload.MaxBodySize))
	case f.bodySizeSet && mo.App != topology.AppStatic:
		errs = append(errs, fmt.Errorf("--body-size %d: applies to the static app only (faces answers what its callers ask for)", f.bodySize))
	}
	if err := results.CheckNewDir(f.out); err != nil {
		errs = append(errs, fmt.Errorf("--out %w", err))
	}
	appCfg, appErrs := f.appOpts.config()
	errs = append(errs, appErrs...)
	flt, err := fault.Parse(f.fault)
	if err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	} else if err := flt.Check(f.duration); err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	} else if m, ok := mesh.Get(f.mesh); ok && !flt.Zero() {
		if why := fault.SkipLab(flt, m, topology.App(f.app), f.replicas, f.sub.controlPlane); why != "" {
			errs = append(errs, fmt.Errorf("--fault %s with --mesh %s: %s", flt, f.mesh, why))
		}
	}
	mo.LoopbackNet = uint8(f.loopbackNet)
	if len(errs) > 0 {
		return &UsageError{Err: errors.Join(errs...)}
	}
	// Run is a plan of one cell: its flags are the plan's settings.
	p := &plan.Plan{Platform: plan.PlatformLocal, Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout,
		Connections: f.connections, SampleInterval: f.sampleInterval, PSSEvery: f.pssEvery, Drain: f.drain,
		AppConcurrency: appCfg.Concurrency, AppServiceTime: appCfg.ServiceTime, AppFaults: appCfg.Faults, Hops: f.hops,
		SendTick: f.sendTick}
	if f.bodySize != workload.DefaultBodySize {
		p.BodySize = f.bodySize
	}
	s := p.Settings(plan.Cell{Mesh: mo, Rate: plan.RateOf(load), Generator: f.kube.generator, Fault: flt})
	o := local.Options{Settings: s, OutDir: f.out, Log: env.Stderr, Version: Version}
	res, err := bench.RunCell(ctx, bench.Cell{Options: o, Substrate: f.sub.substrate, ZtunnelFlag: f.sub.ztunnel,
		LinkerdProxyFlag: f.sub.linkerdProxy, EnvoyFlag: f.envoyPath, ControlPlane: f.sub.controlPlane, Getenv: env.Getenv, Stderr: env.Stderr})
	if res != nil {
		printRun(env, res)
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

// checkLoadFlags checks the load flags that `run` and `bench` hand to
// their load processes, before anything starts, with the messages `load`
// gives: the rate as ParseRate reads it and at least one connection; on
// this machine (local), also enough file descriptors for them. It returns
// the rate as the open-loop load, parsed once here.
func checkLoadFlags(rate string, connections int, local bool) (loadgen.Load, []error) {
	var errs []error
	r, err := loadgen.ParseRate(rate)
	if err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	}
	if connections < 1 {
		errs = append(errs, fmt.Errorf("--connections %d: allowed: 1 or more", connections))
	} else if local {
		if err := loadgen.EnsureFileLimit(connections); err != nil {
			errs = append(errs, err)
		}
	}
	return loadgen.OpenLoop(r), errs
}

// sendTickHelp is run's --send-tick help (bench's flag is a string,
// like its other plan settings).
const sendTickHelp = "open loop, meshbench's engine: wake at most once per `DURATION` (100µs to 10ms) and send every request due by then together, as oha does with 1ms; latency still counts from each intended send time. 0: each request at its own time"

// checkSendTick checks run's --send-tick (run's load is an open loop):
// 0 or loadgen.MinSendTick to loadgen.MaxSendTick, with meshbench's own
// engine.
func checkSendTick(tick time.Duration, generator string) []error {
	if err := loadgen.ValidateSendTick(tick); err != nil {
		return []error{fmt.Errorf("--%w", err)}
	}
	if tick > 0 && generator != "" && generator != extgen.Meshbench {
		return []error{fmt.Errorf("--send-tick %v: only with meshbench's own engine (--generator meshbench); %s paces by itself", tick, generator)}
	}
	return nil
}

func printRun(env *Env, res *local.Result) {
	w := env.Stdout
	t := res.Topology
	substrate := ""
	if res.Manifest != nil {
		substrate, _ = res.Manifest.Options["substrate"].(string)
	}
	fmt.Fprintf(w, "meshbench run: mesh %s, app %s, %d replica(s) on %d node(s), policies %d, protocol %s, gateway %v%s\n\n",
		analysis.MeshLabel(string(t.Options.Mode), substrate), t.Options.App, t.Options.Replicas, t.Options.Nodes, t.Options.Policies, t.Options.Protocol, t.Options.Gateway, substrateNote(res.Manifest))
	printMeasured(w, res.Load, res.Summary, sample.PSS)
	if res.Manifest != nil {
		if ds, ok := res.Manifest.Options["app_delay_measured"].([]local.AppDelay); ok {
			asked, _ := res.Manifest.Options["app_delay"].(string)
			if asked == "" {
				asked = "none"
			}
			for _, d := range ds {
				fmt.Fprintf(w, "App delay    [asked; measured min, 50, 99, max]  %s; %s, %s, %s, %s (%s, %d answers)\n", asked, d.Min, d.P50, d.P99, d.Max, d.App, d.Answers)
			}
		}
		if res.Load != nil {
			if fc, ok, err := analysis.FaultCostOf(res.Manifest, res.Load); err == nil && ok {
				fmt.Fprintf(w, "Fault        %s\n", fc)
			}
		}
	}
	if res.Summary.Rounds > 0 {
		fmt.Fprintln(w)
		_ = report.SamplerOverhead(w, res.Summary)
	}
	if len(res.EnvoyStats) > 0 {
		fmt.Fprintln(w)
		report.EnvoyStats(w, t, res.EnvoyStats)
	}
	if len(res.NodeProxyStats) > 0 {
		fmt.Fprintln(w)
		report.NodeProxyTable(w, res.NodeProxyStats)
	}
	if res.MeshCheck != nil {
		fmt.Fprintln(w)
		for _, line := range res.MeshCheck.Lines {
			fmt.Fprintln(w, line)
		}
	}
	if res.Hops != nil {
		fmt.Fprintln(w)
		_ = report.HopsText(w, res.Hops)
	}
	if res.Manifest != nil {
		report.DerivedTable(w, res.Manifest.Derived)
	}
	printRunEnd(w, res.Manifest, res.Dir)
}

// printMeasured prints what every platform's run measured: the load
// report and the resource tables by component and by category.
func printMeasured(w io.Writer, lr *results.LoadResult, s sample.Summary, mem sample.Memory) {
	if lr != nil {
		_ = report.LoadText(w, lr)
		fmt.Fprintln(w)
	}
	if s.Rounds > 0 {
		_ = report.ResourceTable(w, s, report.TableOptions{By: report.ByComponent, Memory: mem})
		fmt.Fprintln(w)
		_ = report.ResourceTable(w, s, report.TableOptions{By: report.ByCategory, Memory: mem})
	}
}

// printRunEnd prints why a run is invalid, if it is, and where its results
// are.
func printRunEnd(w io.Writer, m *results.RunManifest, dir string) {
	if m != nil && !m.Valid {
		for _, r := range m.Invalid {
			fmt.Fprintln(w, "INVALID: "+r)
		}
	}
	fmt.Fprintf(w, "\nResults: %s\n", dir)
}
