package local

import (
	"maps"
	"strconv"
	"time"

	"github.com/meshbench/meshbench/internal/workload"
)

// appArgs are the `meshbench serve` flags of the apps' workload options
// for an app of kind serve (static, grpc, face): the bound
// (AppConcurrency, AppServiceTime) and the faults (AppFaults). Only a
// static app takes --error-status: the others answer their protocol's
// own error.
func (o Options) appArgs(serve string) []string {
	var out []string
	if o.BodySize > 0 && serve == string(workload.KindStatic) {
		out = append(out, "--body-size", strconv.Itoa(o.BodySize))
	}
	if o.AppConcurrency > 0 {
		out = append(out, "--concurrency", strconv.Itoa(o.AppConcurrency), "--service-time", o.AppServiceTime.String())
	}
	f := o.AppFaults
	if f.Delay > 0 {
		out = append(out, "--delay", f.Delay.String())
	}
	if f.RandomDelay != nil {
		out = append(out, "--delay-dist", f.RandomDelay.String())
	}
	if f.StallEvery > 0 {
		out = append(out, "--stall-every", f.StallEvery.String(), "--stall-for", f.StallFor.String())
	}
	if f.ErrorRatio > 0 {
		out = append(out, "--error-ratio", strconv.FormatFloat(f.ErrorRatio, 'g', -1, 64))
		if f.ErrorStatus != 0 && serve == string(workload.KindStatic) {
			out = append(out, "--error-status", strconv.Itoa(f.ErrorStatus))
		}
	}
	if f.Seed != 0 {
		out = append(out, "--seed", strconv.FormatInt(f.Seed, 10))
	}
	return out
}

// appOptions are the apps' workload options as the manifest records
// them: only those set, keyed as plans spell them (app_delay, …).
func (o Options) appOptions() map[string]any {
	out := map[string]any{}
	dur := func(k string, d time.Duration) {
		if d > 0 {
			out[k] = d.String()
		}
	}
	if o.AppConcurrency > 0 {
		out["app_concurrency"] = o.AppConcurrency
		dur("app_service_time", o.AppServiceTime)
	}
	f := o.AppFaults
	dur("app_delay", f.Delay)
	if f.RandomDelay != nil {
		out["app_delay_dist"] = f.RandomDelay.String()
	}
	dur("app_stall_every", f.StallEvery)
	dur("app_stall_for", f.StallFor)
	if f.ErrorRatio > 0 {
		out["app_error_ratio"] = f.ErrorRatio
		if f.ErrorStatus != 0 {
			out["app_error_status"] = f.ErrorStatus
		}
	}
	if f.Seed != 0 {
		out["app_seed"] = f.Seed
	}
	return out
}

// localOptions are the manifest's options only the local lab records
// beside the cell settings: the sampler's PSS period, the static app's
// answer size, the apps' workload options and hop timing.
func (o Options) localOptions() map[string]any {
	out := map[string]any{"pss_every_rounds": o.pssEvery(), "body_size_bytes": o.bodySize()}
	maps.Copy(out, o.appOptions())
	if o.Hops {
		out["hops"] = true
	}
	return out
}
