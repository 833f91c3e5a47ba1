// Package slo reads service-level objectives ("p99<=5ms,errors<=0.1%") and
// judges one load result against them. It is pure: no I/O, no clock.
//
// An objective bounds any latency percentile (p50 … p99.999, max; latency
// from each request's intended send time, as the engine records it) and
// the error ratio. Whatever it names, a run meets it only if the load
// generator achieved its rate (sent within the rate tolerance of its
// schedule), dropped nothing, and was not interrupted; a run where the
// generator itself was the limit is not a failure of the target (see
// Outcome.GeneratorLimit).
package slo

import (
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Bound is one latency limit of an objective.
type Bound struct {
	// Name is how the objective spells the percentile: "p99", "p99.9",
	// "max".
	Name string `json:"name"`
	// Percentile is in (0, 100]; 100 is "max" (the exact maximum).
	Percentile float64 `json:"percentile"`
	// Limit is the highest latency that meets the bound, above 0.
	Limit time.Duration `json:"limit_ns"`
}

// Objective is a service-level objective: latency bounds and an error
// ratio bound. The zero value is not valid (Parse never returns it).
type Objective struct {
	// Latency holds the latency bounds in the order written, one per
	// percentile.
	Latency []Bound `json:"latency"`
	// HasErrors says the objective bounds the error ratio.
	HasErrors bool `json:"has_errors"`
	// ErrorRatio is the largest fraction of failed requests (0..1) that
	// meets the objective, when HasErrors.
	ErrorRatio float64 `json:"error_ratio"`
}

// Term is one "NAME<=VALUE" of an objective, as written: a flag term or a
// key and value of a plan's `slo:` map.
type Term struct {
	Name  string
	Value string
}

// Allowed says what an objective takes, for error messages.
const Allowed = `allowed: comma-separated NAME<=VALUE terms: a latency percentile p0.1 to p99.999 or max with a duration ("p99<=5ms"), errors with a percentage 0% to 100% or a fraction ("errors<=0.1%")`

// TermError is a problem with one term.
type TermError struct {
	Term Term
	Want string
}

// Error returns one line: "NAME<=VALUE: what is allowed".
func (e *TermError) Error() string {
	if e.Term.Name == "" && e.Term.Value == "" {
		return e.Want
	}
	t := e.Term.Name + "<=" + e.Term.Value
	if strings.ContainsFunc(t, func(r rune) bool { return r < ' ' || r == 0x7f }) {
		t = strconv.Quote(t)
	}
	return t + ": " + e.Want
}

// Parse reads an objective written as comma-separated terms,
// "p99<=5ms,errors<=0.1%". It reports every problem at once (errors.Join
// of *TermError).
func Parse(s string) (Objective, error) {
	if strings.TrimSpace(s) == "" {
		return Objective{}, &TermError{Want: "empty objective: " + Allowed}
	}
	var terms []Term
	var errs []error
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		name, value, ok := strings.Cut(part, "<=")
		if !ok {
			errs = append(errs, &TermError{Term: Term{Name: part}, Want: "missing <=: " + Allowed})
			continue
		}
		terms = append(terms, Term{Name: strings.TrimSpace(name), Value: strings.TrimSpace(value)})
	}
	if len(terms) == 0 && len(errs) > 0 {
		return Objective{}, errors.Join(errs...)
	}
	o, err := FromTerms(terms)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return Objective{}, errors.Join(errs...)
	}
	return o, nil
}

// FromTerms builds an objective from its terms, reporting every problem at
// once (errors.Join of *TermError).
func FromTerms(terms []Term) (Objective, error) {
	var o Objective
	var errs []error
	bad := func(t Term, want string) { errs = append(errs, &TermError{Term: t, Want: want}) }
	seen := map[string]bool{}
	if len(terms) == 0 {
		errs = append(errs, &TermError{Want: "empty objective: " + Allowed})
	}
	for _, t := range terms {
		name := strings.ToLower(t.Name)
		if name == "error" || name == "error_ratio" {
			name = "errors"
		}
		if name == "p100" {
			name = "max"
		}
		if t.Value == "" {
			bad(t, "missing value: "+Allowed)
			continue
		}
		switch {
		case name == "errors":
			r, ok := parseRatio(t.Value)
			if !ok {
				bad(t, "allowed: a percentage 0% to 100% (\"0.1%\") or a fraction 0 to 1")
				continue
			}
			if seen[name] {
				bad(t, "errors bounded twice")
				continue
			}
			o.HasErrors, o.ErrorRatio = true, r
		case name == "max" || strings.HasPrefix(name, "p"):
			p := 100.0
			if name != "max" {
				v, err := strconv.ParseFloat(name[1:], 64)
				if err != nil || math.IsNaN(v) || v <= 0 || v >= 100 || strings.ContainsAny(name[1:], "eE+-") {
					bad(t, "allowed percentiles: p0.1 to p99.999 (below 100) or max")
					continue
				}
				p = v
			}
			d, err := time.ParseDuration(t.Value)
			if err != nil || d <= 0 {
				bad(t, "allowed: a duration above 0, e.g. 5ms, 250us, 1.5s")
				continue
			}
			canon := canonicalName(p)
			if seen[canon] {
				bad(t, canon+" bounded twice")
				continue
			}
			seen[canon] = true
			o.Latency = append(o.Latency, Bound{Name: canon, Percentile: p, Limit: d})
		default:
			bad(t, "unknown term: "+Allowed)
			continue
		}
		seen[name] = true
	}
	if len(errs) > 0 {
		return Objective{}, errors.Join(errs...)
	}
	return o, nil
}

// canonicalName spells percentile p as the objective does: "p99", "p99.9",
// "max" for 100.
func canonicalName(p float64) string {
	if p == 100 {
		return "max"
	}
	return "p" + strconv.FormatFloat(p, 'f', -1, 64)
}

// parseRatio reads "0.1%" (a percentage) or "0.001" (a fraction), 0..1.
func parseRatio(s string) (float64, bool) {
	scale := 1.0
	if strings.HasSuffix(s, "%") {
		s, scale = strings.TrimSuffix(s, "%"), 100
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	v /= scale
	if v < 0 || v > 1 {
		return 0, false
	}
	return v, true
}

// String writes o in Parse's syntax, terms in a fixed order (latency by
// percentile, then errors): Parse(o.String()) equals o up to that order.
func (o Objective) String() string {
	var parts []string
	bounds := append([]Bound(nil), o.Latency...)
	sort.SliceStable(bounds, func(i, j int) bool { return bounds[i].Percentile < bounds[j].Percentile })
	for _, b := range bounds {
		parts = append(parts, b.Name+"<="+b.Limit.String())
	}
	if o.HasErrors {
		parts = append(parts, "errors<="+FormatRatio(o.ErrorRatio))
	}
	return strings.Join(parts, ",")
}

// Human writes o for people: "p99 ≤ 5ms, errors ≤ 0.1%".
func (o Objective) Human() string {
	return strings.ReplaceAll(strings.ReplaceAll(o.String(), "<=", " ≤ "), ",", ", ")
}

// Primary is the latency bound a latency-vs-load chart draws: the highest
// percentile bounded; ok is false for an objective with no latency bound.
func (o Objective) Primary() (b Bound, ok bool) {
	for _, l := range o.Latency {
		if !ok || l.Percentile > b.Percentile {
			b, ok = l, true
		}
	}
	return b, ok
}

// FormatRatio writes a fraction as a percentage in its shortest form
// ("0.1%").
func FormatRatio(r float64) string {
	return strconv.FormatFloat(math.Round(r*100*1e9)/1e9, 'f', -1, 64) + "%"
}
