package stats

import (
	"math"
	"strings"
	"testing"
)

func TestLinearFitKnownAnswers(t *testing.T) {
	cases := []struct {
		name                 string
		x, y                 []float64
		slope, intercept, r2 float64
		lo, hi               float64
		level                float64
		n                    int
		method               string
	}{
		// An exact line: zero residuals, so a zero-width interval.
		{"exact line", []float64{1, 2, 3, 4}, []float64{3, 5, 7, 9}, 2, 1, 1, 2, 2, 0.95, 4,
			"least squares, Student t interval, 2 df"},
		// Textbook data: fitted 2.2 + 0.6x, SSE 2.4, Sxx 10, r² = 1 − 2.4/6 = 0.6,
		// SE = √(2.4/3/10) = 0.282843, t(3 df, 0.975) = 3.182446 — R's confint()
		// gives [−0.300131, 1.500131].
		{"textbook", []float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5}, 0.6, 2.2, 0.6, -0.300131, 1.500131, 0.95, 5,
			"least squares, Student t interval, 3 df"},
		// Memory per replica: 40 MiB base + 12.5 MiB per replica, exact.
		{"MiB per replica", []float64{1, 2, 4, 8}, []float64{52.5, 65, 90, 140}, 12.5, 40, 1, 12.5, 12.5, 0.95, 4, "2 df"},
		// Flat y: slope 0; r² undefined (nothing to explain).
		{"constant y", []float64{1, 2, 3}, []float64{5, 5, 5}, 0, 5, math.NaN(), 0, 0, 0.95, 3, "1 df"},
		// Two points: the line through them, no interval.
		{"two points", []float64{1, 3}, []float64{10, 20}, 5, 5, 1, 5, 5, 0, 2, "two points, no interval"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slope, intercept, r2, ci := LinearFit(tc.x, tc.y, 0)
			if !near(slope, tc.slope) || !near(intercept, tc.intercept) || !near(r2, tc.r2) {
				t.Errorf("slope, intercept, r2 = %v, %v, %v; want %v, %v, %v", slope, intercept, r2, tc.slope, tc.intercept, tc.r2)
			}
			if math.Abs(ci.Lo-tc.lo) > 1e-6 || math.Abs(ci.Hi-tc.hi) > 1e-6 || ci.Estimate != slope || ci.Level != tc.level || ci.N != tc.n {
				t.Errorf("slope CI %+v, want [%v, %v] level %v n %d", ci, tc.lo, tc.hi, tc.level, tc.n)
			}
			if !strings.Contains(ci.Method, tc.method) {
				t.Errorf("Method = %q, want it to contain %q", ci.Method, tc.method)
			}
		})
	}
}

func TestLinearFitLevel(t *testing.T) {
	x, y := []float64{1, 2, 3, 4, 5}, []float64{2, 4, 5, 4, 5}
	_, _, _, ci95 := LinearFit(x, y, 0.95)
	_, _, _, ci80 := LinearFit(x, y, 0.80)
	// t(3 df, 0.90) = 1.637744: 0.6 ± 0.463224.
	if math.Abs(ci80.Lo-0.136776) > 1e-6 || math.Abs(ci80.Hi-1.063224) > 1e-6 || ci80.Level != 0.8 {
		t.Errorf("80%% CI = %+v, want [0.136776, 1.063224]", ci80)
	}
	if !(ci80.Lo > ci95.Lo && ci80.Hi < ci95.Hi) {
		t.Errorf("80%% CI %+v not inside 95%% CI %+v", ci80, ci95)
	}
}

func TestLinearFitRejects(t *testing.T) {
	cases := []struct {
		name   string
		x, y   []float64
		level  float64
		method string
	}{
		{"length mismatch", []float64{1, 2, 3}, []float64{1, 2}, 0, "x and y lengths differ (3 vs 2)"},
		{"no points", nil, nil, 0, "need at least 2 points, have 0"},
		{"one point", []float64{1}, []float64{1}, 0, "need at least 2 points, have 1"},
		{"NaN", []float64{1, 2, 3}, []float64{1, math.NaN(), 3}, 0, MethodNotFinite},
		{"Inf", []float64{1, inf, 3}, []float64{1, 2, 3}, 0, MethodNotFinite},
		{"x without spread", []float64{2, 2, 2}, []float64{1, 2, 3}, 0, "x has no spread, slope undefined"},
		{"bad level", []float64{1, 2, 3}, []float64{1, 2, 3}, 1.5, "invalid level 1.5: want 0 < level < 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			slope, intercept, r2, ci := LinearFit(tc.x, tc.y, tc.level)
			if !math.IsNaN(slope) || !math.IsNaN(intercept) || !math.IsNaN(r2) || ci.HasInterval() || !math.IsNaN(ci.Estimate) {
				t.Errorf("got %v, %v, %v, %+v; want all NaN", slope, intercept, r2, ci)
			}
			if ci.Method != tc.method {
				t.Errorf("Method = %q, want %q", ci.Method, tc.method)
			}
		})
	}
}
