package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/threshold"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/report/liveview"
	"github.com/meshbench/meshbench/internal/results"
)

type benchFlags struct {
	plan.Flags
	resume, out, envoyPath string
	ztunnelPath            string
	linkerdProxyPath       string
	quiet                  bool
	components             bool // --components: the whole frame after each cell in a log
	loopbackNet            int
	kube                   kubeFlags
	// failOn is --fail-on: conditions judged per configuration on the
	// medians of its valid repetitions.
	failOn string
}

// benchClusterFlags are the bench flags that say which cluster and how to
// deploy on it (platform kube only); with benchLocalFlags, the flags that
// are not part of the plan: they go with a plan file or --resume.
var (
	benchLocalFlags   = []string{"envoy", "quiet", "loopback-net", "ztunnel", "linkerd-proxy", "fail-on"}
	benchClusterFlags = []string{"kubeconfig", "context", "namespace-prefix", "image", "app-image", "faces-chart",
		"install-mesh", "istio-build", "linkerd-build", "linkerd-certs", "allow-foreign-workloads", "keep", "idle-timeout", "ready-timeout", "metrics-source", "kubelet-interval"}
	benchRunFlags = slices.Concat(benchLocalFlags, benchClusterFlags)
)

func newBenchCmd(env *Env) *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench [PLAN.yaml]",
		Short: "Run a benchmark plan (meshes × rates × replicas × … × repetitions) and report the comparison",
		Long: `Expand a plan — a YAML file, or the same axes as flags — into cells, run
them on the local lab (or, with platform kube, on a Kubernetes cluster
from a kubeconfig) in a seeded random order (the seed is recorded),
write each finished cell into the results directory, then print the
comparison: medians over repetitions with bootstrap intervals, differences
against the baseline mesh, one-line verdicts; and write the reports (text,
CSV, plots, a self-contained HTML file) into DIR/report/.

An interrupted plan resumes with --resume DIR: finished cells are never run
again or overwritten; a cell cut short is discarded and run again.

On a cluster (platform: kube in the plan, or --platform kube) every cell
deploys its app and load Job into fresh namespaces and deletes them;
--install-mesh has each mesh's first cell install it with its own CLI.
The cluster flags (--kubeconfig, --context, --image, …) go with a plan file
and with --resume.

Example plans: examples/quick.yaml, examples/seed-matrix.yaml,
examples/faces.yaml, examples/saturation.yaml, examples/kube.yaml.`,
		Example: `  meshbench bench examples/quick.yaml
  meshbench bench --mesh none,sidecar,ambient --rate 50,200 --repetitions 3 --duration 5s
  meshbench bench --resume results/bench-20261122-101500
  meshbench bench examples/kube.yaml --kubeconfig ~/.kube/k3d.yaml --install-mesh`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(cmd.Context(), env, cmd, f, args) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Platform, "platform", "", "where the cells run: local (default: processes on this machine) or kube (a Kubernetes cluster)")
	fl.StringVar(&f.Mesh, "mesh", "", "meshes, comma-separated (default none,sidecar,ambient,waypoint; linkerd too on kube)")
	fl.StringVar(&f.App, "app", "", "apps: static, faces")
	fl.StringVar(&f.Rate, "rate", "", "open-loop rates per second; default 100 (max, the closed loop, still reads: --load-model closed says it)")
	fl.StringVar(&f.LoadModel, "load-model", "", "load models: open (each --rate), closed (every connection sends when its last answer arrives), bulk (every connection reads one endless answer: bytes per second); default open")
	fl.StringVar(&f.Replicas, "replicas", "", "replica counts (default 1)")
	fl.StringVar(&f.Policies, "policies", "", "L4 ALLOW rule counts (default 0)")
	fl.StringVar(&f.Protocol, "protocol", "", "http, tcp")
	fl.StringVar(&f.Gateway, "gateway", "", "true, false")
	fl.StringVar(&f.MTLS, "mtls", "", "true, false")
	fl.StringVar(&f.Repetitions, "repetitions", "", "runs of every configuration (default 3)")
	fl.StringVar(&f.Seed, "seed", "", "seed of the cell order (default: random, recorded)")
	fl.StringVar(&f.Nodes, "nodes", "", "app nodes (default 1)")
	fl.StringVar(&f.Duration, "duration", "", "measured window per cell (default 10s)")
	fl.StringVar(&f.Warmup, "warmup", "", "warm-up per cell (default 2s)")
	fl.StringVar(&f.Drain, "drain", "", "drain per cell (default 2s)")
	fl.StringVar(&f.Connections, "connections", "", fmt.Sprintf("load generator connections (default %d); a list is an axis, e.g. 2,4,8,16,32,64", loadgen.DefaultConnections))
	fl.StringVar(&f.Payload, "payload", "", "the static app's answer sizes in bytes, an axis (e.g. 1024,65536; one value: --body-size)")
	fl.StringVar(&f.ProxyThreads, "proxy-threads", "", "every proxy's worker threads, an axis: Envoy --concurrency, ztunnel's worker threads, linkerd2-proxy's cores (default: Envoy 1, ztunnel 2, linkerd2-proxy 1)")
	fl.StringVar(&f.RequestsPerConnection, "requests-per-connection", "", "requests per load connection before a new one, an axis: 0 keeps every connection (default), 1 is one per request (TCP_CRR)")
	fl.StringVar(&f.Placement, "placement", "", "where the client runs, an axis: cross-node (default: a node of its own), same-node (beside the app's first pod; local)")
	fl.StringVar(&f.Arrivals, "arrivals", "", "open-loop spacing, an axis: constant (default), poisson (exponential gaps at the same mean rate, seeded per repetition)")
	fl.StringVar(&f.SendTick, "send-tick", "", "open loop, meshbench's engine: wake at most once per tick (100µs to 10ms) and send every request due by then together, as oha does with 1ms; latency still counts from each intended send time (default 0: each request at its own time)")
	fl.StringVar(&f.SampleInterval, "sample-interval", "", "resource sampling period (default 1s; kube: the metrics.k8s.io polling period, default 10s)")
	fl.StringVar(&f.Workers, "workers", "", "load generator pods per cell, the rate split among them (kube platform; default 1)")
	fl.StringVar(&f.Fault, "fault", "", "faults, an axis: none (default), "+fault.Syntax+" (local lab; kube: kill and cpu-limit only; a fault that means nothing for a mesh is skipped with the reason)")
	fl.StringVar(&f.Generator, "generator", "", "load generators, an axis: meshbench (default), oha, wrk2, vegeta, fortio (on the local lab their processes sampled as load; on a cluster from meshbench's image: vegeta and fortio by default, oha and wrk2 with meshbench image --extra)")
	fl.StringVar(&f.ReuseTopology, "reuse-topology", "", "true (default): within a round, run the cells of one topology on one running lab; false: a fresh lab per cell")
	fl.StringVar(&f.Baseline, "baseline", "", "mesh the others are compared with (default none)")
	fl.StringVar(&f.Compare, "compare", "", "axes to compare along: "+strings.Join(plan.CompareAxes, ", ")+" (default mesh)")
	fl.StringVar(&f.Confidence, "confidence", "", "confidence level (default 0.95)")
	bindBenchSearchFlags(fl, f)
	bindBenchAppFlags(fl, f)
	fl.StringVar(&f.resume, "resume", "", "resume the interrupted plan in this results directory")
	fl.StringVar(&f.out, "out", "", "results directory to create (default results/bench-TIME)")
	fl.StringVar(&f.envoyPath, "envoy", "", "Envoy binary (default: $MESHBENCH_ENVOY, .tools/envoy, PATH)")
	fl.StringVar(&f.Substrate, "substrate", "", "the local lab's network: netns (namespaces, the real ztunnel for ambient and waypoint; root, or an unprivileged user namespace when given explicitly), loopback (Envoy stands in for ztunnel), auto (default: netns when it runs every cell, else loopback)")
	fl.StringVar(&f.ControlPlane, "control-plane", "", "who configures the lab's proxies: lab (default: meshbench renders the sidecars' and ztunnels' configs, its stand-in serves Linkerd's proxies), istiod (the real istiod against a lab API server; netns substrate, mesh none, sidecar, ambient or waypoint; the gateway with sidecar, ambient or waypoint, not with none), "+
		"linkerd (Linkerd's real controllers against that API server; mesh none or linkerd), real (each mesh from its own) or auto (real for each mesh whose control plane is built here, as root on the netns substrate, else lab; the first line says which and why)")
	fl.StringVar(&f.BodySize, "body-size", "", "the static app's answer in bytes (default 615, nginx's welcome page; local platform)")
	fl.StringVar(&f.ztunnelPath, "ztunnel", "", "ztunnel binary for the netns substrate (default: $MESHBENCH_ZTUNNEL, .tools/ztunnel/ztunnel, ../shared/bin/ztunnel)")
	addLinkerdProxyFlag(fl, &f.linkerdProxyPath)
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no per-cell progress lines")
	fl.BoolVar(&f.components, "components", false, "stderr not a terminal: print every component's row in the view after each cell (default: the state line, the sums and the ratios)")
	fl.StringVar(&f.failOn, "fail-on", "", `conditions that fail the plan with exit 99 after its report, judged per configuration on the median of its valid runs, comma-separated, e.g. "p99>5ms,errors>0.1%"; metrics: `+strings.Join(threshold.Metrics, ", "))
	fl.IntVar(&f.loopbackNet, "loopback-net", 0, "second octet of the lab's addresses, 127.N.x.y (for tests)")
	_ = fl.MarkHidden("loopback-net")
	f.kube.add(cmd, kubeBench)
	return cmd
}

func runBench(ctx context.Context, env *Env, cmd *cobra.Command, f *benchFlags, args []string) error {
	if f.loopbackNet < 0 || f.loopbackNet > 255 {
		return usagef("--loopback-net %d: allowed: 0 to 255", f.loopbackNet)
	}
	if f.out != "" {
		if err := results.CheckNewDir(f.out); err != nil {
			return usagef("--out %v", err)
		}
	}
	var conds []threshold.Condition
	if cmd.Flags().Changed("fail-on") {
		var err error
		if conds, err = threshold.Parse(f.failOn); err != nil {
			return usagef("--fail-on: %v", err)
		}
	}
	var p *plan.Plan
	dir := f.out
	switch {
	case f.resume != "":
		if len(args) > 0 || cmd.Flags().NFlag() > flagCount(cmd, append(benchRunFlags, "resume")...) {
			return usagef("--resume %s: give no plan and no axes; the plan is read from the directory", f.resume)
		}
		data, err := os.ReadFile(filepath.Join(f.resume, "plan.yaml"))
		if err != nil {
			return usagef("--resume %s: not a plan results directory (%v)", f.resume, err)
		}
		if p, err = plan.Parse(filepath.Join(f.resume, "plan.yaml"), data); err != nil {
			return &UsageError{Err: err}
		}
		if _, err := results.ReadPlanManifest(f.resume); err != nil {
			return usagef("--resume %s: %v", f.resume, err)
		}
		dir = f.resume
	case len(args) == 1:
		if extra := flagsBut(cmd, append(benchRunFlags, "out", "seed")...); len(extra) > 0 {
			return usagef("%s: give the axes and settings in the plan file or as flags, not both (%s: set it in the plan file, docs/plans.md; beside a plan file only --out, --seed and the run flags)",
				args[0], strings.Join(extra, ", "))
		}
		data, err := os.ReadFile(args[0])
		if err != nil {
			return usagef("plan %s: %v", args[0], err)
		}
		if p, err = plan.Parse(args[0], data); err != nil {
			return &UsageError{Err: err}
		}
		if f.Seed != "" {
			s, err := strconv.ParseInt(f.Seed, 10, 64)
			if err != nil {
				return usagef("--seed %q: allowed: an integer", f.Seed)
			}
			p.Seed = &s
		}
	default:
		var err error
		if p, err = plan.FromFlags(f.Flags); err != nil {
			return &UsageError{Err: err}
		}
	}
	if p.Seed == nil {
		var b [8]byte
		_, _ = rand.Read(b[:])
		s := int64(binary.LittleEndian.Uint64(b[:]) >> 1)
		p.Seed = &s
	}
	if dir == "" {
		dir = filepath.Join("results", "bench-"+env.Now().Format("20060102-150405"))
	}
	onKube := p.Platform == plan.PlatformKube
	if !onKube {
		for _, name := range benchClusterFlags {
			if cmd.Flags().Changed(name) {
				return usagef("--%s: only with platform kube (the plan's platform is %s)", name, p.Platform)
			}
		}
	}
	if onKube {
		if errs := f.kube.checkSource(); len(errs) > 0 {
			return &UsageError{Err: errors.Join(errs...)}
		}
		if f.kube.appImage != "" && len(p.Axes.Payload) > 0 {
			return usagef("--app-image %s with axes.payload: the payload is meshbench's static app's answer (serve --body-size); an image runs as it is", f.kube.appImage)
		}
		if f.kube.appImage != "" && slices.Contains(p.Axes.LoadModels(), plan.LoadBulk) {
			return usagef("--app-image %s with load_model bulk: bulk reads meshbench's static app's endless answer (%s); an image has none", f.kube.appImage, loadgen.StreamPath)
		}
		for _, c := range p.Cells() {
			switch {
			case c.Fault.Kind == fault.SlowReplica && f.kube.appImage != "":
				return usagef("--app-image %s with axes.fault %s: allowed with meshbench's own app only (the slowed replicas serve its control API)", f.kube.appImage, c.Fault)
			case !c.Fault.Zero() && c.Mesh.App == topology.AppFaces && f.kube.facesChart:
				return usagef("axes.fault %s with app faces and the Faces chart: not yet (its pods are not meshbench's); use --faces-chart=false", c.Fault)
			}
		}
	}
	cfg := bench.Config{Plan: p, Dir: dir, Resume: f.resume != "", Version: Version, LoopbackNet: uint8(f.loopbackNet),
		EnvoyFlag: f.envoyPath, ZtunnelFlag: f.ztunnelPath, LinkerdProxyFlag: f.linkerdProxyPath,
		Kube: f.kube.bench(), FailOn: conds, Getenv: env.Getenv, Stdout: env.Stdout, Stderr: env.Stderr}
	if !f.quiet {
		started := time.Now()
		cfg.Watch = func(s bench.Start) bench.Observer {
			if s.Search {
				return &searchView{env: env, p: p, started: started, loopback: loopback(s)}
			}
			return benchWatch(env, s, f.components)
		}
	}
	return bench.Run(ctx, cfg)
}

// benchWatch is how bench shows a running plan's progress: a live view
// redrawn in place on a terminal; plain lines otherwise (a pipe, a dumb
// terminal, NO_COLOR).
func benchWatch(env *Env, s bench.Start, components bool) bench.Observer {
	if env.StderrIsTTY && env.Getenv("NO_COLOR") == "" && env.Getenv("TERM") != "dumb" {
		live := newLiveView(env, s.Cells, s.OnKube)
		live.outDir, live.loopback = s.Dir, loopback(s)
		if s.OnKube {
			live.st.MetricsSource = s.MetricsSource
		}
		live.start()
		return live
	}
	return &plainView{env: env, s: s, components: components}
}

// flagCount counts how many of names were set on the command line.
func flagCount(cmd *cobra.Command, names ...string) int {
	n := 0
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			n++
		}
	}
	return n
}

// flagsBut lists the flags given on cmd's command line other than names,
// as "--name".
func flagsBut(cmd *cobra.Command, names ...string) []string {
	var out []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if !slices.Contains(names, f.Name) {
			out = append(out, "--"+f.Name)
		}
	})
	return out
}

// plainView is the plain lines of a running plan (bench.Observer): one
// line per cell start and end, with the plan's progress and an estimate
// of the time left from the cells run so far, and one line per phase
// (sub-phases such as prepare/apps left out). It keeps the sampling rounds
// of the measured window and the drain: when the drain ends, the seed
// tool's view of them (internal/report/liveview) is printed as plain
// lines, the live view's content without cursor codes: its compact form
// (state line, sums, ratios; about 10 lines a cell in a long CI or demo
// log), or the whole frame with every component when components is set
// (--components). A cluster's lines go to stderr as they come.
type plainView struct {
	platform.ObserverBase
	env        *Env
	s          bench.Start
	components bool

	mu        sync.Mutex // phases start on the lab's goroutines
	ran       int
	cur       runner.Event
	rounds    []sample.Round
	nodes     []sample.NodeRound // a cluster cell's
	recording bool
}

// Cell prints a cell's start, with the time left, or its end.
func (v *plainView) Cell(ev runner.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.cur = ev
	if !ev.Done {
		eta := ""
		if v.ran > 0 {
			per := time.Since(v.s.Started) / time.Duration(v.ran)
			left := ev.Total - ev.Index + 1
			eta = fmt.Sprintf(", about %s left", (per * time.Duration(left)).Round(time.Second))
		}
		fmt.Fprintf(v.env.Stderr, "[%d/%d%s] %s: running\n", ev.Index, ev.Total, eta, ev.Cell.ID)
		return
	}
	v.ran++
	fmt.Fprintf(v.env.Stderr, "[%d/%d] %s: %s\n", ev.Index, ev.Total, ev.Cell.ID, cellEndText(ev, loopback(v.s)))
}

// Phase prints the phase, and the rounds kept when the drain has ended.
func (v *plainView) Phase(name string) {
	if strings.Contains(name, "/") {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintf(v.env.Stderr, "[%d/%d] %s: phase %s\n", v.cur.Index, v.cur.Total, v.cur.Cell.ID, name)
	switch name {
	case "measure":
		v.recording, v.rounds, v.nodes = true, nil, nil
	case "drain":
	default:
		if v.recording && len(v.rounds) > 0 {
			st := liveview.State{Time: v.env.Now(), Phase: "drain", Output: results.CellDir(v.s.Dir, v.cur.Cell.ID) + ".partial",
				Rounds: v.rounds, Memory: "PSS"}
			if v.s.OnKube {
				st.Memory, st.MetricsSource = "working set", v.s.MetricsSource
				st.Nodes = liveview.NodesOf(v.nodes)
			}
			render := liveview.Compact
			if v.components {
				render = liveview.Render
			}
			fmt.Fprintln(v.env.Stderr, strings.Join(render(st), "\n"))
		}
		v.recording, v.rounds, v.nodes = false, nil, nil
	}
}

// Round keeps a round of the measured window or the drain.
func (v *plainView) Round(r sample.Round) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.recording {
		v.rounds = append(v.rounds, r)
	}
}

// NodeRound keeps a cluster's node round of the measured window or the
// drain.
func (v *plainView) NodeRound(r sample.NodeRound) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.recording {
		v.nodes = append(v.nodes, r)
	}
}

// Log is stderr.
func (v *plainView) Log() io.Writer { return v.env.Stderr }

// Finish prints nothing more.
func (v *plainView) Finish() {}

// loopback reports whether a plan's cells run on the lab's loopback
// substrate, where Envoy stands in for ztunnel.
func loopback(s bench.Start) bool { return !s.OnKube && s.Substrate == bench.SubstrateLoopback }

// cellEndText is how a cell ended: its rate, p50, p99 and success, or why
// it failed or is invalid; on the loopback substrate, with the mesh's
// label when Envoy stands in for its proxy.
func cellEndText(ev runner.Event, loopback bool) string {
	line := ""
	switch {
	case ev.Status.State == "failed":
		line += "FAILED: " + ev.Status.Error
	case ev.Result != nil && ev.Result.Load != nil:
		lr := ev.Result.Load
		lat, _, _, err := lr.Histograms()
		if err == nil && lat.Count() > 0 {
			line += fmt.Sprintf("%.1f/s, p50 %.3fms p99 %.3fms, %.2f%% ok", lr.AchievedRatePerSec(),
				float64(lat.Percentile(50))/1e6, float64(lat.Percentile(99))/1e6, lr.SuccessRatio()*100)
		}
		if !ev.Status.Valid {
			line += "; INVALID: " + strings.Join(ev.Status.Invalid, "; ")
		}
	}
	if mode := ev.Cell.Settings.Mesh.Mode; loopback {
		if label := analysis.MeshLabel(string(mode), bench.SubstrateLoopback); label != string(mode) {
			line += " [" + label + "]"
			return line
		}
	}
	// Who configured the proxies, as the cell's manifest recorded it.
	if ev.Result != nil {
		if cp := analysis.CellControlPlane(ev.Result.Manifest); cp != "" {
			line += " [configs: " + cp + "]"
		}
	}
	return line
}
