package latency

import (
	"math/rand/v2"
	"testing"
)

func TestRecorderBasics(t *testing.T) {
	r := NewRecorder()
	for _, v := range []int64{1_000, 2_000, 3_000, 4_000, 100_000} {
		r.Record(v)
	}
	r.Record(HighestNs + 1) // above range: counted only
	r.Record(-5)            // negative: counted only
	if r.Count() != 5 || r.OutOfRange() != 2 {
		t.Fatalf("count %d out of range %d", r.Count(), r.OutOfRange())
	}
	if r.MinNs() != 1_000 || r.MaxNs() != 100_000 || r.MeanNs() != 22_000 {
		t.Errorf("min %d max %d mean %v", r.MinNs(), r.MaxNs(), r.MeanNs())
	}
	// p50 of 5 values is the third; HDR is exact to 3 digits here.
	if p := r.Percentile(50); p < 2_990 || p > 3_010 {
		t.Errorf("p50 = %d, want ≈3000", p)
	}
	if p := r.Percentile(100); p != 100_000 {
		t.Errorf("p100 = %d, want the exact max", p)
	}
	empty := NewRecorder()
	if empty.Percentile(99) != 0 || empty.MinNs() != 0 || empty.MeanNs() != 0 {
		t.Error("empty recorder must report zeros")
	}
}

// TestMergeExact: recording a stream in two halves and merging equals
// recording it in one recorder, bucket for bucket.
func TestMergeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	whole, a, b := NewRecorder(), NewRecorder(), NewRecorder()
	for i := 0; i < 100_000; i++ {
		v := int64(rng.ExpFloat64() * 2e6) // exponential, mean 2 ms
		if i%7 == 0 {
			v = int64(rng.Float64() * 2e9) // a heavy tail up to 2 s
		}
		whole.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	merged := NewRecorder()
	if err := merged.Merge(a); err != nil {
		t.Fatal(err)
	}
	if err := merged.Merge(b); err != nil {
		t.Fatal(err)
	}
	if !merged.Equal(whole) {
		t.Fatal("merged halves differ from the whole")
	}
	for _, p := range []float64{50, 90, 99, 99.9, 99.99} {
		if merged.Percentile(p) != whole.Percentile(p) {
			t.Errorf("p%v: %d vs %d", p, merged.Percentile(p), whole.Percentile(p))
		}
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	r := NewRecorder()
	for i := int64(1); i <= 1000; i++ {
		r.Record(i * 37_000)
	}
	r.Record(HighestNs * 2)
	e, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(e)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(r) {
		t.Fatal("decoded recorder differs")
	}
	empty, _ := NewRecorder().Encode()
	if d, err := Decode(empty); err != nil || d.Count() != 0 || d.MinNs() != 0 {
		t.Fatalf("empty round trip: %v %v", d, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	r := NewRecorder()
	r.Record(5000)
	good, _ := r.Encode()
	tests := []struct {
		name string
		mod  func(e *Encoded)
	}{
		{"empty histogram field", func(e *Encoded) { e.HDR = "" }},
		{"not base64", func(e *Encoded) { e.HDR = "!!!" }},
		{"count disagrees with histogram", func(e *Encoded) { e.Count = 2 }},
		{"negative counters", func(e *Encoded) { e.SumNs = -1 }},
	}
	for _, tt := range tests {
		e := good
		tt.mod(&e)
		if _, err := Decode(e); err == nil {
			t.Errorf("%s: accepted", tt.name)
		}
	}
}
