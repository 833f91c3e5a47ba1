package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/report/plot"
)

// searchScenarios lists the scenarios of a search analysis in order.
func searchScenarios(a *analysis.SearchAnalysis) []analysis.Scenario {
	var out []analysis.Scenario
	for _, g := range a.Groups {
		if len(out) == 0 || out[len(out)-1] != g.Scenario {
			out = append(out, g.Scenario)
		}
	}
	return out
}

// scenarioLabel is a search scenario's label (no rate: the search chose
// them).
func scenarioLabel(s analysis.Scenario) string {
	return strings.Replace(s.String(), "search rps", "capacity search", 1)
}

// SearchText writes a capacity-search plan's report: per scenario, the
// capacity of each mesh at the objective (median [interval], or what the
// searches said), one verdict line per mesh against the baseline, then
// every search's probes.
func SearchText(w io.Writer, a *analysis.SearchAnalysis) error {
	ew := &errWriter{w: w}
	obj, _ := slo.Parse(a.Objective)
	fmt.Fprintf(ew, "Capacity at %s (highest open-loop rate meeting it; from %s/s to %s/s, precision %s)\n",
		obj.Human(), capacity.FormatRate(a.Search.From), capacity.FormatRate(a.Search.To), slo.FormatRatio(a.Search.Precision))
	for _, s := range searchScenarios(a) {
		fmt.Fprintf(ew, "\n== %s ==\n", scenarioLabel(s))
		rows := [][]string{{"mesh", "capacity", "searches"}}
		for _, g := range a.Groups {
			if g.Scenario == s {
				rows = append(rows, []string{g.Mesh, g.Text, strconv.Itoa(len(g.Runs))})
			}
		}
		writeAligned(ew, rows)
		for _, c := range a.Comparisons {
			if c.Scenario == s {
				fmt.Fprintf(ew, "  %s\n", c.Verdict)
			}
		}
	}
	fmt.Fprintf(ew, "\nProbes (rate/s: %s, met or why not)\n", a.Objective)
	for _, g := range a.Groups {
		for _, r := range g.Runs {
			fmt.Fprintf(ew, "  %s: %s\n", r.ID, resultText(r))
			for _, p := range r.Probes {
				fmt.Fprintf(ew, "    %2d %8s/s  %s\n", p.N, capacity.FormatRate(p.RatePerSec), probeText(p))
			}
		}
	}
	return ew.err
}

func resultText(r analysis.SearchRun) string {
	if r.Unfinished {
		return "unfinished (resume the plan)"
	}
	return r.Result.String()
}

// probeText is one probe's figures and verdict.
func probeText(p analysis.SearchProbe) string {
	var parts []string
	o := p.Outcome
	parts = append(parts, fmt.Sprintf("achieved %.1f/s", o.AchievedRatePerSec), "p50 "+slo.FmtNs(o.P50Ns))
	for _, f := range o.Figures {
		if f.Name == "errors" {
			parts = append(parts, "errors "+slo.FormatRatio(f.Value))
		} else {
			parts = append(parts, f.Name+" "+slo.FmtNs(int64(f.Value)))
		}
	}
	if p.LoadCPU >= 0 {
		parts = append(parts, fmt.Sprintf("load cpu %.0f%%", p.LoadCPU*100))
	}
	switch {
	case o.Met:
		parts = append(parts, "met")
	case o.GeneratorLimit:
		parts = append(parts, "LOAD GENERATOR LIMIT: "+strings.Join(o.Reasons, "; "))
	default:
		parts = append(parts, "missed: "+strings.Join(o.Reasons, "; "))
	}
	return strings.Join(parts, "  ")
}

// ProbesCSV writes every probe, one row each: the search, the offered and
// achieved rates, p50 and every bounded figure, the error ratio, drops,
// the generator's CPU, CPU per 1000 rps (data plane and total), and the
// verdict.
func ProbesCSV(w io.Writer, a *analysis.SearchAnalysis) error {
	cw := csv.NewWriter(w)
	obj, _ := slo.Parse(a.Objective)
	head := []string{"search", "mesh", "app", "replicas", "policies", "protocol", "gateway", "mtls", "probe", "cell",
		"offered_rps", "achieved_rps", "latency_p50_ms"}
	for _, b := range obj.Latency {
		head = append(head, "latency_"+b.Name+"_ms")
	}
	head = append(head, "error_ratio", "dropped", "load_cpu_cores", "data_plane_cpu_m_per_1000rps", "total_cpu_m_per_1000rps", "met", "generator_limit", "reasons")
	_ = cw.Write(head)
	for _, g := range a.Groups {
		for _, r := range g.Runs {
			for _, p := range r.Probes {
				o := p.Outcome
				c := r.Config
				row := []string{r.ID, c.Mesh, c.App, strconv.Itoa(c.Replicas), strconv.Itoa(c.Policies), c.Protocol,
					strconv.FormatBool(c.Gateway), strconv.FormatBool(c.MTLS), strconv.Itoa(p.N), p.CellID,
					num(p.RatePerSec), num(o.AchievedRatePerSec), num(float64(o.P50Ns) / 1e6)}
				for _, b := range obj.Latency {
					f, _ := o.Value(b.Name)
					row = append(row, num(f.Value/1e6))
				}
				row = append(row, num(o.ErrorRatio), strconv.FormatInt(o.Dropped, 10), num(p.LoadCPU),
					num(figure(p, analysis.DataPlaneCPUPer1000)), num(per1000(p, analysis.CPUPrefix+"TOTAL")),
					strconv.FormatBool(o.Met), strconv.FormatBool(o.GeneratorLimit), strings.Join(o.Reasons, "; "))
				_ = cw.Write(row)
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

func figure(p analysis.SearchProbe, name string) float64 {
	if v, ok := p.Figures[name]; ok {
		return v
	}
	return math.NaN()
}

// per1000 is a CPU figure (millicores) per 1000 achieved rps.
func per1000(p analysis.SearchProbe, name string) float64 {
	v, ok := p.Figures[name]
	if !ok || p.Outcome.AchievedRatePerSec <= 0 {
		return math.NaN()
	}
	return v / p.Outcome.AchievedRatePerSec * 1000
}

// SearchCharts draws, per scenario, the latency-vs-offered-load curve of
// every mesh (p50 and the objective's percentile at every probe, the
// objective, each found capacity) and the data-plane CPU per 1000 rps
// along the curve.
func SearchCharts(a *analysis.SearchAnalysis) ([]NamedChart, error) {
	obj, err := slo.Parse(a.Objective)
	if err != nil {
		return nil, err
	}
	b, ok := obj.Primary()
	if !ok {
		return nil, nil // an errors-only objective has no latency to draw
	}
	var out []NamedChart
	for i, s := range searchScenarios(a) {
		var series []plot.LoadSeries
		var cpu []plot.Series
		for _, g := range a.Groups {
			if g.Scenario != s {
				continue
			}
			ls := plot.LoadSeries{Name: g.Mesh}
			if !math.IsNaN(g.Capacity.Estimate) {
				ls.CapacityPerSec = g.Capacity.Estimate
			}
			cs := plot.Series{Name: g.Mesh}
			for _, r := range g.Runs {
				for _, p := range r.Probes {
					f, ok := p.Outcome.Value(b.Name)
					if !ok || p.RatePerSec <= 0 || f.Value <= 0 || p.Outcome.P50Ns <= 0 {
						continue
					}
					ls.Points = append(ls.Points, plot.LoadPoint{RatePerSec: p.RatePerSec, P50Ms: float64(p.Outcome.P50Ns) / 1e6, ObjMs: f.Value / 1e6})
					if v := figure(p, analysis.DataPlaneCPUPer1000); !math.IsNaN(v) {
						cs.X, cs.Y = append(cs.X, p.RatePerSec), append(cs.Y, v)
					}
				}
			}
			if len(ls.Points) > 0 {
				series = append(series, ls)
			}
			if len(cs.X) > 0 {
				cpu = append(cpu, cs)
			}
		}
		if len(series) == 0 {
			continue
		}
		title := fmt.Sprintf("Latency vs offered load (%s)", scenarioLabel(s))
		c, err := plot.LoadCurve(plot.ChartOptions{Title: title, XLabel: "offered load (req/s, log)", YLabel: "latency (ms, log)",
			Caption: fmt.Sprintf("Per mesh: %s (the series' line) and p50 (thin, dotted, same colour) of every probe (a point each), the line through each rate's median; "+
				"the horizontal line is the objective (%s ≤ %s), a vertical line the capacity found. No band.", b.Name, b.Name, b.Limit)},
			b.Name, float64(b.Limit)/1e6, series)
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", title, err)
		}
		out = append(out, NamedChart{Name: fmt.Sprintf("load-curve-%d", i+1), Title: title, Chart: c})
		if len(cpu) > 0 {
			t := fmt.Sprintf("Data-plane CPU per 1000 rps along the curve (%s)", scenarioLabel(s))
			c, err := plot.LineChart(plot.ChartOptions{Title: t, XLabel: "offered load (req/s, log)", YLabel: "data-plane CPU (millicores per 1000 rps)", LogX: true,
				Caption: "Data-plane CPU per 1000 requests per second of every probe, one point each. No band."}, cpu)
			if err != nil {
				return nil, fmt.Errorf("plot %s: %w", t, err)
			}
			out = append(out, NamedChart{Name: fmt.Sprintf("load-cpu-%d", i+1), Title: t, Chart: c})
		}
	}
	return out, nil
}

var searchHTMLTmpl = template.Must(template.New("search").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>meshbench capacity search</title>
<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto;padding:0 1em}pre{background:#f6f6f6;padding:1em;overflow-x:auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left}</style></head><body>
<h1>Capacity at {{.Objective}}</h1>
<p>{{.Summary}}</p>
{{range .Scenarios}}<h2>{{.Name}}</h2>
<table><tr><th>mesh</th><th>capacity</th><th>searches</th></tr>{{range .Rows}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td><td>{{index . 2}}</td></tr>{{end}}</table>
<ul>{{range .Verdicts}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>Plots</h2>
{{range .Plots}}<figure><figcaption>{{.Title}}</figcaption>{{.SVG}}</figure>{{end}}
<h2>Every probe</h2><pre>{{.Text}}</pre>
<h2>Plan</h2><pre>{{.Plan}}</pre>
</body></html>
`))

// SearchHTML writes the capacity-search report as one self-contained HTML
// file: capacities, verdicts, the curves (inline SVG), every probe, the
// plan.
func SearchHTML(w io.Writer, a *analysis.SearchAnalysis, p *analysis.Plan, charts []NamedChart) error {
	var text bytes.Buffer
	if err := SearchText(&text, a); err != nil {
		return err
	}
	obj, _ := slo.Parse(a.Objective)
	type scen struct {
		Name     string
		Rows     [][]string
		Verdicts []string
	}
	data := struct {
		Objective, Summary, Text, Plan string
		Scenarios                      []scen
		Plots                          []htmlPlot
	}{Objective: obj.Human(), Text: text.String(), Plan: string(p.PlanYAML),
		Summary: fmt.Sprintf("%d probes, seed %d, created %s; host %s (%d CPUs), load average at start %s.", len(p.Cells), p.Manifest.Seed,
			p.Manifest.Created.Format("2006-01-02 15:04 UTC"), p.Manifest.Host.Hostname, p.Manifest.Host.CPUs, p.Manifest.Host.LoadAvg1m)}
	for _, s := range searchScenarios(a) {
		sc := scen{Name: scenarioLabel(s)}
		for _, g := range a.Groups {
			if g.Scenario == s {
				sc.Rows = append(sc.Rows, []string{g.Mesh, g.Text, strconv.Itoa(len(g.Runs))})
			}
		}
		for _, c := range a.Comparisons {
			if c.Scenario == s {
				sc.Verdicts = append(sc.Verdicts, c.Verdict)
			}
		}
		data.Scenarios = append(data.Scenarios, sc)
	}
	for _, c := range charts {
		svg, err := c.Chart.SVG(800, 500)
		if err != nil {
			return err
		}
		data.Plots = append(data.Plots, htmlPlot{Title: c.Title, SVG: template.HTML(svg)}) // our own renderer's output
	}
	return searchHTMLTmpl.Execute(w, data)
}
