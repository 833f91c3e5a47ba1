package sample

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/results"
)

// TestResourcesBytes: resources.json written through Resources is the file
// every platform wrote before the type, byte for byte, in each of its
// forms: the keys are the same and sorted (the map the platforms built
// before), a cluster's keys it writes as null stay null, and those a
// platform never writes stay absent. Each old form is written out here as
// the map it was.
func TestResourcesBytes(t *testing.T) {
	from := time.Date(2026, 11, 27, 10, 0, 1, 500, time.UTC)
	to := from.Add(10 * time.Second)
	sum := Summarize([]Round{{Index: 0, Time: from.Add(time.Second), Samples: []Sample{{Target: Target{PID: 7, Name: "server-0 app",
		Component: "app static", Category: CategoryApp}, CPUMillicores: 12.5, RSSBytes: 4 << 20}}}})
	nodes := []NodeSummary{{Name: "node-1", Rounds: 1, CPUMillicores: Stats{Min: 1, Max: 2, Avg: 1.5}, BootID: "b"}}
	drain := results.Drain{Ended: results.DrainIdle, Seconds: 1.25, MaxSeconds: 60, LoadEnded: to, AppPods: 1, AppPodsSampled: 1}
	counters := &CounterReport{PeriodNs: int64(time.Second), Resets: []CounterReset{}, Partial: []ContainerWindow{},
		Containers: []ContainerWindow{{Key: "a/b/c", CPUSeconds: 0.5, From: from, To: to}}, Lag: CounterLag{Samples: 3, Median: time.Millisecond}}
	api := &MetricsAPIReport{Summary: sum, FreshPodSamples: 4, StalePodSamples: 1, StaleFraction: 0.2}
	labRule := "rounds whose sampling time falls inside the measured window (warm-up and drain excluded)"
	apiRule := "metrics samples whose [timestamp - window, timestamp] lies inside the measured window of the merged load result"
	kubeletRule := "the kubelet's cumulative CPU counters interpolated to the measured window's edges; equal intervals of about the reading period"
	apiErrors, mixed := 2, 3
	for _, tt := range []struct {
		name  string
		typed Resources
		old   map[string]any
	}{
		// The lab: its version, window and summary only.
		{"lab", Resources{Schema: results.ResourcesSchema, Summary: sum, Window: ResourcesWindow{From: from, To: to, Rule: labRule}},
			map[string]any{"schema": results.ResourcesSchema, "window": map[string]any{"from": from, "to": to, "rule": labRule}, "summary": sum}},
		// A cluster measured by metrics.k8s.io.
		{"metrics-api", Resources{Schema: results.ResourcesSchema, Source: "metrics-api", Window: ResourcesWindow{From: from, To: to, Rule: apiRule},
			Memory: "working set (metrics.k8s.io), not PSS", Stale: &StaleSamples{Pods: 4, Nodes: 5}, MixedRounds: &mixed, APIErrors: &apiErrors,
			Drain: &drain, Summary: sum, Nodes: Write(nodes)},
			map[string]any{"schema": results.ResourcesSchema, "source": "metrics-api", "window": map[string]any{"from": from, "to": to, "rule": apiRule},
				"memory": "working set (metrics.k8s.io), not PSS", "stale": map[string]int{"pods": 4, "nodes": 5}, "mixed_rounds": mixed,
				"api_errors": apiErrors, "drain": drain, "summary": sum, "nodes": nodes}},
		// The same without a measured window: no nodes, written as null.
		{"metrics-api unmeasured", Resources{Schema: results.ResourcesSchema, Source: "metrics-api", Window: ResourcesWindow{Rule: apiRule},
			Memory: "working set (metrics.k8s.io), not PSS", Stale: &StaleSamples{}, MixedRounds: new(int), APIErrors: new(int),
			Drain: &drain, Summary: Summarize(nil), Nodes: Write[[]NodeSummary](nil)},
			map[string]any{"schema": results.ResourcesSchema, "source": "metrics-api", "window": map[string]any{"from": time.Time{}, "to": time.Time{}, "rule": apiRule},
				"memory": "working set (metrics.k8s.io), not PSS", "stale": map[string]int{"pods": 0, "nodes": 0}, "mixed_rounds": 0,
				"api_errors": 0, "drain": drain, "summary": Summarize(nil), "nodes": []NodeSummary(nil)}},
		// A cluster measured by the kubelet's counters.
		{"kubelet", Resources{Schema: results.ResourcesSchema, Source: "kubelet", Window: ResourcesWindow{From: from, To: to, Rule: kubeletRule},
			Memory: "working set (the kubelet's counters), not PSS", Drain: &drain, Summary: sum, Nodes: Write(nodes),
			Counters: Write(counters), MetricsAPI: Write(api)},
			map[string]any{"schema": results.ResourcesSchema, "source": "kubelet", "window": map[string]any{"from": from, "to": to, "rule": kubeletRule},
				"memory": "working set (the kubelet's counters), not PSS", "drain": drain, "summary": sum, "nodes": nodes,
				"counters": counters, "metrics_api": api}},
		// The same without a window, metrics.k8s.io never answering:
		// counters, metrics_api and nodes null.
		{"kubelet unmeasured", Resources{Schema: results.ResourcesSchema, Source: "kubelet", Window: ResourcesWindow{Rule: kubeletRule},
			Memory: "working set (the kubelet's counters), not PSS", Drain: &drain, Summary: Summarize(nil), Nodes: Write[[]NodeSummary](nil),
			Counters: Write[*CounterReport](nil), MetricsAPI: Write[*MetricsAPIReport](nil)},
			map[string]any{"schema": results.ResourcesSchema, "source": "kubelet", "window": map[string]any{"from": time.Time{}, "to": time.Time{}, "rule": kubeletRule},
				"memory": "working set (the kubelet's counters), not PSS", "drain": drain, "summary": Summarize(nil), "nodes": []NodeSummary(nil),
				"counters": (*CounterReport)(nil), "metrics_api": (*MetricsAPIReport)(nil)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.MarshalIndent(tt.typed, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			want, err := json.MarshalIndent(tt.old, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Fatalf("typed:\n%s\nwas:\n%s", got, want)
			}
			// It reads back as written: what was null is null, what was
			// absent is absent.
			var back Resources
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.MarshalIndent(back, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(got) {
				t.Errorf("read back and written again:\n%s\nwant:\n%s", again, got)
			}
			if back.Nodes.Set != tt.typed.Nodes.Set || back.Counters.Set != tt.typed.Counters.Set || !reflect.DeepEqual(back.Window, tt.typed.Window) {
				t.Errorf("read back %+v", back)
			}
		})
	}
}
