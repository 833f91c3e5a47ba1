package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/meshbench/meshbench/internal/workload"
)

// appFlags are the lab apps' workload options on `run`: `meshbench
// serve`'s own, prefixed with --app-.
type appFlags struct {
	delay       time.Duration
	delayDist   string
	errorRatio  float64
	errorStatus int
	stallEvery  time.Duration
	stallFor    time.Duration
	seed        int64
	concurrency int
	serviceTime time.Duration
}

func (f *appFlags) add(fl *pflag.FlagSet) {
	fl.DurationVar(&f.delay, "app-delay", 0, "every app replica waits this long before each answer (serve --delay), 0s to 1h")
	fl.StringVar(&f.delayDist, "app-delay-dist", "", "random delay added to --app-delay: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV")
	fl.Float64Var(&f.errorRatio, "app-error-ratio", 0, "fraction of requests every app replica answers with an injected error, 0 to 1")
	fl.IntVar(&f.errorStatus, "app-error-status", 0, "HTTP status of injected errors, 400 to 599 (static apps; default 503)")
	fl.DurationVar(&f.stallEvery, "app-stall-every", 0, "period of whole-app stalls (with --app-stall-for)")
	fl.DurationVar(&f.stallFor, "app-stall-for", 0, "length of each app stall, shorter than --app-stall-every")
	fl.Int64Var(&f.seed, "app-seed", 0, "seed of the apps' random delays and errors (0 = random)")
	fl.IntVar(&f.concurrency, "app-concurrency", 0, "every app replica serves at most this many requests at once (with --app-service-time; a known capacity)")
	fl.DurationVar(&f.serviceTime, "app-service-time", 0, "each request's time in service with --app-concurrency, e.g. 2ms")
}

// config checks the options as `meshbench serve` would, every problem
// at once, each naming its --app- flag.
func (f *appFlags) config() (workload.Config, []error) {
	cfg := workload.Config{Kind: workload.KindStatic, Concurrency: f.concurrency, ServiceTime: f.serviceTime,
		Faults: workload.Faults{Delay: f.delay, StallEvery: f.stallEvery, StallFor: f.stallFor,
			ErrorRatio: f.errorRatio, ErrorStatus: f.errorStatus, Seed: f.seed}}
	var errs []error
	if f.delayDist != "" {
		d, err := workload.ParseDistribution(f.delayDist)
		if err != nil {
			errs = append(errs, fmt.Errorf("--app-delay-dist: %w", err))
		}
		cfg.Faults.RandomDelay = d
	}
	for _, e := range unjoin(cfg.Validate()) {
		var ce *workload.ConfigError
		if errors.As(e, &ce) {
			e = fmt.Errorf("--app-%s %s: %s", ce.Field, ce.Value, ce.Want)
		}
		errs = append(errs, e)
	}
	return cfg, errs
}

// given names the first --app- option set on the command line, "" when
// none is.
func (f *appFlags) given(fl *pflag.FlagSet) string {
	for _, n := range []string{"app-delay", "app-delay-dist", "app-error-ratio", "app-error-status", "app-stall-every",
		"app-stall-for", "app-seed", "app-concurrency", "app-service-time"} {
		if fl.Changed(n) {
			return n
		}
	}
	return ""
}

// bindBenchAppFlags declares bench's flags of the apps' workload options
// (plan keys app_delay, …).
func bindBenchAppFlags(fl *pflag.FlagSet, f *benchFlags) {
	fl.StringVar(&f.AppDelay, "app-delay", "", "every app replica waits this long before each answer (plan: app_delay)")
	fl.StringVar(&f.AppDelayDist, "app-delay-dist", "", "random app delay: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV (plan: app_delay_dist)")
	fl.StringVar(&f.AppErrorRatio, "app-error-ratio", "", "fraction of requests the apps answer with an injected error (plan: app_error_ratio)")
	fl.StringVar(&f.AppErrorStatus, "app-error-status", "", "HTTP status of injected errors, static apps (plan: app_error_status)")
	fl.StringVar(&f.AppStallEvery, "app-stall-every", "", "period of whole-app stalls (plan: app_stall_every)")
	fl.StringVar(&f.AppStallFor, "app-stall-for", "", "length of each app stall (plan: app_stall_for)")
	fl.StringVar(&f.AppSeed, "app-seed", "", "seed of the apps' random delays and errors (plan: app_seed)")
	fl.StringVar(&f.Hops, "hops", "", "true: time every hop of every cell (Envoy access logs, µs; costs proxy CPU; plan: hops)")
	fl.Lookup("hops").NoOptDefVal = "true"
}
