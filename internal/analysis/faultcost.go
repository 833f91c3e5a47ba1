package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// What a cell's fault cost, read from its load's per-interval series (the
// intervals every result of meshbench's engine keeps) and the fault's
// record (options.fault_record: when it took effect and ended, from the
// measured window's start). docs/method.md says the rules:
//
//   - before, during and after: the intervals that end before the fault
//     took effect, those that overlap it (from its start to its end; a
//     kill's end is its part ready again), and those that start after it;
//   - the pre-fault band: the highest p99 and the lowest rate of
//     successful answers among the intervals before;
//   - recovery: from the fault's end (a kill: from the kill, its part is
//     gone from then on), the time until the first interval from which
//     on no interval has a failed answer or a rate of successful answers
//     under the band (the window's last, maybe cut short, aside) and the
//     p99 of all their answers together is inside the band (one
//     interval's p99 is a handful of answers' worst: a shared machine's
//     stalls would keep any single one out); not recovered when the
//     window ends first.
//
// Its figures join the cell's (FaultFigures), so repetitions get medians
// and intervals and meshes are compared on them like any other figure.

// The fault figures of a cell with a fault (absent in others).
const (
	FaultFailedDuring = "fault_failed_during"
	FaultFailedAfter  = "fault_failed_after"
	FaultP99BeforeMs  = "fault_p99_before_ms"
	FaultP99DuringMs  = "fault_p99_during_ms"
	// FaultRecoveryS is absent when the cell did not recover within its
	// window (FaultCost.Recovered false); FaultRecovered is 1 when it did,
	// 0 when not (its median over repetitions: whether most did).
	FaultRecoveryS = "fault_recovery_s"
	FaultRecovered = "fault_recovered"
	// FaultEnvoyRetries is the retries the cell's Envoys made
	// (upstream_rq_retry over their clusters, the whole cell: a killed
	// Envoy's own count goes with it); absent without Envoys.
	FaultEnvoyRetries = "fault_envoy_retries"
)

// FaultFigures are the fault figures in report order.
var FaultFigures = []string{FaultFailedDuring, FaultFailedAfter, FaultP99BeforeMs, FaultP99DuringMs, FaultRecovered, FaultRecoveryS, FaultEnvoyRetries}

// FaultCost is what a cell's fault cost.
type FaultCost struct {
	// Fault is the fault as written; StartS and EndS when it took effect
	// and ended, from the window's start; Kill says it was a kill (its
	// recovery counts from StartS).
	Fault        string  `json:"fault"`
	StartS       float64 `json:"start_s"`
	EndS         float64 `json:"end_s"`
	Kill         bool    `json:"kill"`
	IntervalS    float64 `json:"interval_s"`
	FailedBefore int64   `json:"failed_before"`
	FailedDuring int64   `json:"failed_during"`
	FailedAfter  int64   `json:"failed_after"`
	// P99BeforeMs and P99DuringMs are the p99 of every answer of the
	// intervals before and during (their histograms merged).
	P99BeforeMs float64 `json:"p99_before_ms"`
	P99DuringMs float64 `json:"p99_during_ms"`
	// BandP99Ms and BandRate are the pre-fault band's edges: the highest
	// interval p99 and the lowest rate of successful answers before.
	BandP99Ms float64 `json:"band_p99_ms"`
	BandRate  float64 `json:"band_rate"`
	// Recovered says the series came back inside the band within the
	// window, RecoveryS how long after the fault's end (a kill's start).
	Recovered bool    `json:"recovered"`
	RecoveryS float64 `json:"recovery_s"`
	// EnvoyRetries is the retries the cell's Envoys made (the mesh's own
	// count of requests it retried: not lost), nil without Envoys.
	EnvoyRetries *uint64 `json:"envoy_retries,omitempty"`
	// Problem, when not empty, says why some figure could not be had (no
	// interval before the fault).
	Problem string `json:"problem,omitempty"`
}

// envoyRetries sums upstream_rq_retry over the Envoys of the cell in dir
// (results.EnvoyStatsFile); nil when it has none.
func envoyRetries(dir string) (*uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, results.EnvoyStatsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var proxies map[string]struct {
		Upstream *struct {
			RqRetry *uint64 `json:"upstream_rq_retry"`
		} `json:"upstream"`
	}
	if err := json.Unmarshal(b, &proxies); err != nil {
		return nil, fmt.Errorf("%s: %w", results.EnvoyStatsFile, err)
	}
	var sum *uint64
	for _, p := range proxies {
		if p.Upstream != nil && p.Upstream.RqRetry != nil {
			if sum == nil {
				sum = new(uint64)
			}
			*sum += *p.Upstream.RqRetry
		}
	}
	return sum, nil
}

// faultRecord is the part of options.fault_record read here.
type faultRecord struct {
	Fault  string    `json:"fault"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	StartS float64   `json:"start_s"`
	EndS   float64   `json:"end_s"`
	Errors []string  `json:"errors"`
}

// FaultCostOf is the cost of m's fault on lr; ok false for a cell without
// a fault that took effect.
func FaultCostOf(m *results.RunManifest, lr *results.LoadResult) (FaultCost, bool, error) {
	raw, found := m.Options["fault_record"]
	if !found {
		return FaultCost{}, false, nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return FaultCost{}, false, err
	}
	var rec faultRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return FaultCost{}, false, fmt.Errorf("options.fault_record: %w", err)
	}
	if rec.Start.IsZero() && rec.StartS <= 0 {
		return FaultCost{}, false, nil // never applied
	}
	// The load's own clock: its window starts when the load generator
	// says (StartedAt), a little after the platform's estimate the
	// scheduler counted from (the generator's own start-up).
	if !rec.Start.IsZero() && !lr.StartedAt.IsZero() {
		rec.StartS = rec.Start.Sub(lr.StartedAt).Seconds()
		if !rec.End.IsZero() {
			rec.EndS = rec.End.Sub(lr.StartedAt).Seconds()
		}
	}
	return faultCost(rec, lr)
}

func faultCost(rec faultRecord, lr *results.LoadResult) (FaultCost, bool, error) {
	fc := FaultCost{Fault: rec.Fault, StartS: rec.StartS, EndS: max(rec.EndS, rec.StartS), Kill: strings.HasPrefix(rec.Fault, "kill:")}
	if len(lr.Intervals) == 0 {
		fc.Problem = "the load result has no intervals (an external generator?)"
		return fc, true, nil
	}
	fc.IntervalS = float64(lr.Intervals[0].LengthNs) / 1e9
	before, during := latency.NewRecorder(), latency.NewRecorder()
	type point struct {
		start, end, p99, okRate float64
		failed                  int64
		lat                     *latency.Recorder
	}
	var pts []point
	band := point{okRate: math.Inf(1)}
	nBefore := 0
	for _, iv := range lr.Intervals {
		lat, _, _, err := iv.Decode()
		if err != nil {
			return fc, true, err
		}
		p := point{start: float64(iv.StartNs) / 1e9, failed: iv.Failed, lat: lat}
		p.end = p.start + float64(iv.LengthNs)/1e9
		n := lat.Count() + lat.OutOfRange()
		p.okRate = float64(n-iv.Failed) / (p.end - p.start)
		if lat.Count() > 0 {
			p.p99 = float64(lat.Percentile(99)) / 1e6
		}
		pts = append(pts, p)
		switch {
		case p.end <= fc.StartS:
			fc.FailedBefore += p.failed
			if err := before.Merge(lat); err != nil {
				return fc, true, err
			}
			band.p99 = max(band.p99, p.p99)
			band.okRate = min(band.okRate, p.okRate)
			nBefore++
		case p.start < max(fc.EndS, fc.StartS+1e-9):
			fc.FailedDuring += p.failed
			if err := during.Merge(lat); err != nil {
				return fc, true, err
			}
		default:
			fc.FailedAfter += p.failed
		}
	}
	if before.Count() > 0 {
		fc.P99BeforeMs = float64(before.Percentile(99)) / 1e6
	}
	if during.Count() > 0 {
		fc.P99DuringMs = float64(during.Percentile(99)) / 1e6
	}
	if nBefore == 0 {
		fc.Problem = "no interval ends before the fault: no pre-fault band, no recovery time (start the fault later)"
		return fc, true, nil
	}
	fc.BandP99Ms, fc.BandRate = band.p99, band.okRate
	from := fc.EndS
	if fc.Kill {
		from = fc.StartS
	}
	// The last interval may be cut short by the window's end: its rate
	// is not compared.
	recovered := -1
	rest := latency.NewRecorder() // the answers of pts[i:]
	for i := len(pts) - 1; i >= 0 && pts[i].end > from; i-- {
		p := pts[i]
		last := i == len(pts)-1
		if p.failed > 0 || (!last && p.okRate < band.okRate) {
			break
		}
		if err := rest.Merge(p.lat); err != nil {
			return fc, true, err
		}
		if rest.Count() > 0 && float64(rest.Percentile(99))/1e6 > band.p99 {
			continue // later intervals may still be the recovered run
		}
		recovered = i
	}
	if recovered >= 0 {
		fc.Recovered = true
		fc.RecoveryS = max(0, pts[recovered].start-from)
	}
	return fc, true, nil
}

// figures are fc's cell figures.
func (fc FaultCost) figures() map[string]float64 {
	out := map[string]float64{FaultFailedDuring: float64(fc.FailedDuring), FaultFailedAfter: float64(fc.FailedAfter)}
	if fc.Problem != "" && fc.IntervalS == 0 {
		return out
	}
	if fc.P99BeforeMs > 0 {
		out[FaultP99BeforeMs] = fc.P99BeforeMs
	}
	if fc.P99DuringMs > 0 {
		out[FaultP99DuringMs] = fc.P99DuringMs
	}
	if fc.Problem == "" {
		out[FaultRecovered] = 0
	}
	if fc.Recovered {
		out[FaultRecoveryS] = fc.RecoveryS
		out[FaultRecovered] = 1
	}
	if fc.EnvoyRetries != nil {
		out[FaultEnvoyRetries] = float64(*fc.EnvoyRetries)
	}
	return out
}

// String is fc in one line: "kill:node-proxy@3s at +3.00s (over
// +3.00–3.07s): 212 failed during, 0 after; p99 41.2 ms during vs 1.3 ms
// before; recovered 1.40 s after the kill".
func (fc FaultCost) String() string {
	s := fmt.Sprintf("%s at +%.2fs (over +%.2f–%.2fs, %gs intervals): %d failed during, %d after", fc.Fault, fc.StartS, fc.StartS, fc.EndS,
		fc.IntervalS, fc.FailedDuring, fc.FailedAfter)
	if fc.P99DuringMs > 0 || fc.P99BeforeMs > 0 {
		s += fmt.Sprintf("; p99 %.3g ms during vs %.3g ms before", fc.P99DuringMs, fc.P99BeforeMs)
	}
	what := "its end"
	if fc.Kill {
		what = "the kill"
	}
	switch {
	case fc.Problem != "":
		s += "; " + fc.Problem
	case fc.Recovered:
		s += fmt.Sprintf("; recovered %.2f s after %s", fc.RecoveryS, what)
	default:
		s += "; not back inside the pre-fault band by the window's end"
	}
	if fc.EnvoyRetries != nil {
		s += fmt.Sprintf("; the Envoys retried %d requests in the cell", *fc.EnvoyRetries)
	}
	return s
}
