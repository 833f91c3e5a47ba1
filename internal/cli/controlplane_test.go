package cli

import (
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench/runner"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/results"
)

// TestControlPlaneSaid: run's header note and bench's line for a finished
// cell say who configured the proxies, from the cell's manifest as the
// netns substrate records it: the lab's own configs (sidecars, ztunnels,
// the waypoint), the lab's stand-in for Linkerd, or the real control
// plane; a manifest without the record says nothing.
func TestControlPlaneSaid(t *testing.T) {
	manifest := func(mesh string, cp map[string]any, extra map[string]any) *results.RunManifest {
		o := results.CellSettings{Mesh: mesh, Substrate: "netns"}.Options(extra)
		if cp != nil {
			o["control_plane"] = cp
		}
		return &results.RunManifest{Options: o}
	}
	linkerdProxy := map[string]any{"linkerd": map[string]any{"proxy": map[string]any{"release": "edge-26.8.3", "sha256": "0123456789abcdef"}}}
	for _, tc := range []struct {
		m              *results.RunManifest
		note, cellLine string
	}{
		{manifest("sidecar", map[string]any{"name": "lab", "what": "sidecars: …"}, nil),
			"(sidecars configured by meshbench's hand-rendered Envoy configs, not istiod)", "[configs: meshbench's own configs (not istiod's)]"},
		{manifest("waypoint", map[string]any{"name": "lab", "what": "ztunnels and the waypoint: …"}, nil),
			"(ztunnels and the waypoint configured by meshbench's hand-rendered local config file and waypoint Envoy config, not istiod)", "[configs: meshbench's own configs (not istiod's)]"},
		{manifest("linkerd", map[string]any{"name": "lab", "what": netlab.LinkerdStandInWhat}, linkerdProxy),
			"control plane: the lab's stand-in)", "[configs: the lab's stand-in (not Linkerd's)]"},
		{manifest("linkerd", map[string]any{"name": "linkerd", "linkerd": "edge-26.8.3"}, linkerdProxy),
			"control plane: Linkerd's controllers)", "[configs: Linkerd's controllers]"},
		{manifest("ambient", map[string]any{"name": "istiod", "istio": "istio=1.31", "what": "ztunnels: …"}, nil),
			"(ztunnels configured by the real istiod, 1.31, on the lab's API server)", "[configs: istiod]"},
		{manifest("sidecar", nil, nil), "", ""},
	} {
		mesh, _ := tc.m.Options["mesh"].(string)
		note := substrateNote(tc.m)
		if tc.note != "" && !strings.Contains(note, tc.note) || tc.note == "" && strings.Contains(note, "configured") {
			t.Errorf("%s: run's note %q, want %q", mesh, note, tc.note)
		}
		if strings.Contains(note, "Linkerd's proxies configured by meshbench") {
			t.Errorf("%s: run's note %q says the stand-in is Envoy configs", mesh, note)
		}
		ev := runner.Event{Done: true, Status: &results.CellStatus{State: "done", Valid: true}, Result: &platform.Result{Manifest: tc.m}}
		line := cellEndText(ev, false)
		if tc.cellLine != "" && !strings.HasSuffix(line, tc.cellLine) || tc.cellLine == "" && strings.Contains(line, "configs:") {
			t.Errorf("%s: bench's cell line %q, want it to end %q", mesh, line, tc.cellLine)
		}
	}
}

// TestConfiguredApart: compare's "nothing to compare" says when the same
// meshes ran with different control planes (their labels differ), and
// nothing when the sides share no mesh or were configured alike.
func TestConfiguredApart(t *testing.T) {
	set := func(a, b []string) *analysis.SetComparison {
		return &analysis.SetComparison{A: &analysis.Analysis{Meshes: a}, B: &analysis.Analysis{Meshes: b}}
	}
	lab, istiod := "sidecar"+analysis.LabConfigured, "sidecar"+analysis.IstiodConfigured
	got := configuredApart(set([]string{"none", lab}, []string{"none", istiod}))
	if want := "(A: sidecar: meshbench's own configs (not istiod's); B: sidecar: istiod)"; !strings.Contains(got, want) {
		t.Errorf("lab vs istiod: %q, want it to say %q", got, want)
	}
	if got := configuredApart(set([]string{lab}, []string{"linkerd" + analysis.LinkerdConfigured})); got != "" {
		t.Errorf("no mesh in common: %q", got)
	}
	if got := configuredApart(set([]string{lab}, []string{lab})); got != "" {
		t.Errorf("configured alike: %q", got)
	}
	if got := configuredApart(set([]string{"sidecar"}, []string{istiod})); !strings.Contains(got, "(A: no record; B: sidecar: istiod)") {
		t.Errorf("an old result vs istiod: %q", got)
	}
}
