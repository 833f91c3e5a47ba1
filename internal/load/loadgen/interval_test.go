package loadgen

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/workload"
)

// TestIntervalsShowStall: a real server stops answering for 800 ms in the
// middle of a 3-s load; the per-second histograms put the stall's answers
// in the interval where they arrived (2–3 s) and leave the first second
// clean. The interval log written from them reads back with
// hdrhistogram-go's reader with the same counts.
func TestIntervalsShowStall(t *testing.T) {
	// Stalls at server time [3 s, 3.8 s) (and [0, 0.8 s), before the load):
	// the load starts at server time ≈1.2 s, so the stall covers load time
	// ≈1.8–2.6 s and its answers arrive at ≈2.6 s.
	cfg := workload.Config{Kind: workload.KindStatic, Listen: "127.0.0.1:0", Faults: workload.Faults{StallEvery: 3 * time.Second, StallFor: 800 * time.Millisecond}}
	s, err := workload.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	time.Sleep(time.Until(s.Started().Add(1200 * time.Millisecond)))
	lc := baseConfig(targets(t, false, "http://"+s.Addr()+"/"), 200, 3*time.Second)
	lc.Connections, lc.Interval = 16, time.Second
	res := mustRun(t, lc)
	if len(res.Intervals) < 3 {
		t.Fatalf("%d intervals, want 3 or 4", len(res.Intervals))
	}
	var total int64
	for _, iv := range res.Intervals {
		total += iv.Latency.Count()
	}
	if total != res.Latency.Count() {
		t.Errorf("intervals hold %d latencies, the run %d", total, res.Latency.Count())
	}
	// Bounds: the stall adds ≥ 500 ms to the answers it holds; a clean
	// second on a loaded 2-core machine stays far below 400 ms.
	if first := res.Intervals[0]; first.Start != 0 || first.Latency.MaxNs() > int64(400*time.Millisecond) {
		t.Errorf("first second: start %v max %v, want a clean second", first.Start, time.Duration(first.Latency.MaxNs()))
	}
	var stalled *Interval
	for i := range res.Intervals {
		if res.Intervals[i].Start == 2*time.Second {
			stalled = &res.Intervals[i]
		}
	}
	if stalled == nil || stalled.Latency.MaxNs() < int64(500*time.Millisecond) {
		t.Fatalf("no interval at 2 s with the stall's latencies: %+v", res.Intervals)
	}

	var log bytes.Buffer
	var ivs []latency.LogInterval
	for _, iv := range res.Intervals {
		ivs = append(ivs, latency.LogInterval{Start: res.Start.Add(iv.Start), End: res.Start.Add(iv.Start + time.Second), Tag: "latency", R: iv.Latency})
	}
	if err := latency.WriteIntervalLog(&log, res.Start, "test", ivs); err != nil {
		t.Fatal(err)
	}
	r := hdr.NewHistogramLogReader(bytes.NewReader(log.Bytes()))
	var n int
	for {
		h, err := r.NextIntervalHistogram()
		if err == io.EOF || (err == nil && h == nil) {
			break
		}
		if err != nil {
			t.Fatalf("reading the interval log back: %v\n%s", err, log.String())
		}
		if h.TotalCount() != res.Intervals[n].Latency.Count() || h.Tag() != "latency" {
			t.Errorf("interval %d read back: %d values tag %q, want %d", n, h.TotalCount(), h.Tag(), res.Intervals[n].Latency.Count())
		}
		n++
	}
	if n != len(res.Intervals) {
		t.Errorf("read %d intervals back, wrote %d", n, len(res.Intervals))
	}
}

// TestIntervalsCountFailures: the intervals count the failed answers of
// a server that fails 30% of its answers, and together they are the
// run's failures.
func TestIntervalsCountFailures(t *testing.T) {
	cfg := workload.Config{Kind: workload.KindStatic, Listen: "127.0.0.1:0", Faults: workload.Faults{ErrorRatio: 0.3, Seed: 7}}
	s, err := workload.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	lc := baseConfig(targets(t, false, "http://"+s.Addr()+"/"), 200, 2*time.Second)
	lc.Interval = 500 * time.Millisecond
	res := mustRun(t, lc)
	var failed int64
	for _, iv := range res.Intervals {
		if iv.Failed > iv.Latency.Count() {
			t.Errorf("interval at %v: %d failed of %d", iv.Start, iv.Failed, iv.Latency.Count())
		}
		failed += iv.Failed
	}
	if want := res.Completed - res.Success; failed != want || want < 60 {
		t.Errorf("intervals count %d failed, the run %d of %d", failed, want, res.Completed)
	}
}
