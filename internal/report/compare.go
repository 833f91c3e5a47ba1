package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/stats"
)

// compareRows are the rows of a compared config's table: CompareFigures,
// labelled as in PlanText.
var compareRows = []struct{ label, figure, format string }{
	{"p50 ms", analysis.LatencyP50, "%.3g"},
	{"p90 ms", analysis.LatencyP90, "%.3g"},
	{"p95 ms", analysis.LatencyP95, "%.3g"},
	{"p99 ms", analysis.LatencyP99, "%.3g"},
	{"max ms", analysis.LatencyMax, "%.3g"},
	{"data-plane CPU m", analysis.CPUPrefix + "data-plane", "%.0f"},
	{"data-plane MiB", analysis.MemPrefix + "data-plane", "%.1f"},
	{"TOTAL CPU m", analysis.CPUPrefix + "TOTAL", "%.0f"},
	{"TOTAL MiB", analysis.MemPrefix + "TOTAL", "%.1f"},
	{"achieved rps", analysis.AchievedRate, "%.1f"},
	// A fault's cost, in scenarios with a fault.
	{"fault: failed during", analysis.FaultFailedDuring, "%.0f"},
	{"fault: failed after", analysis.FaultFailedAfter, "%.0f"},
	{"fault: p99 before ms", analysis.FaultP99BeforeMs, "%.3g"},
	{"fault: p99 during ms", analysis.FaultP99DuringMs, "%.3g"},
	{"fault: recovered (share)", analysis.FaultRecovered, "%.2f"},
	{"fault: recovery s", analysis.FaultRecoveryS, "%.2f"},
	{"fault: Envoy retries", analysis.FaultEnvoyRetries, "%.0f"},
}

// CompareText writes the comparison of two result sets: a header naming
// both directories with their meshbench and Envoy versions, seeds and
// hosts; then per scenario, one table per mesh measured in both (rows: the
// figures; columns: A's and B's medians over their valid repetitions
// [bootstrap interval], and B vs A, the relative difference of medians
// [bootstrap interval], "not significant" when it spans zero), which
// intervals cover less than the nominal level, and one verdict line per
// config (too few to judge below 3 runs a side); then the configs found on one side only and the
// cells left out (invalid, failed, not run).
func CompareText(w io.Writer, sc *analysis.SetComparison) error {
	bw := &errWriter{w: w}
	fmt.Fprintf(bw, "meshbench compare: B vs A, confidence %.0f%%, %d configs in both\n", sc.Level*100, len(sc.Configs))
	for _, side := range []struct {
		name string
		a    *analysis.Analysis
	}{{"A", sc.A}, {"B", sc.B}} {
		m := side.a.Plan.Manifest
		envoy := m.EnvoyVersion
		if envoy == "" {
			envoy = "unknown"
		}
		fmt.Fprintf(bw, "  %s: %s: meshbench %s, Envoy %s, seed %d, %s host %s (%d CPUs, %s), %d cells (%d valid)\n",
			side.name, side.a.Plan.Dir, m.MeshbenchVersion, envoy, m.Seed, m.Platform, m.Host.Hostname, m.Host.CPUs, m.Host.CPUModel,
			len(side.a.Plan.Cells), len(side.a.Plan.Cells)-len(side.a.Invalid))
		if line := ControlPlanesLine(side.a.Meshes); line != "" {
			fmt.Fprintf(bw, "     %s\n", line)
		}
	}
	for _, d := range sc.MethodDifferences {
		fmt.Fprintf(bw, "WARNING: %s; a difference between A and B may come from this, not from the mesh\n", d)
	}
	fmt.Fprintln(bw, "Each figure: median over the valid repetitions [bootstrap interval]; B vs A: relative difference of medians [bootstrap interval].")
	var last analysis.Scenario
	for i, d := range sc.Configs {
		s := d.Config.Scenario()
		if i == 0 || s != last {
			fmt.Fprintf(bw, "\n== %s ==\n", s)
			last = s
		}
		rows := [][]string{{d.Config.Mesh, fmt.Sprintf("A (%d/%d)", d.A.Valid, len(d.A.Cells)),
			fmt.Sprintf("B (%d/%d)", d.B.Valid, len(d.B.Cells)), "B vs A"}}
		for _, r := range compareRows {
			iva, oka := d.A.Figures[r.figure]
			ivb, okb := d.B.Figures[r.figure]
			if !oka && !okb {
				continue
			}
			row := []string{"  " + r.label, "-", "-", "-"}
			if oka {
				row[1] = cellText(iva, r.format)
			}
			if okb {
				row[2] = cellText(ivb, r.format)
			}
			if iv, ok := d.Diffs[r.figure]; ok {
				row[3] = pct(iv)
			}
			rows = append(rows, row)
		}
		writeAligned(bw, rows)
		var medians, diffs []stats.Interval
		for _, r := range compareRows {
			medians = append(medians, d.A.Figures[r.figure], d.B.Figures[r.figure])
			if iv, ok := d.Diffs[r.figure]; ok {
				diffs = append(diffs, iv)
			}
		}
		if note := coverageNote(sc.Level, medians, diffs); note != "" {
			fmt.Fprintln(bw, "  "+note)
		}
		fmt.Fprintln(bw, "  Verdict: "+d.Verdict())
	}
	for _, only := range []struct {
		name, other string
		cfgs        []analysis.Config
	}{{"A", "B", sc.OnlyA}, {"B", "A", sc.OnlyB}} {
		if len(only.cfgs) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\nOnly in %s (no valid cell in %s, not compared):\n", only.name, only.other)
		for _, c := range only.cfgs {
			fmt.Fprintf(bw, "  %s, %s\n", c.Mesh, c.Scenario())
		}
	}
	for _, side := range []struct {
		name string
		a    *analysis.Analysis
	}{{"A", sc.A}, {"B", sc.B}} {
		p := side.a.Plan
		if len(side.a.Invalid) == 0 && len(p.Failed) == 0 && len(p.Missing) == 0 {
			continue
		}
		fmt.Fprintf(bw, "\nLeft out of %s: %d invalid, %d failed, %d not run\n", side.name, len(side.a.Invalid), len(p.Failed), len(p.Missing))
		for _, c := range side.a.Invalid {
			fmt.Fprintf(bw, "  %s: %s\n", c.ID, strings.Join(c.Invalid, "; "))
		}
		for _, id := range slices.Sorted(maps.Keys(p.Failed)) {
			fmt.Fprintf(bw, "  %s: failed: %s\n", id, p.Failed[id])
		}
	}
	writeUnreadable(bw, "A", sc.A.Plan.Unreadable)
	writeUnreadable(bw, "B", sc.B.Plan.Unreadable)
	return bw.err
}

// CompareCSV writes a comparison as a tidy CSV, one row per config and
// figure measured on both sides: the scenario columns, mesh, figure, each
// side's median [lo, hi] and valid repetitions, the relative difference
// B/A − 1 with its interval, the level its interval achieves (below the
// nominal level with few runs) and the nominal level, whether it is
// significant (its interval excludes 0; false without an interval or with
// fewer than 3 runs a side), the interval's method, and who configured
// the mesh's proxies (analysis.ControlPlaneOf: the same on both sides, the
// mesh label carrying it).
// Empty fields are values that could not be computed.
func CompareCSV(w io.Writer, sc *analysis.SetComparison) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"app", "rate", "replicas", "policies", "protocol", "gateway", "mtls", "mesh", "figure",
		"a_median", "a_lo", "a_hi", "a_n", "b_median", "b_lo", "b_hi", "b_n",
		"diff", "diff_lo", "diff_hi", "level", "nominal_level", "significant", "method", "control_plane"})
	for _, d := range sc.Configs {
		c := d.Config
		for _, f := range analysis.CompareFigures {
			iv, ok := d.Diffs[f]
			if !ok {
				continue
			}
			ia, ib := d.A.Figures[f], d.B.Figures[f]
			_ = cw.Write([]string{c.App, c.Rate, strconv.Itoa(c.Replicas), strconv.Itoa(c.Policies), c.Protocol,
				strconv.FormatBool(c.Gateway), strconv.FormatBool(c.MTLS), c.Mesh, f,
				num(ia.Estimate), num(ia.Lo), num(ia.Hi), strconv.Itoa(ia.N),
				num(ib.Estimate), num(ib.Lo), num(ib.Hi), strconv.Itoa(ib.N),
				num(iv.Estimate), num(iv.Lo), num(iv.Hi), num(iv.Achieved()), num(iv.Level), strconv.FormatBool(iv.Significant()), iv.Method,
				analysis.ControlPlaneOf(c.Mesh)})
		}
	}
	cw.Flush()
	return cw.Error()
}
