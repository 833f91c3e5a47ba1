package stats

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// Coverage and error-rate tests: simulate many small experiments from known
// distributions and count how often an interval does what it claims. They are
// deterministic (fixed seeds). Each bound is the measured figure (logged with
// -v) ± about 3 binomial standard errors — for a rate near 0.9 over 2000
// trials one standard error is 0.007 — and the comment on each row says
// whether the figure is exact theory or measured.
//
// The loops use covResamples = 1000 resamples instead of DefaultResamples to
// keep the whole package under ~3 s on a shared machine. The resample count
// adds Monte Carlo noise to each interval's ends; it does not change the
// coverage the percentile bootstrap aims at (checked once with 10000: same
// figures within noise).

const covResamples = 1000

// sampler is a distribution to draw runs from (gonum's distuv types).
type sampler interface{ Rand() float64 }

func normal(mu, sigma float64) func(*rand.Rand) sampler {
	return func(rng *rand.Rand) sampler { return distuv.Normal{Mu: mu, Sigma: sigma, Src: rng} }
}

// lognormal has median m and log-scale spread sigma (σ=0.05 is ~5% run-to-run noise).
func lognormal(m, sigma float64) func(*rand.Rand) sampler {
	return func(rng *rand.Rand) sampler { return distuv.LogNormal{Mu: math.Log(m), Sigma: sigma, Src: rng} }
}

// rate runs trials of f and returns the fraction for which it reported true.
func rate(seed uint64, trials int, f func(rng *rand.Rand) bool) float64 {
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	hits := 0
	for range trials {
		if f(rng) {
			hits++
		}
	}
	return float64(hits) / float64(trials)
}

func draw(d sampler, n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = d.Rand()
	}
	return xs
}

func TestBootstrapMedianCICoverage(t *testing.T) {
	const trials = 2000
	cases := []struct {
		name   string
		seed   uint64
		n      int
		dist   func(*rand.Rand) sampler
		median float64 // true median of dist
		lo, hi float64 // accepted coverage of the true median at nominal 0.95
	}{
		// 3 runs, the default: the interval is the range of the runs, which holds
		// the median with probability 1 − 2^(1−3) = 0.75 exactly, for any
		// continuous distribution (measured 0.75 over 20000 trials).
		{"n=3 normal", 1, 3, normal(0, 1), 0, 0.72, 0.78},
		// 5 runs: still the range, 1 − 2^(1−5) = 0.9375 exactly.
		{"n=5 lognormal", 2, 5, lognormal(1, 1), 1, 0.915, 0.96},
		// 10 runs: no longer the range; under-covers a little. Measured 0.935
		// over 20000 trials on normal data. The percentile bootstrap of a median
		// commutes with monotone transforms (odd n exactly, even n nearly), so
		// skewed data (lognormal) covers the same.
		{"n=10 normal", 3, 10, normal(100, 10), 100, 0.915, 0.955},
		{"n=10 lognormal", 4, 10, lognormal(100, 0.5), 100, 0.915, 0.955},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cov := rate(tc.seed, trials, func(rng *rand.Rand) bool {
				xs := draw(tc.dist(rng), tc.n)
				return BootstrapMedianCI(xs, 0.95, covResamples, rng).Contains(tc.median)
			})
			t.Logf("coverage %.4f at nominal 0.95 (%d trials)", cov, trials)
			if cov < tc.lo || cov > tc.hi {
				t.Errorf("coverage %.4f outside [%.3f, %.3f]", cov, tc.lo, tc.hi)
			}
		})
	}
}

func TestRelativeDiffCICoverageAndSignificance(t *testing.T) {
	cases := []struct {
		name         string
		seed         uint64
		trials       int
		n            int
		a, base      func(*rand.Rand) sampler
		truth        float64 // true median(a)/median(base) − 1
		covLo, covHi float64 // accepted coverage of truth at nominal 0.95
		sigLo, sigHi float64 // accepted rate of Significant()
	}{
		// Identical setups, 3 vs 3: the interval compares the runs' ranges, so
		// it is significant exactly when the ranges do not overlap, probability
		// 2/C(6,3) = 0.10 — twice the nominal 5% (measured 0.097 over 10000).
		{"3v3 identical", 11, 2000, 3, lognormal(100, 0.1), lognormal(100, 0.1), 0,
			0.87, 0.93, 0.07, 0.13},
		// A 20% shift with 5% noise at 3 vs 3 is detected essentially always
		// (measured 0.995); coverage of the truth is again exactly 0.90
		// whenever a/ratio and base have the same distribution.
		{"3v3 20% lower, 5% noise", 12, 1000, 3, lognormal(80, 0.05), lognormal(100, 0.05), -0.2,
			0.86, 0.94, 0.98, 1},
		// The same shift with additive normal noise of 10% CV: coverage exactly
		// 0.90 again; detected 69% of the time (measured, 1000 trials).
		{"3v3 20% lower, 10% noise", 13, 1000, 3, normal(80, 8), normal(100, 10), -0.2,
			0.86, 0.94, 0.64, 0.74},
		// Identical setups, 10 vs 10: resampling both groups widens the interval
		// and it over-covers: false alarms measured 0.037 over 10000 trials.
		{"10v10 identical", 14, 2000, 10, lognormal(100, 0.1), lognormal(100, 0.1), 0,
			0.94, 0.98, 0.02, 0.06},
		// 20% shift with 25% CV normal noise at 10 vs 10: measured coverage
		// 0.965 over 10000 trials; detected 35% of the time (measured 0.35 here
		// and 0.33 with 10000 resamples).
		{"10v10 20% lower, 25% noise", 15, 2000, 10, normal(80, 20), normal(100, 25), -0.2,
			0.945, 0.98, 0.30, 0.40},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			covered := 0
			sig := rate(tc.seed, tc.trials, func(rng *rand.Rand) bool {
				a := draw(tc.a(rng), tc.n)
				base := draw(tc.base(rng), tc.n)
				iv := RelativeDiffCI(a, base, 0.95, covResamples, rng)
				if iv.Contains(tc.truth) {
					covered++
				}
				return iv.Significant()
			})
			cov := float64(covered) / float64(tc.trials)
			t.Logf("coverage %.4f, significant %.4f (%d trials)", cov, sig, tc.trials)
			if cov < tc.covLo || cov > tc.covHi {
				t.Errorf("coverage %.4f outside [%.3f, %.3f]", cov, tc.covLo, tc.covHi)
			}
			if sig < tc.sigLo || sig > tc.sigHi {
				t.Errorf("significant rate %.4f outside [%.3f, %.3f]", sig, tc.sigLo, tc.sigHi)
			}
		})
	}
}

func TestLinearFitCoverage(t *testing.T) {
	// Memory against replica count: y = 50 + 12·x MiB plus normal noise of
	// 5 MiB. The t interval is exact for normal errors, so coverage should be
	// 0.95 up to sampling error (SE 0.005 over 2000 trials), even at n=3.
	const trials = 2000
	for _, n := range []int{3, 10} {
		cov := rate(uint64(20+n), trials, func(rng *rand.Rand) bool {
			noise := distuv.Normal{Mu: 0, Sigma: 5, Src: rng}
			x := make([]float64, n)
			y := make([]float64, n)
			for i := range x {
				x[i] = float64(i + 1)
				y[i] = 50 + 12*x[i] + noise.Rand()
			}
			_, _, _, ci := LinearFit(x, y, 0.95)
			return ci.Contains(12)
		})
		t.Logf("n=%d: slope CI coverage %.4f at nominal 0.95", n, cov)
		if cov < 0.93 || cov > 0.97 {
			t.Errorf("n=%d: coverage %.4f outside [0.93, 0.97]", n, cov)
		}
	}
}
