package loadgen

import (
	"math"
	"strconv"
	"testing"
)

func TestWorkerShare(t *testing.T) {
	tests := []struct {
		total   float64
		workers int
		want    []float64 // every worker's share, in index order
	}{
		// One worker: the total unchanged, even when it is not a whole
		// number of steps.
		{100, 1, []float64{100}},
		{1.0 / 3, 1, []float64{1.0 / 3}},
		// Even split.
		{40, 2, []float64{20, 20}},
		// The remainder (one step) goes to the first worker.
		{100, 3, []float64{33.333334, 33.333333, 33.333333}},
		// Two steps of remainder: the first two workers.
		{0.5, 3, []float64{0.166667, 0.166667, 0.166666}},
		// A fractional total, exact in steps.
		{33.3, 4, []float64{8.325, 8.325, 8.325, 8.325}},
		// Fewer steps than workers: the last workers get nothing (the CLI
		// rejects that rate for that many workers).
		{2e-6, 3, []float64{1e-6, 1e-6, 0}},
		// The engine's maximum rate still splits in exact steps.
		{1e7, 7, []float64{1428571.428572, 1428571.428572, 1428571.428572, 1428571.428571, 1428571.428571, 1428571.428571, 1428571.428571}},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatFloat(tt.total, 'g', -1, 64)+"/"+strconv.Itoa(tt.workers), func(t *testing.T) {
			for i, want := range tt.want {
				if got := WorkerShare(tt.total, tt.workers, i); got != want {
					t.Errorf("WorkerShare(%v, %d, %d) = %v, want %v", tt.total, tt.workers, i, got, want)
				}
			}
		})
	}
}

// TestWorkerShareSums: for many totals and worker counts, the shares sum to
// the total (as a whole number of steps, within float rounding) and differ
// by at most one step.
func TestWorkerShareSums(t *testing.T) {
	totals := []float64{1e-6, 0.001, 0.5, 1, 7, 33.3, 40, 99.999999, 100, 1000, 12345.678901, 1e6, 1e7}
	for _, total := range totals {
		for w := 1; w <= 64; w++ {
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for i := 0; i < w; i++ {
				s := WorkerShare(total, w, i)
				if s < 0 {
					t.Fatalf("WorkerShare(%v, %d, %d) = %v < 0", total, w, i, s)
				}
				// Every share is a whole number of steps: six decimals
				// print it exactly.
				if w > 1 {
					if back, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'f', 6, 64), 64); back != s {
						t.Fatalf("WorkerShare(%v, %d, %d) = %v is not a whole number of steps", total, w, i, s)
					}
				}
				sum += s
				lo, hi = min(lo, s), max(hi, s)
			}
			if tol := 1e-9 * max(total, 1); math.Abs(sum-total) > tol {
				t.Errorf("%v over %d workers: shares sum to %v (off by %g)", total, w, sum, sum-total)
			}
			if hi-lo > WorkerShareStep*(1+1e-6)+1e-12*total {
				t.Errorf("%v over %d workers: shares range from %v to %v, more than one step apart", total, w, lo, hi)
			}
		}
	}
}

func TestWorkerShareOutOfRange(t *testing.T) {
	for _, c := range []struct {
		total          float64
		workers, index int
	}{
		{100, 0, 0},         // no workers
		{100, 2, 2},         // index past the last worker
		{100, 2, -1},        // negative index
		{0, 2, 0},           // zero total
		{-5, 2, 0},          // negative total
		{math.NaN(), 2, 0},  // not a number
		{math.Inf(1), 2, 0}, // infinite
	} {
		if got := WorkerShare(c.total, c.workers, c.index); got != 0 {
			t.Errorf("WorkerShare(%v, %d, %d) = %v, want 0", c.total, c.workers, c.index, got)
		}
	}
}

func TestWorkerConnections(t *testing.T) {
	tests := []struct {
		total, workers int
		want           []int
	}{
		{16, 1, []int{16}},         // one worker: all
		{16, 3, []int{6, 5, 5}},    // remainder to the first
		{4, 4, []int{1, 1, 1, 1}},  // one each
		{2, 4, []int{1, 1, 1, 1}},  // more workers than connections: at least one each
		{10, 4, []int{3, 3, 2, 2}}, // two left over
	}
	for _, tt := range tests {
		for i, want := range tt.want {
			if got := WorkerConnections(tt.total, tt.workers, i); got != want {
				t.Errorf("WorkerConnections(%d, %d, %d) = %d, want %d", tt.total, tt.workers, i, got, want)
			}
		}
	}
}

// TestWorkerRate checks the exact rate each worker paces at.
func TestWorkerRate(t *testing.T) {
	for _, tt := range []struct {
		total          string
		workers, index int
		want           string // the share as Rate.String prints it; "" for an error
	}{
		// One worker paces at the total itself, every decimal kept.
		{"33.333333333", 1, 0, "33.333333333/s"},
		// 100/s over 3: the remainder step goes to the first worker.
		{"100", 3, 0, "33.333334/s"},
		{"100", 3, 2, "33.333333/s"},
		// A rate given per minute splits as its per-second value.
		{"60/m", 2, 1, "0.5/s"},
		// Two steps over three workers: the last one gets nothing.
		{"0.000002", 3, 2, ""},
		// An index outside the workers is no share.
		{"100", 3, 3, ""},
	} {
		total, err := ParseRate(tt.total)
		if err != nil {
			t.Fatal(err)
		}
		got, err := WorkerRate(total, tt.workers, tt.index)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("WorkerRate(%s, %d, %d) = %s, want an error", tt.total, tt.workers, tt.index, got)
		case tt.want != "" && err != nil:
			t.Errorf("WorkerRate(%s, %d, %d): %v", tt.total, tt.workers, tt.index, err)
		case tt.want != "" && got.String() != tt.want:
			t.Errorf("WorkerRate(%s, %d, %d) = %s, want %s", tt.total, tt.workers, tt.index, got, tt.want)
		}
	}
}
