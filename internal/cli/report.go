package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/plan"
	"github.com/meshbench/meshbench/internal/plot"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
)

// ReportDir is where a plan's reports go inside its results directory.
const ReportDir = "report"

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
row each), plots/*.png|svg and smp/CELL.json (each cell in the Service
Mesh Performance format, for Meshery). Prints the text report.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.confidence <= 0 || f.confidence >= 1 {
				return usagef("--confidence %v: allowed: a level between 0 and 1, e.g. 0.95", f.confidence)
			}
			p, err := analysis.ReadPlan(args[0])
			if err != nil {
				return &UsageError{Err: err}
			}
			if sp := searchPlanOf(p); sp != nil { // a capacity search: its own reports
				return writeSearchReports(env, args[0], sp, f.quiet)
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
			a := analysis.Analyze(p, o)
			return writeReports(env, a, f.quiet)
		},
	}
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "mesh the others are compared with (default: the plan's, or none)")
	cmd.Flags().StringSliceVar(&f.compare, "compare", nil, "axes to compare along: mesh, policies, mtls, load_model, gateway, protocol, replicas, rate, app (without the flag: the plan's)")
	cmd.Flags().Float64Var(&f.confidence, "confidence", 0.95, "confidence level of every interval (without the flag: the plan's)")
	cmd.Flags().BoolVarP(&f.quiet, "quiet", "q", false, "write the reports without printing the text report")
	return cmd
}

// writeReports writes every report of a into its plan directory and prints
// the text report (unless quiet) and where the files are.
func writeReports(env *Env, a *analysis.Analysis, quiet bool) error {
	dir := filepath.Join(a.Plan.Dir, ReportDir)
	if err := os.MkdirAll(filepath.Join(dir, "plots"), 0o755); err != nil {
		return err
	}
	var text, nh, tidy, axes, html bytes.Buffer
	if err := report.PlanText(&text, a); err != nil {
		return err
	}
	if err := report.NighthawkCSV(&nh, a); err != nil {
		return err
	}
	if err := report.TidyCSV(&tidy, a); err != nil {
		return err
	}
	if err := report.AxesCSV(&axes, a); err != nil {
		return err
	}
	charts, err := report.PlanCharts(a)
	if err != nil {
		return err
	}
	for _, c := range charts {
		if err := plot.WriteFiles(filepath.Join(dir, "plots"), c.Name, c.Chart); err != nil {
			return err
		}
	}
	if err := report.PlanHTML(&html, a, charts); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"report.txt": text.Bytes(), "latency.csv": nh.Bytes(), "figures.csv": tidy.Bytes(), "axes.csv": axes.Bytes(), "report.html": html.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := writeSMP(filepath.Join(dir, "smp"), a.Plan); err != nil {
		return err
	}
	if !quiet {
		_, _ = env.Stdout.Write(text.Bytes())
	}
	fmt.Fprintf(env.Stdout, "\nReports: %s (HTML: %s, %d plots)\n", dir, filepath.Join(dir, "report.html"), len(charts))
	return nil
}

// writeSMP writes every cell of p in the SMP format to dir/CELL.json.
func writeSMP(dir string, p *analysis.Plan) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, c := range p.Cells {
		run, err := results.ReadManifest(c.Dir)
		if err != nil {
			return fmt.Errorf("smp export of %s: %w", c.ID, err)
		}
		load, err := results.ReadFile(filepath.Join(c.Dir, results.LoadFile))
		if err != nil {
			return fmt.Errorf("smp export of %s: %w", c.ID, err)
		}
		b, err := report.SMPResult(c, run, load)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, c.ID+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
