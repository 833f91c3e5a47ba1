// Package capacity searches for the highest open-loop rate that meets a
// service-level objective. The search is a pure function of the probes
// run so far (Next): no clock, no I/O, so a runner can stop after any
// probe and resume from the stored probes alone.
//
// The search grows the rate geometrically from From (×Growth) until a
// probe misses the objective or To is reached, then bisects between the
// highest rate that met it and the lowest that missed it until they are
// within Precision of each other. The capacity is that highest met rate:
// the true capacity lies in [Capacity, Missed).
package capacity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Defaults.
const (
	DefaultPrecision = 0.05 // 5%
	DefaultGrowth    = 2.0
	// MaxRatePerSec is the highest rate a search may reach (loadgen's
	// bound).
	MaxRatePerSec = 10_000_000
	// MaxProbes bounds one search: a search from 1/s to 10⁷/s doubling
	// and bisecting to 0.1% needs about 34.
	MaxProbes = 100
)

// Config is one search.
type Config struct {
	// From is the first rate, requests per second, above 0.
	From float64 `json:"from_per_sec"`
	// To is the highest rate probed, above From, at most MaxRatePerSec.
	To float64 `json:"to_per_sec"`
	// Precision: the search stops when the highest met rate and the lowest
	// missed one are within this fraction of the met one; (0, 1)
	// (0: DefaultPrecision in WithDefaults).
	Precision float64 `json:"precision"`
	// Growth multiplies the rate while every probe meets the objective;
	// above 1, at most 10 (0: DefaultGrowth).
	Growth float64 `json:"growth"`
	// Confirm re-probes a rate that missed the objective once, or where
	// the load generator was the limit, before the search believes it: a
	// single stall of the machine can fail a percentile, or leave the
	// generator behind its schedule, at a rate far below the capacity.
	// The second probe at the same rate decides (met, missed or the
	// generator's limit). Costs one probe per miss and one at a real
	// generator limit.
	Confirm bool `json:"confirm,omitempty"`
}

// Problem is one bad field of a Config.
type Problem struct {
	Field string // "from", "to", "precision", "growth"
	Value string
	Want  string
}

// Error returns "FIELD VALUE: what is allowed".
func (p *Problem) Error() string { return fmt.Sprintf("%s %s: %s", p.Field, p.Value, p.Want) }

// WithDefaults fills zero fields.
func (c Config) WithDefaults() Config {
	if c.Precision == 0 {
		c.Precision = DefaultPrecision
	}
	if c.Growth == 0 {
		c.Growth = DefaultGrowth
	}
	return c
}

// Validate reports every problem at once (errors.Join of *Problem). It
// checks the fields as given: call WithDefaults first for zero defaults.
func (c Config) Validate() error {
	var errs []error
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	bad := func(field string, v float64, want string) {
		errs = append(errs, &Problem{Field: field, Value: f(v), Want: want})
	}
	okNum := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !okNum(c.From) || c.From <= 0 || c.From > MaxRatePerSec {
		bad("from", c.From, fmt.Sprintf("allowed: a rate above 0, at most %d per second", MaxRatePerSec))
	}
	if !okNum(c.To) || c.To <= 0 || c.To > MaxRatePerSec {
		bad("to", c.To, fmt.Sprintf("allowed: a rate above from, at most %d per second", MaxRatePerSec))
	} else if okNum(c.From) && c.From > 0 && c.To <= c.From {
		bad("to", c.To, "allowed: a rate above from ("+f(c.From)+")")
	}
	if !okNum(c.Precision) || c.Precision <= 0 || c.Precision >= 1 {
		bad("precision", c.Precision, "allowed: above 0% and below 100%, e.g. 5%")
	}
	if !okNum(c.Growth) || c.Growth <= 1 || c.Growth > 10 {
		bad("growth", c.Growth, "allowed: above 1, at most 10")
	}
	return errors.Join(errs...)
}

// Probe is one finished probe: a run at RatePerSec and its verdict.
type Probe struct {
	RatePerSec float64 `json:"rate_per_sec"`
	Met        bool    `json:"met"`
	// GeneratorLimit says the load generator, not the target, limited the
	// probe; it ends the search (Reason says why).
	GeneratorLimit bool `json:"generator_limit,omitempty"`
	// Failed says the probe measured nothing (the lab did not start, the
	// generator died); it ends the search too.
	Failed bool   `json:"failed,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Kind is how a search ended.
type Kind string

// How a search ends.
const (
	Found        Kind = "found"       // bracketed within Precision
	BelowFrom    Kind = "below_from"  // even From missed the objective
	AtLeastTo    Kind = "at_least_to" // To still met it
	GenLimited   Kind = "generator"   // the load generator was the limit
	ProbeLimited Kind = "probes"      // MaxProbes reached (cannot happen with a valid Config)
	ProbeFailed  Kind = "failed"      // a probe measured nothing
)

// Result is a finished search.
type Result struct {
	Kind Kind `json:"kind"`
	// Capacity is the highest rate that met the objective (requests per
	// second); 0 when none did (BelowFrom, or a generator limit before any
	// probe met it).
	Capacity float64 `json:"capacity_per_sec"`
	// Missed is the lowest rate that missed it; 0 when none did.
	Missed float64 `json:"missed_per_sec,omitempty"`
	// Reason says why a search ended early (the generator's limit).
	Reason string `json:"reason,omitempty"`
	// Probes is how many probes the search ran.
	Probes int `json:"probes"`
}

// String writes the result for people: "1950/s (met; 2000/s missed)",
// "< 100/s", "≥ 50000/s", "≥ 3200/s (load generator limit: …)".
func (r Result) String() string {
	switch r.Kind {
	case Found:
		return fmt.Sprintf("%s/s (met; %s/s missed)", FormatRate(r.Capacity), FormatRate(r.Missed))
	case BelowFrom:
		return fmt.Sprintf("< %s/s (the lowest rate missed the objective)", FormatRate(r.Missed))
	case AtLeastTo:
		return fmt.Sprintf("≥ %s/s (the highest rate still met the objective)", FormatRate(r.Capacity))
	case GenLimited:
		if r.Capacity == 0 {
			return "unknown (load generator limit: " + r.Reason + ")"
		}
		return fmt.Sprintf("≥ %s/s (search ended, load generator limit: %s)", FormatRate(r.Capacity), r.Reason)
	case ProbeFailed:
		if r.Capacity == 0 {
			return "unknown (a probe failed: " + r.Reason + ")"
		}
		return fmt.Sprintf("≥ %s/s (search ended, a probe failed: %s)", FormatRate(r.Capacity), r.Reason)
	}
	return fmt.Sprintf("≥ %s/s (probe limit reached)", FormatRate(r.Capacity))
}

// Short writes the result in a few words, for tables: "1950/s",
// "< 100/s", "≥ 50000/s", "≥ 800/s (generator limit)", "unknown
// (generator limit)", "unknown (probe failed)". String says why.
func (r Result) Short() string {
	switch r.Kind {
	case Found:
		return FormatRate(r.Capacity) + "/s"
	case BelowFrom:
		return "< " + FormatRate(r.Missed) + "/s"
	case AtLeastTo:
		return "≥ " + FormatRate(r.Capacity) + "/s"
	}
	why := map[Kind]string{GenLimited: "generator limit", ProbeFailed: "probe failed", ProbeLimited: "probe limit"}[r.Kind]
	if r.Capacity == 0 {
		return "unknown (" + why + ")"
	}
	return "≥ " + FormatRate(r.Capacity) + "/s (" + why + ")"
}

// Next returns the rate of the next probe given the probes so far (in the
// order run), or done with the search's result. c must be valid.
func Next(c Config, probes []Probe) (rate float64, done bool, res Result) {
	c = c.WithDefaults()
	n := len(probes)
	eff := probes
	if c.Confirm {
		// A miss or a generator limit followed by a probe at the same rate
		// is judged by that confirmation; one that is the last probe asks
		// for one. (CI once ended a known-answer search at 800/s of 2000/s
		// on one probe whose generator fell 26 ms behind while the machine
		// was busy.)
		eff = make([]Probe, 0, n)
		for i := 0; i < n; i++ {
			p := probes[i]
			if !p.Met && !p.Failed {
				if i+1 < n && probes[i+1].RatePerSec == p.RatePerSec {
					eff = append(eff, probes[i+1])
					i++
					continue
				}
				if i == n-1 && n < MaxProbes {
					return p.RatePerSec, false, Result{}
				}
			}
			eff = append(eff, p)
		}
	}
	lo, hi := 0.0, 0.0 // highest met, lowest missed
	for _, p := range eff {
		if p.Failed {
			return 0, true, Result{Kind: ProbeFailed, Capacity: lo, Missed: hi, Reason: p.Reason, Probes: len(probes)}
		}
		if p.GeneratorLimit {
			return 0, true, Result{Kind: GenLimited, Capacity: lo, Missed: hi, Reason: p.Reason, Probes: len(probes)}
		}
		if p.Met {
			if hi == 0 || p.RatePerSec < hi {
				lo = max(lo, p.RatePerSec)
			}
		} else if hi == 0 || p.RatePerSec < hi {
			hi = p.RatePerSec
			if lo >= hi { // a miss below an earlier met rate: noise; keep the bracket consistent
				lo = 0
				for _, q := range eff {
					if q.Met && q.RatePerSec < hi {
						lo = max(lo, q.RatePerSec)
					}
				}
			}
		}
	}
	switch {
	case n == 0:
		return c.From, false, Result{}
	case n >= MaxProbes:
		return 0, true, Result{Kind: ProbeLimited, Capacity: lo, Missed: hi, Probes: n}
	case hi == 0: // growing
		if lo >= c.To {
			return 0, true, Result{Kind: AtLeastTo, Capacity: lo, Probes: n}
		}
		return roundRate(min(lo*c.Growth, c.To)), false, Result{}
	case lo == 0:
		return 0, true, Result{Kind: BelowFrom, Missed: hi, Probes: n}
	}
	if (hi-lo)/lo <= c.Precision {
		return 0, true, Result{Kind: Found, Capacity: lo, Missed: hi, Probes: n}
	}
	mid := roundRate((lo + hi) / 2)
	if mid <= lo || mid >= hi {
		return 0, true, Result{Kind: Found, Capacity: lo, Missed: hi, Probes: n}
	}
	return mid, false, Result{}
}

// roundRate rounds a rate to 3 significant digits but never coarser than
// 1/s above 1/s, so probes have readable rates ("1950", "2400", "93.8"),
// and returns exactly the float its shortest decimal form parses to, so
// a rate written to a file and read back is equal to it.
func roundRate(r float64) float64 {
	digits := 3
	if r >= 1000 {
		digits = int(math.Floor(math.Log10(r))) + 1
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', digits, 64), 64)
	return v
}

// FormatRate writes a rate in its shortest form ("1950", "33.3").
func FormatRate(r float64) string {
	return strconv.FormatFloat(math.Round(r*1000)/1000, 'f', -1, 64)
}
