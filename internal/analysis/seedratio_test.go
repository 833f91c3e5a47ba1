package analysis

import "testing"

// TestSeedRatios: the sidecar-debate seed's ratios, computed by hand.
func TestSeedRatios(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   map[string]float64
		want map[string]float64 // nil: no ratio at all
	}{
		// The seed's own CPU figures (data plane 267, control plane 13,
		// faces 405 + load 21 mC) give its printed 65.58% and 62.70%.
		{"seed", map[string]float64{"cpu_m:data-plane": 267, "cpu_m:control-plane": 13, "cpu_m:app": 405, "cpu_m:load": 21},
			map[string]float64{MeshCPURatio: 100 * 280.0 / 426, DataPlaneCPURatio: 100 * 267.0 / 426}},
		// Memory too, without a control plane: mesh = data plane.
		{"memory", map[string]float64{"mem_mib:data-plane": 24, "mem_mib:app": 20, "mem_mib:load": 20},
			map[string]float64{MeshMemRatio: 60, DataPlaneMemRatio: 60}},
		// Mode none: no data plane, no ratio.
		{"none", map[string]float64{"cpu_m:app": 80, "cpu_m:load": 40}, nil},
		// No non-mesh part measured: no ratio (no division by zero).
		{"no app", map[string]float64{"cpu_m:data-plane": 10}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := map[string]float64{}
			for k, v := range tc.in {
				f[k] = v
			}
			seedRatios(f)
			for _, k := range []string{MeshCPURatio, MeshMemRatio, DataPlaneCPURatio, DataPlaneMemRatio} {
				got, ok := f[k]
				want, wok := tc.want[k]
				if ok != wok || (ok && !(got > want-1e-9 && got < want+1e-9)) {
					t.Errorf("%s = %v (present %v), want %v (present %v)", k, got, ok, want, wok)
				}
			}
		})
	}
}
