package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube/kubelet"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
)

// Where a run's CPU and memory come from (Options.MetricsSource).
const (
	// SourceKubelet: the kubelet's cumulative counters
	// (/metrics/resource through the API server's node proxy), read every
	// KubeletInterval; CPU over the measured window is exact.
	SourceKubelet = "kubelet"
	// SourceMetricsAPI: metrics.k8s.io (metrics-server's windowed
	// averages), polled every SampleInterval.
	SourceMetricsAPI = "metrics-api"
	// SourceAuto: the kubelet's counters when nodes/proxy get is allowed
	// and a node's endpoint answers, else metrics.k8s.io.
	SourceAuto = "auto"
)

// MetricsSources lists the values Options.MetricsSource takes.
var MetricsSources = []string{SourceAuto, SourceKubelet, SourceMetricsAPI}

// DefaultKubeletInterval is the kubelet counters' reading period by
// default: 1 s, the local lab's.
const DefaultKubeletInterval = time.Second

// KubeletRawFile is the kubelet sampler's raw file in a run's directory.
const KubeletRawFile = "kubelet-raw.jsonl"

// ChooseSource resolves want ("", auto, kubelet or metrics-api) on the
// cluster: auto (or "") is kubelet when kubelet.Probe succeeds, else
// metrics-api. why says what decided it. Asking for kubelet where the
// probe fails is an error.
func ChooseSource(ctx context.Context, c *Cluster, want string) (source, why string, err error) {
	switch want {
	case SourceMetricsAPI:
		return SourceMetricsAPI, "asked for (--metrics-source metrics-api)", nil
	case SourceKubelet, SourceAuto, "":
	default:
		return "", "", fmt.Errorf("metrics source %q: allowed: %s", want, strings.Join(MetricsSources, ", "))
	}
	perr := kubelet.Probe(ctx, c.Core)
	switch {
	case perr == nil && want == SourceKubelet:
		return SourceKubelet, "asked for (--metrics-source kubelet); nodes/proxy get allowed and /metrics/resource answers", nil
	case perr == nil:
		return SourceKubelet, "auto: nodes/proxy get allowed and /metrics/resource answers", nil
	case want == SourceKubelet:
		return "", "", fmt.Errorf("--metrics-source kubelet: %w (or use --metrics-source metrics-api)", perr)
	}
	return SourceMetricsAPI, "auto: kubelet counters not usable: " + oneLine(perr.Error()), nil
}

// kubeletClassify classifies a container for the kubelet sampler with
// the run's Classifier.
func kubeletClassify(cls *metricsapi.Classifier) func(pod *corev1.Pod, container string) (string, string) {
	return func(pod *corev1.Pod, container string) (string, string) {
		_, component, category := cls.Classify(pod, container)
		return component, category
	}
}

// counterWindow turns the kubelet sampler's records into the window's
// summary, node summaries and the counter report.
func counterWindow(ctx context.Context, c *Cluster, s *kubelet.Sampler, from, to time.Time) (sample.Summary, []sample.NodeSummary, *sample.CounterReport, error) {
	recs := s.Records()
	res, err := kubelet.Window(recs, from, to, s.Period())
	if err != nil {
		return sample.Summary{}, nil, nil, err
	}
	rep := &sample.CounterReport{PeriodNs: int64(s.Period()), StepNs: int64(res.Step), Resets: res.Resets,
		Containers: res.Containers, StaleReadings: res.StaleRecords, FreshReadings: res.FreshRecords, Lag: res.Lag,
		Errors: len(s.Errors()), Partial: []sample.ContainerWindow{}}
	for _, cw := range res.Containers {
		if cw.Partial {
			rep.Partial = append(rep.Partial, cw)
		}
	}
	if rep.Resets == nil {
		rep.Resets = []sample.CounterReset{}
	}
	var cpu []float64
	nodes := map[string]bool{}
	for _, rec := range recs {
		switch rec.Kind {
		case kubelet.RawRound:
			cpu = append(cpu, float64(rec.CPUNs))
		case kubelet.RawNode:
			nodes[rec.Node] = true
		}
	}
	rep.Nodes = len(nodes)
	if len(cpu) > 0 {
		st := sample.Stats{Min: cpu[0], Max: cpu[0]}
		var sum float64
		for _, v := range cpu {
			st.Min, st.Max, sum = min(st.Min, v), max(st.Max, v), sum+v
		}
		st.Avg = sum / float64(len(cpu))
		rep.RoundCPUNs = st
	}
	// Allocatable, for the node table's shares.
	alloc := map[string]corev1.ResourceList{}
	if l, err := c.Core.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err == nil {
		for _, n := range l.Items {
			alloc[n.Name] = n.Status.Allocatable
		}
	}
	var nrs []sample.NodeRound
	for _, nr := range res.Nodes {
		out := sample.NodeRound{Index: nr.Index, Time: nr.Time, Nodes: []sample.NodeSample{}}
		for _, n := range nr.Nodes {
			ns := sample.NodeSample{Name: n.Name, Time: nr.Time, Window: res.Step, CPUMillicores: n.CPUMillicores, MemoryBytes: n.MemoryBytes}
			ns.AllocatableCPUMillicores, ns.AllocatableMemoryBytes, _ = metricsapi.ResourceUsage(alloc[n.Name])
			out.Nodes = append(out.Nodes, ns)
		}
		nrs = append(nrs, out)
	}
	return sample.Summarize(res.Rounds), sample.SummarizeNodes(nrs), rep, nil
}

// roundSource is what the idle gate and the drain read: the rounds so
// far, and those whose samples lie wholly inside a time range.
type roundSource interface {
	Rounds() []sample.Round
	Within(from, to time.Time) []sample.Round
}

// sourceName names a source in messages.
func sourceName(source string) string {
	if source == SourceKubelet {
		return "the kubelet's counters (/metrics/resource through the node proxy)"
	}
	return "metrics.k8s.io"
}

// shortSourceName is source in a few words, for the live view.
func shortSourceName(source string) string {
	if source == SourceKubelet {
		return "kubelet (/metrics/resource)"
	}
	return "metrics.k8s.io"
}

// metricsAPIReport summarises the metrics API sampler beside the
// counters; nil when it never answered. Called after the sampler stopped.
func metricsAPIReport(s *metricsapi.MetricsSampler, windowSummary sample.Summary, measured bool) *sample.MetricsAPIReport {
	fresh, stale, answered := s.PodSampleCounts()
	if !answered {
		return nil
	}
	rep := &sample.MetricsAPIReport{FreshPodSamples: fresh, StalePodSamples: stale, Errors: len(s.Errors())}
	if fresh+stale > 0 {
		rep.StaleFraction = float64(stale) / float64(fresh+stale)
	}
	if measured {
		rep.Summary = windowSummary
	}
	return rep
}
