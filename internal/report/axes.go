package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/stats"
)

// axisSection is the verdict lines of one compared axis other than mesh,
// then its interaction lines (the mesh's overhead at two of its values).
type axisSection struct {
	Axis         string
	Verdicts     []string
	Interactions []string
	// Coverage says which of the section's intervals cover less than the
	// nominal level ("" when none does).
	Coverage string
}

// axisSections groups a's axis comparisons and interactions by axis, in
// the order the plan named the axes.
func axisSections(a *analysis.Analysis) []axisSection {
	var out []axisSection
	for _, axis := range a.Compare {
		if axis == analysis.AxisMesh {
			continue
		}
		s := axisSection{Axis: axis, Coverage: axesCoverage(a, axis)}
		for _, c := range a.AxisComparisons {
			if c.Axis == axis {
				s.Verdicts = append(s.Verdicts, c.Verdict())
			}
		}
		for _, in := range a.Interactions {
			// An interaction with no figure on both sides (every cell of
			// one side invalid) says nothing: left out.
			if v := in.Verdict(); in.Axis == axis && !strings.HasSuffix(v, ": nothing to compare") {
				s.Interactions = append(s.Interactions, v)
			}
		}
		out = append(out, s)
	}
	return out
}

// writeAxesText writes one block per compared axis other than mesh: every
// pair of configurations that differ only on it, then how each mesh's
// overhead against the baseline changes along it.
func writeAxesText(w io.Writer, a *analysis.Analysis) {
	for _, s := range axisSections(a) {
		fmt.Fprintf(w, "\n== Along %s (B vs A: relative difference of medians [bootstrap interval]) ==\n", s.Axis)
		if len(s.Verdicts) == 0 {
			fmt.Fprintf(w, "  none: no two configurations with valid cells differ only in %s\n", s.Axis)
		}
		for _, v := range s.Verdicts {
			fmt.Fprintln(w, "  "+v)
		}
		if len(s.Interactions) > 0 {
			fmt.Fprintf(w, "  Mesh overhead against %s, by %s:\n", a.Baseline, s.Axis)
			for _, v := range s.Interactions {
				fmt.Fprintln(w, "    "+v)
			}
		}
		if s.Coverage != "" {
			fmt.Fprintln(w, "  "+s.Coverage)
		}
	}
}

// AxesCSV writes every axis comparison and interaction, one row per
// figure: kind (axis or interaction), axis, the configuration compared
// (mesh and scenario columns; for an interaction the mesh is "MESH vs
// BASELINE"), a and b (the values: B vs A; an interaction's row is the
// overhead at b alone, a empty), figure, diff (relative, B/A − 1), lo, hi,
// level (the coverage the interval achieves: 0.9 for 3 vs 3 runs, whose
// interval runs from range to range; else the nominal level),
// nominal_level, n (valid repetitions of the smaller side), significant
// (false below 3 runs a side: too few to judge).
func AxesCSV(w io.Writer, a *analysis.Analysis) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"kind", "axis", "mesh", "app", "rate", "replicas", "policies", "protocol", "gateway", "mtls",
		"a", "b", "figure", "diff", "lo", "hi", "level", "nominal_level", "n", "significant", "generator"})
	row := func(kind, axis, mesh string, c analysis.Config, av, bv, fig string, iv stats.Interval) {
		_ = cw.Write([]string{kind, axis, mesh, c.App, c.Rate, strconv.Itoa(c.Replicas), strconv.Itoa(c.Policies), c.Protocol,
			strconv.FormatBool(c.Gateway), strconv.FormatBool(c.MTLS), av, bv, fig, num(iv.Estimate), num(iv.Lo), num(iv.Hi),
			num(iv.Achieved()), num(iv.Level), strconv.Itoa(iv.N), strconv.FormatBool(iv.Significant()), generatorName(c.Generator)})
	}
	for _, c := range a.AxisComparisons {
		for _, f := range append(slices.Clone(analysis.CompareFigures), analysis.CPUPrefix+"load") {
			if f == analysis.CPUPrefix+"load" && c.Axis != analysis.AxisGenerator {
				continue // compared along the generator axis only
			}
			if iv, ok := c.Diffs[f]; ok {
				row("axis", c.Axis, c.Base.Mesh, c.Base, c.BaseValue, c.OtherValue, f, iv)
			}
		}
	}
	for _, in := range a.Interactions {
		for _, side := range []struct {
			value string
			c     analysis.Comparison
		}{{in.AValue, in.A}, {in.BValue, in.B}} {
			s := side.c.Scenario
			cfg := analysis.Config{App: s.App, Rate: s.Rate, Replicas: s.Replicas, Policies: s.Policies, Protocol: s.Protocol, Gateway: s.Gateway, MTLS: s.MTLS, Generator: s.Generator}
			for _, f := range analysis.CompareFigures {
				if iv, ok := side.c.Diffs[f]; ok {
					row("interaction", in.Axis, in.Mesh+" vs "+in.Baseline, cfg, "", side.value, f, iv)
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// generatorName is a CSV's generator column: "meshbench" for the engine
// (a config's empty generator).
func generatorName(g string) string {
	if g == "" {
		return "meshbench"
	}
	return g
}
