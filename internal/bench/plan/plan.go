package plan

import (
	"fmt"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/workload"
)

// Plan is a benchmark plan with every default filled in. Parse and
// FromFlags return only valid plans; Cells, Skipped and Order expand it.
type Plan struct {
	// Name labels the plan: [A-Za-z0-9._-], at most 64 characters; "" for
	// none.
	Name string
	// Platform runs the cells: PlatformLocal or PlatformKube.
	Platform string
	// Seed orders the cells (Order). nil: the runner picks one and sets it
	// here before writing the plan manifest (YAML), so it is recorded.
	Seed *int64
	// Repetitions is how many times every configuration runs, at least 1.
	Repetitions int
	// Axes are the values crossed into configurations.
	Axes Axes
	// Nodes is the number of app nodes of every topology (topology.Options.Nodes).
	Nodes int
	// Duration is every cell's measured window, above 0.
	Duration time.Duration
	// Warmup is the load before the window, not counted, 0 or more.
	Warmup time.Duration
	// Drain is the sampling after the load ends, 0 or more.
	Drain time.Duration
	// Connections is the load generator's connection count, at least 1.
	Connections int
	// SampleInterval is the /proc sampling period, above 0.
	SampleInterval time.Duration
	// PSSEvery reads PSS every this many sampling rounds; 0: about every 5 s
	// (local.Options.PSSEvery).
	PSSEvery int
	// ReuseTopology runs the cells of one topology (same mesh options,
	// other rates) on one running lab within each round instead of
	// bringing a lab up and down for every cell (see Order).
	ReuseTopology bool
	// Substrate is the local lab's network for every cell: SubstrateAuto,
	// SubstrateNetns or SubstrateLoopback (never mixed within a plan).
	Substrate string
	// ControlPlane is who configures the lab's proxies: ControlPlaneLab
	// (meshbench's hand-rendered Envoy configs, its stand-in for
	// Linkerd's), ControlPlaneIstiod (the real istiod against a lab API
	// server; netns substrate, sidecar cells), ControlPlaneLinkerd
	// (Linkerd's real controllers there; linkerd cells), ControlPlaneReal
	// (each mesh from its own) or ControlPlaneAuto (real where built here,
	// else lab; chosen when the plan starts).
	ControlPlane string
	// Baseline is the mesh mode the others are compared with; one of
	// Axes.Mesh, or "" for none: the default, none, where the mesh axis
	// has no none (the meshes are then compared with each other and along
	// the plan's other axes, never refused).
	Baseline topology.Mode
	// Workers is the number of load generator pods of every cell on
	// PlatformKube (the rate and connections are split among them); 1 on
	// PlatformLocal.
	Workers int
	// Thresholds decide when a run is invalid.
	Thresholds Thresholds
	// Compare names the axes compared along (CompareAxes), mesh alone by
	// default.
	Compare []string
	// Confidence is the level of the comparisons' intervals, between 0 and
	// 1 exclusive (0.95: 95%).
	Confidence float64
	// Search, when not nil, makes the plan a capacity search: per
	// configuration and repetition, the highest open-loop rate meeting
	// an objective (the rate axis is then unused; see Searches).
	Search *Search
	// AppConcurrency and AppServiceTime bound every app replica (`meshbench
	// serve --concurrency --service-time`): a server of known capacity,
	// replicas × concurrency / service time. 0: unbounded. Local only.
	AppConcurrency int
	AppServiceTime time.Duration
	// BodySize is the static app's answer in bytes (`meshbench serve
	// --body-size`); 0: its default, 615 (nginx's welcome page). Local
	// only, static app only.
	BodySize int
	// AppFaults are every app replica's workload options (app_delay,
	// app_delay_dist, app_error_ratio, app_error_status, app_stall_every,
	// app_stall_for, app_seed: `meshbench serve --delay …`). Zero: none.
	// Local only.
	AppFaults workload.Faults
	// Hops turns hop timing on in every cell (`run --hops`): per-hop
	// waterfalls at a measured CPU cost. Local only.
	Hops bool
	// SendTick lets the open loop's pacer of meshbench's engine wake at
	// most once per tick and send every request due by then together
	// (send_tick, `--send-tick`; loadgen.Config.SendTick): 0 (the
	// default) or loadgen.MinSendTick to loadgen.MaxSendTick. It applies
	// to the cells it can (open loop, meshbench's engine); the others run
	// without it, and only the cells it applied to record it.
	SendTick time.Duration
	// Timeout is every request's timeout: `run --timeout` in the plan of
	// run's one cell. Plan files have no key for it: 0, the platforms'
	// 10 s, or a capacity search's ProbeTimeout.
	Timeout time.Duration
}

// Axes are the lists a plan crosses. Each list holds distinct values, in
// the order written.
type Axes struct {
	Mesh     []topology.Mode
	App      []topology.App
	Rate     []Rate
	Replicas []int // pods of every app service, at least 1
	Policies []int // L4 ALLOW rules, 0 to topology.MaxPolicies
	Protocol []topology.Protocol
	Gateway  []bool
	MTLS     []bool
	// Generator lists the load generators every configuration is
	// measured by (`meshbench load --generator`): meshbench (its own
	// engine, the default), oha, wrk2, vegeta and fortio: on PlatformLocal
	// LocalGenerators, on PlatformKube those meshbench's image can hold
	// (Generators: vegeta and fortio by default, oha and wrk2 with
	// --extra). Like the rate, it does not change the topology.
	Generator []string
	// Fault lists the faults every configuration runs with
	// (fault.Parse; the zero Fault, "none", is a cell without one): each
	// inside the measured window at its time, undone when the load ends.
	// Like the rate, it does not change the topology. Local only.
	Fault []fault.Fault

	// The axes below are nil when the plan does not list them: the
	// plan-wide setting applies and cell IDs have no part for them.

	// Connections lists the load generator's connection counts, each at
	// least 1 (the plan-wide Connections otherwise).
	Connections []int
	// Payload lists the static app's answer sizes in bytes, 1 to
	// workload.MaxBodySize (BodySize otherwise). A payload changes the
	// app, so the lab's topology.
	Payload []int
	// ProxyThreads lists every proxy's worker threads
	// (topology.Options.ProxyThreads), 1 to topology.MaxProxyThreads.
	ProxyThreads []int
	// RequestsPerConnection lists how many requests each connection
	// carries before a new one is opened: 0 keeps every connection, 1 is
	// a new connection per request (netperf's TCP_CRR with the closed
	// loop).
	RequestsPerConnection []int
	// Placement lists where the client runs relative to the app
	// (topology.Placement).
	Placement []topology.Placement
	// Arrivals lists the open loop's spacings (loadgen.Arrivals).
	Arrivals []loadgen.Arrivals
}

// Thresholds decide when a run is invalid. Each is a fraction.
type Thresholds struct {
	// RateShortfall: an open-loop run that sent fewer than (1 −
	// RateShortfall) × its scheduled requests is invalid; 0 to 1 exclusive.
	RateShortfall float64
	// Errors: a run whose failed requests exceed this fraction of its
	// requests is invalid; 0 to 1.
	Errors float64
	// LoadCPU: a run whose load generator averaged more than this fraction
	// of one core is CPU-starved and invalid; above 0, at most 1.
	LoadCPU float64
}

// FileSchema is the version of the plan file format: the value of a plan
// file's optional "schema" key (YAML writes it first; schema/ holds the
// format as a JSON Schema, plan-file.v1.schema.json, for editors). Files
// without the key are read as this version.
const FileSchema = "meshbench.plan-file/v1"

// Who configures the local lab's sidecars (Plan.ControlPlane).
const (
	ControlPlaneLab    = "lab"
	ControlPlaneIstiod = "istiod"
	// ControlPlaneLinkerd: Linkerd's own controllers configure the lab's
	// Linkerd proxies (mode linkerd) instead of meshbench's stand-in.
	ControlPlaneLinkerd = "linkerd"
	// ControlPlaneReal: every mesh from its own real control plane
	// (istiod for sidecar, ambient, waypoint; Linkerd's for linkerd).
	ControlPlaneReal = "real"
	// ControlPlaneAuto: real for each mesh whose control plane is built
	// here (as root, on the netns substrate), the lab's own for the
	// others; the run's first line and manifests say which and why.
	ControlPlaneAuto = "auto"
)

// The local lab's substrates (Plan.Substrate).
const (
	// SubstrateAuto is netns where namespaces can be made and run every
	// cell of the plan, else loopback.
	SubstrateAuto = "auto"
	// SubstrateNetns runs nodes and pods as network namespaces, with
	// Istio's real ztunnel as the ambient node proxy.
	SubstrateNetns = "netns"
	// SubstrateLoopback runs every process on 127.0.N.x, Envoy standing
	// in for ztunnel.
	SubstrateLoopback = "loopback"
)

// The platforms a plan runs on.
const (
	// PlatformLocal is the local lab: processes on loopback "nodes".
	PlatformLocal = "local"
	// PlatformKube is a Kubernetes cluster from a kubeconfig
	// (internal/platform/kube); the mesh axis takes linkerd there too.
	PlatformKube = "kube"
)

// Generators are the load generators a plan on PlatformKube can use: those
// meshbench's image holds (extgen.Names).
var Generators = extgen.Names

// KubeDrain is the drain's maximum on PlatformKube when none is given:
// DefaultKubeDrain, the seed tool's 60 s, or three sample periods when
// that is longer. The metrics API lags the load: with metrics-server's
// 15 s resolution a sample whose window starts after the load's end is
// served up to two scrapes (30 s) after it, plus a polling period; the run
// ends the drain as soon as a fresh sample shows the app idle again.
func KubeDrain(sampleInterval time.Duration) time.Duration {
	return max(DefaultKubeDrain, 3*sampleInterval)
}

// DefaultRate is the rate axis without a value: 100 requests per second.
var DefaultRate = RatePerSecond(100)

// LocalGenerators are those the local lab runs: meshbench's engine, or a
// tool `meshbench load` runs as its child, sampled as load
// (extgen.LoadNames).
var LocalGenerators = extgen.LoadNames

// DefaultGenerator is meshbench's own engine.
const DefaultGenerator = extgen.Meshbench

// Limits and defaults.
const (
	// MaxCells bounds a plan: at about 20 s a cell, 10000 cells are more
	// than two days of runs.
	MaxCells = 10000

	DefaultRepetitions    = 3
	DefaultNodes          = 1
	DefaultDuration       = 10 * time.Second
	DefaultWarmup         = 2 * time.Second
	DefaultDrain          = 2 * time.Second
	DefaultConnections    = loadgen.DefaultConnections
	DefaultSampleInterval = time.Second
	DefaultConfidence     = 0.95
	DefaultRateShortfall  = 0.002 // results.RateShortfallTolerance
	DefaultErrors         = 0.01
	DefaultLoadCPU        = 0.9 // local.DefaultLoadCPUMax

	// On PlatformKube: metrics.k8s.io's period (metrics-server's default
	// resolution is 15 s, its minimum 10 s), and the drain's maximum
	// (KubeDrain).
	DefaultKubeSampleInterval = 10 * time.Second
	DefaultKubeDrain          = 60 * time.Second
	MaxWorkers                = 1000
)

// Defaults returns the plan that an empty file gives: every mesh mode,
// the static app at 100 requests per second, 1 replica, no policies,
// HTTP, mTLS, no gateway, 3 repetitions of 10 s (see the package doc).
func Defaults() *Plan {
	return &Plan{
		Platform:    PlatformLocal,
		Repetitions: DefaultRepetitions,
		Axes: Axes{
			Mesh:      append([]topology.Mode(nil), topology.Modes...),
			App:       []topology.App{topology.AppStatic},
			Rate:      []Rate{DefaultRate},
			Replicas:  []int{1},
			Policies:  []int{0},
			Protocol:  []topology.Protocol{topology.ProtocolHTTP},
			Gateway:   []bool{false},
			MTLS:      []bool{true},
			Generator: []string{DefaultGenerator},
		},
		Nodes:          DefaultNodes,
		Duration:       DefaultDuration,
		Warmup:         DefaultWarmup,
		Drain:          DefaultDrain,
		Connections:    DefaultConnections,
		SampleInterval: DefaultSampleInterval,
		Workers:        1,
		ReuseTopology:  true,
		Substrate:      SubstrateAuto,
		ControlPlane:   ControlPlaneLab,
		Baseline:       topology.ModeNone,
		Thresholds:     Thresholds{RateShortfall: DefaultRateShortfall, Errors: DefaultErrors, LoadCPU: DefaultLoadCPU},
		Confidence:     DefaultConfidence,
		Compare:        []string{"mesh"},
	}
}

// Rate is one value of the rate axis: the load a cell offers, an
// open-loop rate or the closed loop (loadgen.ClosedLoop), parsed once from the plan
// or the flags and handed typed to the platforms (Load). String is its
// canonical text, the "r…" of cell IDs and the scenario's rate ("50",
// "33.3", "max"). The zero Rate stands for a capacity search's rate, which
// its probes vary ("search" in configuration IDs).
type Rate struct{ load loadgen.Load }

// RateOf is the rate axis's value offering l: RateOf(loadgen.ClosedLoop)
// for the closed loop, where every connection sends when its last answer
// arrives.
func RateOf(l loadgen.Load) Rate { return Rate{l} }

// RatePerSecond is the open-loop rate of n requests per second.
func RatePerSecond(n uint64) Rate {
	return Rate{loadgen.OpenLoopPerSecond(n)}
}

// Load is the load r offers, as the platforms take it.
func (r Rate) Load() loadgen.Load { return r.load }

// Closed reports whether r is the closed loop.
func (r Rate) Closed() bool { return r.load.Closed() }

// Bulk reports whether r is bulk throughput (load_model: bulk).
func (r Rate) Bulk() bool { return r.load.Bulk() }

// PerSecond returns the open-loop rate in requests per second, 0 for
// the closed loop and bulk.
func (r Rate) PerSecond() float64 { return r.load.PerSecond() }

// String is r's canonical text: "max", the rate's shortest decimal, or
// "search" for the zero Rate.
func (r Rate) String() string {
	if r.load.IsZero() {
		return "search"
	}
	return r.load.String()
}

// rateAllowed is what the rate axis takes.
var rateAllowed = fmt.Sprintf("allowed: positive numbers (requests per second, at most %d) or max", maxRatePerSec)

// maxRatePerSec is loadgen's bound, for the message.
const maxRatePerSec = 10_000_000

// parseRate reads one rate value: "max", or a positive decimal number of
// requests per second that loadgen.ParseLoad accepts (no unit: the axis is
// per second).
func parseRate(s string) (Rate, bool) {
	if s == "" || s == loadgen.BulkText || strings.ContainsAny(s, "/ \t") {
		return Rate{}, false
	}
	l, err := loadgen.ParseLoad(s)
	if err != nil {
		return Rate{}, false
	}
	return Rate{l}, true
}
