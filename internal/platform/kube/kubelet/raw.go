package kubelet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Raw record kinds (Record.Kind).
const (
	RawContainer = "container" // one container's series in one node's answer
	RawPod       = "pod"       // one pod's series
	RawNode      = "node"      // the node's own series
	RawError     = "error"     // a failed request of a round
	RawRound     = "round"     // the last line of every round: its cost
)

// Record is one line of the raw kubelet file (kubelet-raw.jsonl): one
// series of one node's answer exactly as read, a failed request, or the
// end of a round. Every line carries its round's index and start time.
type Record struct {
	Kind    string `json:"kind"`
	Round   int    `json:"round"`
	TUnixNs int64  `json:"t_unix_ns"`

	// Node is the node whose kubelet answered; SentUnixNs when the
	// request left, ReadUnixNs when its answer had been read.
	Node       string `json:"node,omitempty"`
	SentUnixNs int64  `json:"sent_unix_ns,omitempty"`
	ReadUnixNs int64  `json:"read_unix_ns,omitempty"`

	// container and pod: who, and the container's classification at
	// read time (from the pod list; a pod not listed is classified by
	// its namespace and name alone).
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	UID       string `json:"uid,omitempty"`
	Component string `json:"component,omitempty"`
	Category  string `json:"category,omitempty"`

	// The counters as the kubelet gave them: cumulative CPU in
	// core-seconds and the working set in bytes, each with the timestamp
	// of the statistics it came from (ms since the epoch; 0 when the
	// exposition had none, as kwok's), and the container's start time
	// (Unix seconds; 0 unknown).
	CPUSeconds        float64 `json:"cpu_seconds"`
	HasCPU            bool    `json:"has_cpu"`
	CPUTimestampMs    int64   `json:"cpu_timestamp_ms,omitempty"`
	MemoryBytes       float64 `json:"memory_bytes"`
	HasMemory         bool    `json:"has_memory"`
	MemoryTimestampMs int64   `json:"memory_timestamp_ms,omitempty"`
	StartTimeSeconds  float64 `json:"start_time_seconds,omitempty"`
	// LagNs is how old the CPU counter was when read: ReadUnixNs minus
	// its timestamp (absent without a timestamp).
	LagNs *int64 `json:"lag_ns,omitempty"`
	// Stale: the CPU counter's timestamp had not advanced since the
	// previous read of the same series, so the sample is no new
	// information (present only when true).
	Stale bool `json:"stale,omitempty"`

	// error: which request failed and why.
	Op    string `json:"op,omitempty"`
	Error string `json:"error,omitempty"`

	// round: its wall time, and the CPU time the process used during the
	// round (user+system of the whole process: the sampler's requests,
	// parsing and encoding, plus whatever else the process did meanwhile).
	WallNs int64 `json:"wall_ns,omitempty"`
	CPUNs  int64 `json:"cpu_ns,omitempty"`
}

// cpuTime is when the CPU counter had its value: its own timestamp, else
// the middle of the request (the endpoint read it somewhere between).
func (r *Record) cpuTime() time.Time {
	if r.CPUTimestampMs > 0 {
		return time.UnixMilli(r.CPUTimestampMs).UTC()
	}
	if r.SentUnixNs > 0 && r.SentUnixNs <= r.ReadUnixNs {
		return time.Unix(0, r.SentUnixNs+(r.ReadUnixNs-r.SentUnixNs)/2).UTC()
	}
	return time.Unix(0, r.ReadUnixNs).UTC()
}

// MaxRawLineBytes is the longest raw line ReadRaw accepts.
const MaxRawLineBytes = 1 << 20

// ReadRaw reads the records a Sampler wrote (Options.Raw).
func ReadRaw(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxRawLineBytes)
	var out []Record
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("reading raw kubelet metrics, line %d: %w", n, err)
		}
		switch rec.Kind {
		case RawContainer, RawPod, RawNode, RawError, RawRound:
		default:
			return nil, fmt.Errorf("reading raw kubelet metrics, line %d: unknown kind %q", n, rec.Kind)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading raw kubelet metrics: %w", err)
	}
	return out, nil
}
