package plan

import (
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/workload"
)

// appFaults reads the apps' workload options (app_delay, …), checked as
// `meshbench serve` checks its own, each problem at its key.
func (b *builder) appFaults() {
	s, p := b.s, b.p
	f := &p.AppFaults
	b.duration("app_delay", true, &f.Delay)
	if it, ok := b.one("app_delay_dist"); ok {
		d, err := workload.ParseDistribution(it.text)
		if err != nil {
			s.badItem("app_delay_dist", it, "allowed: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV (durations, each at most 1h)")
		} else {
			f.RandomDelay = d
		}
	}
	b.fraction("app_error_ratio", 0, 1, true, true, "allowed: a fraction of requests, 0 to 1", &f.ErrorRatio)
	b.integer("app_error_status", 400, 599, "allowed: an HTTP error status, 400 to 599", &f.ErrorStatus)
	b.duration("app_stall_every", true, &f.StallEvery)
	b.duration("app_stall_for", true, &f.StallFor)
	if it, ok := b.one("app_seed"); ok {
		v, err := strconv.ParseInt(it.text, 10, 64)
		if err != nil {
			s.badItem("app_seed", it, "allowed: an integer (0: a random seed)")
		} else {
			f.Seed = v
		}
	}
	// The rest as the app itself checks it (ranges, stall pairs).
	for _, e := range unjoin(workload.Config{Kind: workload.KindStatic, Faults: *f}.Validate()) {
		var ce *workload.ConfigError
		if !asConfigError(e, &ce) {
			continue
		}
		key := "app_" + underscore(ce.Field)
		want := strings.ReplaceAll(ce.Want, "stall-every", s.field("app_stall_every"))
		s.bad(key, s.lineOf(key), ce.Value, want)
	}
	if p.Platform == PlatformKube {
		for _, k := range appFaultKeys {
			if s.entries[k] != nil {
				s.bad(k, s.lineOf(k), "", "only on platform local (the lab's own app)")
			}
		}
	}
}

// hops reads `hops`: hop timing in every cell (local only).
func (b *builder) hops() {
	it, ok := b.one("hops")
	if !ok {
		return
	}
	v, ok := parseBool(it.text)
	switch {
	case !ok:
		b.s.badItem("hops", it, "allowed: true, false")
	case v && b.p.Platform == PlatformKube:
		b.s.badItem("hops", it, "allowed on platform kube: false (the lab's Envoys only; see the README for Istio's Telemetry API)")
	default:
		b.p.Hops = v
	}
}

// appFaultKeys are the plan keys of the apps' workload options.
var appFaultKeys = []string{"app_delay", "app_delay_dist", "app_error_ratio", "app_error_status", "app_stall_every", "app_stall_for", "app_seed"}

func asConfigError(err error, dst **workload.ConfigError) bool {
	ce, ok := err.(*workload.ConfigError)
	if ok {
		*dst = ce
	}
	return ok
}

// underscore spells a serve flag name as a plan key: stall-every →
// stall_every.
func underscore(s string) string {
	out := []byte(s)
	for i, c := range out {
		if c == '-' {
			out[i] = '_'
		}
	}
	return string(out)
}
