package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/report/plot"
)

// SearchAnalysisOptions are how plan p's probes are judged.
func SearchAnalysisOptions(p *plan.Plan) analysis.SearchOptions {
	return analysis.SearchOptions{Objective: p.Search.Objective, Config: p.Search.Config,
		RateShortfall: p.Thresholds.RateShortfall, LoadCPU: p.Thresholds.LoadCPU, Baseline: string(p.Baseline),
		Level: p.Confidence, Seed: uint64(*p.Seed), ProbeID: plan.ProbeID, ParseProbeID: plan.ParseProbeID}
}

// ProbeVerdict is how a finished probe of search plan p judged: "; met",
// "; missed: …", "; LOAD GENERATOR LIMIT: …", or "" when the probe left no
// result to judge.
func ProbeVerdict(p *plan.Plan, ev runner.Event) string {
	if ev.Result == nil || ev.Result.Dir == "" {
		return ""
	}
	out, _, err := analysis.JudgeProbe(ev.Result.Dir, SearchAnalysisOptions(p))
	if err != nil {
		return ""
	}
	switch {
	case out.Met:
		return "; met"
	case out.GeneratorLimit:
		return "; LOAD GENERATOR LIMIT: " + strings.Join(out.Reasons, "; ")
	default:
		return "; missed: " + strings.Join(out.Reasons, "; ")
	}
}

// runSearch runs a capacity-search plan: every search step by step,
// probes of different configurations alternating, then the capacity
// reports.
func runSearch(ctx context.Context, cfg Config, bin *envoy.Binary, sub local.Substrate, substrate string) error {
	p, dir := cfg.Plan, cfg.Dir
	ao := SearchAnalysisOptions(p)
	onKube := p.Platform == plan.PlatformKube
	if onKube && cfg.Kube.InstallMesh {
		// The mesh installs with a plan's first cell of each mesh; a
		// search's probes are not known before it runs.
		return usagef("--install-mesh: not with a capacity search; install the mesh first (meshbench run --platform kube --install-mesh), the probes verify it")
	}
	var rounds [][]runner.Search
	n := 0
	for _, round := range p.Searches(*p.Seed) {
		var rr []runner.Search
		for _, s := range round {
			// Every probe is a real cell: on a cluster its app deployed,
			// the load Job at the probe's rate, the kubelet's (or
			// metrics.k8s.io's) figures, then deleted.
			rr = append(rr, runner.Search{ID: s.ID, Settings: cfg.settings(s.Cell)})
			n++
		}
		rounds = append(rounds, rr)
	}
	started := time.Now()
	so := runner.SearchOptions{Dir: dir, Resume: cfg.Resume, PlanYAML: p.YAML(), Seed: *p.Seed, Rounds: rounds,
		Config: p.Search.Config, ProbeID: plan.ProbeID, Version: cfg.Version,
		Judge: func(cellDir string, rate float64) (capacity.Probe, error) {
			out, _, err := analysis.JudgeProbe(cellDir, ao)
			if err != nil {
				return capacity.Probe{}, err
			}
			return capacity.ProbeOf(rate, out), nil
		}}
	if bin != nil {
		so.EnvoyVersion = bin.Version
	}
	// About 10 probes a search (growth to the first miss, then bisection),
	// each a cell of its own lab.
	est := time.Duration(n*10) * (p.Warmup + p.Duration + p.Drain + p.CellOverhead())
	fmt.Fprintf(cfg.Stderr, "meshbench bench: capacity search at %s for %d configuration(s) × %d repetition(s), from %s/s to %s/s, precision %s, %s per probe after %s warm-up, seed %d, about %s at 10 probes a search; results in %s\n",
		p.Search.Objective.Human(), n/max(p.Repetitions, 1), p.Repetitions, capacity.FormatRate(p.Search.Config.From),
		capacity.FormatRate(p.Search.Config.To), capacityPct(p.Search.Config.Precision), p.Duration, p.Warmup, *p.Seed, est.Round(time.Minute), dir)
	var obs Observer
	if cfg.Watch != nil {
		obs = cfg.Watch(Start{Search: true, OnKube: onKube, Substrate: substrate, Dir: dir, MetricsSource: cfg.Kube.MetricsSource, Started: started})
	}
	if obs != nil {
		so.Progress = obs.Cell
	}
	if onKube {
		so.On = &kube.Platform{Options: cfg.kubeOptions(nil, nil, obs)}
	} else {
		so.On = local.NewPlatform(cfg.labOptions(bin, sub, obs))
	}
	_, _, runErr := runner.RunSearches(ctx, so)
	if obs != nil {
		obs.Finish()
	}
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	if err := WriteSearchReports(cfg.Stdout, dir, p, false); err != nil {
		return err
	}
	fmt.Fprintf(cfg.Stdout, "Plan took %s.\n", time.Since(started).Round(time.Second))
	if ctx.Err() != nil {
		fmt.Fprintf(cfg.Stderr, "meshbench bench: interrupted; resume with: meshbench bench --resume %s\n", dir)
		return ErrInterrupted
	}
	return nil
}

func capacityPct(v float64) string { return fmt.Sprintf("%g%%", v*100) }

// WriteSearchReports writes a capacity-search plan's reports into
// DIR/report/: report.txt, probes.csv, plots/load-curve-N.png|svg (and the
// CPU per 1000 rps along the curve), report.html; and prints the text to
// stdout (unless quiet) with where the files are.
func WriteSearchReports(stdout io.Writer, dir string, p *plan.Plan, quiet bool) error {
	pd, err := analysis.ReadPlan(dir)
	if err != nil {
		return err
	}
	a, err := analysis.AnalyzeSearch(pd, SearchAnalysisOptions(p))
	if err != nil {
		return err
	}
	rdir := filepath.Join(dir, ReportDir)
	if err := os.MkdirAll(filepath.Join(rdir, "plots"), 0o755); err != nil {
		return err
	}
	var text, csvb, html bytes.Buffer
	if err := report.SearchText(&text, a); err != nil {
		return err
	}
	if err := report.ProbesCSV(&csvb, a); err != nil {
		return err
	}
	charts, err := report.SearchCharts(a)
	if err != nil {
		return err
	}
	for _, c := range charts {
		if err := plot.WriteFiles(filepath.Join(rdir, "plots"), c.Name, c.Chart); err != nil {
			return err
		}
	}
	if err := report.SearchHTML(&html, a, pd, charts); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"report.txt": text.Bytes(), "probes.csv": csvb.Bytes(), "report.html": html.Bytes()} {
		if err := os.WriteFile(filepath.Join(rdir, name), b, 0o644); err != nil {
			return err
		}
	}
	if !quiet {
		_, _ = stdout.Write(text.Bytes())
	}
	fmt.Fprintf(stdout, "\nReports: %s (HTML: %s, %d plots)\n", rdir, filepath.Join(rdir, "report.html"), len(charts))
	return nil
}
