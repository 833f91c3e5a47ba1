package stats

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestHumanRatio(t *testing.T) {
	cases := []struct {
		r    float64
		want string
	}{
		{1, "about the same"},
		{0.951, "about the same"}, // 4.9% lower: within 5%
		{1.049, "about the same"}, // 4.9% higher
		{0.94, "~5% lower"},       // 6% rounds to 5
		{0.79, "~20% lower"},      // the p50 verdict of the doc example
		{0.55, "~45% lower"},      // last percentage before fractions
		{0.54, "~1/2"},            // 1/r = 1.85, within 12% of 1/2
		{0.5, "~1/2"},             // "1/2 the CPU"
		{0.45, "~1/2"},            // 0.45·2 = 0.90: 10% off 1/2, still close enough
		{0.4, "~60% lower"},       // between 1/2 and 1/3, neither within 12%
		{0.34, "~1/3"},            // 0.34·3 = 1.02
		{0.29, "~70% lower"},      // between 1/3 and 1/4
		{0.25, "~1/4"},            // "1/4 the memory"
		{0.1, "~1/10"},            // fractions cover every r below 0.28
		{0.0123, "~1/81"},         // 1/r = 81.3
		{0.00456, "~1/220"},       // 1/r = 219.3, two digits above 99
		{0.001, "~1/1000"},        // the smallest fraction
		{0.0009, "<1/1000"},       // floor
		{1.06, "~5% higher"},      // 6% rounds to 5
		{1.2, "~20% higher"},      // percentages up to 1.5
		{1.475, "~50% higher"},    // 47.5 rounds up to 50
		{1.5, "~1.5×"},            // first multiple
		{1.96, "~2×"},             // "2× the CPU"
		{2.04, "~2×"},             // 2.04 rounds to 2.0, shown as 2
		{3.26, "~3.3×"},           // one decimal below 10
		{12.4, "~12×"},            // integers from 10
		{456, "~460×"},            // two digits above 99
		{1000, "~1000×"},          // the largest multiple
		{1001, ">1000×"},          // ceiling
		{0, "none"},               // e.g. no data-plane CPU without a mesh
		{-0.5, "n/a"},             // negative: not a ratio of sizes
		{math.NaN(), "n/a"},       // undefined ratio
		{math.Inf(1), "n/a"},      // baseline 0
	}
	for _, tc := range cases {
		if got := HumanRatio(tc.r); got != tc.want {
			t.Errorf("HumanRatio(%v) = %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestHumanDiff(t *testing.T) {
	cases := []struct {
		name string
		iv   Interval
		want string
	}{
		{"significant 21% lower", Interval{Estimate: -0.21, Lo: -0.25, Hi: -0.17, Level: 0.95, N: 3}, "~20% lower"},
		{"significant half", Interval{Estimate: -0.5, Lo: -0.6, Hi: -0.4, Level: 0.95, N: 3}, "~1/2"},
		{"spans zero", Interval{Estimate: -0.21, Lo: -0.3, Hi: 0.02, Level: 0.95, N: 3}, "no significant difference"},
		{"single run", Interval{Estimate: 1, Lo: 1, Hi: 1, N: 1, Method: MethodSingleRun}, "~2× (single run)"},
		{"undefined", nanInterval(3, MethodZeroBase), "n/a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := HumanDiff(tc.iv); got != tc.want {
				t.Errorf("HumanDiff(%+v) = %q, want %q", tc.iv, got, tc.want)
			}
		})
	}
}

// TestHumanRatioFractionsAreClose sweeps r over (0.001, 0.55) and checks the
// documented promise: a "~1/N" answer is within 12% of r, and percentages
// appear only in the two documented gaps.
func TestHumanRatioFractionsAreClose(t *testing.T) {
	for r := 0.001; r < 0.55; r *= 1.001 {
		got := HumanRatio(r)
		var n float64
		if _, err := fmt.Sscanf(got, "~1/%g", &n); err == nil {
			if math.Abs(r*n-1) > 0.12 {
				t.Errorf("HumanRatio(%v) = %q: more than 12%% off", r, got)
			}
			continue
		}
		inGap := (r > 0.373 && r < 0.44) || (r > 0.28 && r < 0.2934)
		if !inGap || !strings.HasSuffix(got, "% lower") {
			t.Errorf("HumanRatio(%v) = %q: want a fraction outside the gaps", r, got)
		}
	}
}
