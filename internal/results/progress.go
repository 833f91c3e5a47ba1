package results

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ProgressLinePrefix starts the line `meshbench load --progress-log`
// prints to stderr every second: the prefix, then LoadProgress as JSON.
// A cluster's load workers print it; the platform follows their logs and
// reads it back while they run (the live view). The JSON result a worker
// prints at the end starts a line with '{', so the two never mix.
const ProgressLinePrefix = "meshbench-progress "

// ProgressLine is p as one line of a worker's log, without the newline.
func ProgressLine(p LoadProgress) []byte {
	b, _ := json.Marshal(p) // plain numbers: cannot fail
	return append([]byte(ProgressLinePrefix), b...)
}

// ParseProgressLine reads a ProgressLine; ok is false for any other line
// (the log's other lines), an error for a line with the prefix that does
// not hold LoadProgress.
func ParseProgressLine(line []byte) (p LoadProgress, ok bool, err error) {
	rest, found := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte(ProgressLinePrefix))
	if !found {
		return LoadProgress{}, false, nil
	}
	if err := json.Unmarshal(rest, &p); err != nil {
		return LoadProgress{}, true, fmt.Errorf("progress line %.60q: %w", line, err)
	}
	return p, true, nil
}

// MergeProgress merges the running figures of a cluster's load workers
// (each one's newest): counts and rates summed, the elapsed time the
// shortest, and p50 and p99 the highest of the workers' own. The workers
// send only their percentiles, not their running histograms, so the
// merged percentiles are not computed from all requests: the highest is
// an upper bound of them (if no worker has more than 1% of its answers
// slower than x, all of them together have no more than 1% slower than
// x), exact for one worker. The view labels them so (Workers > 1).
func MergeProgress(ps []LoadProgress) LoadProgress {
	var m LoadProgress
	for i, p := range ps {
		if i == 0 || p.ElapsedNs < m.ElapsedNs {
			m.ElapsedNs = p.ElapsedNs
		}
		m.Sent += p.Sent
		m.Completed += p.Completed
		m.Errors += p.Errors
		m.Dropped += p.Dropped
		m.RatePerSec += p.RatePerSec
		m.P50Ns, m.P99Ns = max(m.P50Ns, p.P50Ns), max(m.P99Ns, p.P99Ns)
	}
	m.Workers = len(ps)
	return m
}
