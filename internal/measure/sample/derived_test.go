package sample

import (
	"maps"
	"testing"
)

func TestDataPlaneFigures(t *testing.T) {
	const mib = 1 << 20
	group := func(name string, cpu, pssMiB float64, pssRounds int) GroupSummary {
		return GroupSummary{Name: name, Figures: Figures{Rounds: 4, PSSRounds: pssRounds,
			CPUMillicores: Stats{Avg: cpu}, PSSBytes: Stats{Avg: pssMiB * mib}}}
	}
	both := Summary{Categories: []GroupSummary{group(CategoryDataPlane, 50, 40, 4), group(CategoryApp, 100, 20, 4)}}
	tests := []struct {
		name string
		s    Summary
		rate float64
		pods int
		want map[string]float64
	}{
		// Everything read: every figure.
		{"all", both, 500, 4, map[string]float64{DataPlaneCPUPer1000: 100, DataPlaneMemPer1000: 80, DataPlaneMemPerPod: 10,
			DataPlaneCPUToApp: 0.5, DataPlaneMemToApp: 2}},
		// No rate achieved: no per-1000-rps figure (not a division by 0).
		{"no rate", both, 0, 4, map[string]float64{DataPlaneMemPerPod: 10, DataPlaneCPUToApp: 0.5, DataPlaneMemToApp: 2}},
		// Mode none: no data plane, no figure at all.
		{"no data plane", Summary{Categories: []GroupSummary{group(CategoryApp, 100, 20, 4)}}, 500, 4, map[string]float64{}},
		// No PSS reading in the window: CPU figures only, not a zero memory.
		{"no memory", Summary{Categories: []GroupSummary{group(CategoryDataPlane, 50, 0, 0), group(CategoryApp, 100, 20, 4)}}, 500, 4,
			map[string]float64{DataPlaneCPUPer1000: 100, DataPlaneCPUToApp: 0.5}},
		// The app's memory unread: no memory ratio.
		{"no app memory", Summary{Categories: []GroupSummary{group(CategoryDataPlane, 50, 40, 4), group(CategoryApp, 100, 0, 0)}}, 500, 4,
			map[string]float64{DataPlaneCPUPer1000: 100, DataPlaneMemPer1000: 80, DataPlaneMemPerPod: 10, DataPlaneCPUToApp: 0.5}},
	}
	for _, tt := range tests {
		if got := DataPlaneFigures(tt.s, tt.rate, tt.pods); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
