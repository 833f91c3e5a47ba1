// Package threshold parses pass/fail conditions on a load result
// ("p99>5ms,errors>0.1%") and checks them, so a run can set its exit code
// the way k6's thresholds do. A condition names what fails the run: the
// run fails when the condition holds.
package threshold

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// Metrics lists the names a condition may use.
var Metrics = []string{"p50", "p90", "p95", "p99", "p99.9", "p99.99", "max", "mean", "errors", "dropped", "rate"}

// Condition is one parsed condition: Metric Op Value. Latencies are in
// nanoseconds, errors and dropped are fractions of requests (0.001 for
// 0.1%), rate is requests per second.
type Condition struct {
	Metric string
	Op     string // ">", ">=", "<", "<="
	Value  float64
	Text   string // as written
}

// Parse reads a comma-separated list of conditions, reporting every bad
// one. Allowed: p50, p90, p95, p99, p99.9, p99.99, max, mean with a
// duration (5ms); errors and dropped with a percentage (0.1%) or a
// fraction (0.001); rate with requests per second (990).
func Parse(s string) ([]Condition, error) {
	var out []Condition
	var errs []error
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		c, err := parseOne(part)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New(`no condition: allowed: e.g. "p99>5ms,errors>0.1%"`))
	}
	return out, errors.Join(errs...)
}

func parseOne(s string) (Condition, error) {
	i := strings.IndexAny(s, "<>")
	if i <= 0 {
		return Condition{}, fmt.Errorf("condition %q: allowed: METRIC>VALUE or METRIC<VALUE (>=, <= too), METRIC one of %s", s, strings.Join(Metrics, ", "))
	}
	c := Condition{Metric: strings.TrimSpace(s[:i]), Op: s[i : i+1], Text: s}
	rest := s[i+1:]
	if strings.HasPrefix(rest, "=") {
		c.Op += "="
		rest = rest[1:]
	}
	rest = strings.TrimSpace(rest)
	switch c.Metric {
	case "p50", "p90", "p95", "p99", "p99.9", "p99.99", "max", "mean":
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return c, fmt.Errorf("condition %q: %s needs a duration such as 5ms", s, c.Metric)
		}
		c.Value = float64(d)
	case "errors", "dropped":
		pct := strings.HasSuffix(rest, "%")
		v, err := strconv.ParseFloat(strings.TrimSuffix(rest, "%"), 64)
		if pct {
			v /= 100
		}
		if err != nil || math.IsNaN(v) || v < 0 || v > 1 {
			return c, fmt.Errorf("condition %q: %s needs a percentage (0.1%%) or a fraction from 0 to 1", s, c.Metric)
		}
		c.Value = v
	case "rate":
		v, err := strconv.ParseFloat(rest, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return c, fmt.Errorf("condition %q: rate needs requests per second such as 990", s)
		}
		c.Value = v
	default:
		return c, fmt.Errorf("condition %q: metric %q: allowed: %s", s, c.Metric, strings.Join(Metrics, ", "))
	}
	return c, nil
}

// Crossed returns one line for every condition that holds for r (the
// figure and the limit), in the order given; none when the run passes.
func Crossed(r *results.LoadResult, conds []Condition) ([]string, error) {
	lat, _, _, err := r.Histograms()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range conds {
		v, ok := value(r, lat, c.Metric)
		if !ok {
			out = append(out, fmt.Sprintf("%s: no latency was recorded", c.Text))
			continue
		}
		if holds(v, c.Op, c.Value) {
			out = append(out, fmt.Sprintf("%s: %s was %s", c.Text, c.Metric, show(c.Metric, v)))
		}
	}
	return out, nil
}

// value is metric's figure for r (lat its latency histogram): a latency
// in ns, a fraction, or a rate per second; false for a latency when none
// was recorded.
func value(r *results.LoadResult, lat *latency.Recorder, metric string) (float64, bool) {
	switch metric {
	case "errors":
		return frac(r.Completed-r.Success, r.Completed), true
	case "dropped":
		return frac(r.Dropped, r.Scheduled), true
	case "rate":
		return r.AchievedRatePerSec(), true
	}
	if lat.Count() == 0 {
		return 0, false
	}
	switch metric {
	case "max":
		return float64(lat.MaxNs()), true
	case "mean":
		return lat.MeanNs(), true
	}
	p, _ := strconv.ParseFloat(strings.TrimPrefix(metric, "p"), 64)
	return float64(lat.Percentile(p)), true
}

// show prints a metric's value as conditions are written.
func show(metric string, v float64) string {
	switch metric {
	case "errors", "dropped":
		return fmt.Sprintf("%.4g%%", 100*v)
	case "rate":
		return fmt.Sprintf("%.2f/s", v)
	}
	return roundDur(time.Duration(v)).String()
}

// PlanCrossed judges a plan's cells by the conditions, per configuration
// (mesh and scenario) on the median over its valid repetitions: each
// figure is computed for every valid cell from its load result, exactly
// as Crossed computes it for one run, and the median of those is held to
// the limit. It returns one line for every condition a configuration's
// median meets, and one for every configuration without a valid cell
// (nothing to judge is not a pass), in the analysis's order of meshes and
// scenarios.
func PlanCrossed(a *analysis.Analysis, conds []Condition) ([]string, error) {
	var out []string
	for _, s := range a.Scenarios {
		for _, m := range a.Meshes {
			g := a.Group(m, s)
			if g == nil {
				continue
			}
			name := m + ", " + s.String()
			vals := make([][]float64, len(conds))
			for _, c := range g.Cells {
				if !c.Valid {
					continue
				}
				r, err := results.ReadFile(filepath.Join(c.Dir, results.LoadFile))
				if err != nil {
					return nil, fmt.Errorf("cell %s: %w", c.ID, err)
				}
				lat, _, _, err := r.Histograms()
				if err != nil {
					return nil, fmt.Errorf("cell %s: %w", c.ID, err)
				}
				for i, cond := range conds {
					if v, ok := value(r, lat, cond.Metric); ok {
						vals[i] = append(vals[i], v)
					}
				}
			}
			if g.Valid == 0 {
				out = append(out, fmt.Sprintf("%s: no valid run to judge", name))
				continue
			}
			for i, c := range conds {
				if len(vals[i]) == 0 {
					out = append(out, fmt.Sprintf("%s: %s: no latency was recorded", name, c.Text))
					continue
				}
				if v := stats.Median(vals[i]); holds(v, c.Op, c.Value) {
					out = append(out, fmt.Sprintf("%s: %s: %s was %s (median of %d runs)", name, c.Text, c.Metric, show(c.Metric, v), len(vals[i])))
				}
			}
		}
	}
	return out, nil
}

func holds(v float64, op string, limit float64) bool {
	switch op {
	case ">":
		return v > limit
	case ">=":
		return v >= limit
	case "<":
		return v < limit
	default:
		return v <= limit
	}
}

func frac(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// roundDur keeps a duration to about four significant digits, as reports
// print them (107.151ms, not 107.151359ms).
func roundDur(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d
	case d < time.Second:
		return d.Round(time.Microsecond)
	default:
		return d.Round(time.Millisecond)
	}
}
