package bench

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/report/plot"
	"github.com/meshbench/meshbench/internal/results"
)

// ReportDir is where a plan's reports go inside its results directory.
const ReportDir = "report"

// WriteReports writes every report of a into its plan directory and prints to stdout
// the text report (unless quiet) and where the files are.
func WriteReports(stdout io.Writer, a *analysis.Analysis, quiet bool) error {
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
	// Each file whole or not at all: a full disk leaves the previous
	// report in place, never a truncated one.
	for name, b := range map[string][]byte{"report.txt": text.Bytes(), "latency.csv": nh.Bytes(), "figures.csv": tidy.Bytes(), "axes.csv": axes.Bytes(), "report.html": html.Bytes()} {
		if err := results.WriteFileAtomic(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	if err := writeSMP(filepath.Join(dir, "smp"), a.Plan); err != nil {
		return err
	}
	if !quiet {
		_, _ = stdout.Write(text.Bytes())
	}
	fmt.Fprintf(stdout, "\nReports: %s (HTML: %s, %d plots)\n", dir, filepath.Join(dir, "report.html"), len(charts))
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

// Partial returns a PartialError when cells of the plans could not be read
// (the report lists them), else nil.
func Partial(plans ...*analysis.Plan) error {
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
