package stats

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// LinearFit fits y = intercept + slope·x by ordinary least squares
// (gonum's stat.LinearRegression) — e.g. memory in MiB against replica count,
// whose slope is "MiB per extra replica" — and returns the slope, the
// intercept, the coefficient of determination r2, and a confidence interval
// for the slope at the given level (0 means DefaultLevel).
//
// The slope interval is the classical t interval, slope ± t(n−2)·SE with
// SE = sqrt(SSE/(n−2) / Σ(x−x̄)²), exact when the errors are independent and
// normal with constant variance; the tests measure 0.95 coverage at nominal
// 0.95 with 10 points. It needs n ≥ 3. With exactly 2 points the line passes
// through both: slopeCI has Lo = Hi = slope, Level 0 and Method
// "two points, no interval". r2 is NaN when y is constant (nothing to explain).
//
// Invalid input gives NaN for every figure and a slopeCI Method saying why:
// len(x) ≠ len(y), fewer than 2 points, NaN or ±Inf, x without spread (all
// equal), or a level outside 0 < level < 1.
func LinearFit(x, y []float64, level float64) (slope, intercept, r2 float64, slopeCI Interval) {
	nan := math.NaN()
	level, _, bad := params(level, 1)
	n := len(x)
	switch {
	case bad != "":
	case len(x) != len(y):
		bad = fmt.Sprintf("x and y lengths differ (%d vs %d)", len(x), len(y))
	case n < 2:
		bad = fmt.Sprintf("need at least 2 points, have %d", n)
	case !allFinite(x) || !allFinite(y):
		bad = MethodNotFinite
	case !hasSpread(x):
		bad = "x has no spread, slope undefined"
	}
	if bad != "" {
		return nan, nan, nan, nanInterval(n, bad)
	}

	intercept, slope = stat.LinearRegression(x, y, nil, false)
	r2 = stat.RSquared(x, y, nil, intercept, slope)
	if !hasSpread(y) {
		r2 = nan // 1 − 0/0 in exact arithmetic; do not trust rounding to decide
	}
	if n == 2 {
		return slope, intercept, r2, Interval{Estimate: slope, Lo: slope, Hi: slope, N: 2, Method: "two points, no interval"}
	}

	xMean := stat.Mean(x, nil)
	var sse, sxx float64
	for i := range x {
		r := y[i] - (intercept + slope*x[i])
		sse += r * r
		d := x[i] - xMean
		sxx += d * d
	}
	df := float64(n - 2)
	se := math.Sqrt(sse / df / sxx)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile((1 + level) / 2)
	return slope, intercept, r2, Interval{
		Estimate: slope,
		Lo:       slope - t*se,
		Hi:       slope + t*se,
		Level:    level,
		N:        n,
		Method:   fmt.Sprintf("least squares, Student t interval, %d df", n-2),
	}
}

// hasSpread reports whether xs holds at least two distinct values.
func hasSpread(xs []float64) bool {
	for _, x := range xs[1:] {
		if x != xs[0] {
			return true
		}
	}
	return false
}
