// Package stats holds the statistics meshbench's comparisons need: medians and
// quantiles of repetitions, bootstrap confidence intervals for a median and for
// the relative difference of two medians, a least-squares line with an interval
// for its slope, and plain-words ratios for one-line verdicts.
//
// The package is pure: no I/O, no clock, no global random state. Every random
// choice comes from a *rand.Rand the caller passes in, so a report recomputed
// from the same results with the same seed prints the same intervals.
//
// Small samples. meshbench repeats each cell 3 to 10 times (default 3). At those
// sizes a bootstrap interval describes the runs more than it infers anything:
// with 3 runs the "95%" interval for a median is the range of the runs, which
// holds the true median only 75% of the time. BootstrapMedianCI and
// RelativeDiffCI document the coverage they actually achieve, measured in this
// package's tests, and their Method strings say so in the report.
//
// Inputs are never modified. Functions do not panic on bad data: they return
// NaN (and, for an Interval, a Method that says why).
package stats

import (
	"math"
	"slices"
)

// Defaults for the interval functions. Passing 0 for a level or a resample
// count selects these.
const (
	// DefaultLevel is the nominal confidence level of an interval.
	DefaultLevel = 0.95
	// DefaultResamples is the number of bootstrap resamples. With 10000 the
	// Monte Carlo error of a 2.5% percentile is about ±0.16 percentage points
	// of probability, far below the sampling error of 3–10 runs.
	DefaultResamples = 10000
)

// Median returns the median of xs: the middle value for odd len(xs), the mean
// of the two middle values for even len(xs). It returns NaN when xs is empty or
// contains a NaN. ±Inf are ordered as usual. xs is not modified.
func Median(xs []float64) float64 {
	s, ok := sortedCopy(xs)
	if !ok {
		return math.NaN()
	}
	return medianSorted(s)
}

// Quantile returns the p-quantile (0 ≤ p ≤ 1) of xs, interpolating linearly
// between order statistics: with xs sorted and h = (n−1)·p, it is
// xs[⌊h⌋] + (h−⌊h⌋)·(xs[⌊h⌋+1] − xs[⌊h⌋]). This is Hyndman & Fan's type 7, the
// default of R and NumPy and Excel's PERCENTILE.INC; Quantile(xs, 0.5) equals
// Median(xs). It returns NaN when xs is empty, contains a NaN, or p is outside
// [0, 1]. xs is not modified.
//
// gonum's stat.Quantile is not used because neither of its kinds gives the
// textbook median for even n (both return the lower middle value at p = 0.5).
//
// Quantile is for small slices of per-run figures; latency percentiles come
// from HDR histograms, never from here.
func Quantile(xs []float64, p float64) float64 {
	if !(p >= 0 && p <= 1) {
		return math.NaN()
	}
	s, ok := sortedCopy(xs)
	if !ok {
		return math.NaN()
	}
	return quantileSorted(s, p)
}

// sortedCopy returns a sorted copy of xs, or ok=false when xs is empty or has a NaN.
func sortedCopy(xs []float64) (s []float64, ok bool) {
	if len(xs) == 0 || slices.ContainsFunc(xs, math.IsNaN) {
		return nil, false
	}
	s = slices.Clone(xs)
	slices.Sort(s)
	return s, true
}

// medianSorted is the median of a sorted, non-empty slice.
func medianSorted(s []float64) float64 {
	n := len(s)
	return mid(s[(n-1)/2], s[n/2])
}

// mid is the midpoint of a ≤ b, written so that it neither overflows nor
// turns two equal infinities into NaN.
func mid(a, b float64) float64 {
	if a == b {
		return a
	}
	return 0.5*a + 0.5*b
}

// quantileSorted is the type-7 p-quantile of a sorted, non-empty slice.
func quantileSorted(s []float64, p float64) float64 {
	h := float64(len(s)-1) * p
	i := int(math.Floor(h))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	f := h - float64(i)
	a, b := s[i], s[i+1]
	if f == 0 || a == b {
		return a
	}
	if f == 0.5 {
		return mid(a, b)
	}
	return (1-f)*a + f*b
}

// allFinite reports whether xs has no NaN and no ±Inf.
func allFinite(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}
