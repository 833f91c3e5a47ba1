package stats

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// near is equality up to rounding (1e-12 relative), NaN equal to NaN.
func near(a, b float64) bool {
	return same(a, b) || math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b))
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 42)) }

// sameInterval compares intervals field by field, NaN equal to NaN.
func sameInterval(a, b Interval) bool {
	return same(a.Estimate, b.Estimate) && same(a.Lo, b.Lo) && same(a.Hi, b.Hi) &&
		a.Level == b.Level && a.N == b.N && a.Method == b.Method
}

func TestIntervalPredicates(t *testing.T) {
	cases := []struct {
		name                     string
		iv                       Interval
		has, significant, covers bool // covers: Contains(0)
	}{
		{"above zero", Interval{Estimate: 0.2, Lo: 0.1, Hi: 0.3, Level: 0.95, N: 3}, true, true, false},
		{"below zero", Interval{Estimate: -0.2, Lo: -0.3, Hi: -0.1, Level: 0.95, N: 10}, true, true, false},
		{"spans zero", Interval{Estimate: 0.05, Lo: -0.1, Hi: 0.1, Level: 0.95, N: 3}, true, false, true},
		{"touching zero is not significant", Interval{Estimate: 0.1, Lo: 0, Hi: 0.2, Level: 0.95, N: 3}, true, false, true},
		{"unbounded above, still excludes zero", Interval{Estimate: 1, Lo: 0.1, Hi: inf, Level: 0.95, N: 3}, true, true, false},
		// two runs a side: an interval, but too few to judge
		{"two runs are never significant", Interval{Estimate: -0.2, Lo: -0.3, Hi: -0.1, Level: 0.95, N: 2}, true, false, false},
		{"single run is never significant", Interval{Estimate: -0.2, Lo: -0.2, Hi: -0.2, N: 1}, false, false, false},
		{"NaN", nanInterval(3, MethodZeroBase), false, false, false},
		{"zero value", Interval{}, false, false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.iv.HasInterval(); got != tc.has {
				t.Errorf("HasInterval = %v, want %v", got, tc.has)
			}
			if got := tc.iv.Significant(); got != tc.significant {
				t.Errorf("Significant = %v, want %v", got, tc.significant)
			}
			if got := tc.iv.Contains(0); got != tc.covers {
				t.Errorf("Contains(0) = %v, want %v", got, tc.covers)
			}
		})
	}
}

func TestBootstrapMedianCISmallN(t *testing.T) {
	// For n ≤ 5 at the 95% level the interval is exactly the range of the runs
	// (the lowest and highest resample medians each have probability > 2.5%),
	// and the Method gives the range's true coverage 1 − 2^(1−n).
	nan := math.NaN()
	cases := []struct {
		name           string
		xs             []float64
		est, lo, hi    float64
		level          float64
		n              int
		method         string
		methodContains bool // method is a substring rather than the whole string
	}{
		{"no runs", nil, nan, nan, nan, 0, 0, MethodNoRuns, false},
		{"one run: no interval", []float64{5}, 5, 5, 5, 0, 1, MethodSingleRun, false},
		{"NaN rejected", []float64{1, nan, 3}, nan, nan, nan, 0, 3, MethodNotFinite, false},
		{"Inf rejected", []float64{1, inf}, nan, nan, nan, 0, 2, MethodNotFinite, false},
		{"two runs: the range, 50%", []float64{3, 1}, 2, 1, 3, 0.95, 2,
			"bootstrap percentile, 10000 resamples, n=2: the range of the runs, which holds the true median 50% of the time", false},
		{"three runs: the range, 75%", []float64{30, 10, 20}, 20, 10, 30, 0.95, 3,
			"bootstrap percentile, 10000 resamples, n=3: the range of the runs, which holds the true median 75% of the time", false},
		{"four runs: the range, 87.5%", []float64{1, 2, 3, 4}, 2.5, 1, 4, 0.95, 4, "holds the true median 87.5% of the time", true},
		{"five runs: the range, 93.75%", []float64{5, 1, 4, 2, 3}, 3, 1, 5, 0.95, 5, "holds the true median 93.8% of the time", true},
		{"identical runs: zero width", []float64{7, 7, 7}, 7, 7, 7, 0.95, 3, "n=3", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			iv := BootstrapMedianCI(tc.xs, 0, 0, newRand(1))
			if !same(iv.Estimate, tc.est) || !same(iv.Lo, tc.lo) || !same(iv.Hi, tc.hi) || iv.Level != tc.level || iv.N != tc.n {
				t.Errorf("got %+v, want estimate %v [%v, %v] level %v n %d", iv, tc.est, tc.lo, tc.hi, tc.level, tc.n)
			}
			if tc.methodContains && !strings.Contains(iv.Method, tc.method) || !tc.methodContains && iv.Method != tc.method {
				t.Errorf("Method = %q, want %q", iv.Method, tc.method)
			}
		})
	}
}

func TestBootstrapMedianCITenRuns(t *testing.T) {
	// With 10 runs the interval is inside the range and the Method makes no
	// range claim.
	xs := []float64{101, 97, 110, 99, 104, 95, 120, 100, 98, 103}
	iv := BootstrapMedianCI(xs, 0.95, 10000, newRand(7))
	if iv.Estimate != 100.5 {
		t.Errorf("Estimate = %v, want 100.5", iv.Estimate)
	}
	if !(95 < iv.Lo && iv.Lo < iv.Estimate && iv.Estimate < iv.Hi && iv.Hi < 120) {
		t.Errorf("interval %+v: want 95 < Lo < 100.5 < Hi < 120", iv)
	}
	if want := "bootstrap percentile, 10000 resamples, n=10"; iv.Method != want {
		t.Errorf("Method = %q, want %q", iv.Method, want)
	}
	// A lower level gives a narrower interval.
	narrow := BootstrapMedianCI(xs, 0.5, 10000, newRand(7))
	if !(narrow.Lo >= iv.Lo && narrow.Hi <= iv.Hi && narrow.Hi-narrow.Lo < iv.Hi-iv.Lo) {
		t.Errorf("50%% interval %+v not inside 95%% interval %+v", narrow, iv)
	}
}

func TestBootstrapInvalidParameters(t *testing.T) {
	xs := []float64{1, 2, 3}
	cases := []struct {
		name      string
		level     float64
		resamples int
		method    string
	}{
		{"level 1", 1, 100, "invalid level 1: want 0 < level < 1"},
		{"level above 1 (a percentage?)", 95, 100, "invalid level 95: want 0 < level < 1"},
		{"negative level", -0.5, 100, "invalid level -0.5: want 0 < level < 1"},
		{"NaN level", math.NaN(), 100, "invalid level NaN: want 0 < level < 1"},
		{"negative resamples", 0.95, -1, "invalid resample count -1: want ≥ 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, iv := range []Interval{
				BootstrapMedianCI(xs, tc.level, tc.resamples, nil),
				RelativeDiffCI(xs, xs, tc.level, tc.resamples, nil),
			} {
				if !math.IsNaN(iv.Estimate) || iv.HasInterval() || iv.Method != tc.method {
					t.Errorf("got %+v, want NaN with Method %q", iv, tc.method)
				}
			}
		})
	}
}

func TestBootstrapDeterministic(t *testing.T) {
	a := []float64{81, 77, 90, 79, 84, 75, 96, 80, 78, 83}
	b := []float64{101, 97, 110, 99, 104, 95, 120, 100, 98, 103}
	if x, y := BootstrapMedianCI(a, 0, 0, newRand(3)), BootstrapMedianCI(a, 0, 0, newRand(3)); !sameInterval(x, y) {
		t.Errorf("same seed, different intervals: %+v vs %+v", x, y)
	}
	if x, y := RelativeDiffCI(a, b, 0, 0, newRand(3)), RelativeDiffCI(a, b, 0, 0, newRand(3)); !sameInterval(x, y) {
		t.Errorf("same seed, different intervals: %+v vs %+v", x, y)
	}
	// nil rng means a fixed seed, not a random one.
	if x, y := BootstrapMedianCI(a, 0, 0, nil), BootstrapMedianCI(a, 0, 0, nil); !sameInterval(x, y) {
		t.Errorf("nil rng, different intervals: %+v vs %+v", x, y)
	}
	// Different seeds move the ends only by Monte Carlo noise, well under the
	// 1-unit spacing of these data.
	x, y := BootstrapMedianCI(a, 0, 0, newRand(3)), BootstrapMedianCI(a, 0, 0, newRand(4))
	if math.Abs(x.Lo-y.Lo) > 1 || math.Abs(x.Hi-y.Hi) > 1 {
		t.Errorf("seeds 3 and 4 disagree by more than Monte Carlo noise: %+v vs %+v", x, y)
	}
}

func TestResamplerMedianDistribution(t *testing.T) {
	// Exact probabilities of each resample median, from the multinomial:
	//   n=2 {1,2}: median 1 needs both draws 1 (1/4); 1.5 needs one of each (1/2).
	//   n=3 {1,2,3}: median 1 needs ≥2 of 3 draws to be 1: 3·(1/3)²·(2/3) + (1/3)³ = 7/27.
	//   n=4 {1,2,3,4}: median 1 needs ≥3 of 4 draws to be 1: 4·(1/4)³·(3/4) + (1/4)⁴ = 13/256.
	cases := []struct {
		s     []float64
		value float64
		p     float64
	}{
		{[]float64{1, 2}, 1, 0.25},
		{[]float64{1, 2}, 1.5, 0.5},
		{[]float64{1, 2, 3}, 1, 7.0 / 27},
		{[]float64{1, 2, 3}, 2, 13.0 / 27},
		{[]float64{1, 2, 3}, 3, 7.0 / 27},
		{[]float64{1, 2, 3, 4}, 1, 13.0 / 256},
		{[]float64{1, 2, 3, 4}, 4, 13.0 / 256},
	}
	const draws = 100000
	for _, tc := range cases {
		r := newResampler(tc.s)
		rng := newRand(5)
		hits := 0
		for range draws {
			if r.median(rng) == tc.value {
				hits++
			}
		}
		got := float64(hits) / draws
		se := math.Sqrt(tc.p * (1 - tc.p) / draws)
		if math.Abs(got-tc.p) > 4*se {
			t.Errorf("%v: P(median = %v) = %.4f, want %.4f ± %.4f", tc.s, tc.value, got, tc.p, 4*se)
		}
	}
}

func TestRelativeDiffCI(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name        string
		a, base     []float64
		est, lo, hi float64
		significant bool
		n           int
		method      string // substring of Method
	}{
		// 3 vs 3 with separated ranges: the interval runs from min(a) against
		// max(base) to max(a) against min(base), and is significant.
		{"3v3 about 20% lower", []float64{80, 82, 84}, []float64{100, 105, 101},
			82.0/101 - 1, 80.0/105 - 1, 84.0/100 - 1, true, 3,
			"n=3 vs 3: significant only if the runs' ranges do not overlap, which identical setups do 10% of the time"},
		// Overlapping ranges: not significant whatever the estimate.
		{"3v3 overlapping", []float64{95, 100, 110}, []float64{98, 102, 105},
			100.0/102 - 1, 95.0/105 - 1, 110.0/98 - 1, false, 3, "10% of the time"},
		// 2 vs 3: chance of separated ranges 2/C(5,2) = 20%; and with 2
		// runs on a side never significant (too few to judge).
		{"2v3", []float64{80, 84}, []float64{100, 105, 101},
			82.0/101 - 1, 80.0/105 - 1, 84.0/100 - 1, false, 2, "identical setups do 20% of the time"},
		// Negative figures: (a − base)/|base|, so a = −8 vs base = −10 is 20% higher.
		{"negative baseline", []float64{-8, -8, -8}, []float64{-10, -10, -10}, 0.2, 0.2, 0.2, true, 3, "n=3 vs 3"},
		// Baseline with a zero but median 1: 7/27 of the resamples have a
		// baseline median of 0, counted as +Inf, so Hi is unbounded.
		{"zeros in baseline", []float64{1, 1, 1}, []float64{0, 1, 2}, 0, -0.5, inf, false, 3, "n=3 vs 3"},
		{"baseline median 0", []float64{1, 2, 3}, []float64{0, 0, 1}, nan, nan, nan, false, 3, MethodZeroBase},
		{"single run in a", []float64{80}, []float64{100, 101, 99}, -0.2, -0.2, -0.2, false, 1, MethodSingleRun},
		{"single run in base", []float64{80, 81, 79}, []float64{100}, -0.2, -0.2, -0.2, false, 1, MethodSingleRun},
		{"empty a", nil, []float64{1}, nan, nan, nan, false, 0, MethodNoRuns},
		{"empty base", []float64{1}, nil, nan, nan, nan, false, 0, MethodNoRuns},
		{"NaN in base", []float64{1, 2}, []float64{1, nan}, nan, nan, nan, false, 2, MethodNotFinite},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			iv := RelativeDiffCI(tc.a, tc.base, 0, 0, newRand(9))
			if !near(iv.Estimate, tc.est) || !near(iv.Lo, tc.lo) || !near(iv.Hi, tc.hi) || iv.N != tc.n {
				t.Errorf("got %+v, want estimate %v [%v, %v] n %d", iv, tc.est, tc.lo, tc.hi, tc.n)
			}
			if iv.Significant() != tc.significant {
				t.Errorf("Significant = %v, want %v", iv.Significant(), tc.significant)
			}
			if !strings.Contains(iv.Method, tc.method) {
				t.Errorf("Method = %q, want it to contain %q", iv.Method, tc.method)
			}
		})
	}
}

func TestRelativeDiffCITenRuns(t *testing.T) {
	a := []float64{81, 77, 90, 79, 84, 75, 96, 80, 78, 83}
	base := []float64{101, 97, 110, 99, 104, 95, 120, 100, 98, 103}
	iv := RelativeDiffCI(a, base, 0, 0, newRand(11))
	if want := 80.5/100.5 - 1; iv.Estimate != want {
		t.Errorf("Estimate = %v, want %v", iv.Estimate, want)
	}
	if !iv.Significant() || !(iv.Lo < iv.Estimate && iv.Estimate < iv.Hi && iv.Hi < 0) {
		t.Errorf("interval %+v: want a significant interval below 0 around the estimate", iv)
	}
	if want := "bootstrap percentile, 10000 resamples, n=10 vs 10"; iv.Method != want {
		t.Errorf("Method = %q, want %q", iv.Method, want)
	}
	// Against itself: estimate 0 and an interval across 0.
	self := RelativeDiffCI(base, base, 0, 0, newRand(11))
	if self.Estimate != 0 || self.Significant() || !(self.Lo < 0 && self.Hi > 0) {
		t.Errorf("base vs itself: %+v, want 0 inside a non-significant interval", self)
	}
}

// TestAchievedLevel: an interval that is the range of the runs is labelled
// with the coverage it achieves, not the nominal level.
func TestAchievedLevel(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{1, 2, 3}, 0.75},         // 3 runs: the range, 1 − 2^−2
		{[]float64{1, 2, 3, 4, 5}, 0.9375}, // 5 runs: still the range at 95%
		{[]float64{4}, 0},                  // one run: no interval, no level
	}
	for _, tt := range tests {
		iv := BootstrapMedianCI(tt.xs, 0.95, 2000, nil)
		if got := iv.Achieved(); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%v: achieved level %v, want %v (%s)", tt.xs, got, tt.want, iv.Method)
		}
	}
	// 30 runs: not the range; the nominal level is the label.
	xs := make([]float64, 30)
	for i := range xs {
		xs[i] = float64(i)
	}
	if iv := BootstrapMedianCI(xs, 0.95, 2000, nil); iv.Coverage != 0 || iv.Achieved() != 0.95 {
		t.Errorf("30 runs: coverage %v achieved %v, want 0 and 0.95", iv.Coverage, iv.Achieved())
	}
}

// TestSmallNCoverage: an interval from few runs carries the coverage it
// achieves, below the nominal level, so every output can say so: a
// median's range of n runs 1 − 2^(1−n), a difference from range to range
// 1 − 2/C(na+nb, na); 10 runs a side are not flagged.
func TestSmallNCoverage(t *testing.T) {
	for _, tc := range []struct {
		name string
		iv   Interval
		want float64
	}{
		{"median of 3", BootstrapMedianCI([]float64{1, 2, 3}, 0, 0, newRand(1)), 0.75},
		{"median of 2", BootstrapMedianCI([]float64{1, 2}, 0, 0, newRand(1)), 0.5},
		{"3 vs 3", RelativeDiffCI([]float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0, newRand(1)), 0.9},
		{"2 vs 3", RelativeDiffCI([]float64{1, 2}, []float64{4, 5, 6}, 0, 0, newRand(1)), 0.8},
		{"2 vs 2", RelativeDiffCI([]float64{1, 2}, []float64{4, 5}, 0, 0, newRand(1)), 1 - 2.0/6},
	} {
		if !near(tc.iv.Coverage, tc.want) || !tc.iv.BelowNominal() {
			t.Errorf("%s: coverage %v (below nominal %v), want %v", tc.name, tc.iv.Coverage, tc.iv.BelowNominal(), tc.want)
		}
	}
	ten := RelativeDiffCI([]float64{81, 77, 90, 79, 84, 75, 96, 80, 78, 83}, []float64{101, 97, 110, 99, 104, 95, 120, 100, 98, 103}, 0, 0, newRand(11))
	if ten.BelowNominal() || ten.TooFew() {
		t.Errorf("10 vs 10: below nominal %v, too few %v", ten.BelowNominal(), ten.TooFew())
	}
	if got, want := TooFewText(2), "2 runs: too few to judge; run 3 or more"; got != want {
		t.Errorf("TooFewText(2) = %q, want %q", got, want)
	}
}
