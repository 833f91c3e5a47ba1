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
	r.Record(-5) // negative (a clock stepping back): recorded as 0
	if r.Count() != 6 || r.OutOfRange() != 0 {
		t.Fatalf("count %d out of range %d", r.Count(), r.OutOfRange())
	}
	if r.MinNs() != 0 || r.MaxNs() != 100_000 || r.MeanNs() != 110_000.0/6 {
		t.Errorf("min %d max %d mean %v", r.MinNs(), r.MaxNs(), r.MeanNs())
	}
	// p50 of 6 values is the third; HDR is exact to 3 digits here.
	if p := r.Percentile(50); p < 1_990 || p > 2_010 {
		t.Errorf("p50 = %d, want ≈2000", p)
	}
	if p := r.Percentile(100); p != 100_000 {
		t.Errorf("p100 = %d, want the exact max", p)
	}
	empty := NewRecorder()
	if empty.Percentile(99) != 0 || empty.MinNs() != 0 || empty.MeanNs() != 0 {
		t.Error("empty recorder must report zeros")
	}
}

// TestSaturation: values above 60 s are counted at the top, so no
// percentile is ever lower than the truth (540 of 1000 latencies above 60 s
// once printed p50 1.428ms).
func TestSaturation(t *testing.T) {
	r := NewRecorder()
	for i := range 460 {
		r.Record(int64(1_000_000 + i*1_000)) // 1.0 to 1.46 ms
	}
	for range 540 {
		r.Record(HighestNs + 5_000_000_000) // 65 s
	}
	tests := []struct {
		p    float64
		want int64 // 0: within the recorded values, checked below
	}{
		{10, 0},            // rank 100 of 1000: a recorded value
		{46, 0},            // rank 460: the largest recorded value
		{46.01, HighestNs}, // rank 461: the first saturated value
		{50, HighestNs},    // the median is above 60 s
		{99.9, HighestNs},  // so is the tail
	}
	for _, tt := range tests {
		got := r.Percentile(tt.p)
		if tt.want == 0 {
			if got < 1_000_000 || got > 1_461_000 {
				t.Errorf("p%v = %d, want a recorded value", tt.p, got)
			}
		} else if got != tt.want {
			t.Errorf("p%v = %d, want %d (≥ 60s)", tt.p, got, tt.want)
		}
	}
	if p := r.Percentile(46); p < 1_458_000 {
		t.Errorf("p46 = %d, want the largest recorded value ≈1.459 ms", p)
	}
	if r.MaxNs() != HighestNs || r.OutOfRange() != 540 || r.Count() != 460 {
		t.Errorf("max %d out of range %d count %d", r.MaxNs(), r.OutOfRange(), r.Count())
	}
	// The portable form and merges keep the saturation.
	e, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if e.P50Ns != HighestNs || e.MaxNs != HighestNs {
		t.Errorf("encoded p50 %d max %d, want %d", e.P50Ns, e.MaxNs, HighestNs)
	}
	back, err := Decode(e)
	if err != nil || !back.Equal(r) {
		t.Fatalf("decoded %v, equal %v", err, back != nil && back.Equal(r))
	}
	all := NewRecorder()
	all.Record(HighestNs + 1)
	m := NewRecorder()
	if err := m.Merge(all); err != nil {
		t.Fatal(err)
	}
	if m.Percentile(1) != HighestNs || m.MinNs() != HighestNs || m.MaxNs() != HighestNs {
		t.Errorf("only saturated values: p1 %d min %d max %d, want all %d", m.Percentile(1), m.MinNs(), m.MaxNs(), HighestNs)
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

// TestResolves: how many values a percentile needs before it is more than
// the maximum.
func TestResolves(t *testing.T) {
	tests := []struct {
		n    int64
		p    float64
		want bool
	}{
		{250, 99.9, false},   // the case: p99.9 of 250 values is the max
		{999, 99.9, false},   // one short
		{1000, 99.9, true},   // exactly one value above it
		{100, 99, true},      // p99 needs 100
		{99, 99, false},      // one short
		{2, 50, true},        // the median of two
		{1, 50, false},       // one value: its median is its max
		{1, 100, true},       // the max needs one value
		{0, 100, false},      // no values: no max
		{0, 0, false},        // nor a min
		{10000, 99.99, true}, // p99.99 needs 10000
	}
	for _, tt := range tests {
		if got := Resolves(tt.n, tt.p); got != tt.want {
			t.Errorf("Resolves(%d, %g) = %v, want %v", tt.n, tt.p, got, tt.want)
		}
	}
}
