package analysis

import (
	"testing"

	"github.com/meshbench/meshbench/internal/results"
)

func TestMeshLabel(t *testing.T) {
	tests := []struct {
		mode, substrate, want string
	}{
		{"ambient", "loopback", "ambient (Envoy stand-in for ztunnel)"},   // the loopback lab's node proxy is Envoy
		{"waypoint", "loopback", "waypoint (Envoy stand-in for ztunnel)"}, // so is the waypoint mode's
		{"sidecar", "loopback", "sidecar"},                                // a sidecar is Envoy in Istio too
		{"none", "loopback", "none"},                                      // no proxy at all
		{"ambient", "netns", "ambient"},                                   // the real ztunnel
		{"ambient", "", "ambient"},                                        // a cluster, or results from before substrates
	}
	for _, tc := range tests {
		got := MeshLabel(tc.mode, tc.substrate)
		if got != tc.want {
			t.Errorf("MeshLabel(%q, %q) = %q, want %q", tc.mode, tc.substrate, got, tc.want)
		}
		if MeshMode(got) != tc.mode {
			t.Errorf("MeshMode(%q) = %q, want %q", got, MeshMode(got), tc.mode)
		}
	}
}

// TestConfigOfSubstrate: a loopback cell's ambient mesh carries the label,
// and the label still sorts and serves as the baseline as its mode does.
func TestConfigOfSubstrate(t *testing.T) {
	c := configOf(results.CellSettings{Mesh: "ambient", Substrate: "loopback", App: "static", Rate: "50"})
	if c.Mesh != "ambient"+EnvoyStandIn {
		t.Errorf("loopback ambient cell named %q", c.Mesh)
	}
	if c := configOf(results.CellSettings{Mesh: "ambient", Substrate: "netns"}); c.Mesh != "ambient" {
		t.Errorf("netns ambient cell named %q", c.Mesh)
	}
	side := configOf(results.CellSettings{Mesh: "sidecar", Substrate: "loopback", App: "static", Rate: "50"})
	if !configLess(side, c) {
		t.Error("the labelled ambient sorts before sidecar")
	}
}

// TestMeshLabelIstiod: a cell says in its label who configured its
// proxies, as its manifest recorded it: istiod, Linkerd's controllers,
// the lab's own configs, the lab's stand-in for Linkerd; mode none, the
// loopback's Envoy stand-in (already said) and results without the record
// keep theirs; ControlPlaneOf reads it back for the CSV column and the
// reports' headers.
func TestMeshLabelIstiod(t *testing.T) {
	for _, tc := range []struct {
		s    results.CellSettings
		want string
	}{
		{results.CellSettings{Mesh: "sidecar", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "sidecar (config from istiod)"},
		{results.CellSettings{Mesh: "ambient", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "ambient (config from istiod)"},
		{results.CellSettings{Mesh: "ambient", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "ambient (meshbench's configs)"},
		{results.CellSettings{Mesh: "waypoint", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "waypoint (meshbench's configs)"},
		{results.CellSettings{Mesh: "sidecar", Substrate: "loopback", ControlPlane: &results.ControlPlane{Name: "lab"}}, "sidecar (meshbench's configs)"},
		{results.CellSettings{Mesh: "waypoint", Substrate: "loopback", ControlPlane: &results.ControlPlane{Name: "lab"}}, "waypoint (Envoy stand-in for ztunnel)"},
		{results.CellSettings{Mesh: "waypoint", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "waypoint (config from istiod)"},
		{results.CellSettings{Mesh: "sidecar", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "sidecar (meshbench's configs)"},
		{results.CellSettings{Mesh: "none", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "none"},
		{results.CellSettings{Mesh: "none", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "none"},
		{results.CellSettings{Mesh: "sidecar", Substrate: "netns"}, "sidecar"},
		{results.CellSettings{Mesh: "linkerd", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "linkerd"}}, "linkerd (config from Linkerd's controllers)"},
		{results.CellSettings{Mesh: "linkerd", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "linkerd (the lab's stand-in control plane)"},
		{results.CellSettings{Mesh: "linkerd", Substrate: "netns"}, "linkerd"},
		{results.CellSettings{Mesh: "none", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "linkerd"}}, "none"},
		{results.CellSettings{Mesh: "ambient", Substrate: "loopback"}, "ambient (Envoy stand-in for ztunnel)"},
	} {
		if got := meshLabelOf(tc.s); got != tc.want {
			t.Errorf("meshLabelOf(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
	for label, want := range map[string]string{
		"sidecar (config from istiod)":                "istiod",
		"linkerd (config from Linkerd's controllers)": "Linkerd's controllers",
		"ambient (meshbench's configs)":               "meshbench's own configs (not istiod's)",
		"linkerd (the lab's stand-in control plane)":  "the lab's stand-in (not Linkerd's)",
		"ambient (Envoy stand-in for ztunnel)":        "meshbench's own configs (Envoy stand-in for ztunnel)",
		"sidecar":                                     "",
		"none":                                        "",
	} {
		if got := ControlPlaneOf(label); got != want {
			t.Errorf("ControlPlaneOf(%q) = %q, want %q", label, got, want)
		}
	}
}
