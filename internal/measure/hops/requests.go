package hops

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Request is one request as the load generator saw it.
type Request struct {
	ID       string `json:"id"`
	Measured bool   `json:"measured"` // in the measured window (not warm-up)
	// ServiceNs is its service time: answer (or failure) − actual send.
	ServiceNs int64 `json:"service_ns"`
	// LatencyNs is answer − intended send time (what a user feels).
	LatencyNs int64  `json:"latency_ns"`
	Code      int    `json:"code"`            // HTTP status or gRPC code; 0 for a failure below the protocol
	Error     string `json:"error,omitempty"` // the failure, if any
}

// Failed says whether the load counted the request as failed: an error,
// or an HTTP status outside 2xx/3xx.
func (r Request) Failed() bool { return r.Error != "" || r.Code >= 400 }

// RequestLog writes Requests as JSON lines; Add is safe for concurrent
// use (the load's workers call it).
type RequestLog struct {
	mu  sync.Mutex
	w   *bufio.Writer
	enc *json.Encoder
	err error
}

// NewRequestLog writes to w; call Flush at the end.
func NewRequestLog(w io.Writer) *RequestLog {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &RequestLog{w: bw, enc: json.NewEncoder(bw)}
}

// Add writes one request; the first write error is kept for Flush.
func (l *RequestLog) Add(r Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = l.enc.Encode(r)
	}
}

// Flush writes what is buffered and returns the first error.
func (l *RequestLog) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	return l.w.Flush()
}

// ReadRequests reads a request log. A line that is not a request (a log
// cut short) is counted, not fatal; a request id given twice is an
// error (ids are the join's key).
func ReadRequests(r io.Reader) ([]Request, int64, error) {
	var out []Request
	var malformed int64
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var q Request
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil || q.ID == "" {
			malformed++
			continue
		}
		if seen[q.ID] {
			return out, malformed, fmt.Errorf("request id %q given twice", q.ID)
		}
		seen[q.ID] = true
		out = append(out, q)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return out, malformed, err
	}
	return out, malformed, nil
}
