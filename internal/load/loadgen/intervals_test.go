package loadgen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
)

// simulateIntervals feeds secs seconds of perSec answers each, spread over
// the shards, through record and the interval sealer as a run does
// (drain and seal two intervals behind the clock after each second; no
// real clock, so it is deterministic), then finishes. Every 7th second one
// answer of the second before last is recorded late — after that second
// was sealed — as a worker descheduled for over a second would. It returns
// the intervals and, per interval, the values a reference recorder saw.
func simulateIntervals(shards []*shard, secs, perSec int) ([]Interval, []*latency.Recorder, error) {
	rng := rand.New(rand.NewPCG(16, 3))
	s := newIntervalSealer(time.Second, 0)
	want := make([]*latency.Recorder, secs)
	answer := func(sec int, sh *shard) {
		// A loopback latency: 50 µs plus an exponential tail (mean 200 µs).
		svc := time.Duration(50_000 + rng.ExpFloat64()*200_000)
		actual := time.Duration(sec)*time.Second + time.Duration(rng.Int64N(int64(time.Second)-int64(svc)))
		intended := actual - time.Duration(rng.Int64N(20_000))
		record(context.Background(), sh, Outcome{Code: 200}, intended, actual, actual+svc)
		want[sec].Record(int64(actual + svc - intended))
	}
	for sec := range secs {
		want[sec] = latency.NewRecorder()
		for i := range perSec {
			answer(sec, shards[i%len(shards)])
		}
		if sec%7 == 6 && sec >= 2 {
			// Late: its interval (sec-2) was sealed at the end of sec-1.
			answer(sec-2, shards[0])
		}
		s.drain(shards)
		s.sealThrough(int64(sec) - 1) // the clock is now in sec+1: seal sec-1 and before
	}
	ivs, err := s.finish(shards)
	if got := len(s.open) + len(s.free); err == nil && got > 3 {
		// Full-range recorders are reused: two seconds open at a time
		// (plus the late set's), never one per second.
		err = fmt.Errorf("the sealer holds %d sets of full-range recorders, want ≤ 3", got)
	}
	return ivs, want, err
}

// simShards returns n shards collecting answers for the interval sealer.
func simShards(n int) []*shard {
	shards := make([]*shard, n)
	for i := range shards {
		shards[i] = newShard()
		shards[i].collect = true
	}
	return shards
}

// TestIntervalSealerExactAndSmall: 60 seconds at 1000 answers/s over 8
// shards, with late answers. Every interval holds exactly the values its
// second saw (late ones merged in), they add up to the whole run, and the
// sealed intervals stay small and do not depend on the shard count.
//
// The bound: a second of 1000 loopback latencies populates at most 1000
// buckets of each of the three histograms, and the compressed encoding
// spends a zero-run-length varint of 1–3 bytes on each before zlib: under
// 2 KB per histogram, 6 KiB per second for three (measured: ≈2.4 KB). The
// code this replaced kept three full-range recorders (~220 KB each) per
// shard per second: 8 × 660 KB = 5.3 MB per second, 860 times the bound,
// so that regression cannot pass.
func TestIntervalSealerExactAndSmall(t *testing.T) {
	const nShards, secs, perSec = 8, 60, 1000
	shards := simShards(nShards)
	ivs, want, err := simulateIntervals(shards, secs, perSec)
	if err != nil {
		t.Fatal(err)
	}
	if len(ivs) != secs {
		t.Fatalf("%d intervals, want %d", len(ivs), secs)
	}
	whole := latency.NewRecorder()
	for _, s := range shards {
		if err := whole.Merge(s.lat); err != nil {
			t.Fatal(err)
		}
	}
	var n int64
	for i, iv := range ivs {
		if iv.Start != time.Duration(i)*time.Second {
			t.Errorf("interval %d starts at %v", i, iv.Start)
		}
		if !iv.Latency.Equal(want[i]) {
			t.Errorf("interval %d: %+v, want %+v", i, iv.Latency.Summarize(), want[i].Summarize())
		}
		n += iv.Latency.Count()
		if iv.ServiceTime.Count() != iv.Latency.Count() || iv.ScheduleLag.Count() != iv.Latency.Count() {
			t.Errorf("interval %d: %d latencies, %d service times, %d lags", i, iv.Latency.Count(), iv.ServiceTime.Count(), iv.ScheduleLag.Count())
		}
	}
	if n != whole.Count() || n <= secs*perSec {
		t.Errorf("intervals hold %d values, the run %d (late ones included, more than %d)", n, whole.Count(), secs*perSec)
	}
	const perSecBound = 6 << 10
	if b := retainedBytes(ivs); b > secs*perSecBound {
		t.Errorf("sealed intervals hold %d bytes (%d per second), want ≤ %d per second", b, b/secs, perSecBound)
	}
	// The same answers over one shard seal to the same bytes: the shards'
	// values are merged before sealing, not kept per shard.
	one, _, err := simulateIntervals(simShards(1), secs, perSec)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := retainedBytes(one), retainedBytes(ivs); a != b {
		t.Errorf("sealed intervals: %d bytes from 1 shard, %d from %d", a, b, nShards)
	}
	for i, s := range shards {
		if cap(s.pending) > 4*perSec/nShards {
			t.Errorf("shard %d's pending list grew to %d answers; one second's is %d", i, cap(s.pending), perSec/nShards)
		}
	}
}

// BenchmarkIntervalMemory reports the heap a run's interval histograms
// retain per recorded second (heap-B/s: the Go heap after a GC at the end
// of the run, the shards and the intervals alive, less the heap with the
// empty shards) and the sealed intervals' own size (sealed-B/s): 60
// seconds at 1000 answers/s over 8 shards.
func BenchmarkIntervalMemory(b *testing.B) {
	const nShards, secs, perSec = 8, 60, 1000
	var heap, sealed float64
	for b.Loop() {
		var before, after runtime.MemStats
		shards := simShards(nShards)
		runtime.GC()
		runtime.ReadMemStats(&before)
		ivs, _, err := simulateIntervals(shards, secs, perSec)
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / secs
		sealed = float64(retainedBytes(ivs)) / secs
		runtime.KeepAlive(shards)
		runtime.KeepAlive(ivs)
	}
	b.ReportMetric(heap, "heap-B/s")
	b.ReportMetric(sealed, "sealed-B/s")
}
