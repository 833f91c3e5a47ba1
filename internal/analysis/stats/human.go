package stats

import (
	"fmt"
	"math"
	"strconv"
)

// HumanRatio says a ratio r = new/baseline of two non-negative figures in the
// words of a one-line verdict, e.g. "ambient: ~20% lower p50 than sidecar;
// ~1/2 the CPU; ~1/4 the memory". Fractions and multiples read "~1/2 the CPU",
// "~2× the CPU"; percentages read "~20% lower CPU". The thresholds:
//
//	|r − 1| < 0.05            "about the same"          (within 5%)
//	0.55 ≤ r ≤ 0.95           "~X% lower", X rounded to 5
//	r < 0.001                 "<1/1000"
//	r < 0.55, near 1/N        "~1/N", N = round(1/r), when r is within 12%
//	                          of 1/N (N above 99 rounded to 2 digits)
//	r < 0.55, otherwise       "~X% lower": only 0.37 < r < 0.44 (between
//	                          1/3 and 1/2) and 0.28 < r < 0.29 (between
//	                          1/4 and 1/3); every r below 0.28 is a fraction
//	1.05 ≤ r < 1.5            "~X% higher", X rounded to 5
//	1.5 ≤ r < 10              "~X×", X to one decimal ("~1.8×", "~2×")
//	10 ≤ r ≤ 1000             "~X×", X an integer (2 digits above 99)
//	r > 1000                  ">1000×"
//	r = 0                     "none"
//	r < 0, NaN, ±Inf          "n/a"
//
// HumanRatio does not judge significance; use HumanDiff for a difference
// with an interval.
func HumanRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0) || r < 0:
		return "n/a"
	case r == 0:
		return "none"
	case r < 0.001:
		return "<1/1000"
	case r > 1000:
		return ">1000×"
	case math.Abs(r-1) < 0.05:
		return "about the same"
	case r < 0.55:
		n := round2(math.Round(1 / r))
		if math.Abs(r*n-1) <= 0.12 {
			return "~1/" + strconv.FormatFloat(n, 'f', -1, 64)
		}
		return fmt.Sprintf("~%d%% lower", roundTo5(100*(1-r)))
	case r < 1:
		return fmt.Sprintf("~%d%% lower", roundTo5(100*(1-r)))
	case r < 1.5:
		return fmt.Sprintf("~%d%% higher", roundTo5(100*(r-1)))
	case r < 10:
		return "~" + strconv.FormatFloat(math.Round(r*10)/10, 'f', -1, 64) + "×"
	}
	return "~" + strconv.FormatFloat(round2(math.Round(r)), 'f', -1, 64) + "×"
}

// HumanDiff says a relative difference from RelativeDiffCI in words:
// HumanRatio(1 + Estimate) when the difference is significant, "no significant
// difference" when its interval spans 0, TooFewText when it rests on fewer
// than MinJudgedRuns runs a side, HumanRatio(1 + Estimate) + " (single
// run)" when there was no interval, and "n/a" when the estimate is NaN.
func HumanDiff(iv Interval) string {
	switch {
	case math.IsNaN(iv.Estimate):
		return "n/a"
	case iv.HasInterval() && iv.TooFew():
		return "(" + TooFewText(iv.N) + ")"
	case iv.Significant():
		return HumanRatio(1 + iv.Estimate)
	case iv.HasInterval():
		return "no significant difference"
	}
	return HumanRatio(1+iv.Estimate) + " (single run)"
}

// roundTo5 rounds a percentage to the nearest multiple of 5.
func roundTo5(pct float64) int {
	return 5 * int(math.Round(pct/5))
}

// round2 rounds a whole number above 99 to two significant digits.
func round2(n float64) float64 {
	if n <= 99 {
		return n
	}
	p := math.Pow(10, math.Floor(math.Log10(n))-1)
	return math.Round(n/p) * p
}
