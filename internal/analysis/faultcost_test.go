package analysis

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// series is a load result of 1-s intervals at 100 answers each: lat[i]
// ms every answer of interval i, failed[i] of them failed.
func series(t *testing.T, start time.Time, lat []float64, failed []int64) *results.LoadResult {
	t.Helper()
	lr := &results.LoadResult{StartedAt: start}
	enc := func(r *latency.Recorder) latency.Encoded {
		e, err := r.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for i, ms := range lat {
		r := latency.NewRecorder()
		r.RecordN(int64(ms*1e6), 100)
		empty := latency.NewRecorder()
		lr.Intervals = append(lr.Intervals, results.IntervalHistograms{StartNs: int64(i) * 1e9, LengthNs: 1e9,
			Latency: enc(r), ServiceTime: enc(empty), ScheduleLag: enc(empty), Failed: failed[i]})
	}
	return lr
}

// TestFaultCost: a kill at +3.2 s (ready at +3.4) on a steady 1 ms
// series: the failed answers before, during and after, the p99 during
// and before, and the recovery from the kill to the first second from
// which on nothing failed and the p99 is inside the band; counted on the
// load's clock (its StartedAt), not the scheduler's.
func TestFaultCost(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC)
	lr := series(t, t0, []float64{1, 1.2, 1, 1, 40, 9, 1.1, 1, 1, 1}, []int64{0, 0, 0, 0, 30, 2, 0, 0, 0, 0})
	m := &results.RunManifest{Options: map[string]any{"fault_record": map[string]any{
		"fault": "kill:node-proxy@3s", "start": t0.Add(3200 * time.Millisecond), "end": t0.Add(3400 * time.Millisecond),
		"start_s": 3.0, "end_s": 3.2}}}
	fc, ok, err := FaultCostOf(m, lr)
	if err != nil || !ok {
		t.Fatalf("%v %v", ok, err)
	}
	if math.Abs(fc.StartS-3.2) > 1e-9 || math.Abs(fc.EndS-3.4) > 1e-9 || !fc.Kill {
		t.Errorf("window %+v: want +3.2–3.4 s on the load's clock, a kill", fc)
	}
	// Before: seconds 0–2 ([2,3) ends at 3 ≤ 3.2); during: [3,4); after: the rest.
	if fc.FailedBefore != 0 || fc.FailedDuring != 0 || fc.FailedAfter != 32 {
		t.Errorf("failed %d/%d/%d, want 0/0/32", fc.FailedBefore, fc.FailedDuring, fc.FailedAfter)
	}
	if fc.P99BeforeMs < 1.19 || fc.P99BeforeMs > 1.21 || fc.P99DuringMs < 0.99 || fc.P99DuringMs > 1.01 || fc.BandP99Ms < 1.19 || fc.BandP99Ms > 1.21 {
		t.Errorf("p99 before %v during %v band %v", fc.P99BeforeMs, fc.P99DuringMs, fc.BandP99Ms)
	}
	// Second 6 on: nothing failed, p99 1.1 ms ≤ 1.2: 6 − 3.2 = 2.8 s.
	if !fc.Recovered || math.Abs(fc.RecoveryS-2.8) > 1e-9 {
		t.Errorf("recovery %v %v, want 2.8 s", fc.Recovered, fc.RecoveryS)
	}
	fig := fc.figures()
	if fig[FaultFailedAfter] != 32 || fig[FaultRecoveryS] != fc.RecoveryS {
		t.Errorf("figures %v", fig)
	}
	if s := fc.String(); !strings.Contains(s, "recovered 2.80 s after the kill") {
		t.Errorf("line %q", s)
	}

	// A CPU limit +2.5–6.5 s that never lets the p99 back down: no
	// recovery, and no recovery figure.
	lr = series(t, t0, []float64{1, 1, 5, 5, 5, 5, 5, 5, 5, 5}, make([]int64, 10))
	m.Options["fault_record"] = map[string]any{"fault": "cpu-limit:node-proxy=100@2.5s+4s", "start": t0.Add(2500 * time.Millisecond), "end": t0.Add(6500 * time.Millisecond)}
	fc, _, _ = FaultCostOf(m, lr)
	if fc.Recovered || fc.Kill || fc.P99DuringMs < 4.9 {
		t.Errorf("cost %+v: want not recovered, p99 5 ms during", fc)
	}
	if _, ok := fc.figures()[FaultRecoveryS]; ok {
		t.Error("a recovery figure without a recovery")
	}
	// A fault never applied (the cell ended first) costs nothing.
	m.Options["fault_record"] = map[string]any{"fault": "kill:sidecar@9s"}
	if _, ok, _ := FaultCostOf(m, lr); ok {
		t.Error("a fault never applied has a cost")
	}
}

// TestEnvoyRetries: the retries of a cell's Envoys are summed from its
// envoy-stats.json; a cell without Envoys has none (not 0).
func TestEnvoyRetries(t *testing.T) {
	dir := t.TempDir()
	if n, err := envoyRetries(dir); n != nil || err != nil {
		t.Errorf("no Envoys: %v %v, want nil", n, err)
	}
	js := `{"client-sidecar":{"upstream":{"upstream_rq_retry":30}},"server-0-sidecar":{"upstream":{"upstream_rq_retry":2}},"x":{}}`
	if err := os.WriteFile(filepath.Join(dir, results.EnvoyStatsFile), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := envoyRetries(dir); err != nil || n == nil || *n != 32 {
		t.Errorf("retries %v %v, want 32", n, err)
	}
}
