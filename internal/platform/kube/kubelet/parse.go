// Package kubelet reads the kubelet's resource counters
// (/metrics/resource: cumulative CPU seconds and the memory working set
// of every container, pod and node, with their own timestamps) through
// the API server's node proxy, keeps every raw sample, and turns the
// counters into exact CPU over a window and per-interval series in the
// sample package's shape.
package kubelet

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The kubelet's resource metrics (Prometheus text exposition), as served
// at /metrics/resource by the kubelet and emulated by kwok.
const (
	MetricContainerCPU       = "container_cpu_usage_seconds_total"  // counter, core-seconds
	MetricContainerMemory    = "container_memory_working_set_bytes" // gauge, bytes
	MetricContainerStartTime = "container_start_time_seconds"       // gauge, Unix seconds
	MetricPodCPU             = "pod_cpu_usage_seconds_total"
	MetricPodMemory          = "pod_memory_working_set_bytes"
	MetricNodeCPU            = "node_cpu_usage_seconds_total"
	MetricNodeMemory         = "node_memory_working_set_bytes"
)

// Value is one sample of a series: its value and the timestamp the
// exposition gave it (the moment the kubelet's statistics were collected;
// zero when the exposition had none, as kwok's emulation).
type Value struct {
	Value     float64
	Timestamp time.Time
}

// Container is one container's series in one answer. A nil field: the
// answer had no such series for the container.
type Container struct {
	Namespace, Pod, Container string
	CPUSeconds                *Value
	MemoryBytes               *Value
	StartTime                 *Value // container_start_time_seconds (Unix seconds)
}

// Key is "namespace/pod/container", the sample package's target name.
func (c Container) Key() string { return c.Namespace + "/" + c.Pod + "/" + c.Container }

// Pod is one pod's series in one answer.
type Pod struct {
	Namespace, Pod string
	CPUSeconds     *Value
	MemoryBytes    *Value
}

// Scrape is one parsed /metrics/resource answer. Containers and Pods are
// sorted by namespace, pod and container; Node's fields are nil when the
// answer had no node series.
type Scrape struct {
	Containers []Container
	Pods       []Pod
	NodeCPU    *Value
	NodeMemory *Value
}

// Parse reads one /metrics/resource answer (the Prometheus text format)
// with the Prometheus project's own parser. It keeps the series above and
// ignores every other metric; a sample of them without its namespace, pod
// or container label, with a negative, NaN or infinite value, or of
// another type than the kubelet's (counter or gauge, also untyped) is an
// error, as is a container or pod seen twice in one series.
func Parse(r io.Reader) (s *Scrape, err error) {
	families, err := textToFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics/resource: %w", err)
	}
	s = &Scrape{}
	containers := map[[3]string]*Container{}
	pods := map[[2]string]*Pod{}
	for _, name := range []string{MetricContainerCPU, MetricContainerMemory, MetricContainerStartTime, MetricPodCPU, MetricPodMemory, MetricNodeCPU, MetricNodeMemory} {
		mf := families[name]
		if mf == nil {
			continue
		}
		for _, m := range mf.GetMetric() {
			v, err := value(name, mf.GetType(), m)
			if err != nil {
				return nil, err
			}
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			need := func(names ...string) error {
				for _, n := range names {
					if labels[n] == "" {
						return fmt.Errorf("parsing /metrics/resource: %s sample without a %q label", name, n)
					}
				}
				return nil
			}
			var slot **Value
			switch name {
			case MetricContainerCPU, MetricContainerMemory, MetricContainerStartTime:
				if err := need("namespace", "pod", "container"); err != nil {
					return nil, err
				}
				k := [3]string{labels["namespace"], labels["pod"], labels["container"]}
				c := containers[k]
				if c == nil {
					c = &Container{Namespace: k[0], Pod: k[1], Container: k[2]}
					containers[k] = c
				}
				slot = map[string]**Value{MetricContainerCPU: &c.CPUSeconds, MetricContainerMemory: &c.MemoryBytes, MetricContainerStartTime: &c.StartTime}[name]
			case MetricPodCPU, MetricPodMemory:
				if err := need("namespace", "pod"); err != nil {
					return nil, err
				}
				k := [2]string{labels["namespace"], labels["pod"]}
				pd := pods[k]
				if pd == nil {
					pd = &Pod{Namespace: k[0], Pod: k[1]}
					pods[k] = pd
				}
				slot = &pd.CPUSeconds
				if name == MetricPodMemory {
					slot = &pd.MemoryBytes
				}
			case MetricNodeCPU:
				slot = &s.NodeCPU
			case MetricNodeMemory:
				slot = &s.NodeMemory
			}
			if *slot != nil {
				return nil, fmt.Errorf("parsing /metrics/resource: %s: the same series twice %v", name, labels)
			}
			*slot = v
		}
	}
	for _, c := range containers {
		s.Containers = append(s.Containers, *c)
	}
	slices.SortFunc(s.Containers, func(a, b Container) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod), cmp.Compare(a.Container, b.Container))
	})
	for _, p := range pods {
		s.Pods = append(s.Pods, *p)
	}
	slices.SortFunc(s.Pods, func(a, b Pod) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Pod, b.Pod))
	})
	return s, nil
}

// value reads a counter's or gauge's value and timestamp (milliseconds
// since the epoch in the exposition).
func value(name string, typ dto.MetricType, m *dto.Metric) (*Value, error) {
	var v float64
	switch {
	case typ == dto.MetricType_COUNTER && m.GetCounter() != nil:
		v = m.GetCounter().GetValue()
	case typ == dto.MetricType_GAUGE && m.GetGauge() != nil:
		v = m.GetGauge().GetValue()
	case typ == dto.MetricType_UNTYPED && m.GetUntyped() != nil:
		v = m.GetUntyped().GetValue()
	default:
		return nil, fmt.Errorf("parsing /metrics/resource: %s is a %s: want a counter or gauge", name, typ)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return nil, fmt.Errorf("parsing /metrics/resource: %s has value %v: want a finite value >= 0", name, v)
	}
	out := &Value{Value: v}
	if m.TimestampMs != nil {
		out.Timestamp = time.UnixMilli(m.GetTimestampMs()).UTC()
	}
	return out, nil
}

// textToFamilies runs the Prometheus text parser; a panic inside it (the
// fuzzer found one in prometheus/common v0.70.1 on "# HELP x y\n{}0",
// fixed in v0.73) becomes an error: a node's answer must never crash a
// run.
func textToFamilies(r io.Reader) (families map[string]*dto.MetricFamily, err error) {
	defer func() {
		if p := recover(); p != nil {
			families, err = nil, fmt.Errorf("the text parser failed: %v", p)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(r)
}
