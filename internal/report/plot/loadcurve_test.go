package plot

import (
	"strings"
	"testing"
)

// TestLoadCurve draws two meshes' probes and checks the SVG's legend and
// structure: one entry per mesh and percentile, the capacities, the
// objective; and the PNG renders.
func TestLoadCurve(t *testing.T) {
	series := []LoadSeries{
		{Name: "none", CapacityPerSec: 2000, Points: []LoadPoint{
			{100, 2.1, 2.5}, {200, 2.1, 2.6}, {1600, 2.3, 3}, {3200, 900, 1490}, {2400, 300, 499}, {2000, 3, 3.7}, {2100, 77, 127},
			{2000, 3.1, 4}, // a second repetition's probe at the same rate: the line goes through the median
		}},
		{Name: "sidecar", CapacityPerSec: 1200, Points: []LoadPoint{{100, 3, 4}, {200, 3, 4.2}, {1600, 400, 800}, {1200, 4, 6}}},
	}
	c, err := LoadCurve(ChartOptions{Title: "Latency vs offered load", XLabel: "offered load (req/s)", YLabel: "latency (ms)"}, "p99", 5, series)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := c.SVG(800, 500)
	if err != nil {
		t.Fatal(err)
	}
	doc := parseSVG(t, svg)
	var texts []string
	for _, x := range doc.texts {
		texts = append(texts, x.text)
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"none p99", "none p50", "none capacity 2000/s", "sidecar p99", "sidecar p50", "sidecar capacity 1200/s", "objective p99 ≤ 5 ms", "Latency vs offered load"} {
		if !strings.Contains(all, want) {
			t.Errorf("SVG texts lack %q: %s", want, all)
		}
	}
	if _, err := c.PNG(800, 500); err != nil {
		t.Fatal(err)
	}
	// Bad input: a probe with a zero latency cannot go on the log axis; no series; no objective.
	bad := []LoadSeries{{Name: "none", Points: []LoadPoint{{100, 0, 1}}}}
	if _, err := LoadCurve(ChartOptions{}, "p99", 5, bad); err == nil || !strings.Contains(err.Error(), "not positive") {
		t.Errorf("zero latency: %v", err)
	}
	if _, err := LoadCurve(ChartOptions{}, "p99", 5, nil); err == nil {
		t.Error("no series: no error")
	}
	if _, err := LoadCurve(ChartOptions{}, "p99", -1, series); err == nil {
		t.Error("objective -1: no error")
	}
}
