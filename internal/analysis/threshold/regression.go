package threshold

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
)

// ParseRelative reads a regression margin: a percentage ("10%") or a
// fraction ("0.1"), from 0 up.
func ParseRelative(s string) (float64, error) {
	t := strings.TrimSpace(s)
	pct := strings.HasSuffix(t, "%")
	v, err := strconv.ParseFloat(strings.TrimSuffix(t, "%"), 64)
	if pct {
		v /= 100
	}
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q: allowed: a percentage such as 10%% or a fraction such as 0.1, from 0 up", s)
	}
	return v, nil
}

// Regressions lists every figure of every config in which B is
// significantly worse than A by more than margin (a fraction): latency,
// CPU and memory higher, achieved rate lower. Significantly: the whole
// bootstrap interval of the relative difference lies beyond the margin,
// so a difference that may be noise or may be smaller never counts; a
// side with fewer than stats.MinJudgedRuns runs (too few to judge) never
// counts either.
func Regressions(sc *analysis.SetComparison, margin float64) []string {
	var out []string
	for _, d := range sc.Configs {
		figs := make([]string, 0, len(d.Diffs))
		for f := range d.Diffs {
			figs = append(figs, f)
		}
		sort.Strings(figs)
		for _, f := range figs {
			iv := d.Diffs[f]
			if !iv.HasInterval() || iv.TooFew() {
				continue
			}
			worse := iv.Lo > margin // higher is worse
			dir := "higher"
			if f == analysis.AchievedRate {
				worse, dir = iv.Hi < -margin, "lower"
			}
			if worse {
				out = append(out, fmt.Sprintf("%s, %s: %s %+.1f%% (%.0f%% interval %+.1f%% to %+.1f%%), %s in B",
					d.Config.Mesh, d.Config.Scenario().String(), f, 100*iv.Estimate, 100*sc.Level, 100*iv.Lo, 100*iv.Hi, dir))
			}
		}
	}
	return out
}
