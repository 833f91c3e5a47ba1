package sample

import (
	"encoding/json"
	"time"

	"github.com/meshbench/meshbench/internal/results"
)

// Resources is a run's resources.json (results.ResourcesFile, version
// results.ResourcesSchema, schema/resources.v1.schema.json generated from
// this type): its resource figures over the measured window, the rule
// that chose the samples, and on a cluster where they came from and what
// the source said besides. Every platform writes it through this type; a
// key a platform does not write is left at its zero value, and the keys
// a cluster writes even when it has nothing to put there (null) are
// Present. The fields are in the order of their keys, sorted, as the file
// has always had them.
type Resources struct {
	// APIErrors counts metrics.k8s.io's failed rounds over the run (a
	// cluster measured by metrics.k8s.io).
	APIErrors *int `json:"api_errors,omitempty"`
	// Counters is what the kubelet's counters said (a cluster measured by
	// them; null without a measured window).
	Counters Present[*CounterReport] `json:"counters,omitzero" jsonschema:"nullable"`
	// Drain says how the sampling after the load ended (a cluster).
	Drain *results.Drain `json:"drain,omitempty"`
	// Memory names the memory figure (a cluster: the working set, not
	// PSS).
	Memory string `json:"memory,omitempty"`
	// MetricsAPI is what metrics.k8s.io said over the same window, beside
	// the kubelet's counters (null when it never answered).
	MetricsAPI Present[*MetricsAPIReport] `json:"metrics_api,omitzero" jsonschema:"nullable"`
	// MixedRounds counts metrics.k8s.io rounds in which only some pods had
	// a fresh sample (a cluster measured by metrics.k8s.io).
	MixedRounds *int `json:"mixed_rounds,omitempty"`
	// Namespaces is the seed reports' per-namespace table of the measured
	// window (a cluster with a load result): the cell's mesh namespaces
	// and the app's, TOTAL their sum per interval, the load's namespace
	// apart.
	Namespaces *NamespaceTable `json:"namespaces,omitempty"`
	// NodeKernel is the kernel CPU the node readers measured over the
	// window (a cluster whose readers ran; NodeKernelOver).
	NodeKernel *NodeKernelReport `json:"node_kernel,omitempty"`
	// Nodes summarises each node over the window (a cluster; null without
	// a measured window).
	Nodes Present[[]NodeSummary] `json:"nodes,omitzero" jsonschema:"nullable"`
	// Schema is results.ResourcesSchema; absent in files written before it
	// was added (meshbench 0.1.0-dev), which have this shape too.
	Schema string `json:"schema,omitempty"`
	// Source is where a cluster's figures come from: "kubelet" or
	// "metrics-api".
	Source string `json:"source,omitempty"`
	// Stale counts metrics.k8s.io samples seen again, not counted twice (a
	// cluster measured by metrics.k8s.io).
	Stale *StaleSamples `json:"stale,omitempty"`
	// Summary is the figures per process, component, category and TOTAL.
	Summary Summary `json:"summary" jsonschema:"required"`
	// Window is the measured window and the rule that chose the samples.
	Window ResourcesWindow `json:"window" jsonschema:"required"`
}

// ResourcesWindow is the measured window of Resources and the rule that
// chose the samples in it.
type ResourcesWindow struct {
	From time.Time `json:"from" jsonschema:"required"`
	Rule string    `json:"rule" jsonschema:"required"`
	To   time.Time `json:"to" jsonschema:"required"`
}

// StaleSamples counts metrics.k8s.io samples seen again (not counted
// twice).
type StaleSamples struct {
	Nodes int `json:"nodes"`
	Pods  int `json:"pods"`
}

// Present is a key some writers of a file write, maybe as null, and
// others never: its zero value is a key not written (omitzero); Set with
// a nil Value is written as null.
type Present[T any] struct {
	Set   bool
	Value T
}

// Write is a key written with v (null when v is nil).
func Write[T any](v T) Present[T] { return Present[T]{Set: true, Value: v} }

// IsZero reports whether the key is not written.
func (p Present[T]) IsZero() bool { return !p.Set }

// MarshalJSON writes the value.
func (p Present[T]) MarshalJSON() ([]byte, error) { return json.Marshal(p.Value) }

// UnmarshalJSON reads a key that was written.
func (p *Present[T]) UnmarshalJSON(b []byte) error {
	p.Set = true
	return json.Unmarshal(b, &p.Value)
}

// JSONSchemaAlias describes the key as its value (the schema generator's
// hook, github.com/invopop/jsonschema).
func (Present[T]) JSONSchemaAlias() any {
	var v T
	return v
}

// CounterReport is what the kubelet's counters said about a run, beside
// the summary: resets, containers counted for part of the window, stale
// readings, the counters' lag and the sampler's cost.
type CounterReport struct {
	// PeriodNs is the reading period; StepNs the length of the window's
	// equal intervals.
	PeriodNs int64 `json:"period_ns"`
	StepNs   int64 `json:"step_ns"`
	// Resets are the counter resets (restarted containers) in the window.
	Resets []CounterReset `json:"resets"`
	// Partial are the containers counted for only part of the window
	// (appeared, disappeared or restarted inside it).
	Partial []ContainerWindow `json:"partial"`
	// Containers: every container's exact CPU over the window.
	Containers []ContainerWindow `json:"containers"`
	// StaleReadings did not advance their counter's timestamp (no new
	// information); FreshReadings did.
	StaleReadings int        `json:"stale_readings"`
	FreshReadings int        `json:"fresh_readings"`
	Lag           CounterLag `json:"lag"`
	// RoundCPUNs: the process's CPU time per reading round (all nodes).
	RoundCPUNs Stats `json:"round_cpu_ns"`
	Nodes      int   `json:"nodes"`
	// Errors counts failed requests over the whole run.
	Errors int `json:"errors"`
}

// CounterReset is a kubelet CPU counter that went backwards (or a
// container whose start time changed): its container restarted between
// two reads. The CPU its old incarnation used after its last read is not
// known and not counted; the new incarnation is counted from its start
// (or its first read).
type CounterReset struct {
	Key  string    `json:"key"` // namespace/pod/container, or "node NAME"
	Node string    `json:"node"`
	Time time.Time `json:"time"` // the first read of the new incarnation
	// From and To are the counter before and after (core-seconds).
	From float64 `json:"from_cpu_seconds"`
	To   float64 `json:"to_cpu_seconds"`
}

// ContainerWindow is one container incarnation's CPU over the measured
// window, from the kubelet's cumulative counter.
type ContainerWindow struct {
	Key       string `json:"key"` // namespace/pod/container
	Node      string `json:"node"`
	Component string `json:"component"`
	Category  string `json:"category"`
	// CPUSeconds used inside the window (counter difference, interpolated
	// to the window's edges or to the incarnation's own span);
	// CPUMillicores the same over the whole window.
	CPUSeconds    float64 `json:"cpu_seconds"`
	CPUMillicores float64 `json:"cpu_millicores"`
	// From and To: the part of the window it was counted for; Partial
	// when that is not the whole window (it appeared, disappeared or
	// restarted inside it).
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Partial bool      `json:"partial,omitempty"`
}

// CounterLag is how old the kubelet's CPU counters were when read (read
// time minus the counter's timestamp), over the records that had a
// timestamp.
type CounterLag struct {
	Samples int           `json:"samples"`
	Min     time.Duration `json:"min_ns"`
	Median  time.Duration `json:"median_ns"`
	Max     time.Duration `json:"max_ns"`
}

// MetricsAPIReport is what metrics.k8s.io said over a run measured by the
// kubelet's counters: its own window summary (by its rule: samples whose
// whole window lies inside the measured window), and how many of its pod
// samples were stale.
type MetricsAPIReport struct {
	Summary Summary `json:"summary"`
	// FreshPodSamples and StalePodSamples over the whole run;
	// StaleFraction = stale / (fresh + stale).
	FreshPodSamples int     `json:"fresh_pod_samples"`
	StalePodSamples int     `json:"stale_pod_samples"`
	StaleFraction   float64 `json:"stale_fraction"`
	Errors          int     `json:"errors"`
}
