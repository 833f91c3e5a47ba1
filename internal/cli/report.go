package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
			if !validLevel(f.confidence) {
				return usagef("--confidence %v: allowed: a level between 0 and 1, e.g. 0.95", f.confidence)
			}
			p, err := analysis.ReadPlan(args[0])
			if err != nil {
				return &UsageError{Err: err}
			}
			if sp := searchPlanOf(p); sp != nil { // a capacity search: its own reports
				return writeSearchReports(env, args[0], sp, f.quiet)
			}
			o := analysis.Options{Level: f.confidence, Baseline: f.baseline, Seed: uint64(p.Manifest.Seed)}
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
			}
			if cmd.Flags().Changed("baseline") && f.baseline != "" {
				if err := checkBaseline(f.baseline, p); err != nil {
					return err
				}
			}
			a := analysis.Analyze(p, o)
			if err := writeReports(env, a, f.quiet); err != nil {
				return err
			}
			return partial(p)
		},
	}
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "mesh the others are compared with (default: the plan's, or none)")
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
	var text, nh, tidy, html bytes.Buffer
	if err := report.PlanText(&text, a); err != nil {
		return err
	}
	if err := report.NighthawkCSV(&nh, a); err != nil {
		return err
	}
	if err := report.TidyCSV(&tidy, a); err != nil {
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
	// Each file whole or not at all: a full disk leaves the previous
	// report in place, never a truncated one.
	for name, b := range map[string][]byte{"report.txt": text.Bytes(), "latency.csv": nh.Bytes(), "figures.csv": tidy.Bytes(), "report.html": html.Bytes()} {
		if err := results.WriteFileAtomic(filepath.Join(dir, name), b, 0o644); err != nil {
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
		if err := results.WriteFileAtomic(filepath.Join(dir, c.ID+".json"), b, 0o644); err != nil {
			return err
		}
	}
	return nil
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

// partial returns a PartialError when cells of the plans could not be read
// (the report lists them), else nil.
func partial(plans ...*analysis.Plan) error {
	var msgs []string
	for _, p := range plans {
		if n := len(p.Unreadable); n > 0 {
			msgs = append(msgs, fmt.Sprintf("%d cell(s) of %s cannot be read", n, p.Dir))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return &PartialError{Err: fmt.Errorf("partial report: %s (listed under \"Unreadable cells\"; the other cells are reported)", strings.Join(msgs, "; "))}
}
