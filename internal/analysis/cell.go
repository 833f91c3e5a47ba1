// Package analysis turns a plan results directory into answers: figures per
// cell, medians with confidence intervals across repetitions, comparisons
// against a baseline mesh, scaling fits. It is a pure function of the raw
// files (load.json, resources.json, manifest.json of every cell): reports
// can always be regenerated from the directory.
package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
)

// Config is what a cell measured, repetition aside: cells with the same
// Config are repetitions of one measurement.
type Config struct {
	Mesh     string `json:"mesh"`
	App      string `json:"app"`
	Rate     string `json:"rate"` // as asked: "50", or "max" for closed loop
	Replicas int    `json:"replicas"`
	Policies int    `json:"policies"`
	Protocol string `json:"protocol"`
	Gateway  bool   `json:"gateway"`
	MTLS     bool   `json:"mtls"`
	// Generator is the external load generator that measured the cells
	// ("vegeta", "fortio", …); "" for meshbench's own engine.
	Generator string `json:"generator,omitempty"`
	// Fault is the cell's fault ("kill:node-proxy@3s"); "" for none.
	Fault string `json:"fault,omitempty"`
	// Params are the later axes' values (connections, payload, …).
	Params
}

// Params are a config's values of the axes added after the first ten,
// each zero when not recorded or when every cell of the set has the same
// value (Analyze folds those: a setting that does not vary is no factor,
// and labels stay as they were before the axes).
type Params struct {
	Connections           int    `json:"connections,omitempty"`
	Payload               int    `json:"payload,omitempty"`
	ProxyThreads          int    `json:"proxy_threads,omitempty"`
	RequestsPerConnection int    `json:"requests_per_connection,omitempty"`
	Placement             string `json:"placement,omitempty"`
	Arrivals              string `json:"arrivals,omitempty"`
}

// key is p's part of a scenario key: "" when every value is zero.
func (p Params) key() string {
	if p == (Params{}) {
		return ""
	}
	return fmt.Sprintf("|c%d|b%d|t%d|k%d|%s|%s", p.Connections, p.Payload, p.ProxyThreads, p.RequestsPerConnection, p.Placement, p.Arrivals)
}

// words are p's values as a label's parts: ", 64 connections, 1024 B, 2
// proxy threads, a connection per request, poisson arrivals".
func (p Params) words() string {
	var out string
	if p.Connections > 0 {
		out += ", " + plural(p.Connections, "connection")
	}
	if p.Payload > 0 {
		out += fmt.Sprintf(", %d B answers", p.Payload)
	}
	if p.ProxyThreads > 0 {
		out += ", " + plural(p.ProxyThreads, "proxy thread")
	}
	switch k := p.RequestsPerConnection; {
	case k == 1:
		out += ", a connection per request"
	case k > 1:
		out += fmt.Sprintf(", a connection per %d requests", k)
	}
	if p.Placement != "" {
		out += ", " + p.Placement
	}
	if p.Arrivals != "" {
		out += ", " + p.Arrivals + " arrivals"
	}
	return out
}

// Key identifies the Config.
func (c Config) Key() string {
	return c.Mesh + "|" + c.Scenario().Key()
}

// Scenario is the Config without its mesh: the meshes of one scenario are
// compared with each other.
func (c Config) Scenario() Scenario {
	return Scenario{App: c.App, Rate: c.Rate, Replicas: c.Replicas, Policies: c.Policies, Protocol: c.Protocol, Gateway: c.Gateway, MTLS: c.MTLS, Generator: c.Generator, Fault: c.Fault,
		Params: c.Params}
}

// Scenario is a Config without its mesh.
type Scenario struct {
	App      string `json:"app"`
	Rate     string `json:"rate"`
	Replicas int    `json:"replicas"`
	Policies int    `json:"policies"`
	Protocol string `json:"protocol"`
	Gateway  bool   `json:"gateway"`
	MTLS     bool   `json:"mtls"`
	// Generator: "" for meshbench's own engine (Config.Generator).
	Generator string `json:"generator,omitempty"`
	// Fault: "" for none (Config.Fault).
	Fault string `json:"fault,omitempty"`
	Params
}

// Config is s on mesh m.
func (s Scenario) Config(m string) Config {
	return Config{Mesh: m, App: s.App, Rate: s.Rate, Replicas: s.Replicas, Policies: s.Policies, Protocol: s.Protocol, Gateway: s.Gateway,
		MTLS: s.MTLS, Generator: s.Generator, Fault: s.Fault, Params: s.Params}
}

// Key identifies the scenario.
func (s Scenario) Key() string {
	k := fmt.Sprintf("%s|%s|%d|%d|%s|%v|%v", s.App, s.Rate, s.Replicas, s.Policies, s.Protocol, s.Gateway, s.MTLS)
	if s.Generator != "" {
		k += "|" + s.Generator
	}
	if s.Fault != "" {
		k += "|fault " + s.Fault
	}
	return k + s.Params.key()
}

// String is a short human label: "static, 50 rps, 10 replicas, 4 policies".
func (s Scenario) String() string {
	out := s.App + ", "
	switch s.Rate {
	case loadgen.ClosedLoopText:
		out += "closed loop"
	case loadgen.BulkText:
		out += "bulk"
	default:
		out += s.Rate + " rps"
	}
	out += fmt.Sprintf(", %d replica", s.Replicas)
	if s.Replicas != 1 {
		out += "s"
	}
	if s.Policies > 0 {
		out += fmt.Sprintf(", %d policies", s.Policies)
	}
	if s.Protocol != "" && s.Protocol != "http" {
		out += ", " + s.Protocol
	}
	if s.Gateway {
		out += ", gateway"
	}
	if !s.MTLS {
		out += ", no mTLS"
	}
	out += s.Params.words()
	if s.Generator != "" {
		out += ", by " + s.Generator
	}
	if s.Fault != "" {
		out += ", fault " + s.Fault
	}
	return out
}

// Figure names. Latencies are in ms, CPU in millicores, memory in MiB
// (PSS on the local lab), rates per second.
const (
	LatencyP50   = "latency_p50_ms"
	LatencyP90   = "latency_p90_ms"
	LatencyP95   = "latency_p95_ms"
	LatencyP99   = "latency_p99_ms"
	LatencyP999  = "latency_p99.9_ms"
	LatencyMax   = "latency_max_ms"
	LatencyMean  = "latency_mean_ms"
	AchievedRate = "achieved_rps"
	// ThroughputGbps is a bulk cell's figure (load_model bulk): body bits
	// received per second of the measured window, in Gb/s; a bulk cell
	// has no AchievedRate (its "requests" are its streams).
	ThroughputGbps = "throughput_gbps"
	// CPUPerGbpsPrefix is a bulk cell's CPU per Gb/s of throughput, per
	// category and TOTAL: "cpu_m_per_gbps:data-plane".
	CPUPerGbpsPrefix = "cpu_m_per_gbps:"
	// ConnectionRate is a cell's connections completed per second when
	// every request had a connection of its own (requests_per_connection
	// 1, netperf's TCP_CRR): its achieved rate, named for what it is.
	ConnectionRate = "connections_per_sec"
	// The kernel's CPU over the measured window, millicores (the lab's
	// manifest, sample.KernelBetween): the whole machine's system, irq
	// and softirq time; its softirq part; the part no sampled process was
	// charged with, and that per 1000 achieved rps.
	KernelNodeCPU           = sample.KernelNodeCPU
	KernelSoftIRQCPU        = sample.KernelSoftIRQCPU
	KernelOutsideCPU        = sample.KernelOutsideCPU
	KernelOutsideCPUPer1000 = "kernel_outside_cpu_m_per_1000rps"
	// On a cluster (its node readers, sample.NodeKernelOver), summed over
	// its machines: the pods' system time, the kernel time outside every
	// pod (the kubelet's, the runtime's and kube-proxy's included), and
	// that per 1000 achieved rps.
	KernelPodsSystemCPU         = sample.KernelPodsSystemCPU
	KernelOutsidePodsCPU        = sample.KernelOutsidePodsCPU
	KernelOutsidePodsCPUPer1000 = "kernel_outside_pods_cpu_m_per_1000rps"
	SuccessRatio                = "success_ratio"
	// Per category: "cpu_m:data-plane", "mem_mib:app", …; TOTAL too.
	CPUPrefix = "cpu_m:"
	MemPrefix = "mem_mib:"
	// Per component: "cpu_m:component:server sidecar".
	ComponentInfix = "component:"
	// Data plane per 1000 achieved rps and per app pod
	// (sample.DataPlaneFigures).
	DataPlaneCPUPer1000 = sample.DataPlaneCPUPer1000
	DataPlaneMemPer1000 = sample.DataPlaneMemPer1000
	DataPlaneMemPerPod  = sample.DataPlaneMemPerPod
	DataPlaneCPUToApp   = sample.DataPlaneCPUToApp
	DataPlaneMemToApp   = sample.DataPlaneMemToApp
	// The sidecar-debate seed's ratios, in percent: the mesh (data plane
	// and control plane) and the data plane alone over the non-mesh part
	// (app and load), CPU and memory; smaller is better. Only cells with a
	// data plane have them.
	MeshCPURatio      = "mesh_cpu_ratio_pct"
	MeshMemRatio      = "mesh_mem_ratio_pct"
	DataPlaneCPURatio = "data_plane_cpu_ratio_pct"
	DataPlaneMemRatio = "data_plane_mem_ratio_pct"
)

// PercentileFigures are the latency figures that are percentiles, with
// their percentile: a cell leaves out those its samples do not resolve
// (latency.Resolves), and reports show them as "= max".
var PercentileFigures = map[string]float64{LatencyP50: 50, LatencyP90: 90, LatencyP95: 95, LatencyP99: 99, LatencyP999: 99.9}

// SpectrumPercentiles are the percentiles a cell's latency spectrum keeps.
var SpectrumPercentiles = []float64{0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100}

// Cell is one finished cell, read back from its directory.
type Cell struct {
	ID      string   `json:"id"`
	Dir     string   `json:"-"`
	Config  Config   `json:"config"`
	Valid   bool     `json:"valid"`
	Invalid []string `json:"invalid,omitempty"`
	// Figures maps a figure name to its value; a figure the cell could not
	// measure (no data plane in mode none, no PSS reading) is absent.
	Figures map[string]float64 `json:"figures"`
	// Spectrum holds the latency (ms) at SpectrumPercentiles, those too
	// fine for Samples included (they equal the maximum; plots cut them).
	Spectrum []float64 `json:"spectrum"`
	// Samples is how many latencies the cell recorded: a percentile p is
	// more than the maximum only with latency.Resolves(Samples, p), and
	// the percentile figures it does not resolve are left out.
	Samples int64 `json:"samples"`
	// Errors is the cell's error set.
	Errors []results.ErrorCount `json:"errors,omitempty"`
	// MetricsSource is where a cluster cell's CPU and memory came from
	// ("kubelet" or "metrics-api"; empty on the local lab and in runs
	// from before the choice existed, which used metrics.k8s.io).
	MetricsSource string `json:"metrics_source,omitempty"`
	// OverTime is the cell's latency and achieved rate per interval of
	// its measured window (one second with meshbench's engine); empty
	// for results without intervals.
	OverTime []TimePoint `json:"over_time,omitempty"`
	// Namespaces is a cluster cell's per-namespace table (the seed
	// reports'); nil on the local lab and in older results.
	Namespaces *sample.NamespaceTable `json:"namespaces,omitempty"`
	// Fault is what the cell's fault cost (faultcost.go), nil without
	// one; its figures are in Figures too (FaultFigures).
	Fault *FaultCost `json:"fault,omitempty"`
	// SendTick is the load engine's send tick (its result's send_tick_ns;
	// 0: each request at its own time).
	SendTick time.Duration `json:"send_tick_ns,omitempty"`
}

// ReadCell reads one cell's results directory.
func ReadCell(dir, id string) (*Cell, error) {
	m, err := results.ReadManifest(dir)
	if err != nil {
		return nil, &CellError{ID: id, File: results.ManifestFile, Err: err}
	}
	lr, err := results.ReadFile(filepath.Join(dir, results.LoadFile))
	if err != nil {
		return nil, &CellError{ID: id, File: results.LoadFile, Err: err}
	}
	c := &Cell{ID: id, Dir: dir, Valid: m.Valid, Invalid: m.Invalid, Figures: map[string]float64{}, Errors: lr.Errors,
		SendTick: time.Duration(lr.SendTickNs)}
	settings, err := m.Settings()
	if err != nil {
		return nil, &CellError{ID: id, File: results.ManifestFile, Err: err}
	}
	c.Config = configOf(settings)
	c.MetricsSource, _ = m.Options["metrics_source"].(string)
	lat, _, _, err := lr.Histograms()
	if err != nil {
		return nil, &CellError{ID: id, File: results.LoadFile, Err: err}
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	c.Samples = lat.Count() + lat.OutOfRange()
	if lat.Count() > 0 {
		for fig, p := range PercentileFigures {
			if latency.Resolves(c.Samples, p) {
				c.Figures[fig] = ms(lat.Percentile(p))
			}
		}
		c.Figures[LatencyMax] = ms(lat.MaxNs())
		c.Figures[LatencyMean] = lat.MeanNs() / 1e6
		for _, p := range SpectrumPercentiles {
			c.Spectrum = append(c.Spectrum, ms(lat.Percentile(p)))
		}
	}
	if c.OverTime, err = OverTime(lr); err != nil {
		return nil, &CellError{ID: id, File: results.LoadFile, Err: err}
	}
	fc, faulted, err := FaultCostOf(m, lr)
	if err != nil {
		return nil, &CellError{ID: id, File: results.LoadFile, Err: err}
	}
	if faulted {
		if fc.EnvoyRetries, err = envoyRetries(dir); err != nil {
			return nil, &CellError{ID: id, File: results.EnvoyStatsFile, Err: err}
		}
		c.Fault = &fc
		maps.Copy(c.Figures, fc.figures())
	}
	rate := lr.AchievedRatePerSec()
	gbps := 0.0
	if lr.Bulk() {
		// Bulk: its "requests" are the streams, one per connection; its
		// figure is the bytes, and its costs are per Gb/s, not per rps.
		gbps = lr.ThroughputBytesPerSec() * 8 / 1e9
		c.Figures[ThroughputGbps] = gbps
		rate = 0
	} else {
		c.Figures[AchievedRate] = rate
	}
	if lr.RequestsPerConnection == 1 {
		// A connection per request: each answer is a connection opened,
		// used and closed (netperf's TCP_CRR).
		c.Figures[ConnectionRate] = rate
	}
	c.Figures[SuccessRatio] = lr.SuccessRatio()

	sum, nst, err := readResources(dir)
	if err != nil {
		return nil, &CellError{ID: id, File: results.ResourcesFile, Err: err}
	}
	c.Namespaces = nst
	const mib = 1 << 20
	put := func(prefix, name string, f sample.Figures) {
		c.Figures[CPUPrefix+prefix+name] = f.CPUMillicores.Avg
		if f.PSSRounds > 0 {
			c.Figures[MemPrefix+prefix+name] = f.PSSBytes.Avg / mib
		}
	}
	for _, g := range sum.Categories {
		put("", g.Name, g.Figures)
	}
	put("", "TOTAL", sum.Total)
	for _, g := range sum.Components {
		put(ComponentInfix, g.Name, g.Figures)
	}
	maps.Copy(c.Figures, sample.DataPlaneFigures(sum, rate, appPods(c.Config)))
	for _, k := range []string{sample.KernelNodeCPU, sample.KernelSoftIRQCPU, sample.KernelOutsideCPU, sample.KernelPodsSystemCPU, sample.KernelOutsidePodsCPU} {
		if v, ok := m.Derived[k]; ok {
			c.Figures[k] = v
		}
	}
	if v, ok := m.Derived[sample.KernelOutsideCPU]; ok && rate > 0 {
		c.Figures[KernelOutsideCPUPer1000] = v / rate * 1000
	}
	if v, ok := m.Derived[sample.KernelOutsidePodsCPU]; ok && rate > 0 {
		c.Figures[KernelOutsidePodsCPUPer1000] = v / rate * 1000
	}
	if gbps > 0 {
		for _, g := range sum.Categories {
			c.Figures[CPUPerGbpsPrefix+g.Name] = g.Figures.CPUMillicores.Avg / gbps
		}
		c.Figures[CPUPerGbpsPrefix+"TOTAL"] = sum.Total.CPUMillicores.Avg / gbps
	}
	seedRatios(c.Figures)
	return c, nil
}

// appPods is how many app pods the config ran (faces: three services).
func appPods(c Config) int {
	return topology.Options{App: topology.App(c.App), Replicas: c.Replicas}.AppPods()
}

func readResources(dir string) (sample.Summary, *sample.NamespaceTable, error) {
	b, err := os.ReadFile(filepath.Join(dir, results.ResourcesFile))
	if err != nil {
		return sample.Summary{}, nil, err
	}
	var doc sample.Resources
	if err := json.Unmarshal(b, &doc); err != nil {
		return sample.Summary{}, nil, fmt.Errorf("%s: %w", results.ResourcesFile, err)
	}
	return doc.Summary, doc.Namespaces, nil
}

// configOf is a cell's Config from its manifest's settings.
func configOf(s results.CellSettings) Config {
	c := Config{Mesh: meshLabelOf(s), App: s.App, Rate: s.Rate, Replicas: s.Replicas, Policies: s.Policies,
		Protocol: s.Protocol, Gateway: s.Gateway, MTLS: s.MTLS, Generator: s.Generator, Fault: s.Fault,
		Params: Params{Connections: s.Connections, Payload: s.Payload, ProxyThreads: s.ProxyThreads,
			RequestsPerConnection: s.RequestsPerConnection, Placement: s.Placement, Arrivals: s.Arrivals}}
	if s.ClosedLoop {
		c.Rate = loadgen.ClosedLoopText
	}
	if s.Bulk {
		c.Rate = loadgen.BulkText
	}
	if c.Arrivals == string(loadgen.ArrivalsConstant) {
		c.Arrivals = ""
	}
	if c.Placement == string(topology.PlacementCrossNode) {
		c.Placement = ""
	}
	return c
}

// RateValue is a scenario rate as a number (NaN for closed loop), for
// plots against rate.
func RateValue(rate string) float64 {
	v, err := strconv.ParseFloat(rate, 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// Plan is a plan results directory read back.
type Plan struct {
	Dir      string
	Manifest *results.PlanManifest
	PlanYAML []byte
	// Settings are PlanYAML's settings as the plan's parser read them
	// (bench/plan.MethodSettings), set by the caller; nil when not read,
	// and then a set comparison says the settings were not compared.
	Settings *PlanSettings
	// Cells are the finished cells in the plan's order; Missing lists the
	// cells not finished (a plan still running, or interrupted) and Failed
	// those that ended with an error and left no results.
	Cells   []*Cell
	Missing []string
	Failed  map[string]string
	// Unreadable lists the cells that finished but whose files cannot be
	// read back (truncated, a field missing, a file gone): left out of
	// every figure, reported on their own, and the report is partial.
	Unreadable []*CellError
}

// CellError is a finished cell whose results cannot be read: which cell,
// which of its files, and why.
type CellError struct {
	ID   string
	File string // results.ManifestFile, LoadFile or ResourcesFile
	Err  error
}

func (e *CellError) Error() string { return fmt.Sprintf("cell %s: %s: %v", e.ID, e.File, e.Err) }
func (e *CellError) Unwrap() error { return e.Err }

// Reason is why the file cannot be read, without the cell and file names
// (nor the file's path, which the underlying error may start with).
func (e *CellError) Reason() string {
	msg := e.Err.Error()
	if i := strings.LastIndex(msg, e.File+": "); i >= 0 {
		msg = msg[i+len(e.File)+2:]
	}
	return msg
}

// ReadPlan reads every finished cell of a plan results directory.
func ReadPlan(dir string) (*Plan, error) {
	m, err := results.ReadPlanManifest(dir)
	if err != nil {
		return nil, err
	}
	yml, err := os.ReadFile(filepath.Join(dir, results.PlanFile))
	if err != nil {
		return nil, err
	}
	p := &Plan{Dir: dir, Manifest: m, PlanYAML: yml, Failed: map[string]string{}}
	for _, id := range m.Order {
		st := m.Cells[id]
		switch {
		case st == nil || !st.Finished():
			p.Missing = append(p.Missing, id)
			continue
		case st.State == results.CellFailed:
			if _, err := os.Stat(results.CellDir(dir, id)); err != nil {
				p.Failed[id] = st.Error
				continue
			}
		}
		c, err := ReadCell(results.CellDir(dir, id), id)
		if err != nil {
			if st.State == results.CellFailed {
				// The runner keeps a failed cell's directory whatever it
				// holds: a load generator that died leaves no load.json.
				// Nothing measured: report it as failed, like a cell
				// without a directory, rather than refuse the whole plan.
				p.Failed[id] = st.Error
				continue
			}
			// One unreadable cell never sinks the plan: it is listed,
			// and the others are reported.
			var ce *CellError
			if !errors.As(err, &ce) {
				ce = &CellError{ID: id, File: "?", Err: err}
			}
			p.Unreadable = append(p.Unreadable, ce)
			continue
		}
		if st.State == results.CellFailed {
			c.Valid = false
			c.Invalid = append(c.Invalid, st.Error)
		}
		p.Cells = append(p.Cells, c)
	}
	foldParams(p.Cells)
	return p, nil
}

// seedRatios adds the sidecar-debate seed's ratios to figures: (data
// plane + control plane) and data plane over (app + load), CPU and
// memory, in percent, for a cell with a data plane and a non-mesh part.
func seedRatios(f map[string]float64) {
	for _, r := range []struct{ prefix, mesh, dp string }{{CPUPrefix, MeshCPURatio, DataPlaneCPURatio}, {MemPrefix, MeshMemRatio, DataPlaneMemRatio}} {
		dp, ok := f[r.prefix+sample.CategoryDataPlane]
		nonMesh := f[r.prefix+sample.CategoryApp] + f[r.prefix+sample.CategoryLoad]
		if !ok || nonMesh <= 0 {
			continue
		}
		f[r.dp] = 100 * dp / nonMesh
		f[r.mesh] = 100 * (dp + f[r.prefix+sample.CategoryControlPlane]) / nonMesh
	}
}
