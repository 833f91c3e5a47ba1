package hops

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Record is one request as one proxy logged it.
type Record struct {
	RequestID string
	Proxy     string
	Hop       string
	// Service is the request's service: the record's own, or read from
	// its upstream cluster (Istio's "outbound|PORT||NAME.NS.svc…").
	Service string
	// DownstreamUs and UpstreamUs are Envoy's durations in µs; -1 when
	// Envoy logged none (no upstream: the request failed at this proxy).
	DownstreamUs int64
	UpstreamUs   int64
	Status       int
	Flags        string
	Attempts     int
}

// Own is the hop's own time in µs: downstream minus upstream, or the
// whole downstream duration when nothing went upstream; -1 when unknown.
func (r Record) Own() int64 {
	switch {
	case r.DownstreamUs < 0:
		return -1
	case r.UpstreamUs < 0:
		return r.DownstreamUs
	}
	return r.DownstreamUs - r.UpstreamUs
}

// LogStats counts what ParseLog read.
type LogStats struct {
	Lines     int64 // non-empty lines
	Malformed int64 // lines that are not a hop record (cut short, not JSON, no request id or proxy)
	NoID      int64 // records without a request id (a request the load did not send)
}

// maxLine bounds one record; Envoy's are a few hundred bytes.
const maxLine = 64 << 10

// ParseLog reads hop records, one JSON object per line, as LogFormat
// makes Envoy write them. A line that is not a record (a last line cut
// short by a flush, garbage) is counted in Malformed and skipped; a
// record without a request id in NoID. Only a read error is an error.
func ParseLog(r io.Reader) ([]Record, LogStats, error) {
	var out []Record
	var st LogStats
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		st.Lines++
		rec, err := parseRecord(line)
		switch {
		case errors.Is(err, errNoID):
			st.NoID++
		case err != nil:
			st.Malformed++
		default:
			out = append(out, rec)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			st.Malformed++
			return out, st, nil
		}
		return out, st, err
	}
	return out, st, nil
}

var errNoID = errors.New("no request id")

// rawRecord is a record as Envoy types its values: numbers, strings or
// null, whichever the operator gives.
type rawRecord struct {
	RequestID    json.RawMessage `json:"request_id"`
	Proxy        string          `json:"proxy"`
	Hop          string          `json:"hop"`
	Service      string          `json:"service"`
	Cluster      json.RawMessage `json:"cluster"`
	DownstreamUs json.RawMessage `json:"downstream_us"`
	UpstreamUs   json.RawMessage `json:"upstream_us"`
	Status       json.RawMessage `json:"status"`
	Flags        json.RawMessage `json:"flags"`
	Attempts     json.RawMessage `json:"attempts"`
}

func parseRecord(line []byte) (Record, error) {
	var raw rawRecord
	if err := json.Unmarshal(line, &raw); err != nil {
		return Record{}, err
	}
	if raw.Proxy == "" || raw.Hop == "" {
		return Record{}, errors.New("no proxy or hop")
	}
	rec := Record{Proxy: raw.Proxy, Hop: raw.Hop, Service: raw.Service}
	var err error
	if rec.RequestID, err = text(raw.RequestID); err != nil {
		return Record{}, err
	}
	if rec.RequestID == "" {
		return Record{}, errNoID
	}
	if rec.Service == "" {
		c, err := text(raw.Cluster)
		if err != nil {
			return Record{}, err
		}
		rec.Service = ServiceOfCluster(c)
	}
	if rec.DownstreamUs, err = micros(raw.DownstreamUs); err != nil {
		return Record{}, fmt.Errorf("downstream_us: %w", err)
	}
	if rec.UpstreamUs, err = micros(raw.UpstreamUs); err != nil {
		return Record{}, fmt.Errorf("upstream_us: %w", err)
	}
	st, err := micros(raw.Status)
	if err != nil {
		return Record{}, fmt.Errorf("status: %w", err)
	}
	rec.Status = int(max(st, 0))
	at, err := micros(raw.Attempts)
	if err != nil {
		return Record{}, fmt.Errorf("attempts: %w", err)
	}
	rec.Attempts = int(max(at, 0))
	if rec.Flags, err = text(raw.Flags); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// text reads a string value; null and Envoy's "-" are "".
func text(m json.RawMessage) (string, error) {
	if len(m) == 0 || string(m) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m, &s); err != nil {
		return "", err
	}
	if s == "-" {
		return "", nil
	}
	return s, nil
}

// maxMicros bounds a duration: an hour, far above any request's time.
const maxMicros = 3600 * 1_000_000

// micros reads a non-negative integer written as a number or a string;
// null, absent or "-" is -1 (not logged).
func micros(m json.RawMessage) (int64, error) {
	s := strings.TrimSpace(string(m))
	if s == "" || s == "null" || s == `"-"` || s == `""` {
		return -1, nil
	}
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(m, &s); err != nil {
			return 0, err
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > maxMicros {
		return 0, fmt.Errorf("%q: allowed: an integer from 0 to %d", s, maxMicros)
	}
	return v, nil
}

// ServiceOfCluster is the service an Istio-style cluster name is for:
// "outbound|8080||smiley.default.svc.cluster.local" → "smiley"; "" for
// other clusters (inbound|8080||, main_internal…).
func ServiceOfCluster(c string) string {
	parts := strings.Split(c, "|")
	if len(parts) != 4 || parts[0] != "outbound" {
		return ""
	}
	host, _, _ := strings.Cut(parts[3], ".")
	return host
}
