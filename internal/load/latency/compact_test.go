package latency

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// TestCompactSameAsRecorder: a Compact answers every question exactly as
// the Recorder it came from, encodes to the same bytes, decodes back, and
// merges exactly; it holds a small fraction of the Recorder's memory.
func TestCompactSameAsRecorder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 16))
	for _, tt := range []struct {
		name string
		fill func(r *Recorder)
	}{
		{"empty", func(*Recorder) {}},
		{"one value", func(r *Recorder) { r.Record(123_456) }},
		// A loopback second at 1000 rps: 50 µs–5 ms, the shape of a run.
		{"loopback spread", func(r *Recorder) {
			for range 1000 {
				r.Record(50_000 + int64(rng.ExpFloat64()*200_000))
			}
		}},
		// Saturated values rank at the top and are counted, not lost.
		{"with out of range", func(r *Recorder) {
			for i := range 300 {
				r.Record(int64(1_000_000 + i*997))
			}
			r.RecordN(HighestNs+1, 40)
		}},
		{"only out of range", func(r *Recorder) { r.RecordN(HighestNs*2, 3) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder()
			tt.fill(r)
			c := mustCompact(t, r)
			if got, want := c.Summarize(), r.Summarize(); got != want {
				t.Errorf("summary %+v, recorder's %+v", got, want)
			}
			if !c.Equal(r) {
				t.Error("Compact().Recorder() differs from the recorder")
			}
			ce, err := c.Encode()
			if err != nil {
				t.Fatal(err)
			}
			re, err := r.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if ce != re {
				t.Errorf("encodings differ:\n compact  %+v\n recorder %+v", ce, re)
			}
			back, err := DecodeCompact(ce)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Equal(r) {
				t.Error("DecodeCompact(Encode()) differs from the recorder")
			}
			// Merging compacts is merging recorders.
			other := NewRecorder()
			for range 200 {
				other.Record(int64(rng.IntN(3_000_000)))
			}
			merged := mustCompact(t, r)
			if err := merged.Merge(mustCompact(t, other)); err != nil {
				t.Fatal(err)
			}
			want := NewRecorder()
			if err := errors.Join(want.Merge(r), want.Merge(other)); err != nil {
				t.Fatal(err)
			}
			if !merged.Equal(want) || merged.Summarize() != want.Summarize() {
				t.Errorf("merged compact %+v, merged recorders %+v", merged.Summarize(), want.Summarize())
			}
			// The point of it: 1000 values populate at most 1000 buckets,
			// a zero-run-length varint each (mostly 1–3 bytes) before
			// zlib; 4 KiB is well above that, the full range ~220 KB.
			if c.ByteSize() > 4<<10 {
				t.Errorf("compact holds %d bytes, want ≤ 4 KiB", c.ByteSize())
			}
		})
	}
}

func mustCompact(t *testing.T, r *Recorder) *Compact {
	t.Helper()
	c, err := r.Compact()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRecorderReset: a reset recorder is an empty one.
func TestRecorderReset(t *testing.T) {
	r := NewRecorder()
	r.Record(5_000)
	r.RecordN(HighestNs+1, 2)
	r.Reset()
	if !r.Equal(NewRecorder()) || r.OutOfRange() != 0 || r.MinNs() != 0 {
		t.Errorf("after Reset: %+v", r.Summarize())
	}
	r.Record(7_000)
	if r.MinNs() != 7_000 || r.Count() != 1 {
		t.Errorf("recording after Reset: %+v", r.Summarize())
	}
}
