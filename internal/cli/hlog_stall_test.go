package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/workload"
)

// TestLoadStallOverTime: a real static server that stops answering for
// 1 s (the app's periodic-stall fault) in the middle of a 5-s window. The
// stall must show in the right one-second interval of the result: in the
// .hlog read by hdrhistogram-go's log reader, in load.json's intervals,
// and in the latency-over-time plot's data — the requests held by the
// stall are answered when it ends, with about a second of latency, in the
// interval holding the stall's end; the intervals before the stall stay
// fast; the interval the stall begins in gets about half its answers.
//
// Timing: the server's stalls are [4 s, 5 s) after its start (the stall
// at [0, 1 s) is waited out before the load starts 1.5 s in), so the
// stall is ~[2.5 s, 3.5 s) into the window, half an interval from any
// boundary. Every interval index is computed from the measured window's
// actual start, so a slow start on a loaded machine moves the expected
// interval with it; the latency bounds (≥ 500 ms for a 1-s stall, < 500
// ms outside it at 100 rps of a 615-byte answer) leave a 2-core machine
// shared with builds half a second of slack.
func TestLoadStallOverTime(t *testing.T) {
	const (
		every    = 4 * time.Second
		stallFor = time.Second
		rate     = 100
	)
	srv, err := workload.Start(context.Background(), workload.Config{Kind: workload.KindStatic, Listen: "127.0.0.1:0",
		Faults: workload.Faults{StallEvery: every, StallFor: stallFor}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Shutdown(context.Background()) })
	time.Sleep(time.Until(srv.Started().Add(1500 * time.Millisecond)))

	dir := t.TempDir()
	hlog, out := filepath.Join(dir, "run.hlog"), filepath.Join(dir, "load.json")
	inv := runCLI(t, nil, "load", "-q", "--rate", "100", "--duration", "5s", "--warmup", "0s", "--timeout", "3s",
		"--hlog", hlog, "-o", out, "http://"+srv.Addr()+"/")
	if inv.code != ExitOK && inv.code != ExitFailure {
		t.Fatalf("exit %d: %s", inv.code, inv.stderr)
	}
	lr := readResult(t, out)
	stallStart := srv.Started().Add(every).Sub(lr.StartedAt)
	stallEnd := stallStart + stallFor
	endIdx := int(stallEnd / time.Second)
	startIdx := int(stallStart / time.Second)
	t.Logf("stall %v–%v into the window: starts in interval %d, ends in interval %d", stallStart, stallEnd, startIdx, endIdx)
	if startIdx < 1 || endIdx > 4 || endIdx != startIdx+1 {
		t.Fatalf("the window opened %v after the server's start: the stall is not mid-window (was the machine stalled itself?)", lr.StartedAt.Sub(srv.Started()))
	}

	// The .hlog, by a reader meshbench did not write.
	b, err := os.ReadFile(hlog)
	if err != nil {
		t.Fatal(err)
	}
	r := hdr.NewHistogramLogReader(bytes.NewReader(b))
	var maxMs []float64
	var counts []int64
	for {
		h, err := r.NextIntervalHistogram()
		if err != nil || h == nil {
			break
		}
		if h.Tag() == "latency" {
			maxMs = append(maxMs, float64(h.Max())/1e6)
			counts = append(counts, h.TotalCount())
		}
	}
	if len(maxMs) < endIdx+1 {
		t.Fatalf("%d latency intervals in the .hlog, want at least %d:\n%s", len(maxMs), endIdx+1, b)
	}
	if maxMs[endIdx] < 500 {
		t.Errorf(".hlog interval %d (the stall's end) max %.1f ms, want ≥ 500 ms; maxima %v", endIdx, maxMs[endIdx], maxMs)
	}
	for i := 0; i < startIdx; i++ {
		if maxMs[i] >= 500 {
			t.Errorf(".hlog interval %d (before the stall) max %.1f ms, want < 500 ms; maxima %v", i, maxMs[i], maxMs)
		}
	}
	// The interval the stall begins in holds only the answers before it:
	// rate × the part of the interval before the stall, plus a tenth of
	// the rate for answers of the previous second arriving late.
	before := (stallStart - time.Duration(startIdx)*time.Second).Seconds()
	if c, most := counts[startIdx], int64(rate*before+rate/10); c > most {
		t.Errorf(".hlog interval %d (the stall begins %.2fs into it) holds %d answers, want at most %d; counts %v", startIdx, before, c, most, counts)
	}

	// The plot's data: the same intervals from load.json.
	pts, err := analysis.OverTime(lr)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != len(maxMs) {
		t.Fatalf("%d points over time, %d .hlog intervals", len(pts), len(maxMs))
	}
	for i, p := range pts {
		if p.Count != counts[i] {
			t.Errorf("interval %d: %d answers in the plot's data, %d in the .hlog", i, p.Count, counts[i])
		}
	}
	if p := pts[endIdx]; p.P99Ms < 500 || p.RatePerSec <= rate {
		t.Errorf("plot point %d (the stall's end): p99 %.1f ms, rate %.0f/s; want p99 ≥ 500 ms and the held requests answered at once (rate > %d/s)", endIdx, p.P99Ms, p.RatePerSec, rate)
	}
	charts, err := report.OverTimeCharts([]*analysis.Cell{{ID: "stall", OverTime: pts}})
	if err != nil || len(charts) != 2 || charts[0].Chart.Caption() == "" {
		t.Fatalf("over-time charts: %v, %d charts", err, len(charts))
	}
}
