package latency

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
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

// TestCompactorMatchesLibrary: one Compactor, reused as the load engine
// reuses it, writes hdrhistogram-go's own V2 bytes for histograms of every
// shape (empty, bucket 0 alone, the unit-resolution range, runs of one
// empty bucket and of many, the top of the range), and they decode back to
// the same histogram.
func TestCompactorMatchesLibrary(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 6))
	k := NewCompactor()
	for _, tt := range []struct {
		name   string
		values []int64
	}{
		{"empty", nil},
		{"zero", []int64{0, 0, 0}},
		{"unit resolution", []int64{1, 2, 3, 2047, 2048, 2049}},
		// Buckets 0 and 2 populated: one empty bucket between is written
		// as a count of 0, two or more as a run.
		{"gaps of one and two", []int64{5, 7, 10, 10, 10}},
		{"top of the range", []int64{HighestNs, HighestNs - 1, 1}},
		{"counts past one byte", repeat(123_456, 300)},
		{"loopback second", randValues(5000, func() int64 { return 50_000 + int64(rng.ExpFloat64()*200_000) })},
		{"everywhere", randValues(3000, func() int64 { return int64(rng.Float64() * float64(HighestNs)) })},
		{"log-spread", randValues(3000, func() int64 { return int64(math.Exp(rng.Float64() * math.Log(float64(HighestNs)))) })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRecorder()
			for _, v := range tt.values {
				r.Record(v)
			}
			checkCompactor(t, k, r)
		})
	}
}

// FuzzCompactor: any set of values compacts to the library's bytes.
func FuzzCompactor(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0d, 0x00, 0, 0, 0, 0, 0, 0, 0, 1})
	k := NewCompactor()
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewRecorder()
		for ; len(b) >= 8; b = b[8:] {
			r.Record(int64(binary.LittleEndian.Uint64(b) % uint64(HighestNs+1)))
		}
		checkCompactor(t, k, r)
	})
}

func checkCompactor(t *testing.T, k *Compactor, r *Recorder) {
	t.Helper()
	c, err := k.Compact(r)
	if err != nil {
		t.Fatal(err)
	}
	lib, err := r.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.StdEncoding.EncodeToString(c.enc); got != string(lib) {
		t.Fatalf("compactor wrote\n %s\nhdrhistogram-go\n %s", got, lib)
	}
	if !c.Equal(r) {
		t.Error("the compact decodes to another histogram")
	}
}

func repeat(v int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func randValues(n int, next func() int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = next()
	}
	return out
}
