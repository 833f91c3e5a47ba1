package analysis

import (
	"github.com/meshbench/meshbench/internal/results"
)

// TimePoint is one interval of a cell's latency over time: the answers
// that arrived in it (by answer time, as in results.IntervalHistograms).
type TimePoint struct {
	// StartSec is the interval's start in seconds since the measured
	// window's start; LengthSec its length.
	StartSec  float64 `json:"start_s"`
	LengthSec float64 `json:"length_s"`
	// Count is the answers in the interval (errors and timeouts
	// included); RatePerSec is Count / LengthSec, the achieved rate.
	Count      int64   `json:"count"`
	RatePerSec float64 `json:"rate_per_sec"`
	// Failed is how many of them were failures (0 in results from
	// before it was counted); SuccessPerSec is (Count − Failed) /
	// LengthSec.
	Failed        int64   `json:"failed,omitempty"`
	SuccessPerSec float64 `json:"success_per_sec"`
	// P50Ms, P99Ms and MaxMs are the interval's latency (from the
	// intended send) in ms; 0 in an interval without answers.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// OverTime computes a load result's latency over time from its intervals;
// nil when it has none (an external generator, an older result).
func OverTime(lr *results.LoadResult) ([]TimePoint, error) {
	var out []TimePoint
	for _, iv := range lr.Intervals {
		lat, _, _, err := iv.Decode()
		if err != nil {
			return nil, err
		}
		p := TimePoint{StartSec: float64(iv.StartNs) / 1e9, LengthSec: float64(iv.LengthNs) / 1e9,
			Count: lat.Count() + lat.OutOfRange()}
		p.RatePerSec = float64(p.Count) / p.LengthSec
		p.Failed = iv.Failed
		p.SuccessPerSec = float64(p.Count-p.Failed) / p.LengthSec
		if lat.Count() > 0 {
			p.P50Ms = float64(lat.Percentile(50)) / 1e6
			p.P99Ms = float64(lat.Percentile(99)) / 1e6
		}
		if p.Count > 0 {
			p.MaxMs = float64(lat.MaxNs()) / 1e6
		}
		out = append(out, p)
	}
	return out, nil
}
