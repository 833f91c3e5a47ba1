// Package latency records durations in HDR histograms and merges them
// exactly. Values are nanoseconds. Every value from 1 µs to 60 s is kept to 3
// significant digits; values above 60 s saturate: they are counted
// (OutOfRange) at the top of the distribution, so a percentile that falls
// among them is reported as HighestNs ("≥ 60s"), never lower than the
// truth. The
// histogram's lowest discernible value is 1 ns, not 1 µs: with 1 µs HDR would
// quantise everything below 1 ms in 512 ns steps (17% at 3 µs, 1% at 50 µs),
// too coarse for loopback latencies.
//
// A Recorder is not safe for concurrent use: give each worker its own and
// merge them (hdrhistogram-go histograms are not goroutine-safe).
package latency

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range and precision.
const (
	LowestNs  int64 = 1              // 1 ns: lowest discernible value (see the package doc)
	HighestNs int64 = 60_000_000_000 // 60 s: highest trackable value
	SigFigs         = 3              // significant decimal digits kept
)

// Recorder accumulates durations. Besides the histogram it keeps the exact
// count, sum, min and max so the mean and the extremes are not quantised.
type Recorder struct {
	h *hdr.Histogram
	counters
}

// counters are the exact side counters a Recorder and a Compact keep beside
// their histogram.
type counters struct {
	count      int64 // values recorded (in range)
	sumNs      int64 // exact sum of recorded values, saturating
	minNs      int64 // math.MaxInt64 while count is 0
	maxNs      int64
	outOfRange int64 // values above HighestNs: counted at the top, not in the histogram
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder {
	return &Recorder{h: hdr.New(LowestNs, HighestNs, SigFigs), counters: counters{minNs: math.MaxInt64}}
}

// Reset empties r for reuse without giving back its memory.
func (r *Recorder) Reset() {
	r.h.Reset()
	r.counters = counters{minNs: math.MaxInt64}
}

// Record adds one value in nanoseconds. A value above HighestNs saturates:
// it is counted in OutOfRange, ranks above every recorded value in
// Percentile and makes MaxNs HighestNs; it is left out of the exact sum and
// mean. A negative value (a clock stepping back) is recorded as 0.
func (r *Recorder) Record(ns int64) {
	ns = max(ns, 0)
	if ns > HighestNs {
		r.outOfRange++
		r.maxNs = HighestNs
		return
	}
	if err := r.h.RecordValue(ns); err != nil {
		r.outOfRange++
		return
	}
	r.count++
	if r.sumNs <= math.MaxInt64-ns {
		r.sumNs += ns
	} else {
		r.sumNs = math.MaxInt64
	}
	if ns < r.minNs {
		r.minNs = ns
	}
	if ns > r.maxNs {
		r.maxNs = ns
	}
}

// RecordN adds n copies of one value in nanoseconds, as n calls of Record
// would (n <= 0 records nothing). It rebuilds a histogram from counts
// printed by another tool.
func (r *Recorder) RecordN(ns, n int64) {
	if n <= 0 {
		return
	}
	ns = max(ns, 0)
	if ns > HighestNs {
		r.outOfRange += n
		r.maxNs = HighestNs
		return
	}
	if err := r.h.RecordValues(ns, n); err != nil {
		r.outOfRange += n
		return
	}
	r.count += n
	if hi, lo := bits.Mul64(uint64(ns), uint64(n)); hi == 0 && lo <= uint64(math.MaxInt64-r.sumNs) {
		r.sumNs += int64(lo)
	} else {
		r.sumNs = math.MaxInt64
	}
	r.minNs = min(r.minNs, ns)
	r.maxNs = max(r.maxNs, ns)
}

// Count is the number of values recorded in range.
func (r *counters) Count() int64 { return r.count }

// OutOfRange is the number of values above HighestNs (saturated).
func (r *counters) OutOfRange() int64 { return r.outOfRange }

// MinNs is the exact smallest value, 0 when empty, HighestNs when every
// value was above it.
func (r *counters) MinNs() int64 {
	if r.count == 0 {
		if r.outOfRange > 0 {
			return HighestNs
		}
		return 0
	}
	return r.minNs
}

// MaxNs is the exact largest value, 0 when empty; HighestNs ("≥ 60s") when
// a value was above it.
func (r *counters) MaxNs() int64 {
	if r.outOfRange > 0 {
		return max(r.maxNs, HighestNs)
	}
	return r.maxNs
}

// SumNs is the exact sum of recorded values (saturates at MaxInt64).
func (r *counters) SumNs() int64 { return r.sumNs }

// MeanNs is the exact mean, 0 when empty.
func (r *counters) MeanNs() float64 {
	if r.count == 0 {
		return 0
	}
	return float64(r.sumNs) / float64(r.count)
}

// Resolves reports whether n values resolve percentile p (0–100) apart from
// the maximum: at least one value lies above it, n × (1 − p/100) ≥ 1. With
// 250 values p99.9 is the maximum itself and says nothing more; it needs
// 1000. p 100 (the maximum) needs one value.
func Resolves(n int64, p float64) bool {
	if p >= 100 {
		return n > 0
	}
	// A small tolerance, so 1000 values resolve p99.9 despite 1−0.999
	// not being exact in binary.
	return float64(n)*(100-p)/100 >= 1-1e-9
}

// Percentile returns the value at percentile p (0–100] from the histogram,
// in ns, clamped to the exact min and max. 0 when empty. Values above
// HighestNs rank at the top: a percentile among them is HighestNs, which
// means "at least 60 s".
func (r *Recorder) Percentile(p float64) int64 {
	return r.percentile(p, r.h.ValueAtPercentile)
}

// percentile is Percentile over a histogram's valueAt (a percent, 0–100).
func (r *counters) percentile(p float64, valueAt func(float64) int64) int64 {
	total := r.count + r.outOfRange
	if total == 0 {
		return 0
	}
	if r.outOfRange > 0 {
		// The rank of p among all values, as hdrhistogram counts it; past
		// the recorded ones it falls among the saturated values.
		rank := int64(math.Ceil(min(max(p, 0), 100) / 100 * float64(total)))
		if rank > r.count {
			return HighestNs
		}
		p = min(100*float64(rank)/float64(r.count), 100)
	}
	v := valueAt(p)
	if v > r.maxNs {
		v = r.maxNs
	}
	if v < r.minNs {
		v = r.minNs
	}
	return v
}

// Merge adds every value of other into r. It is exact: the merged
// histogram equals one recorder that saw all the values. It reads other's
// counts once and adds only its populated buckets (hdrhistogram-go's own
// Merge visits every bucket up to the largest value through its iterator,
// ~1 ms for a histogram reaching 20 ms), and allocates nothing once warm.
func (r *Recorder) Merge(other *Recorder) error {
	if other == nil || (other.count == 0 && other.outOfRange == 0) {
		return nil
	}
	p := scratch.Get().(*hdr.PackedHistogram)
	defer scratch.Put(p)
	p.Reset()
	// One geometry: MergeFrom keeps every bucket, MergeInto adds them
	// index to index.
	dropped := p.MergeFrom(other.h)
	dropped += p.MergeInto(r.h)
	if dropped != 0 {
		return fmt.Errorf("merging histograms: %d values did not fit", dropped)
	}
	r.merge(other.counters)
	return nil
}

// scratch holds sparse histograms of meshbench's geometry for Merge.
var scratch = sync.Pool{New: func() any { return hdr.NewPacked(LowestNs, HighestNs, SigFigs) }}

// merge adds other's counters to r's.
func (r *counters) merge(other counters) {
	r.count += other.count
	r.outOfRange += other.outOfRange
	if r.sumNs <= math.MaxInt64-other.sumNs {
		r.sumNs += other.sumNs
	} else {
		r.sumNs = math.MaxInt64
	}
	if other.count > 0 && other.minNs < r.minNs {
		r.minNs = other.minNs
	}
	r.maxNs = max(r.maxNs, other.maxNs)
}

// Equal reports whether two recorders hold the same values and counters.
func (r *Recorder) Equal(o *Recorder) bool {
	return r.count == o.count && r.sumNs == o.sumNs && r.MinNs() == o.MinNs() &&
		r.maxNs == o.maxNs && r.outOfRange == o.outOfRange && r.h.Equals(o.h)
}

// Histogram exposes the underlying HDR histogram for read-only use (for
// example percentile spectra). Callers must not record into it.
func (r *Recorder) Histogram() *hdr.Histogram { return r.h }

// Summary is the fixed set of statistics meshbench reports, in ns.
type Summary struct {
	Count      int64   `json:"count"`
	OutOfRange int64   `json:"out_of_range"`
	MinNs      int64   `json:"min_ns"`
	MeanNs     float64 `json:"mean_ns"`
	P50Ns      int64   `json:"p50_ns"`
	P90Ns      int64   `json:"p90_ns"`
	P95Ns      int64   `json:"p95_ns"`
	P99Ns      int64   `json:"p99_ns"`
	P999Ns     int64   `json:"p999_ns"`
	MaxNs      int64   `json:"max_ns"`
	SumNs      int64   `json:"sum_ns"`
}

// Summarize computes the reported statistics.
func (r *Recorder) Summarize() Summary {
	return r.summarize(r.Percentile)
}

func (r *counters) summarize(percentile func(float64) int64) Summary {
	return Summary{
		Count: r.count, OutOfRange: r.outOfRange, MinNs: r.MinNs(), MeanNs: r.MeanNs(),
		P50Ns: percentile(50), P90Ns: percentile(90), P95Ns: percentile(95),
		P99Ns: percentile(99), P999Ns: percentile(99.9), MaxNs: r.MaxNs(), SumNs: r.sumNs,
	}
}

// Encoded is a recorder in portable form: the HDR histogram in the standard
// compressed base64 encoding (readable by every HdrHistogram implementation)
// plus the exact side counters.
type Encoded struct {
	Summary
	// HDR is the histogram, V2 compressed and base64-encoded ("HISTFAAA…").
	HDR string `json:"hdr"`
}

// Encode returns the portable form of r.
func (r *Recorder) Encode() (Encoded, error) {
	b, err := r.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return Encoded{}, fmt.Errorf("encoding histogram: %w", err)
	}
	return Encoded{Summary: r.Summarize(), HDR: string(b)}, nil
}

// Decode rebuilds a recorder from its portable form. It checks that the
// histogram's geometry is meshbench's and that its count matches the summary.
func Decode(e Encoded) (*Recorder, error) {
	h, err := decodeHDR(e, func(b []byte) (geometry, error) { return hdr.Decode(b) })
	if err != nil {
		return nil, err
	}
	r := &Recorder{h: hdr.New(LowestNs, HighestNs, SigFigs), counters: e.counters()}
	if dropped := r.h.Merge(h.(*hdr.Histogram)); dropped != 0 {
		return nil, fmt.Errorf("histogram has %d values outside meshbench's range", dropped)
	}
	return r, nil
}

// geometry is what decodeHDR checks of a decoded histogram, dense or packed.
type geometry interface {
	LowestTrackableValue() int64
	HighestTrackableValue() int64
	SignificantFigures() int64
	TotalCount() int64
}

// decodeHDR decodes e's histogram with decode and checks it against
// meshbench's geometry and e's summary.
func decodeHDR(e Encoded, decode func([]byte) (geometry, error)) (geometry, error) {
	if e.HDR == "" {
		return nil, errors.New("histogram missing (field \"hdr\" is empty)")
	}
	h, err := decode([]byte(e.HDR))
	if err != nil {
		return nil, fmt.Errorf("decoding histogram: %w", err)
	}
	if h.LowestTrackableValue() != LowestNs || h.HighestTrackableValue() < HighestNs || h.SignificantFigures() != SigFigs {
		return nil, fmt.Errorf("histogram range %d–%d ns at %d digits is not meshbench's %d–%d ns at %d digits",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), LowestNs, HighestNs, SigFigs)
	}
	if h.TotalCount() != e.Count {
		return nil, fmt.Errorf("histogram holds %d values but count says %d", h.TotalCount(), e.Count)
	}
	if e.Count < 0 || e.OutOfRange < 0 || e.SumNs < 0 || e.MinNs < 0 || e.MaxNs < 0 {
		return nil, errors.New("negative counters in histogram summary")
	}
	return h, nil
}

// counters are the side counters e's summary holds.
func (e Encoded) counters() counters {
	c := counters{count: e.Count, sumNs: e.SumNs, minNs: e.MinNs, maxNs: e.MaxNs, outOfRange: e.OutOfRange}
	if e.Count == 0 {
		c.minNs = math.MaxInt64
		if e.OutOfRange == 0 {
			c.maxNs = 0
		}
	}
	return c
}
