package cli

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/load/extgen"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/results"
)

// searchFlags are `meshbench load`'s capacity-search flags.
type searchFlags struct {
	slo        string
	from, to   float64
	precision  string
	loadCPUMax float64
	confirm    bool
}

// bindSearchFlags declares the search flags on fl.
func bindSearchFlags(fl *pflag.FlagSet, f *searchFlags) {
	fl.StringVar(&f.slo, "slo", "", `search for the highest rate meeting this objective instead of one run at --rate: "p99<=10ms,errors<=0.1%" (percentiles p0.1…p99.999 or max, errors); needs --search-from and --search-to`)
	fl.Float64Var(&f.from, "search-from", 0, "with --slo: the first rate probed, requests per second")
	fl.Float64Var(&f.to, "search-to", 0, "with --slo: the highest rate probed (the rate doubles from --search-from until the objective is missed, then bisects)")
	fl.StringVar(&f.precision, "search-precision", "5%", "with --slo: stop when the highest met and lowest missed rates are within this of each other")
	fl.BoolVar(&f.confirm, "search-confirm", true, "with --slo: probe a rate that missed the objective again before believing the miss (a stall of the machine can fail a percentile once)")
	fl.Float64Var(&f.loadCPUMax, "search-load-cpu", 0.9, "with --slo: this process's CPU (fraction of one core) above which a probe counts as limited by the load generator, ending the search")
}

// searchChanged reports whether any search flag other than --slo was given.
func searchChanged(cmd *cobra.Command) []string {
	var out []string
	for _, n := range []string{"search-from", "search-to", "search-precision", "search-load-cpu", "search-confirm"} {
		if cmd.Flags().Changed(n) {
			out = append(out, "--"+n)
		}
	}
	return out
}

// parsePrecision reads "5%" or "0.05".
func parsePrecision(s string) (float64, bool) {
	scale := 1.0
	t := strings.TrimSpace(s)
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSuffix(t, "%"), 100
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) {
		return 0, false
	}
	return v / scale, true
}

// buildSearch checks the search flags: the objective and the search, every
// problem at once.
func buildSearch(cmd *cobra.Command, f *loadFlags) (slo.Objective, capacity.Config, error) {
	sf := &f.search
	var errs []error
	obj, err := slo.Parse(sf.slo)
	if err != nil {
		for _, e := range unjoin(err) {
			errs = append(errs, fmt.Errorf("--slo %q: %w", sf.slo, e))
		}
	}
	c := capacity.Config{From: sf.from, To: sf.to, Growth: capacity.DefaultGrowth, Confirm: sf.confirm}
	if !cmd.Flags().Changed("search-from") {
		errs = append(errs, errors.New("--slo needs --search-from (the first rate probed, per second)"))
	}
	if !cmd.Flags().Changed("search-to") {
		errs = append(errs, errors.New("--slo needs --search-to (the highest rate probed, per second)"))
	}
	p, ok := parsePrecision(sf.precision)
	if !ok {
		errs = append(errs, fmt.Errorf("--search-precision %q: allowed: above 0%% and below 100%%, e.g. 5%%", sf.precision))
	} else {
		c.Precision = p
	}
	if cmd.Flags().Changed("search-from") && cmd.Flags().Changed("search-to") && ok {
		for _, e := range unjoin(c.Validate()) {
			var pr *capacity.Problem
			if errors.As(e, &pr) {
				errs = append(errs, fmt.Errorf("--search-%s %s: %s", pr.Field, pr.Value, pr.Want))
			} else {
				errs = append(errs, e)
			}
		}
	}
	if sf.loadCPUMax <= 0 || sf.loadCPUMax > 64 {
		errs = append(errs, fmt.Errorf("--search-load-cpu %g: allowed: above 0 (fraction of one core)", sf.loadCPUMax))
	}
	if f.max {
		errs = append(errs, errors.New("--slo and --max exclude each other: a search runs the open loop at rates it chooses"))
	}
	if cmd.Flags().Changed("rate") {
		errs = append(errs, errors.New("--slo and --rate exclude each other: the search chooses the rates (--search-from, --search-to)"))
	}
	if f.generator != extgen.Meshbench {
		errs = append(errs, errors.New("--slo runs meshbench's own engine only (it measures the generator's own CPU in-process)"))
	}
	if f.workers > 1 {
		errs = append(errs, errors.New("--slo and --workers exclude each other: a search is one generator"))
	}
	return obj, c, errors.Join(errs...)
}

// unjoin lists the errors of an errors.Join (or err alone).
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// runLoadSearch runs a capacity search: probes chosen by capacity.Next,
// each a full run of the engine (bench.RunLoadSearch); -o gets every probe.
func runLoadSearch(ctx context.Context, env *Env, cmd *cobra.Command, f *loadFlags, args []string) error {
	obj, sc, serr := buildSearch(cmd, f)
	cfg, _, err := buildLoadConfig(cmd, f, args)
	if err != nil || serr != nil {
		var errs []error
		if err != nil {
			errs = append(errs, unjoin(errors.Unwrap(err))...)
		}
		errs = append(errs, unjoin(serr)...)
		return &UsageError{Err: errors.Join(errs...)}
	}
	if !cmd.Flags().Changed("timeout") {
		cfg.Timeout = plan.ProbeTimeout(obj)
	}
	outFile, err := openOutputAndPreflight(ctx, f.output, cfg)
	if err != nil {
		return err
	}
	if outFile != nil {
		defer outFile.Close()
	}
	cfg.Now = env.Now
	if f.cpus > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(f.cpus))
	}
	return bench.RunLoadSearch(ctx, bench.LoadSearch{Objective: obj, Search: sc, Load: cfg, AutoQueue: f.maxQueue == -1,
		LoadCPUMax: f.search.loadCPUMax, Output: outFile, OutputName: f.output, Version: Version, Stdout: env.Stdout,
		Probe: func(ctx context.Context, pc loadgen.Config) (*results.LoadResult, bool, error) {
			return runGenerator(ctx, f, pc, nil)
		}})
}
