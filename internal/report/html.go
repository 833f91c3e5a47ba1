package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/report/plot"
)

// Method notes: what every platform shares, and the sampling and the
// topology's life, which differ between the local lab and a cluster.
var (
	noteLoad    = "Load is open loop at a constant rate; each request's latency runs from its intended send time (no coordinated omission). Closed-loop cells are labelled: their latencies are queueing-dominated."
	noteHDR     = "Histograms are HDR (1 ns floor, 3 significant digits), merged exactly; percentiles come from them."
	noteOrder   = "Cells run in a seeded random order, one round per repetition, so drift over time cannot masquerade as a difference between meshes."
	noteMedian  = "Each figure is the median over the valid repetitions with a percentile-bootstrap interval. With 5 or fewer repetitions the interval is the range of the runs (with 3 runs it holds the true median 75% of the time)."
	noteSignif  = "A difference is significant when its interval excludes zero. With 3 runs per side that means the runs' ranges do not overlap, which identical setups do 10% of the time."
	noteInvalid = "Invalid cells (rate short of target, errors over the threshold, a CPU-starved load generator, sampler gaps, a process that died) are listed and never averaged in."

	noteSamplingLocal   = "Resources are sampled from /proc every second: CPU in millicores, memory as PSS (shared pages split among processes), averaged over the measured window only (warm-up and drain excluded)."
	noteReuseLocal      = "With reuse_topology (the default), the cells of a round that share a topology (same mesh options, other rates) run on one running lab: each cell still waits for the lab to be idle and warms up, and Envoy counters and histograms restart per cell; memory is the processes' current PSS, so heap grown by an earlier cell of the round carries over (within a round the rates run in random order). A lab a fault cell ran on is stopped after that cell."
	noteSamplingKube    = "Resources come from metrics.k8s.io (metrics-server), polled every sample_interval: CPU in millicores, memory as the working set (not PSS), per container. Only samples whose whole window lies inside the measured window count, and a sample the API returns again unchanged (stale) counts once."
	noteSamplingKubelet = "Resources come from the kubelet's own counters (/metrics/resource through the API server's node proxy), read every kubelet_interval (1 s by default): a container's CPU over the measured window is the difference of its cumulative CPU counter interpolated to the window's edges (exact, no windowed averages), cut into equal intervals for min and max; memory is the working set (not PSS). Readings whose counter timestamp did not advance count as no new information; counter resets (restarts) are detected and reported; metrics.k8s.io is recorded beside them as a cross-check."
	noteReuseKube       = "Every cell deploys its app and load Job into fresh namespaces and deletes them at its end; the mesh stays installed between cells (each mesh's first cell installs it when asked to)."
)

// MethodNotesFor is the method's decisions the HTML report states, on
// platform ("local" or "kube"); on kube, sources are the cells' metrics
// sources ("kubelet", "metrics-api"; "" counts as metrics-api), each
// with its sampling note, in the order given.
func MethodNotesFor(platform string, sources ...string) []string {
	sampling, reuse := []string{noteSamplingLocal}, noteReuseLocal
	if platform == "kube" {
		sampling, reuse = nil, noteReuseKube
		seen := map[string]bool{}
		for _, s := range sources {
			if s == "" {
				s = "metrics-api"
			}
			if !seen[s] {
				seen[s] = true
				if s == "kubelet" {
					sampling = append(sampling, noteSamplingKubelet)
				} else {
					sampling = append(sampling, noteSamplingKube)
				}
			}
		}
		if len(sampling) == 0 {
			sampling = []string{noteSamplingKube}
		}
	}
	return slices.Concat([]string{noteLoad, noteHDR}, sampling, []string{noteOrder, reuse, noteMedian, noteSignif, noteInvalid})
}

// cellSources lists the cells' metrics sources, in cell order.
func cellSources(cells []*analysis.Cell) []string {
	var out []string
	for _, c := range cells {
		out = append(out, c.MetricsSource)
	}
	return out
}

var htmlTmpl = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>meshbench report</title>
<style>
body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;max-width:1180px;margin:1.5em auto;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:.85em}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:.25em .6em;text-align:right}th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left}.bad{color:#a00}.figure{margin:1em 0}.note{color:#555;font-size:.85em}
ul.verdicts{padding-left:1.2em}ul.verdicts li{margin:.25em 0}
.answer{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start;margin:.8em 0 1.6em}
.answer .chart{flex:0 0 760px}.answer .side{flex:1 1 320px;min-width:280px}.answer h3{margin:.2em 0 .4em}
</style></head><body>
<h1>meshbench report</h1>
<p>{{.Summary}}</p>{{if .ControlPlanes}}
<p class="controlplanes">{{.ControlPlanes}}</p>{{end}}
{{if .Incomplete}}<p class="bad">{{.Incomplete}}</p>{{end}}
<h2 id="verdicts">The meshes compared</h2>
{{range .Scenarios}}<div class="answer">{{if .Chart}}<div class="chart">{{.Chart}}</div>{{end}}<div class="side"><h3>{{.Name}}</h3>
<ul class="verdicts">{{range .Verdicts}}<li>{{.}}</li>{{else}}<li>none: no two meshes with valid cells to compare here</li>{{end}}</ul>
{{if .Coverage}}<p class="note">{{.Coverage}}</p>{{end}}</div></div>
{{end}}
{{range .Axes}}<h3>Along {{.Axis}}</h3><ul class="verdicts">{{range .Verdicts}}<li>{{.}}</li>{{else}}<li>none: no two configurations with valid cells differ only in {{.Axis}}</li>{{end}}</ul>
{{if .Interactions}}<p>Mesh overhead against the baseline, by {{.Axis}}:</p><ul class="verdicts">{{range .Interactions}}<li>{{.}}</li>{{end}}</ul>{{end}}{{if .Coverage}}<p class="note">{{.Coverage}}</p>{{end}}{{end}}
<h2 id="tables">Tables</h2>
{{range .Scenarios}}<h3>{{.Name}}</h3>
<table><tr>{{range .Head}}<th>{{.}}</th>{{end}}</tr>{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>{{end}}</table>
{{if .Coverage}}<p class="note">{{.Coverage}}</p>{{end}}
{{end}}
<h2 id="plots">Plots</h2>
{{range .Plots}}<div class="figure"><h3>{{.Title}}</h3>{{.SVG}}</div>{{else}}<p>No plot: a plot needs at least two rates, two replica counts or one valid scenario.</p>{{end}}
<h2 id="invalid">Invalid cells</h2>
{{if .Invalid}}<ul>{{range .Invalid}}<li class="bad">{{.}}</li>{{end}}</ul>{{else}}<p>None.</p>{{end}}
{{- if .Unreadable}}
<h2 id="unreadable">Unreadable cells</h2>
<p class="bad">This report is partial: these finished cells' files cannot be read back; they are left out of every figure above.</p>
<ul>{{range .Unreadable}}<li class="bad">{{.}}</li>{{end}}</ul>{{end}}
<h2 id="text">Full text report</h2>
<pre>{{.Text}}</pre>
<h2 id="plan">Plan</h2>
<pre>{{.Plan}}</pre>
<h2 id="environment">Environment</h2>
<table>{{range .Env}}<tr><td>{{index . 0}}</td><td>{{index . 1}}</td></tr>{{end}}</table>
<h2 id="method">Method</h2>
<ul>{{range .Method}}<li>{{.}}</li>{{end}}</ul>
</body></html>
`))

type htmlScenario struct {
	Name     string
	Verdicts []string
	Head     []string
	Rows     [][]string
	// Chart is the scenario's summary chart (inline SVG), Coverage which
	// of its intervals cover less than the nominal level.
	Chart    template.HTML
	Coverage string
}

type htmlPlot struct {
	Title string
	SVG   template.HTML
}

// Summary chart size in CSS pixels: four panels beside the verdicts.
const summaryWidthPx, summaryHeightPx = 760, 330

// PlanHTML writes the self-contained HTML report: at its top, per
// scenario, the meshes compared on one chart (latency p50 and p99, the
// data plane's CPU and memory, with intervals) beside the verdicts; then
// the verdicts along other axes, tables, the other plots (inline SVG, no
// network needed), invalid cells, the full text report, the plan, the
// environment and the method's decisions.
func PlanHTML(w io.Writer, a *analysis.Analysis, charts []NamedChart) error {
	var text bytes.Buffer
	if err := PlanText(&text, a); err != nil {
		return err
	}
	m := a.Plan.Manifest
	data := struct {
		Summary, Incomplete, Text, Plan string
		ControlPlanes                   string
		Scenarios                       []htmlScenario
		Axes                            []axisSection
		Plots                           []htmlPlot
		Invalid, Unreadable             []string
		Env                             [][2]string
		Method                          []string
	}{
		Summary: fmt.Sprintf("%d cells (%d valid), seed %d, confidence %.0f%%, %s; created %s.",
			len(a.Plan.Cells), len(a.Plan.Cells)-len(a.Invalid), m.Seed, a.Level*100, baselineText(a), m.Created.Format("2006-01-02 15:04 UTC")),
		ControlPlanes: ControlPlanesLine(a.Meshes),
		Text:          text.String(), Plan: string(a.Plan.PlanYAML), Method: MethodNotesFor(a.Plan.Manifest.Platform, cellSources(a.Plan.Cells)...), Axes: axisSections(a),
	}
	if len(a.Plan.Missing) > 0 {
		data.Incomplete = fmt.Sprintf("Incomplete: %d of %d cells not run yet.", len(a.Plan.Missing), len(m.Order))
	}
	summary := map[string]*plot.Chart{}
	for _, c := range charts {
		if c.Scenario != "" {
			summary[c.Scenario] = c.Chart
		}
	}
	for _, s := range a.Scenarios {
		hs := htmlScenario{Name: s.String(), Coverage: scenarioCoverage(a, s)}
		hs.Head, hs.Rows = scenarioTable(a, s)
		for _, c := range a.Comparisons {
			if c.Scenario == s {
				hs.Verdicts = append(hs.Verdicts, c.Verdict())
			}
		}
		if ch := summary[hs.Name]; ch != nil {
			svg, err := ch.SVG(summaryWidthPx, summaryHeightPx)
			if err != nil {
				return err
			}
			hs.Chart = template.HTML(svg) // our own renderer's output
		}
		data.Scenarios = append(data.Scenarios, hs)
	}
	for _, c := range charts {
		if c.Scenario != "" {
			continue // at the top, beside its verdicts
		}
		svg, err := c.Chart.SVG(800, 500)
		if err != nil {
			return err
		}
		data.Plots = append(data.Plots, htmlPlot{Title: c.Title, SVG: template.HTML(svg)}) // our own renderer's output
	}
	for _, c := range a.Invalid {
		data.Invalid = append(data.Invalid, c.ID+": "+strings.Join(c.Invalid, "; "))
	}
	for _, id := range slices.Sorted(maps.Keys(a.Plan.Failed)) {
		data.Invalid = append(data.Invalid, id+": failed: "+a.Plan.Failed[id])
	}
	for _, e := range a.Plan.Unreadable {
		data.Unreadable = append(data.Unreadable, unreadableLine(e))
	}
	h := m.Host
	data.Env = [][2]string{{"meshbench", m.MeshbenchVersion}, {"Envoy", m.EnvoyVersion}, {"platform", m.Platform},
		{"host", h.Hostname}, {"CPU", fmt.Sprintf("%d × %s", h.CPUs, h.CPUModel)}, {"memory", fmt.Sprintf("%.1f GiB", float64(h.MemoryBytes)/(1<<30))},
		{"kernel", h.Kernel}, {"OS/arch", h.OS + "/" + h.Arch}, {"load average at start", h.LoadAvg1m}}
	return htmlTmpl.Execute(w, data)
}
