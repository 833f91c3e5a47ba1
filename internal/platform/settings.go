package platform

import (
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/workload"
)

// Settings are one cell's settings, one type for every platform: the
// topology, the load, and how the cell is sampled and judged. They are
// built in one place, plan.Plan.Settings, from a plan's cell or from
// `meshbench run`'s flags (run is a plan of one cell), and every platform
// takes them as they are (local.Options and kube.Options embed them). A
// platform ignores what it cannot do yet (the lab runs one load
// generator; the cluster runs its own images, so the app's settings are
// the lab's); the plan and run's flags refuse those first.
//
// A new setting is a field here, its line in plan.Plan.Settings and, when
// results record it, in Record.
type Settings struct {
	// Mesh is the topology to run (mesh mode, app, replicas, nodes,
	// policies, protocol, gateway, mTLS; LoopbackNet is the lab's).
	Mesh topology.Options
	// Load is the load offered: an open-loop rate or loadgen.ClosedLoop.
	Load loadgen.Load
	// Generator is the load generator (`meshbench load --generator`): ""
	// or "meshbench" for meshbench's engine, else an external tool
	// (extgen.Names). On the lab `meshbench load` runs it as its child and
	// its processes are sampled as load too.
	Generator string
	Duration  time.Duration // measured window
	Warmup    time.Duration // load before the window, not counted
	Timeout   time.Duration // per request (0: 10 s)
	// Connections is the load generator's connection count (0:
	// loadgen.DefaultConnections; on the lab at least one per target).
	Connections int
	// RequestsPerConnection closes each load connection after this many
	// requests (loadgen.Config.RequestsPerConnection; 1: a new connection
	// per request); 0 keeps them.
	RequestsPerConnection int
	// Arrivals spaces an open loop's requests (loadgen.Arrivals; ""
	// constant), ArrivalsSeed draws a Poisson schedule: the same seed for
	// every mesh of a repetition, so they meet the same bursts.
	Arrivals     loadgen.Arrivals
	ArrivalsSeed uint64
	// SendTick lets the open loop's pacer of meshbench's engine wake at
	// most once per tick (loadgen.Config.SendTick, `meshbench load
	// --send-tick`); 0: each request at its own time. Set only on cells
	// it applies to (plan.Plan.Settings).
	SendTick time.Duration
	// Workers is the number of load pods on a cluster (a Job's
	// parallelism; 0: 1); the rate and connections are split among them.
	// The lab runs one load generator.
	Workers int
	// SampleInterval is the sampling period: /proc on the lab (0: 1 s),
	// metrics.k8s.io on a cluster (0: 10 s).
	SampleInterval time.Duration
	// PSSEvery reads PSS (smaps_rollup, ~1.3 ms of CPU per Envoy) every
	// this many sampling rounds on the lab; CPU and RSS are read every
	// round. 0 or less: about every 5 s, sample.PSSEveryFor(SampleInterval,
	// sample.DefaultPSSPeriod).
	PSSEvery int
	// Drain is the sampling after the load ends. On the lab it lasts this
	// long (0: 2 s); on a cluster it is the most (the metrics API lags),
	// ending once the app is idle again, 0 for none (see kube.Options).
	Drain time.Duration
	// LoadCPUMax is the lab's load generator's CPU, as a fraction of one
	// core, above which the run counts as CPU-starved and invalid (0:
	// local.DefaultLoadCPUMax).
	LoadCPUMax float64
	// RateShortfall is the fraction of its schedule an open-loop run may
	// fall short by before it is invalid (0:
	// results.RateShortfallTolerance).
	RateShortfall float64
	// ErrorRatio is the fraction of failed requests above which a run is
	// invalid (0: results.DefaultErrorRatio).
	ErrorRatio float64
	// AppConcurrency and AppServiceTime bound every app replica on the lab
	// (`meshbench serve --concurrency --service-time`, workload.Config):
	// at most AppConcurrency requests in service at once, each for
	// AppServiceTime, the rest queued; 0 leaves the apps unbounded. A
	// known capacity for capacity searches: replicas × concurrency /
	// service time.
	AppConcurrency int
	AppServiceTime time.Duration
	// BodySize is the lab's static app's answer in bytes (`meshbench
	// serve --body-size`), 1 to workload.MaxBodySize; 0:
	// workload.DefaultBodySize (615, nginx's welcome page). The faces app
	// ignores it.
	BodySize int
	// AppFaults are the workload options of every app replica on the lab
	// (`meshbench serve --delay --delay-dist --error-ratio --error-status
	// --stall-every --stall-for --seed`): a service time and failures
	// behind the mesh. The zero value adds none. ErrorStatus applies to
	// static apps only (gRPC apps answer UNAVAILABLE).
	AppFaults workload.Faults
	// Hops turns hop timing on (the lab): every Envoy logs each request
	// with its µs timings (hops.LogFormat), the load gives every request
	// an id and logs it, and the cell joins them into a per-hop
	// attribution. Off by default: the logging costs CPU.
	Hops bool
	// Fault is what goes wrong on purpose inside the measured window
	// (fault.Parse: kill:PART, cpu-limit:PART=M, slow-replica:N=DELAY,
	// noisy-neighbour:M, at a time from the window's start), undone when
	// the load ends; the zero value is none. The lab only, so far.
	Fault fault.Fault
}

// Record is s as every platform records it in a run manifest's options
// (results.CellSettings), for the topology as planned (m: the platform's
// form of s.Mesh). The durations are those the platform ran with, its
// defaults filled in. A platform adds its own keys beside them
// (Substrate, Generator and the platform's extra keys).
func (s Settings) Record(m topology.Options) results.CellSettings {
	return results.CellSettings{
		Mesh: string(m.Mode), App: string(m.App), Replicas: m.Replicas, Nodes: m.Nodes,
		Policies: m.Policies, Gateway: m.Gateway, Protocol: string(m.Protocol), MTLS: m.MTLS,
		Rate: s.Load.RateText(), ClosedLoop: s.Load.Closed(), Duration: s.Duration.String(), Warmup: s.Warmup.String(),
		Connections: s.Connections, SampleInterval: s.SampleInterval.String(), Drain: s.Drain.String(),
		Fault: faultText(s.Fault),
		Bulk:  s.Load.Bulk(), Payload: s.BodySize, ProxyThreads: m.ProxyThreads, Placement: string(m.Placement),
		RequestsPerConnection: s.RequestsPerConnection, Arrivals: string(s.Arrivals), SendTick: durationText(s.SendTick),
	}
}

// durationText is d as recorded, "" for 0.
func durationText(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return d.String()
}

// faultText is f as recorded, "" for none.
func faultText(f fault.Fault) string {
	if f.Zero() {
		return ""
	}
	return f.String()
}
