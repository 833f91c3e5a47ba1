package cli

import (
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/results"
)

// ReportDir is where a plan's reports go inside its results directory.
const ReportDir = bench.ReportDir

type reportFlags struct {
	baseline   string
	confidence float64
	quiet      bool
	compare    []string
}

func newReportCmd(env *Env) *cobra.Command {
	f := &reportFlags{}
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate every report of a plan results directory from its raw results",
		Long: `Read a plan results directory (written by meshbench bench), aggregate its
cells (median over valid repetitions with bootstrap intervals, differences
against the baseline mesh, scaling fits) and write DIR/report/: report.txt,
report.html (self-contained), latency.csv (the nighthawk script's layout:
rows p50/p90/p99/max, one column per mesh), figures.csv (every figure, one
row each), plots/*.png|svg and smp/CELL.json (each cell as Service Mesh
Performance messages, valid against the SMP protos). Prints the text report.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !validLevel(f.confidence) {
				return usagef("--confidence %v: allowed: a level between 0 and 1, e.g. 0.95", f.confidence)
			}
			p, err := analysis.ReadPlan(args[0])
			if err != nil {
				return &UsageError{Err: err}
			}
			if sp := searchPlanOf(p); sp != nil { // a capacity search: its own reports
				return bench.WriteSearchReports(env.Stdout, args[0], sp, f.quiet)
			}
			for _, ax := range f.compare {
				if !slices.Contains(analysis.CompareAxes, ax) {
					return usagef("--compare %q: allowed: %s", ax, strings.Join(analysis.CompareAxes, ", "))
				}
			}
			o := analysis.Options{Level: f.confidence, Baseline: f.baseline, Seed: uint64(p.Manifest.Seed), Compare: f.compare}
			// Unless told otherwise, compare as the plan asked (and as bench's
			// own report did). A plan.yaml this meshbench cannot read keeps
			// the flags' defaults.
			if pl, err := plan.Parse(results.PlanFile, p.PlanYAML); err == nil {
				if !cmd.Flags().Changed("baseline") {
					o.Baseline = string(pl.Baseline)
				}
				if !cmd.Flags().Changed("confidence") {
					o.Level = pl.Confidence
				}
				if !cmd.Flags().Changed("compare") {
					o.Compare = pl.Compare
				}
			}
			if cmd.Flags().Changed("baseline") && f.baseline != "" {
				if err := checkBaseline(f.baseline, p); err != nil {
					return err
				}
			}
			a := analysis.Analyze(p, o)
			if err := bench.WriteReports(env.Stdout, a, f.quiet); err != nil {
				return err
			}
			return bench.Partial(p)
		},
	}
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "mesh the others are compared with (default: the plan's, or none)")
	cmd.Flags().StringSliceVar(&f.compare, "compare", nil, "axes to compare along: mesh, policies, mtls, load_model, gateway, protocol, replicas, rate, app (without the flag: the plan's)")
	cmd.Flags().Float64Var(&f.confidence, "confidence", 0.95, "confidence level of every interval (without the flag: the plan's)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "write the reports without printing the text report")
	return cmd
}

// validLevel: a confidence level strictly between 0 and 1 (NaN is not).
func validLevel(l float64) bool { return l > 0 && l < 1 }

// checkBaseline refuses a --baseline mesh the plan has no cell of, naming
// the plan's meshes.
func checkBaseline(baseline string, p *analysis.Plan) error {
	var meshes []string
	for _, c := range p.Cells {
		if !slices.Contains(meshes, c.Config.Mesh) {
			meshes = append(meshes, c.Config.Mesh)
		}
	}
	if slices.Contains(meshes, baseline) {
		return nil
	}
	sort.Strings(meshes)
	return usagef("--baseline %q: the plan in %s has no cell of that mesh; allowed: %s", baseline, p.Dir, strings.Join(meshes, ", "))
}
