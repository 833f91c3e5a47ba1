package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/capacity"
	"github.com/meshbench/meshbench/internal/envoy"
	"github.com/meshbench/meshbench/internal/plan"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/plot"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/runner"
)

// bindBenchSearchFlags declares bench's capacity-search and app-bound flags.
func bindBenchSearchFlags(fl *pflag.FlagSet, f *benchFlags) {
	fl.StringVar(&f.SLO, "slo", "", `capacity search: the objective, e.g. "p99<=5ms,errors<=0.1%"; with --search-from and --search-to (no --rate)`)
	fl.StringVar(&f.SearchFrom, "search-from", "", "capacity search: the first rate probed, per second")
	fl.StringVar(&f.SearchTo, "search-to", "", "capacity search: the highest rate probed, per second")
	fl.StringVar(&f.SearchPrecision, "search-precision", "", "capacity search: stop when met and missed rates are within this (default 5%)")
	fl.StringVar(&f.SearchGrowth, "search-growth", "", "capacity search: the rate's factor while the objective is met (default 2)")
	fl.StringVar(&f.SearchConfirm, "search-confirm", "", "capacity search: probe a missed rate again before believing the miss (default true)")
	fl.StringVar(&f.AppConcurrency, "app-concurrency", "", "bound every app replica: at most this many requests served at once (with --app-service-time; a known capacity)")
	fl.StringVar(&f.AppServiceTime, "app-service-time", "", "each request's time in service with --app-concurrency, e.g. 2ms")
}

// searchAnalysisOptions are how plan p's probes are judged.
func searchAnalysisOptions(p *plan.Plan) analysis.SearchOptions {
	return analysis.SearchOptions{Objective: p.Search.Objective, Config: p.Search.Config,
		RateShortfall: p.Thresholds.RateShortfall, LoadCPU: p.Thresholds.LoadCPU, Baseline: string(p.Baseline),
		Level: p.Confidence, Seed: uint64(*p.Seed), ParseProbeID: plan.ParseProbeID}
}

// runBenchSearch runs a capacity-search plan: every search step by step,
// probes of different configurations alternating, then the capacity
// reports.
func runBenchSearch(ctx context.Context, env *Env, f *benchFlags, p *plan.Plan, dir string, bin *envoy.Binary, sub local.Substrate) error {
	ao := searchAnalysisOptions(p)
	onKube := p.Platform == plan.PlatformKube
	if onKube && f.kube.installMesh {
		// The mesh installs with a plan's first cell of each mesh; a
		// search's probes are not known before it runs.
		return usagef("--install-mesh: not with a capacity search; install the mesh first (meshbench run --platform kube --install-mesh), the probes verify it")
	}
	var rounds [][]runner.Search
	n := 0
	for _, round := range p.Searches(*p.Seed) {
		var rr []runner.Search
		for _, s := range round {
			mo := s.Cell.Mesh
			mo.LoopbackNet = uint8(f.loopbackNet)
			lo := local.Options{Mesh: mo, Duration: p.Duration, Warmup: p.Warmup, Connections: p.Connections,
				SampleInterval: p.SampleInterval, PSSEvery: p.PSSEvery, Drain: p.Drain, LoadCPUMax: p.Thresholds.LoadCPU,
				RateShortfall: p.Thresholds.RateShortfall, ErrorRatio: p.Thresholds.Errors, Envoy: bin, Version: Version,
				AppConcurrency: p.AppConcurrency, AppServiceTime: p.AppServiceTime, AppFaults: p.AppFaults, Hops: p.Hops, Timeout: probeTimeout(p.Search.Objective), Substrate: sub, BodySize: p.BodySize}
			rs := runner.Search{ID: s.ID, Lab: lo}
			if onKube {
				// Every probe is a real cell on the cluster: its app
				// deployed, the load Job at the probe's rate, the
				// kubelet's (or metrics.k8s.io's) figures, then deleted.
				ko := benchKubeOptions(p, s.Cell, &f.kube)
				ko.Timeout = probeTimeout(p.Search.Objective)
				rs.Kube = &ko
			}
			rr = append(rr, rs)
			n++
		}
		rounds = append(rounds, rr)
	}
	started := time.Now()
	var mu sync.Mutex
	so := runner.SearchOptions{Dir: dir, Resume: f.resume != "", PlanYAML: p.YAML(), Seed: *p.Seed, Rounds: rounds,
		Config: p.Search.Config, ProbeID: plan.ProbeID, Version: Version,
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
	if !f.quiet {
		so.Progress = func(ev runner.Event) {
			mu.Lock()
			defer mu.Unlock()
			if !ev.Done {
				fmt.Fprintf(env.Stderr, "[%s] %s at %s/s: running\n", time.Since(started).Round(time.Second), ev.Cell.ID, ev.Cell.Lab.Load)
				return
			}
			verdict := ""
			if ev.Result != nil && ev.Result.Dir != "" {
				if out, _, err := analysis.JudgeProbe(ev.Result.Dir, ao); err == nil {
					switch {
					case out.Met:
						verdict = "; met"
					case out.GeneratorLimit:
						verdict = "; LOAD GENERATOR LIMIT: " + strings.Join(out.Reasons, "; ")
					default:
						verdict = "; missed: " + strings.Join(out.Reasons, "; ")
					}
				}
			}
			fmt.Fprintf(env.Stderr, "[%s] %s: %s%s\n", time.Since(started).Round(time.Second), ev.Cell.ID, cellEndText(ev), verdict)
		}
	}
	// About 10 probes a search (growth to the first miss, then bisection),
	// each a cell of its own lab.
	est := time.Duration(n*10) * (p.Warmup + p.Duration + p.Drain + p.CellOverhead())
	fmt.Fprintf(env.Stderr, "meshbench bench: capacity search at %s for %d configuration(s) × %d repetition(s), from %s/s to %s/s, precision %s, %s per probe after %s warm-up, seed %d, about %s at 10 probes a search; results in %s\n",
		p.Search.Objective.Human(), n/max(p.Repetitions, 1), p.Repetitions, capacity.FormatRate(p.Search.Config.From),
		capacity.FormatRate(p.Search.Config.To), capacityPct(p.Search.Config.Precision), p.Duration, p.Warmup, *p.Seed, est.Round(time.Minute), dir)
	_, _, runErr := runner.RunSearches(ctx, so)
	if runErr != nil && ctx.Err() == nil {
		return runErr
	}
	if err := writeSearchReports(env, dir, p, false); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "Plan took %s.\n", time.Since(started).Round(time.Second))
	if ctx.Err() != nil {
		fmt.Fprintf(env.Stderr, "meshbench bench: interrupted; resume with: meshbench bench --resume %s\n", dir)
		return errInterrupted
	}
	return nil
}

func capacityPct(v float64) string { return fmt.Sprintf("%g%%", v*100) }

// writeSearchReports writes a capacity-search plan's reports into
// DIR/report/: report.txt, probes.csv, plots/load-curve-N.png|svg (and the
// CPU per 1000 rps along the curve), report.html; and prints the text.
func writeSearchReports(env *Env, dir string, p *plan.Plan, quiet bool) error {
	pd, err := analysis.ReadPlan(dir)
	if err != nil {
		return err
	}
	a, err := analysis.AnalyzeSearch(pd, searchAnalysisOptions(p))
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
		_, _ = env.Stdout.Write(text.Bytes())
	}
	fmt.Fprintf(env.Stdout, "\nReports: %s (HTML: %s, %d plots)\n", rdir, filepath.Join(rdir, "report.html"), len(charts))
	return nil
}

// searchPlanOf returns the plan of a results directory when it is a
// capacity search, nil otherwise.
func searchPlanOf(pd *analysis.Plan) *plan.Plan {
	pl, err := plan.Parse(results.PlanFile, pd.PlanYAML)
	if err != nil || pl.Search == nil {
		return nil
	}
	if pl.Seed == nil {
		s := pd.Manifest.Seed
		pl.Seed = &s
	}
	return pl
}

// compareCapacities prints the capacities of two search plans, B vs A.
func compareCapacities(env *Env, a, b *analysis.Plan, sa, sb *plan.Plan, level float64) error {
	if sa == nil || sb == nil {
		return usagef("compare: %s is a capacity search and %s is not; compare two searches or two plans of fixed rates", a.Dir, b.Dir)
	}
	xa, err := analysis.AnalyzeSearch(a, searchAnalysisOptions(sa))
	if err != nil {
		return err
	}
	xb, err := analysis.AnalyzeSearch(b, searchAnalysisOptions(sb))
	if err != nil {
		return err
	}
	sc := analysis.CompareCapacities(xa, xb, level, uint64(a.Manifest.Seed))
	var text bytes.Buffer
	obj := sa.Search.Objective.Human()
	fmt.Fprintf(&text, "Capacity at %s: B (%s) vs A (%s)\n", obj, b.Dir, a.Dir)
	if sc.Mismatch != "" {
		fmt.Fprintf(&text, "WARNING: %s\n", sc.Mismatch)
	}
	for _, r := range sc.Rows {
		fmt.Fprintf(&text, "  %s\n", r.Verdict)
	}
	for _, k := range sc.OnlyA {
		fmt.Fprintf(&text, "  only in A: %s\n", k)
	}
	for _, k := range sc.OnlyB {
		fmt.Fprintf(&text, "  only in B: %s\n", k)
	}
	if _, err := env.Stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if len(sc.Rows) == 0 {
		return fmt.Errorf("nothing to compare: no configuration searched in both %s and %s", a.Dir, b.Dir)
	}
	return nil
}
