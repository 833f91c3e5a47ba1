package cli

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/threshold"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
)

type compareFlags struct {
	out        string
	confidence float64
	// failOnRegression is --fail-on-regression's margin ("" when not given).
	failOnRegression string
}

func newCompareCmd(env *Env) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare DIR_A DIR_B",
		Short: "Compare two plan results directories config by config (B vs A)",
		Long: `Read two plan results directories (written by meshbench bench: two versions
of a mesh, two machines) and, for every config (mesh and scenario) with
valid cells in both, print each side's medians over its valid repetitions
and the relative difference B vs A of latency p50/p90/p99/max, data-plane
and total CPU and memory and achieved rate, with a bootstrap interval over
both sides' repetitions ("not significant" when it spans zero), and one
verdict line per config. Configs found on one side only are listed;
invalid, failed and unfinished cells are left out and counted.
--out FILE writes the same as a tidy CSV. Exits 1 when no config has valid
cells in both.

Two capacity-search plans (bench with search:/--slo) are compared by
capacity instead: per config, each side's capacity at the objective and
B's relative to A's with an interval.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !validLevel(f.confidence) {
				return usagef("--confidence %v: allowed: a level between 0 and 1, e.g. 0.95", f.confidence)
			}
			margin := -1.0
			if f.failOnRegression != "" {
				m, err := threshold.ParseRelative(f.failOnRegression)
				if err != nil {
					return usagef("--fail-on-regression %v", err)
				}
				margin = m
			}
			if f.out != "" {
				if err := results.CheckOutputFile(f.out); err != nil {
					return usagef("--out %v", err)
				}
			}
			a, err := analysis.ReadPlan(args[0])
			if err != nil {
				return &UsageError{Err: err}
			}
			b, err := analysis.ReadPlan(args[1])
			if err != nil {
				return &UsageError{Err: err}
			}
			if sa, sb := searchPlanOf(a), searchPlanOf(b); sa != nil || sb != nil {
				return compareCapacities(env, a, b, sa, sb, f.confidence)
			}
			a.Settings = plan.MethodSettings("A/plan.yaml", a.PlanYAML)
			b.Settings = plan.MethodSettings("B/plan.yaml", b.PlanYAML)
			sc := analysis.CompareSets(a, b, analysis.Options{Level: f.confidence, Seed: uint64(a.Manifest.Seed)})
			if len(sc.Configs) == 0 {
				return fmt.Errorf("nothing to compare: no config (mesh and scenario) has a valid cell in both %s (%d configs) and %s (%d configs)%s",
					args[0], len(sc.OnlyA), args[1], len(sc.OnlyB), configuredApart(sc))
			}
			var text, csv bytes.Buffer
			if err := report.CompareText(&text, sc); err != nil {
				return err
			}
			if f.out != "" {
				if err := report.CompareCSV(&csv, sc); err != nil {
					return err
				}
				if err := results.WriteFileAtomic(f.out, csv.Bytes(), 0o644); err != nil {
					return fmt.Errorf("writing the comparison CSV: %w", err)
				}
			}
			if _, err = env.Stdout.Write(text.Bytes()); err != nil {
				return err
			}
			if err := bench.Partial(a, b); err != nil {
				return err
			}
			if margin >= 0 {
				if reg := threshold.Regressions(sc, margin); len(reg) > 0 {
					return &ThresholdError{Crossed: append([]string{fmt.Sprintf("%d regressions beyond %s", len(reg), f.failOnRegression)}, reg...)}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&f.out, "out", "o", "", "also write the comparison as a tidy CSV to `FILE` (one row per config and figure)")
	cmd.Flags().Float64Var(&f.confidence, "confidence", 0.95, "confidence level of every interval")
	cmd.Flags().StringVar(&f.failOnRegression, "fail-on-regression", "", `exit 99 when B is significantly worse than A by more than this margin in any config ("10%"; "0%" when given bare): latency, CPU or memory higher, achieved rate lower, the whole interval beyond the margin`)
	cmd.Flags().Lookup("fail-on-regression").NoOptDefVal = "0%"
	return cmd
}

// configuredApart explains an empty comparison whose sides share mesh
// modes whose proxies different control planes configured (the labels
// differ: "sidecar (meshbench's configs)", "sidecar (config from
// istiod)"): compare pairs only cells configured alike. "" otherwise.
func configuredApart(sc *analysis.SetComparison) string {
	modes := map[string]bool{}
	for _, m := range sc.A.Meshes {
		modes[analysis.MeshMode(m)] = true
	}
	shared := false
	for _, m := range sc.B.Meshes {
		shared = shared || modes[analysis.MeshMode(m)]
	}
	la, lb := report.ControlPlanesLine(sc.A.Meshes), report.ControlPlanesLine(sc.B.Meshes)
	if !shared || la == lb {
		return ""
	}
	say := func(l string) string {
		if l == "" {
			return "no record"
		}
		return strings.TrimPrefix(l, "Proxies configured by: ")
	}
	return fmt.Sprintf("; the same meshes' proxies were configured by different control planes (A: %s; B: %s), and compare pairs only cells configured alike", say(la), say(lb))
}
