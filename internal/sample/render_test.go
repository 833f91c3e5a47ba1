package sample

import (
	"bytes"
	"testing"
	"time"
)

// TestRenderWorkingSet: a table of Kubernetes samples (working set in both
// RSS and PSS, a round of stale samples only) says what Mem is and why a
// round has no samples.
func TestRenderWorkingSet(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	x := func(name, component, category string, cpu float64, memMi uint64) Sample {
		return Sample{Target: Target{Name: name, Component: component, Category: category}, Time: t0,
			CPUMillicores: cpu, RSSBytes: memMi << 20, PSSBytes: memMi << 20, HasPSS: true}
	}
	rounds := []Round{
		{Index: 0, Time: t0, Samples: []Sample{
			x("app/web-0/web", "app web", CategoryApp, 250, 64),
			x("app/web-0/istio-proxy", "web sidecar", CategoryDataPlane, 20, 30),
		}},
		{Index: 1, Time: t0.Add(5 * time.Second)}, // every sample stale
		{Index: 2, Time: t0.Add(10 * time.Second), Samples: []Sample{
			x("app/web-0/web", "app web", CategoryApp, 260, 64),
			x("app/web-0/istio-proxy", "web sidecar", CategoryDataPlane, 21, 31),
		}},
	}
	var b bytes.Buffer
	if err := RenderTable(&b, Summarize(rounds), TableOptions{By: ByComponent, Memory: WorkingSet}); err != nil {
		t.Fatal(err)
	}
	const want = `Component     CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
app web       250m      260m      255.00m   64Mi      64Mi      64.00Mi
web sidecar   20m       21m       20.50m    30Mi      31Mi      30.50Mi
TOTAL         270m      281m      275.50m   94Mi      95Mi      94.50Mi
CPU in millicores (1000m = one core); Mem is the working set (metrics.k8s.io: memory in use minus inactive file pages, per container) in Mi (2^20 bytes).
Each row is summed over its containers' fresh samples in every round; min, max and avg are over the rounds with one (TOTAL: 2 of 3; a round where metrics.k8s.io served only samples already counted has none).
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if WorkingSet.String() != "working set" || PSS.String() != "PSS" || RSS.String() != "RSS" {
		t.Errorf("Memory names: %s, %s, %s", WorkingSet, PSS, RSS)
	}
}

// TestRenderCounterWorkingSet: a table from the kubelet's counters (equal
// intervals of the measured window) says where CPU and Mem come from and
// that avg is the window's CPU.
func TestRenderCounterWorkingSet(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	x := func(cpu float64) Sample {
		return Sample{Target: Target{Name: "app/web-0/web", Component: "app web", Category: CategoryApp}, Time: t0,
			CPUMillicores: cpu, RSSBytes: 64 << 20, PSSBytes: 64 << 20, HasPSS: true}
	}
	rounds := []Round{
		{Index: 0, Time: t0, Samples: []Sample{x(240)}},
		{Index: 1, Time: t0.Add(time.Second), Samples: []Sample{x(260)}},
	}
	var b bytes.Buffer
	if err := RenderTable(&b, Summarize(rounds), TableOptions{By: ByCategory, Memory: CounterWorkingSet}); err != nil {
		t.Fatal(err)
	}
	const want = `Category   CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
app        240m      260m      250.00m   64Mi      64Mi      64.00Mi
TOTAL      240m      260m      250.00m   64Mi      64Mi      64.00Mi
CPU in millicores (1000m = one core); Mem is the working set (the kubelet's /metrics/resource: memory in use minus inactive file pages, per container, at each interval's end) in Mi (2^20 bytes).
CPU by the kubelet's cumulative counters over 2 equal intervals of the measured window (each counter interpolated to the intervals' edges): avg is the CPU over the whole window, exactly (over the intervals it ran in, for a container that appeared, disappeared or restarted); min and max are over the intervals.
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if CounterWorkingSet.String() != "working set" {
		t.Errorf("CounterWorkingSet is %q", CounterWorkingSet)
	}
}
