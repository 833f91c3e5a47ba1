package plan

import (
	"time"

	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
)

// Settings are cell c's settings as every platform takes them: the one
// place a cell's settings are built, for a plan's cells, a capacity
// search's probes (c from Searches; each probe sets its Load) and
// `meshbench run` (a plan of one cell, built from its flags). A new
// setting is a field of platform.Settings and its line here.
func (p *Plan) Settings(c Cell) platform.Settings {
	timeout := p.Timeout
	if timeout == 0 && p.Search != nil {
		timeout = ProbeTimeout(p.Search.Objective)
	}
	s := platform.Settings{
		Mesh: c.Mesh, Load: c.Rate.Load(), Generator: c.Generator, Fault: c.Fault,
		Duration: p.Duration, Warmup: p.Warmup, Timeout: timeout, Connections: p.Connections, Workers: p.Workers,
		SampleInterval: p.SampleInterval, PSSEvery: p.PSSEvery, Drain: p.Drain,
		LoadCPUMax: p.Thresholds.LoadCPU, RateShortfall: p.Thresholds.RateShortfall, ErrorRatio: p.Thresholds.Errors,
		AppConcurrency: p.AppConcurrency, AppServiceTime: p.AppServiceTime, BodySize: p.BodySize, AppFaults: p.AppFaults,
		Hops:                  p.Hops,
		RequestsPerConnection: c.Load.RequestsPerConnection, Arrivals: c.Load.Arrivals,
	}
	if p.SendTick > 0 && c.Rate.open() && (c.Generator == "" || c.Generator == DefaultGenerator) {
		s.SendTick = p.SendTick
	}
	if c.Load.Connections > 0 {
		s.Connections = c.Load.Connections
	}
	if c.Payload > 0 && c.Mesh.App != topology.AppFaces {
		s.BodySize = c.Payload
	}
	if s.Arrivals == loadgen.ArrivalsPoisson {
		// One schedule per repetition, the same for every configuration
		// of it: the meshes meet the same bursts.
		s.ArrivalsSeed = uint64(max(c.Repetition, 1))
	}
	return s
}

// ProbeTimeout is a probe's per-request timeout when none is given: four
// times the objective's largest latency limit, at least 1 s (a shared
// machine stalls a process for tens of ms, which must not count as
// errors), at most 2 s. A saturated target then costs a probe at most
// about that much beyond its window, and a request slower than the
// timeout misses a latency objective anyway.
func ProbeTimeout(o slo.Objective) time.Duration {
	var m time.Duration
	for _, b := range o.Latency {
		m = max(m, b.Limit)
	}
	if m == 0 {
		return 2 * time.Second
	}
	return min(max(4*m, time.Second), 2*time.Second)
}
