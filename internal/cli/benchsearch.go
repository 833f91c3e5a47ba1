package cli

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/results"
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

// searchView prints a capacity search's probes as they start and end
// (bench.Observer), with the time since the plan started and the probe's
// verdict; nothing of the probes' phases.
type searchView struct {
	platform.ObserverBase
	env      *Env
	p        *plan.Plan
	started  time.Time
	loopback bool
}

// searchMu keeps a search's progress lines whole.
var searchMu sync.Mutex

// Cell prints a probe's start or end.
func (v *searchView) Cell(ev runner.Event) {
	searchMu.Lock()
	defer searchMu.Unlock()
	if !ev.Done {
		fmt.Fprintf(v.env.Stderr, "[%s] %s at %s/s: running\n", time.Since(v.started).Round(time.Second), ev.Cell.ID, ev.Cell.Settings.Load)
		return
	}
	fmt.Fprintf(v.env.Stderr, "[%s] %s: %s%s\n", time.Since(v.started).Round(time.Second), ev.Cell.ID, cellEndText(ev, v.loopback), bench.ProbeVerdict(v.p, ev))
}

// Log is nowhere: a search's cluster probes print no lines.
func (*searchView) Log() io.Writer { return nil }

// Finish prints nothing more.
func (*searchView) Finish() {}

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
	xa, err := analysis.AnalyzeSearch(a, bench.SearchAnalysisOptions(sa))
	if err != nil {
		return err
	}
	xb, err := analysis.AnalyzeSearch(b, bench.SearchAnalysisOptions(sb))
	if err != nil {
		return err
	}
	sc := analysis.CompareCapacities(xa, xb, level, uint64(a.Manifest.Seed))
	var text bytes.Buffer
	_ = report.CapacityCompareText(&text, sc, sa.Search.Objective.Human(), a.Dir, b.Dir)
	if _, err := env.Stdout.Write(text.Bytes()); err != nil {
		return err
	}
	if len(sc.Rows) == 0 {
		return fmt.Errorf("nothing to compare: no configuration searched in both %s and %s", a.Dir, b.Dir)
	}
	return nil
}
