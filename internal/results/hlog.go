package results

import (
	"bytes"
	"fmt"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
)

// HlogFile is the HdrHistogram interval log a run results directory holds
// beside LoadFile: the load result's intervals (LoadResult.Intervals) in
// the format HdrHistogram's Java, Python and Go libraries and its plotters
// read. It is an export; reports read the intervals from LoadFile.
const HlogFile = "latency.hlog"

// Hlog renders r's intervals as HdrHistogram's interval log (format 1.3):
// three lines per interval, tagged latency (from the intended send),
// service (from the actual send) and lag (schedule lag), values in ns,
// times from r.StartedAt. It returns nil when r has no intervals.
func Hlog(r *LoadResult) ([]byte, error) {
	if len(r.Intervals) == 0 {
		return nil, nil
	}
	var ivs []latency.LogInterval
	for _, iv := range r.Intervals {
		lat, svc, lag, err := iv.DecodeCompact()
		if err != nil {
			return nil, err
		}
		start := r.StartedAt.Add(time.Duration(iv.StartNs))
		end := start.Add(time.Duration(iv.LengthNs))
		ivs = append(ivs, latency.LogInterval{Start: start, End: end, Tag: "latency", R: lat},
			latency.LogInterval{Start: start, End: end, Tag: "service", R: svc},
			latency.LogInterval{Start: start, End: end, Tag: "lag", R: lag})
	}
	var b bytes.Buffer
	comment := fmt.Sprintf("[meshbench %s: per %s of the measured window, by answer time; tags latency (from intended send), service (from actual send), lag (schedule); values in ns]",
		r.MeshbenchVersion, time.Duration(r.Intervals[0].LengthNs))
	if err := latency.WriteIntervalLog(&b, r.StartedAt, comment, ivs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteHlog writes r's interval log to path, whole or not at all; nothing
// when r has no intervals.
func WriteHlog(path string, r *LoadResult) error {
	b, err := Hlog(r)
	if err != nil || b == nil {
		return err
	}
	if err := WriteFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
