package report

import (
	"encoding/json"
	"io"
	"math"
	"time"

	"github.com/meshbench/meshbench/internal/results"
)

// VegetaMetrics is the document `vegeta report -type=json` (v12) writes,
// field for field (durations in integer nanoseconds, times in RFC 3339),
// so tools built for vegeta read a meshbench run. Latencies are the
// latency from the intended send time (what vegeta measures from its
// send); "buckets" is left out as vegeta leaves it out without -buckets.
type VegetaMetrics struct {
	Latencies   VegetaLatencies  `json:"latencies"`
	BytesIn     VegetaBytes      `json:"bytes_in"`
	BytesOut    VegetaBytes      `json:"bytes_out"`
	Earliest    time.Time        `json:"earliest"`
	Latest      time.Time        `json:"latest"`
	End         time.Time        `json:"end"`
	Duration    time.Duration    `json:"duration"`
	Wait        time.Duration    `json:"wait"`
	Requests    uint64           `json:"requests"`
	Rate        float64          `json:"rate"`
	Throughput  float64          `json:"throughput"`
	Success     float64          `json:"success"`
	StatusCodes map[string]int64 `json:"status_codes"`
	Errors      []string         `json:"errors"`
}

// VegetaLatencies is vegeta's LatencyMetrics (nanoseconds).
type VegetaLatencies struct {
	Total time.Duration `json:"total"`
	Mean  time.Duration `json:"mean"`
	P50   time.Duration `json:"50th"`
	P90   time.Duration `json:"90th"`
	P95   time.Duration `json:"95th"`
	P99   time.Duration `json:"99th"`
	Max   time.Duration `json:"max"`
	Min   time.Duration `json:"min"`
}

// VegetaBytes is vegeta's ByteMetrics.
type VegetaBytes struct {
	Total uint64  `json:"total"`
	Mean  float64 `json:"mean"`
}

// Vegeta converts a stored result into vegeta's metrics. Requests counts
// the completed requests (vegeta counts results, one per answered or
// failed request); the error list holds each distinct message once, the
// most frequent first.
func Vegeta(r *results.LoadResult) (*VegetaMetrics, error) {
	lat, _, _, err := r.Histograms()
	if err != nil {
		return nil, err
	}
	m := &VegetaMetrics{
		Requests: uint64(max(r.Completed, 0)), Rate: r.AchievedRatePerSec(), Throughput: r.ThroughputPerSec(),
		Success: r.SuccessRatio(), Duration: r.AttackDuration(), Wait: r.Wait(),
		BytesIn:     VegetaBytes{Total: uint64(max(r.BytesIn, 0)), Mean: meanOf(r.BytesIn, r.Completed)},
		BytesOut:    VegetaBytes{Total: uint64(max(r.BytesOut, 0)), Mean: meanOf(r.BytesOut, r.Completed)},
		StatusCodes: map[string]int64{}, Errors: []string{},
	}
	for k, n := range r.StatusCodes {
		m.StatusCodes[k] = n
	}
	for _, e := range r.Errors {
		m.Errors = append(m.Errors, e.Message)
	}
	if r.FirstSendNs != 0 {
		m.Earliest = time.Unix(0, r.FirstSendNs).UTC()
		m.Latest = time.Unix(0, r.LastSendNs).UTC()
		m.End = time.Unix(0, max(r.LastEndNs, r.LastSendNs)).UTC()
	} else {
		m.Earliest, m.Latest, m.End = r.StartedAt, r.EndedAt, r.EndedAt
	}
	if n := lat.Count(); n > 0 {
		mean := lat.MeanNs()
		m.Latencies = VegetaLatencies{
			Total: time.Duration(math.Round(mean * float64(n))), Mean: time.Duration(math.Round(mean)),
			P50: time.Duration(lat.Percentile(50)), P90: time.Duration(lat.Percentile(90)),
			P95: time.Duration(lat.Percentile(95)), P99: time.Duration(lat.Percentile(99)),
			Max: time.Duration(lat.MaxNs()), Min: time.Duration(lat.MinNs()),
		}
	}
	return m, nil
}

// LoadVegetaJSON writes r as `vegeta report -type=json` would: one line.
func LoadVegetaJSON(w io.Writer, r *results.LoadResult) error {
	m, err := Vegeta(r)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(m)
}
