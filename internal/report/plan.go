package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/measure/sample"
)

// tableRows are the rows of a scenario's comparison table.
var tableRows = []struct{ label, figure, format string }{
	{"p50 ms", analysis.LatencyP50, "%.3g"},
	{"p90 ms", analysis.LatencyP90, "%.3g"},
	{"p95 ms", analysis.LatencyP95, "%.3g"},
	{"p99 ms", analysis.LatencyP99, "%.3g"},
	{"p99.9 ms", analysis.LatencyP999, "%.3g"},
	{"max ms", analysis.LatencyMax, "%.3g"},
	{"achieved rps", analysis.AchievedRate, "%.1f"},
	{"connections/s", analysis.ConnectionRate, "%.1f"},
	{"throughput Gb/s", analysis.ThroughputGbps, "%.3g"},
	{"DP CPU m / Gb/s", analysis.CPUPerGbpsPrefix + "data-plane", "%.0f"},
	{"app CPU m / Gb/s", analysis.CPUPerGbpsPrefix + "app", "%.0f"},
	{"load CPU m / Gb/s", analysis.CPUPerGbpsPrefix + "load", "%.0f"},
	{"TOTAL CPU m / Gb/s", analysis.CPUPerGbpsPrefix + "TOTAL", "%.0f"},
	{"success", analysis.SuccessRatio, "%.4f"},
	{"data-plane CPU m", analysis.CPUPrefix + "data-plane", "%.0f"},
	{"data-plane MiB", analysis.MemPrefix + "data-plane", "%.1f"},
	{"DP CPU m / 1000 rps", analysis.DataPlaneCPUPer1000, "%.0f"},
	{"DP MiB / replica", analysis.DataPlaneMemPerPod, "%.1f"},
	{"control-plane CPU m", analysis.CPUPrefix + "control-plane", "%.0f"},
	{"control-plane MiB", analysis.MemPrefix + "control-plane", "%.1f"},
	{"mesh CPU ratio %", analysis.MeshCPURatio, "%.1f"},
	{"mesh memory ratio %", analysis.MeshMemRatio, "%.1f"},
	{"DP CPU ratio %", analysis.DataPlaneCPURatio, "%.1f"},
	{"DP memory ratio %", analysis.DataPlaneMemRatio, "%.1f"},
	{"app CPU m", analysis.CPUPrefix + "app", "%.0f"},
	{"load CPU m", analysis.CPUPrefix + "load", "%.0f"},
	{"gateway CPU m", analysis.CPUPrefix + "gateway", "%.0f"},
	{"TOTAL CPU m", analysis.CPUPrefix + "TOTAL", "%.0f"},
	{"kernel CPU m, outside", analysis.KernelOutsideCPU, "%.0f"},
	{"kernel m / 1000 rps", analysis.KernelOutsideCPUPer1000, "%.0f"},
	{"node kernel CPU m", analysis.KernelNodeCPU, "%.0f"},
	{"node softirq CPU m", analysis.KernelSoftIRQCPU, "%.0f"},
	{"pods' system CPU m", analysis.KernelPodsSystemCPU, "%.0f"},
	{"kernel CPU m, outside pods (kubelet, runtime, kube-proxy incl.)", analysis.KernelOutsidePodsCPU, "%.0f"},
	{"kernel m outside pods / 1000 rps", analysis.KernelOutsidePodsCPUPer1000, "%.0f"},
	{"TOTAL MiB", analysis.MemPrefix + "TOTAL", "%.1f"},
	// A fault's cost (scenarios with a fault only).
	{"fault: failed during", analysis.FaultFailedDuring, "%.0f"},
	{"fault: failed after", analysis.FaultFailedAfter, "%.0f"},
	{"fault: p99 before ms", analysis.FaultP99BeforeMs, "%.3g"},
	{"fault: p99 during ms", analysis.FaultP99DuringMs, "%.3g"},
	{"fault: recovered (share)", analysis.FaultRecovered, "%.2f"},
	{"fault: recovery s", analysis.FaultRecoveryS, "%.2f"},
	{"fault: Envoy retries", analysis.FaultEnvoyRetries, "%.0f"},
}

// cellText is "median [lo, hi]" or the median alone for one run.
func cellText(iv stats.Interval, format string) string {
	if math.IsNaN(iv.Estimate) {
		return "-"
	}
	s := fmt.Sprintf(format, iv.Estimate)
	if iv.HasInterval() && iv.Lo != iv.Hi {
		s += fmt.Sprintf(" [%s, %s]", fmt.Sprintf(format, iv.Lo), fmt.Sprintf(format, iv.Hi))
	}
	return s
}

// scenarioTable is the comparison table of one scenario: a head row
// ("", then "mesh (valid/cells)" per mesh with cells) and one row per
// tableRows figure that some mesh has, each cell "median [lo, hi]".
func scenarioTable(a *analysis.Analysis, s analysis.Scenario) (head []string, rows [][]string) {
	head = []string{""}
	var groups []*analysis.Group
	for _, mesh := range a.Meshes {
		if g := a.Group(mesh, s); g != nil {
			head = append(head, fmt.Sprintf("%s (%d/%d)", mesh, g.Valid, len(g.Cells)))
			groups = append(groups, g)
		}
	}
	for _, r := range tableRows {
		row := []string{r.label}
		any := false
		for _, g := range groups {
			iv, ok := g.Figures[r.figure]
			if p, isPct := analysis.PercentileFigures[r.figure]; isPct && g.Valid > 0 && !resolved(g, p) {
				// Too few samples in some valid run: the percentile
				// is that run's maximum, not a figure of its own.
				any = true
				row = append(row, "= max")
				continue
			}
			if !ok || g.Valid == 0 {
				row = append(row, "-")
				continue
			}
			any = true
			row = append(row, cellText(iv, r.format))
		}
		if any {
			rows = append(rows, row)
		}
	}
	return head, rows
}

// resolved reports whether every valid cell of g has the samples to resolve
// percentile p (latency.Resolves).
func resolved(g *analysis.Group, p float64) bool {
	for _, c := range g.Cells {
		if c.Valid && !latency.Resolves(c.Samples, p) {
			return false
		}
	}
	return true
}

// pct formats a relative difference interval: "−21% [−25%, −17%]".
func pct(iv stats.Interval) string {
	if math.IsNaN(iv.Estimate) {
		return "n/a (" + iv.Method + ")"
	}
	f := func(x float64) string {
		if math.IsInf(x, 1) {
			return "+∞"
		}
		return strings.Replace(fmt.Sprintf("%+.0f%%", x*100), "-", "−", 1)
	}
	s := f(iv.Estimate)
	if iv.HasInterval() {
		s += " [" + f(iv.Lo) + ", " + f(iv.Hi) + "]"
		if !iv.TooFew() && !iv.Significant() {
			s += " not significant" // too few runs: the line says so once
		}
	} else {
		s += " (one run on a side, no interval)"
	}
	return s
}

// coverageNote says, in one line, which of a scenario's intervals cover
// less than the nominal level: "Intervals below the nominal 95%: a
// median's 75% (3 runs: the runs' range); a difference's 90% (its
// runs' ranges)". "" when none does.
func coverageNote(level float64, medians, diffs []stats.Interval) string {
	type key struct {
		n        int
		coverage float64
	}
	collect := func(ivs []stats.Interval) []key {
		var out []key
		for _, iv := range ivs {
			if k := (key{iv.N, iv.Coverage}); iv.BelowNominal() && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
		slices.SortFunc(out, func(a, b key) int { return b.n - a.n })
		return out
	}
	var parts []string
	if ks := collect(medians); len(ks) > 0 {
		var s []string
		for _, k := range ks {
			s = append(s, fmt.Sprintf("%.3g%% with %d runs", 100*k.coverage, k.n))
		}
		parts = append(parts, "a median's "+strings.Join(s, ", ")+" (the runs' range)")
	}
	if ks := collect(diffs); len(ks) > 0 {
		var s []string
		for _, k := range ks {
			if v := fmt.Sprintf("%.3g%%", 100*k.coverage); !slices.Contains(s, v) {
				s = append(s, v)
			}
		}
		parts = append(parts, "a difference's "+strings.Join(s, ", ")+" (from range to range)")
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Intervals below the nominal %.0f%%: %s.", 100*level, strings.Join(parts, "; "))
}

// scenarioCoverage is coverageNote for scenario s: its table's medians and
// its comparisons' differences.
func scenarioCoverage(a *analysis.Analysis, s analysis.Scenario) string {
	var medians, diffs []stats.Interval
	for _, m := range a.Meshes {
		if g := a.Group(m, s); g != nil {
			for _, r := range tableRows {
				if iv, ok := g.Figures[r.figure]; ok {
					medians = append(medians, iv)
				}
			}
		}
	}
	for _, c := range a.Comparisons {
		if c.Scenario == s {
			for _, iv := range c.Diffs {
				diffs = append(diffs, iv)
			}
		}
	}
	return coverageNote(a.Level, medians, diffs)
}

// axesCoverage is coverageNote for the comparisons along axis.
func axesCoverage(a *analysis.Analysis, axis string) string {
	var diffs []stats.Interval
	for _, c := range a.AxisComparisons {
		if c.Axis == axis {
			for _, iv := range c.Diffs {
				diffs = append(diffs, iv)
			}
		}
	}
	for _, in := range a.Interactions {
		if in.Axis == axis {
			for _, iv := range in.A.Diffs {
				diffs = append(diffs, iv)
			}
			for _, iv := range in.B.Diffs {
				diffs = append(diffs, iv)
			}
		}
	}
	return coverageNote(a.Level, nil, diffs)
}

// baselineText is the report's header word for the baseline: "baseline
// none", or "no baseline (no mesh none in the plan: the meshes are
// compared with each other and along the axes named)".
func baselineText(a *analysis.Analysis) string {
	if a.Baseline == "" {
		return "no baseline (no mesh none in the plan: the meshes are compared with each other and along the axes named)"
	}
	return "baseline " + a.Baseline
}

// ControlPlanesLine says who configured each mesh's proxies, as its cells'
// manifests recorded it (analysis.ControlPlaneOf of the mesh labels):
// "Proxies configured by: sidecar: meshbench's own configs (not
// istiod's); linkerd: Linkerd's controllers". "" when no mesh has a
// record (a cluster, mesh none alone, results from before the record).
func ControlPlanesLine(meshes []string) string {
	var parts []string
	for _, m := range meshes {
		if cp := analysis.ControlPlaneOf(m); cp != "" {
			parts = append(parts, analysis.MeshMode(m)+": "+cp)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Proxies configured by: " + strings.Join(parts, "; ")
}

// SendTickLine says that meshbench's engine sent in ticks (send_tick) in
// the cells that did, and how coarse; "" when none did.
func SendTickLine(cells []*analysis.Cell) string {
	var ticks []string
	n := 0
	for _, c := range cells {
		if c.SendTick > 0 {
			n++
			if t := c.SendTick.String(); !slices.Contains(ticks, t) {
				ticks = append(ticks, t)
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("Send tick %s (send_tick) in %d of %d cells: meshbench's engine sent each request up to a tick late, a lag counted in the latencies.",
		strings.Join(ticks, ", "), n, len(cells))
}

// PlanText writes the comparison of a plan: per scenario a table with one
// column per mesh (median over valid repetitions and its interval), the
// relative differences against the baseline, and a one-line verdict per
// comparison; then the scaling fits and the invalid cells.
func PlanText(w io.Writer, a *analysis.Analysis) error {
	bw := &errWriter{w: w}
	m := a.Plan.Manifest
	fmt.Fprintf(bw, "meshbench plan: %d cells (%d valid), seed %d, confidence %.0f%%, %s\n",
		len(a.Plan.Cells), len(a.Plan.Cells)-len(a.Invalid), m.Seed, a.Level*100, baselineText(a))
	if n := len(a.Plan.Unreadable); n > 0 {
		fmt.Fprintf(bw, "PARTIAL: %d finished cell(s) cannot be read and are left out (listed at the end)\n", n)
	}
	if len(a.Plan.Missing) > 0 {
		fmt.Fprintf(bw, "INCOMPLETE: %d of %d cells not run yet (resume with meshbench bench --resume %s)\n", len(a.Plan.Missing), len(m.Order), a.Plan.Dir)
	}
	fmt.Fprintln(bw, "Each figure: median over the valid repetitions [bootstrap interval]; latencies from the client, from the intended send time.")
	if line := SendTickLine(a.Plan.Cells); line != "" {
		fmt.Fprintln(bw, line)
	}
	if line := ControlPlanesLine(a.Meshes); line != "" {
		fmt.Fprintln(bw, line)
	}
	splits, hopErrs := analysis.HopSplits(a)
	if len(splits) > 0 {
		fmt.Fprintln(bw, "Hop timing was on (hops: true): every Envoy logged each request, which costs proxy CPU; the CPU figures include it.")
	}
	for _, s := range a.Scenarios {
		fmt.Fprintf(bw, "\n== %s ==\n", s)
		head, body := scenarioTable(a, s)
		rows := append([][]string{head}, body...)
		writeAligned(bw, rows)
		for _, c := range a.Comparisons {
			if c.Scenario != s {
				continue
			}
			fmt.Fprintf(bw, "  %s vs %s:", c.Mesh, c.Baseline)
			for _, f := range []struct{ label, fig string }{{"p50", analysis.LatencyP50}, {"p95", analysis.LatencyP95}, {"p99", analysis.LatencyP99},
				{"DP CPU", analysis.CPUPrefix + "data-plane"}, {"DP mem", analysis.MemPrefix + "data-plane"},
				{"total CPU", analysis.CPUPrefix + "TOTAL"}, {"throughput", analysis.ThroughputGbps},
				{"DP CPU per Gb/s", analysis.CPUPerGbpsPrefix + "data-plane"}} {
				if iv, ok := c.Diffs[f.fig]; ok {
					fmt.Fprintf(bw, "  %s %s;", f.label, pct(iv))
				}
			}
			if n, few := analysis.FewestRuns(c.Diffs); few != "" {
				fmt.Fprintf(bw, "  %s", stats.TooFewText(n))
			}
			fmt.Fprintln(bw)
		}
		if note := scenarioCoverage(a, s); note != "" {
			fmt.Fprintln(bw, "  "+note)
		}
		var verdicts []string
		for _, c := range a.Comparisons {
			if c.Scenario == s {
				verdicts = append(verdicts, c.Verdict())
			}
		}
		if len(verdicts) == 0 {
			fmt.Fprintln(bw, "  Verdicts: none (no two meshes with valid cells to compare here)")
		} else {
			fmt.Fprintln(bw, "  Verdicts:")
			for _, v := range verdicts {
				fmt.Fprintln(bw, "    "+v)
			}
		}
		writeHopSplits(bw, splits, s)
	}
	for _, e := range hopErrs {
		fmt.Fprintf(bw, "\nhop timing unreadable: %v\n", e)
	}
	writeNamespaces(bw, a)
	writeAxesText(bw, a)
	if len(a.Fits) > 0 {
		fmt.Fprintln(bw, "\nScaling with replicas (least-squares fit over every valid cell):")
		for _, f := range a.Fits {
			unit := "MiB"
			if strings.HasPrefix(f.Figure, analysis.CPUPrefix) {
				unit = "m"
			}
			fmt.Fprintf(bw, "  %-9s %-22s %s: %+.2f %s per extra replica %s, R² %.2f, %d points\n", f.Mesh, f.Figure, f.Scenario.App+" "+f.Scenario.Rate+" rps",
				f.Slope.Estimate, unit, ciText(f.Slope), f.R2, f.Points)
		}
	}
	if len(a.Invalid) > 0 || len(a.Plan.Failed) > 0 {
		fmt.Fprintln(bw, "\nInvalid cells (shown, never averaged in):")
		for _, c := range a.Invalid {
			fmt.Fprintf(bw, "  %s: %s\n", c.ID, strings.Join(c.Invalid, "; "))
		}
		for _, id := range slices.Sorted(maps.Keys(a.Plan.Failed)) {
			fmt.Fprintf(bw, "  %s: failed: %s\n", id, a.Plan.Failed[id])
		}
	}
	writeUnreadable(bw, "", a.Plan.Unreadable)
	return bw.err
}

// writeUnreadable lists the cells whose files cannot be read (side names
// the plan in a comparison, "" in a plan's own report).
func writeUnreadable(w io.Writer, side string, cells []*analysis.CellError) {
	if len(cells) == 0 {
		return
	}
	of := ""
	if side != "" {
		of = " of " + side
	}
	fmt.Fprintf(w, "\nUnreadable cells%s (PARTIAL: left out of every figure):\n", of)
	for _, e := range cells {
		fmt.Fprintln(w, "  "+unreadableLine(e))
	}
}

// unreadableLine is "CELL: FILE: reason".
func unreadableLine(e *analysis.CellError) string {
	return e.ID + ": " + e.File + ": " + e.Reason()
}

func ciText(iv stats.Interval) string {
	if !iv.HasInterval() {
		return "(no interval)"
	}
	return fmt.Sprintf("[%+.2f, %+.2f]", iv.Lo, iv.Hi)
}

// writeAligned writes rows as space-aligned columns, indented two spaces.
func writeAligned(w io.Writer, rows [][]string) {
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			pad := widths[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("   " + strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// NighthawkCSV writes the seed nighthawk script's layout, one block per
// scenario: a header "# scenario", then rows p50, p90, p99, max (ms), one
// column per mesh (medians over the valid repetitions).
func NighthawkCSV(w io.Writer, a *analysis.Analysis) error {
	cw := csv.NewWriter(w)
	for _, s := range a.Scenarios {
		var groups []*analysis.Group
		head := []string{"# " + s.String()}
		for _, mesh := range a.Meshes {
			if g := a.Group(mesh, s); g != nil {
				groups = append(groups, g)
				head = append(head, mesh)
			}
		}
		_ = cw.Write(head)
		for _, r := range []struct{ label, fig string }{{"p50", analysis.LatencyP50}, {"p90", analysis.LatencyP90},
			{"p99", analysis.LatencyP99}, {"max", analysis.LatencyMax}} {
			row := []string{r.label}
			for _, g := range groups {
				iv, ok := g.Figures[r.fig]
				if !ok { // never measured (no answered request): not 0 ms
					iv.Estimate = math.NaN()
				}
				row = append(row, num(iv.Estimate))
			}
			_ = cw.Write(row)
		}
	}
	cw.Flush()
	return cw.Error()
}

// TidyCSV writes every figure of every group, one row each, for people's
// own tools: scenario columns, mesh, figure, median, lo, hi, level (the
// coverage the interval achieves where it is known exactly — 0.75 for the
// range of 3 runs — else the nominal level), nominal_level, n (valid
// repetitions), cells, method, generator, then the later axes'
// (paramColumns: empty where a set does not vary them), then
// control_plane (who configured the mesh's proxies, as the cells'
// manifests recorded it: analysis.ControlPlaneOf; empty for no record).
func TidyCSV(w io.Writer, a *analysis.Analysis) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(append([]string{"app", "rate", "replicas", "policies", "protocol", "gateway", "mtls", "mesh", "figure",
		"median", "lo", "hi", "level", "nominal_level", "n", "cells", "method", "generator"}, append(paramColumns, "control_plane")...))
	for _, s := range a.Scenarios {
		for _, mesh := range a.Meshes {
			g := a.Group(mesh, s)
			if g == nil {
				continue
			}
			for _, f := range slices.Sorted(maps.Keys(g.Figures)) {
				iv := g.Figures[f]
				_ = cw.Write(append([]string{s.App, s.Rate, strconv.Itoa(s.Replicas), strconv.Itoa(s.Policies), s.Protocol,
					strconv.FormatBool(s.Gateway), strconv.FormatBool(s.MTLS), mesh, f, num(iv.Estimate), num(iv.Lo), num(iv.Hi),
					num(iv.Achieved()), num(iv.Level), strconv.Itoa(iv.N), strconv.Itoa(len(g.Cells)), iv.Method, generatorName(s.Generator)},
					append(paramValues(s.Params), analysis.ControlPlaneOf(mesh))...))
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// paramColumns are the CSV columns of the later axes (analysis.Params),
// in paramValues' order.
var paramColumns = []string{"connections", "payload", "proxy_threads", "requests_per_connection", "placement", "arrivals"}

// paramValues are p's CSV cells, empty at zero: a value the set does not
// vary (Analyze folds it; the plan's YAML says the setting), and for
// requests_per_connection kept connections, for placement cross-node,
// for arrivals constant.
func paramValues(p analysis.Params) []string {
	n := func(v int) string {
		if v == 0 {
			return ""
		}
		return strconv.Itoa(v)
	}
	return []string{n(p.Connections), n(p.Payload), n(p.ProxyThreads), n(p.RequestsPerConnection), p.Placement, p.Arrivals}
}

func num(x float64) string {
	if math.IsNaN(x) {
		return ""
	}
	return strconv.FormatFloat(x, 'g', 6, 64)
}

// errWriter keeps the first write error so a renderer can write freely and
// report it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return len(p), nil
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, nil
}

// writeNamespaces writes, for a cluster plan, the seed reports'
// per-namespace table of every configuration (analysis.Group.Namespaces:
// medians over its valid repetitions), under one heading; nothing for a
// plan of the local lab.
func writeNamespaces(w io.Writer, a *analysis.Analysis) {
	head := false
	for _, s := range a.Scenarios {
		for _, mesh := range a.Meshes {
			g := a.Group(mesh, s)
			if g == nil {
				continue
			}
			t, ok := g.Namespaces()
			if !ok {
				continue
			}
			if !head {
				mem := sample.WorkingSet
				for _, c := range g.Cells {
					if c.Valid && c.MetricsSource == "kubelet" {
						mem = sample.CounterWorkingSet
					}
				}
				fmt.Fprintln(w, "\n== Per namespace (the seed reports' table; each figure the median over the valid repetitions) ==")
				_ = NamespaceNote(w, mem)
				head = true
			}
			fmt.Fprintf(w, "\n-- %s, %s (%d/%d valid) --\n", mesh, s, g.Valid, len(g.Cells))
			_ = NamespaceTable(w, t, sample.WorkingSet)
		}
	}
}
