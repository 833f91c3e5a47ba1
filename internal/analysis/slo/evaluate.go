package slo

import (
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/results"
)

// Input is one run to judge.
type Input struct {
	// Load is the run's load result (open loop).
	Load *results.LoadResult
	// RateShortfall is the fraction of its schedule the run may fall short
	// by and still count as having achieved its rate; 0 or less:
	// results.RateShortfallTolerance.
	RateShortfall float64
	// LoadCPU is the load generator's average CPU over the run, as a
	// fraction of one core; negative: not measured.
	LoadCPU float64
	// LoadCPUMax is the fraction of one core above which the generator
	// counts as the limit (a plan's thresholds.load_cpu); 0 or less: not
	// checked.
	LoadCPUMax float64
	// UnloadedServiceNs is the target's mean service time unloaded: a
	// capacity search's first probe, at its lowest rate; 0: unknown. With
	// it, answers slower than twice that are the target queueing, never
	// "too few connections".
	UnloadedServiceNs float64
}

// Figure is one bounded figure of a run.
type Figure struct {
	Name  string  `json:"name"`  // "p99", "max", "errors"
	Value float64 `json:"value"` // ns for latency, a fraction for errors
	Limit float64 `json:"limit"` // same unit
	Met   bool    `json:"met"`
}

// Outcome is the verdict on one run.
type Outcome struct {
	// TargetRatePerSec is the schedule's rate, AchievedRatePerSec what was
	// sent per second.
	TargetRatePerSec   float64 `json:"target_rate_per_sec"`
	AchievedRatePerSec float64 `json:"achieved_rate_per_sec"`
	// Figures are the objective's figures, in its order (latency, then
	// errors).
	Figures []Figure `json:"figures"`
	// P50Ns is the median latency, for curves; ErrorRatio the failed
	// fraction of completed requests.
	P50Ns      int64   `json:"p50_ns"`
	ErrorRatio float64 `json:"error_ratio"`
	Dropped    int64   `json:"dropped"`
	// Met says the run met the objective.
	Met bool `json:"met"`
	// GeneratorLimit says the load generator, not the target, limited the
	// run (its CPU over LoadCPUMax, or requests leaving late while answers
	// came back fast); the run then neither meets nor fails the objective.
	GeneratorLimit bool `json:"generator_limit"`
	// Reasons say why the objective was not met, or why the generator was
	// the limit; empty when met.
	Reasons []string `json:"reasons,omitempty"`
}

// Value returns the figure named name and whether the outcome has it.
func (o Outcome) Value(name string) (Figure, bool) {
	for _, f := range o.Figures {
		if f.Name == name {
			return f, true
		}
	}
	return Figure{}, false
}

// Evaluate judges in against o.
//
// The generator is the limit when its CPU exceeded LoadCPUMax, or when
// requests left late (schedule lag at the objective's primary percentile
// above its limit) and either fewer than half the connections were busy on
// average (achieved rate × mean service time, Little's law: the engine
// fell behind, not the target) or every connection was busy while answers
// came back in less than half the limit and, when the unloaded service
// time is known, at most twice as slow as unloaded (too few connections).
// Requests that wait because every connection waits on a slow or
// queueing target are the target's latency.
func Evaluate(o Objective, in Input) Outcome {
	r := in.Load
	out := Outcome{TargetRatePerSec: r.TargetRatePerSec, AchievedRatePerSec: r.AchievedRatePerSec(), Dropped: r.Dropped}
	lat, svc, lag, err := r.Histograms()
	if err != nil {
		out.Reasons = append(out.Reasons, "unreadable histograms: "+err.Error())
		return out
	}
	out.P50Ns = lat.Percentile(50)
	if r.Completed > 0 {
		out.ErrorRatio = float64(r.Completed-r.Success) / float64(r.Completed)
	}
	met := true
	for _, b := range o.Latency {
		v := lat.Percentile(b.Percentile)
		if b.Percentile == 100 {
			v = lat.MaxNs()
		}
		f := Figure{Name: b.Name, Value: float64(v), Limit: float64(b.Limit), Met: v <= int64(b.Limit)}
		if !f.Met {
			met = false
			out.Reasons = append(out.Reasons, fmt.Sprintf("%s %s > %s", b.Name, fmtNs(v), b.Limit))
		}
		out.Figures = append(out.Figures, f)
	}
	if o.HasErrors {
		f := Figure{Name: "errors", Value: out.ErrorRatio, Limit: o.ErrorRatio, Met: out.ErrorRatio <= o.ErrorRatio}
		if !f.Met {
			met = false
			out.Reasons = append(out.Reasons, fmt.Sprintf("errors %s > %s (%d of %d)", FormatRatio(out.ErrorRatio), FormatRatio(o.ErrorRatio), r.Completed-r.Success, r.Completed))
		}
		out.Figures = append(out.Figures, f)
	}
	shortfall := in.RateShortfall
	if shortfall <= 0 {
		shortfall = results.RateShortfallTolerance
	}
	if r.Completed == 0 {
		met = false
		out.Reasons = append(out.Reasons, "no request completed")
	}
	if r.Scheduled > 0 && float64(r.Sent) < float64(r.Scheduled)*(1-shortfall) {
		met = false
		out.Reasons = append(out.Reasons, fmt.Sprintf("rate not achieved: sent %d of %d scheduled", r.Sent, r.Scheduled))
	}
	if r.Dropped > 0 {
		met = false
		out.Reasons = append(out.Reasons, fmt.Sprintf("%d requests dropped (every connection busy, queue full)", r.Dropped))
	}
	if r.Interrupted {
		met = false
		out.Reasons = append(out.Reasons, "interrupted")
	}
	// The generator as the limit.
	var limits []string
	if in.LoadCPUMax > 0 && in.LoadCPU > in.LoadCPUMax {
		limits = append(limits, fmt.Sprintf("load generator CPU %.0f%% of a core > %.0f%%", in.LoadCPU*100, in.LoadCPUMax*100))
	}
	if b, ok := o.Primary(); ok && !met {
		p := b.Percentile
		lagV, svcV := lag.Percentile(p), svc.Percentile(p)
		// Little's law: requests in flight on average = achieved rate ×
		// mean service time. Far below the connections, the requests that
		// left late did not wait for a connection: the engine itself fell
		// behind its schedule.
		busy := out.AchievedRatePerSec * svc.MeanNs() / 1e9
		conns := float64(max(r.Connections, 1))
		switch {
		case lagV <= int64(b.Limit):
		case busy < conns/2:
			limits = append(limits, fmt.Sprintf("the load generator fell behind its schedule (schedule lag %s %s with %.1f of %d connections busy on average): a starved engine",
				b.Name, fmtNs(lagV), busy, r.Connections))
		case svcV*2 <= int64(b.Limit) && (in.UnloadedServiceNs <= 0 || svc.MeanNs() <= 2*in.UnloadedServiceNs):
			limits = append(limits, fmt.Sprintf("every connection was busy while answers were fast (schedule lag %s %s, service time %s %s): too few connections",
				b.Name, fmtNs(lagV), b.Name, fmtNs(svcV)))
		}
	}
	if len(limits) > 0 {
		out.GeneratorLimit = true
		out.Met = false
		out.Reasons = append(limits, out.Reasons...)
		return out
	}
	out.Met = met
	return out
}

// fmtNs writes ns as a duration rounded to 3 significant digits.
func fmtNs(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= 100*time.Second:
		return d.Round(time.Second).String()
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= 100*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d >= 100*time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// FmtNs writes ns as a duration rounded to 3 significant digits ("2.05ms").
func FmtNs(ns int64) string { return fmtNs(ns) }
