package latency

import (
	"math"
	"testing"
)

// TestRecordN: RecordN(v, n) leaves the recorder exactly as n calls of
// Record(v) do, out-of-range values included; n <= 0 records nothing.
func TestRecordN(t *testing.T) {
	for _, tt := range []struct {
		name string
		vals []int64 // value, count pairs
	}{
		{"one value", []int64{1500, 3}},
		{"several, unordered", []int64{90_000, 2, 1, 5, 59_999_999_999, 1, 1200, 7}},
		{"out of range and negative", []int64{HighestNs + 1, 4, -3, 2, 700, 1}},
		{"zero and negative counts", []int64{800, 0, 900, -5}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := NewRecorder(), NewRecorder()
			for i := 0; i < len(tt.vals); i += 2 {
				a.RecordN(tt.vals[i], tt.vals[i+1])
				for range tt.vals[i+1] {
					b.Record(tt.vals[i])
				}
			}
			if !a.Equal(b) || a.OutOfRange() != b.OutOfRange() {
				t.Errorf("RecordN: count %d sum %d min %d max %d oor %d; Record: %d %d %d %d %d",
					a.Count(), a.SumNs(), a.MinNs(), a.MaxNs(), a.OutOfRange(), b.Count(), b.SumNs(), b.MinNs(), b.MaxNs(), b.OutOfRange())
			}
		})
	}
	// The sum saturates instead of overflowing.
	r := NewRecorder()
	r.RecordN(HighestNs, math.MaxInt64/HighestNs+1)
	if r.SumNs() != math.MaxInt64 {
		t.Errorf("sum %d, want saturated at MaxInt64", r.SumNs())
	}
}
