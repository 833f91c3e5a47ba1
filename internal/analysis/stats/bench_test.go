package stats

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkBootstrapMedianCI is the cost of one report figure: 10 runs,
// DefaultResamples resamples.
func BenchmarkBootstrapMedianCI(b *testing.B) {
	xs := []float64{101, 97, 110, 99, 104, 95, 120, 100, 98, 103}
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		BootstrapMedianCI(xs, DefaultLevel, DefaultResamples, rng)
	}
}

// BenchmarkRelativeDiffCI is one comparison figure: 10 vs 10 runs.
func BenchmarkRelativeDiffCI(b *testing.B) {
	a := []float64{81, 77, 90, 79, 84, 75, 96, 80, 78, 83}
	base := []float64{101, 97, 110, 99, 104, 95, 120, 100, 98, 103}
	rng := rand.New(rand.NewPCG(1, 2))
	for b.Loop() {
		RelativeDiffCI(a, base, DefaultLevel, DefaultResamples, rng)
	}
}
