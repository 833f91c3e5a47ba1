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
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sample"
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
}

// Key identifies the Config.
func (c Config) Key() string {
	return c.Mesh + "|" + c.Scenario().Key()
}

// Scenario is the Config without its mesh: the meshes of one scenario are
// compared with each other.
func (c Config) Scenario() Scenario {
	return Scenario{App: c.App, Rate: c.Rate, Replicas: c.Replicas, Policies: c.Policies, Protocol: c.Protocol, Gateway: c.Gateway, MTLS: c.MTLS, Generator: c.Generator}
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
}

// Key identifies the scenario.
func (s Scenario) Key() string {
	k := fmt.Sprintf("%s|%s|%d|%d|%s|%v|%v", s.App, s.Rate, s.Replicas, s.Policies, s.Protocol, s.Gateway, s.MTLS)
	if s.Generator != "" {
		k += "|" + s.Generator
	}
	return k
}

// String is a short human label: "static, 50 rps, 10 replicas, 4 policies".
func (s Scenario) String() string {
	out := s.App + ", "
	if s.Rate == "max" {
		out += "closed loop"
	} else {
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
	if s.Generator != "" {
		out += ", by " + s.Generator
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
	SuccessRatio = "success_ratio"
	// Per category: "cpu_m:data-plane", "mem_mib:app", …; TOTAL too.
	CPUPrefix = "cpu_m:"
	MemPrefix = "mem_mib:"
	// Per component: "cpu_m:component:server sidecar".
	ComponentInfix = "component:"
	// Data plane per 1000 achieved rps and per app pod.
	DataPlaneCPUPer1000 = "data_plane_cpu_m_per_1000rps"
	DataPlaneMemPer1000 = "data_plane_mem_mib_per_1000rps"
	DataPlaneMemPerPod  = "data_plane_mem_mib_per_replica"
	DataPlaneCPUToApp   = "data_plane_to_app_cpu_ratio"
	DataPlaneMemToApp   = "data_plane_to_app_mem_ratio"
)

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
	// Spectrum holds the latency (ms) at SpectrumPercentiles.
	Spectrum []float64 `json:"spectrum"`
	// Errors is the cell's error set.
	Errors []results.ErrorCount `json:"errors,omitempty"`
	// MetricsSource is where a cluster cell's CPU and memory came from
	// ("kubelet" or "metrics-api"; empty on the local lab and in runs
	// from before the choice existed, which used metrics.k8s.io).
	MetricsSource string `json:"metrics_source,omitempty"`
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
	c := &Cell{ID: id, Dir: dir, Valid: m.Valid, Invalid: m.Invalid, Figures: map[string]float64{}, Errors: lr.Errors}
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
	if lat.Count() > 0 {
		c.Figures[LatencyP50] = ms(lat.Percentile(50))
		c.Figures[LatencyP90] = ms(lat.Percentile(90))
		c.Figures[LatencyP95] = ms(lat.Percentile(95))
		c.Figures[LatencyP99] = ms(lat.Percentile(99))
		c.Figures[LatencyP999] = ms(lat.Percentile(99.9))
		c.Figures[LatencyMax] = ms(lat.MaxNs())
		c.Figures[LatencyMean] = lat.MeanNs() / 1e6
		for _, p := range SpectrumPercentiles {
			c.Spectrum = append(c.Spectrum, ms(lat.Percentile(p)))
		}
	}
	rate := lr.AchievedRatePerSec()
	c.Figures[AchievedRate] = rate
	c.Figures[SuccessRatio] = lr.SuccessRatio()

	sum, err := readResources(dir)
	if err != nil {
		return nil, &CellError{ID: id, File: results.ResourcesFile, Err: err}
	}
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
	dpCPU, hasDP := c.Figures[CPUPrefix+sample.CategoryDataPlane]
	if hasDP && rate > 0 {
		c.Figures[DataPlaneCPUPer1000] = dpCPU / rate * 1000
	}
	if mem, ok := c.Figures[MemPrefix+sample.CategoryDataPlane]; ok {
		if rate > 0 {
			c.Figures[DataPlaneMemPer1000] = mem / rate * 1000
		}
		if pods := appPods(c.Config); pods > 0 {
			c.Figures[DataPlaneMemPerPod] = mem / float64(pods)
		}
		if app, ok := c.Figures[MemPrefix+sample.CategoryApp]; ok && app > 0 {
			c.Figures[DataPlaneMemToApp] = mem / app
		}
	}
	if app, ok := c.Figures[CPUPrefix+sample.CategoryApp]; ok && hasDP && app > 0 {
		c.Figures[DataPlaneCPUToApp] = dpCPU / app
	}
	return c, nil
}

// appPods is how many app pods the config ran (faces: three services).
func appPods(c Config) int {
	return mesh.Options{App: mesh.App(c.App), Replicas: c.Replicas}.AppPods()
}

func readResources(dir string) (sample.Summary, error) {
	b, err := os.ReadFile(filepath.Join(dir, results.ResourcesFile))
	if err != nil {
		return sample.Summary{}, err
	}
	var doc struct {
		Summary sample.Summary `json:"summary"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return sample.Summary{}, fmt.Errorf("%s: %w", results.ResourcesFile, err)
	}
	return doc.Summary, nil
}

// configOf is a cell's Config from its manifest's settings.
func configOf(s results.CellSettings) Config {
	c := Config{Mesh: MeshLabel(s.Mesh, s.Substrate), App: s.App, Rate: s.Rate, Replicas: s.Replicas, Policies: s.Policies,
		Protocol: s.Protocol, Gateway: s.Gateway, MTLS: s.MTLS, Generator: s.Generator}
	if s.ClosedLoop {
		c.Rate = "max"
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
	return p, nil
}
