package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/report/plot"
)

// NamedChart is one plot of a plan report.
type NamedChart struct {
	Name  string // file name without extension
	Title string
	// Scenario is set on a scenario's summary chart (the meshes compared
	// on latency and the data plane's cost): its scenario's String(), for
	// the report's top.
	Scenario string
	// Chart draws its caption under it (plot.ChartOptions.Caption): what
	// the lines and the bands are.
	Chart *plot.Chart
}

// medianCaption says what a plan chart's lines and bands are at the
// analysis's confidence level.
func medianCaption(a *analysis.Analysis) string {
	return fmt.Sprintf("Lines: the median over each configuration's valid runs. Band (a faint fill outlined in the series' colour and dash; "+
		"an error bar at a single point): the %.0f%% percentile-bootstrap interval of that median; with 5 runs or fewer it is the range "+
		"of the runs (with 3 runs it holds the true median 75%% of the time). No band: a configuration with one run.", a.Level*100)
}

// PlanCharts builds the plan report's plots: latency percentiles, data-plane
// CPU and memory against rate per mesh (one set per app/replicas/policies
// combination with at least two rates); CPU and memory against replicas per
// mesh (per rate, with at least two replica counts); and the latency
// spectrum per mesh for every scenario. Bands are the bootstrap intervals
// where there are repetitions.
func PlanCharts(a *analysis.Analysis) ([]NamedChart, error) {
	out, err := SummaryCharts(a)
	if err != nil {
		return nil, err
	}
	add := func(name, title string, c *plot.Chart, err error) error {
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		out = append(out, NamedChart{Name: name, Title: title, Chart: c})
		return nil
	}
	// Against rate: group scenarios by everything but the rate.
	byRest := map[string][]analysis.Scenario{}
	var restKeys []string
	for _, s := range a.Scenarios {
		if math.IsNaN(analysis.RateValue(s.Rate)) {
			continue
		}
		r := s
		r.Rate = ""
		k := r.Key()
		if _, ok := byRest[k]; !ok {
			restKeys = append(restKeys, k)
		}
		byRest[k] = append(byRest[k], s)
	}
	n := 0
	for _, k := range restKeys {
		ss := byRest[k]
		if len(ss) < 2 {
			continue
		}
		n++
		label := ss[0]
		label.Rate = "various"
		figs := []struct{ fig, name, ylabel string }{
			{analysis.LatencyP50, "p50", "p50 latency (ms)"},
			{analysis.LatencyP95, "p95", "p95 latency (ms)"},
			{analysis.LatencyP99, "p99", "p99 latency (ms)"},
			{analysis.CPUPrefix + "data-plane", "dp-cpu", "data-plane CPU (millicores)"},
			{analysis.MemPrefix + "data-plane", "dp-mem", "data-plane memory (MiB, " + memoryKind(a) + ")"},
		}
		if c, title, ok, err := sweepCurve(a, ss); ok || err != nil {
			if err := add(fmt.Sprintf("rate-%d-load-curve", n), title, c, err); err != nil {
				return nil, err
			}
		}
		for _, f := range figs {
			series := seriesOver(a, ss, f.fig, func(s analysis.Scenario) float64 { return analysis.RateValue(s.Rate) })
			if len(series) == 0 {
				continue
			}
			title := fmt.Sprintf("%s vs rate (%s)", f.ylabel, scenarioNoRate(ss[0]))
			c, err := plot.LineChart(plot.ChartOptions{Title: title, XLabel: "request rate (req/s)", YLabel: f.ylabel, Caption: medianCaption(a)}, series)
			if err := add(fmt.Sprintf("rate-%d-%s", n, f.name), title, c, err); err != nil {
				return nil, err
			}
		}
	}
	// Against replicas.
	byRest = map[string][]analysis.Scenario{}
	restKeys = nil
	for _, s := range a.Scenarios {
		r := s
		r.Replicas = 0
		k := r.Key()
		if _, ok := byRest[k]; !ok {
			restKeys = append(restKeys, k)
		}
		byRest[k] = append(byRest[k], s)
	}
	n = 0
	for _, k := range restKeys {
		ss := byRest[k]
		if len(ss) < 2 {
			continue
		}
		n++
		for _, f := range []struct{ fig, name, ylabel string }{
			{analysis.CPUPrefix + "data-plane", "dp-cpu", "data-plane CPU (millicores)"},
			{analysis.MemPrefix + "data-plane", "dp-mem", "data-plane memory (MiB, " + memoryKind(a) + ")"},
			{analysis.LatencyP99, "p99", "p99 latency (ms)"},
		} {
			series := seriesOver(a, ss, f.fig, func(s analysis.Scenario) float64 { return float64(s.Replicas) })
			if len(series) == 0 {
				continue
			}
			title := fmt.Sprintf("%s vs replicas (%s, %s rps)", f.ylabel, ss[0].App, ss[0].Rate)
			c, err := plot.LineChart(plot.ChartOptions{Title: title, XLabel: "replicas", YLabel: f.ylabel, Caption: medianCaption(a)}, series)
			if err := add(fmt.Sprintf("replicas-%d-%s", n, f.name), title, c, err); err != nil {
				return nil, err
			}
		}
	}
	// Spectrum per scenario.
	for i, s := range a.Scenarios {
		series := spectrumSeries(a, s)
		if len(series) == 0 {
			continue
		}
		title := "latency spectrum (" + s.String() + ")"
		c, err := plot.Spectrum(plot.ChartOptions{Title: title, Caption: "Latency (from the intended send time) at each percentile. " +
			"Each line ends at the last percentile every valid run's answers resolve: beyond it a percentile is a run's maximum. " + medianCaption(a)}, series)
		if err := add(fmt.Sprintf("spectrum-%d", i+1), title, c, err); err != nil {
			return nil, err
		}
	}
	hc, err := hopCharts(a)
	if err != nil {
		return nil, err
	}
	out = append(out, hc...)
	tc, err := OverTimeCharts(a.Plan.Cells)
	if err != nil {
		return nil, err
	}
	return append(out, tc...), nil
}

// summaryFigures are the panels of a scenario's summary chart: what a
// reader came to compare.
var summaryFigures = []struct{ fig, label string }{
	{analysis.LatencyP50, "p50 latency (ms)"},
	{analysis.LatencyP99, "p99 latency (ms)"},
	{analysis.CPUPrefix + "data-plane", "data-plane CPU (mCPU)"},
	{analysis.MemPrefix + "data-plane", "data-plane memory (MiB)"},
}

// SummaryCharts draws, per scenario with valid cells, the meshes side by
// side on p50 and p99 latency and the data plane's CPU and memory, each
// a median with its interval (scenario-N-meshes): the report's top.
func SummaryCharts(a *analysis.Analysis) ([]NamedChart, error) {
	var out []NamedChart
	for i, s := range a.Scenarios {
		var meshes []string
		var groups []*analysis.Group
		for _, m := range a.Meshes {
			if g := a.Group(m, s); g != nil && g.Valid > 0 {
				meshes, groups = append(meshes, m), append(groups, g)
			}
		}
		if len(groups) == 0 {
			continue
		}
		var panels []plot.Panel
		var medians []stats.Interval
		for _, f := range summaryFigures {
			pn := plot.Panel{YLabel: f.label}
			for _, g := range groups {
				iv, ok := g.Figures[f.fig]
				if !ok || math.IsNaN(iv.Estimate) || math.IsInf(iv.Estimate, 0) {
					pn.Points = append(pn.Points, plot.Point{Missing: true})
					continue
				}
				medians = append(medians, iv)
				pt := plot.Point{Value: iv.Estimate, Lo: math.NaN(), Hi: math.NaN()}
				if iv.HasInterval() && !math.IsInf(iv.Lo, 0) && !math.IsInf(iv.Hi, 0) {
					pt.Lo, pt.Hi = iv.Lo, iv.Hi
				}
				pn.Points = append(pn.Points, pt)
			}
			panels = append(panels, pn)
		}
		caption := fmt.Sprintf("Each mesh's median over its valid runs (dot) with its %.0f%% percentile-bootstrap interval (bar; none with one run). "+
			"Memory is %s. Mesh none has no data plane.", a.Level*100, memoryKind(a))
		if note := coverageNote(a.Level, medians, nil); note != "" {
			caption += " " + note
		}
		ticks := shortTicks(meshes)
		if line := ControlPlanesLine(meshes); line != "" && !slices.Equal(ticks, meshes) {
			caption += " " + line + "."
		}
		title := s.String()
		c, err := plot.Panels(plot.ChartOptions{Title: title, Caption: caption}, ticks, panels)
		if err != nil {
			return nil, fmt.Errorf("plot scenario-%d-meshes: %w", i+1, err)
		}
		out = append(out, NamedChart{Name: fmt.Sprintf("scenario-%d-meshes", i+1), Title: "the meshes compared (" + title + ")", Chart: c, Scenario: title})
	}
	return out, nil
}

// shortTicks are the summary chart's category names: each mesh label
// without its control-plane words (analysis.IstiodConfigured, …), which
// rotated under four narrow panels squeeze the plots to a sliver; the
// caption then says them (ControlPlanesLine). Labels that would no
// longer be told apart stay whole.
func shortTicks(meshes []string) []string {
	out := make([]string, len(meshes))
	seen := map[string]bool{}
	for i, m := range meshes {
		out[i] = m
		for _, suffix := range []string{analysis.IstiodConfigured, analysis.LinkerdConfigured, analysis.LabConfigured, analysis.LinkerdStandIn} {
			out[i] = strings.TrimSuffix(out[i], suffix)
		}
		if seen[out[i]] {
			return meshes
		}
		seen[out[i]] = true
	}
	return out
}

// OverTimeCharts draws each cell's latency over time: p50 and p99 per
// interval of its measured window, and the achieved rate per interval,
// two charts per cell with intervals (cell-N-latency-over-time,
// cell-N-rate-over-time, N the cell's place in the plan's order).
func OverTimeCharts(cells []*analysis.Cell) ([]NamedChart, error) {
	var out []NamedChart
	for i, c := range cells {
		if len(c.OverTime) == 0 {
			continue
		}
		p50 := plot.Series{Name: "p50"}
		p99 := plot.Series{Name: "p99"}
		rate := plot.Series{Name: "achieved rate"}
		for _, p := range c.OverTime {
			rate.X, rate.Y = append(rate.X, p.StartSec), append(rate.Y, p.RatePerSec)
			if p.Count == 0 {
				continue // no answer: no latency, not a latency of 0
			}
			p50.X, p50.Y = append(p50.X, p.StartSec), append(p50.Y, p.P50Ms)
			p99.X, p99.Y = append(p99.X, p.StartSec), append(p99.Y, p.P99Ms)
		}
		length := c.OverTime[0].LengthSec
		xlabel := fmt.Sprintf("time into the measured window (s; start of each %gs interval)", length)
		marks, faultNote := faultMarks(c)
		if len(p50.X) > 0 {
			title := fmt.Sprintf("latency over time (%s)", c.ID)
			ch, err := plot.LineChart(plot.ChartOptions{Title: title, XLabel: xlabel, YLabel: "latency (ms)",
				Caption: fmt.Sprintf("p50 and p99 latency (from each request's intended send time) of the answers that arrived in each %gs interval of cell %s; an interval without answers has no point (its rate is 0 in the rate plot). One run: no band.", length, c.ID) + faultNote,
				Marks:   marks},
				[]plot.Series{p50, p99})
			if err != nil {
				return nil, fmt.Errorf("plot latency over time of %s: %w", c.ID, err)
			}
			out = append(out, NamedChart{Name: fmt.Sprintf("cell-%d-latency-over-time", i+1), Title: title, Chart: ch})
		}
		title := fmt.Sprintf("achieved rate over time (%s)", c.ID)
		ch, err := plot.LineChart(plot.ChartOptions{Title: title, XLabel: xlabel, YLabel: "answers per second",
			Caption: fmt.Sprintf("Answers (errors and timeouts included) that arrived in each %gs interval of cell %s, per second; the failed ones too, as failed. One run: no band.", length, c.ID) + faultNote,
			Marks:   marks},
			append([]plot.Series{rate}, failedSeries(c)...))
		if err != nil {
			return nil, fmt.Errorf("plot rate over time of %s: %w", c.ID, err)
		}
		out = append(out, NamedChart{Name: fmt.Sprintf("cell-%d-rate-over-time", i+1), Title: title, Chart: ch})
	}
	return out, nil
}

// faultMarks are the lines marking cell c's fault (its start and, for a
// fault that lasts, its end; a kill's end is its part ready again) and a
// caption sentence saying what it cost; none without a fault.
func faultMarks(c *analysis.Cell) ([]plot.Mark, string) {
	fc := c.Fault
	if fc == nil {
		return nil, ""
	}
	marks := []plot.Mark{{X: fc.StartS, Label: "fault starts"}}
	end := "fault undone"
	if fc.Kill {
		end = "killed part ready"
	}
	if fc.EndS > fc.StartS {
		marks = append(marks, plot.Mark{X: fc.EndS, Label: end})
	}
	return marks, " Dashed lines: the fault, " + fc.String() + "."
}

// failedSeries is the failed answers per second of c's intervals, when
// any failed.
func failedSeries(c *analysis.Cell) []plot.Series {
	s := plot.Series{Name: "failed"}
	any := false
	for _, p := range c.OverTime {
		s.X, s.Y = append(s.X, p.StartSec), append(s.Y, float64(p.Failed)/p.LengthSec)
		any = any || p.Failed > 0
	}
	if !any {
		return nil
	}
	return []plot.Series{s}
}

// spectrumSeries is one spectrum per mesh of scenario s with a valid
// group: its median latency at each of analysis.SpectrumPercentiles below
// 100, up to the last one every valid cell's samples resolve (beyond it a
// percentile is a run's maximum, not a point of the spectrum), with the
// bootstrap band where every point has one.
func spectrumSeries(a *analysis.Analysis, s analysis.Scenario) []plot.SpectrumSeries {
	var series []plot.SpectrumSeries
	for _, mesh := range a.Meshes {
		g := a.Group(mesh, s)
		if g == nil || g.Valid == 0 {
			continue
		}
		ss := plot.SpectrumSeries{Name: mesh}
		band := true
		for j, p := range analysis.SpectrumPercentiles {
			if p >= 100 || j >= len(g.Spectrum) || math.IsNaN(g.Spectrum[j].Estimate) || g.Spectrum[j].Estimate <= 0 {
				continue
			}
			if !resolved(g, p) {
				break // the samples end here: further percentiles are the max
			}
			iv := g.Spectrum[j]
			ss.Percentiles = append(ss.Percentiles, p)
			ss.Values = append(ss.Values, iv.Estimate)
			ss.Lo, ss.Hi = append(ss.Lo, iv.Lo), append(ss.Hi, iv.Hi)
			band = band && iv.HasInterval()
		}
		if !band {
			ss.Lo, ss.Hi = nil, nil
		}
		if len(ss.Values) > 1 {
			series = append(series, ss)
		}
	}
	return series
}

// memoryKind is what the plan's memory figures are: PSS on the local lab,
// the working set (metrics.k8s.io) on a cluster.
func memoryKind(a *analysis.Analysis) string {
	if a.Plan != nil && a.Plan.Manifest != nil && a.Plan.Manifest.Platform == "kube" {
		return "working set"
	}
	return "PSS"
}

func scenarioNoRate(s analysis.Scenario) string {
	out := s.App + fmt.Sprintf(", %d replica", s.Replicas)
	if s.Replicas != 1 {
		out += "s"
	}
	if s.Policies > 0 {
		out += fmt.Sprintf(", %d policies", s.Policies)
	}
	return out
}

// seriesOver makes one series per mesh of fig over the scenarios ss, x
// from the scenario; bands where every point has an interval.
func seriesOver(a *analysis.Analysis, ss []analysis.Scenario, fig string, x func(analysis.Scenario) float64) []plot.Series {
	var out []plot.Series
	for _, mesh := range a.Meshes {
		type pt struct{ x, y, lo, hi float64 }
		var pts []pt
		band := true
		for _, s := range ss {
			g := a.Group(mesh, s)
			if g == nil || g.Valid == 0 {
				continue
			}
			iv, ok := g.Figures[fig]
			if !ok || math.IsNaN(iv.Estimate) {
				continue
			}
			pts = append(pts, pt{x(s), iv.Estimate, iv.Lo, iv.Hi})
			band = band && iv.HasInterval()
		}
		if len(pts) == 0 {
			continue
		}
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		se := plot.Series{Name: mesh}
		for _, p := range pts {
			se.X, se.Y = append(se.X, p.x), append(se.Y, p.y)
			if band {
				se.Lo, se.Hi = append(se.Lo, p.lo), append(se.Hi, p.hi)
			}
		}
		out = append(out, se)
	}
	return out
}

// sweepCurve is a load sweep's latency-vs-offered-load chart (p50 and p99
// against the rate, log-log), the chart a capacity search draws, without
// an objective; ok is false when no mesh has positive latencies.
func sweepCurve(a *analysis.Analysis, ss []analysis.Scenario) (*plot.Chart, string, bool, error) {
	rate := func(s analysis.Scenario) float64 { return analysis.RateValue(s.Rate) }
	p50 := seriesOver(a, ss, analysis.LatencyP50, rate)
	p99 := seriesOver(a, ss, analysis.LatencyP99, rate)
	var series []plot.LoadSeries
	for _, s50 := range p50 {
		for _, s99 := range p99 {
			if s99.Name != s50.Name {
				continue
			}
			ls := plot.LoadSeries{Name: s50.Name}
			for i, x := range s50.X {
				for j, x99 := range s99.X {
					if x99 == x && x > 0 && s50.Y[i] > 0 && s99.Y[j] > 0 {
						ls.Points = append(ls.Points, plot.LoadPoint{RatePerSec: x, P50Ms: s50.Y[i], ObjMs: s99.Y[j]})
					}
				}
			}
			if len(ls.Points) > 0 {
				series = append(series, ls)
			}
		}
	}
	if len(series) == 0 {
		return nil, "", false, nil
	}
	title := fmt.Sprintf("Latency vs offered load (%s)", scenarioNoRate(ss[0]))
	c, err := plot.LoadCurve(plot.ChartOptions{Title: title, XLabel: "offered load (req/s, log)", YLabel: "latency (ms, log)",
		Caption: "Per mesh: p99 (the series' line) and p50 (thin, dotted, same colour) at each offered rate, the median over the valid runs " +
			"(a point per rate). No band."}, "p99", 0, series)
	return c, title, true, err
}
