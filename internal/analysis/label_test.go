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

// TestMeshLabelIstiod: a sidecar cell istiod configured says so in its
// label; the lab's hand-rendered sidecars, other modes and results
// without the record keep theirs.
func TestMeshLabelIstiod(t *testing.T) {
	for _, tc := range []struct {
		s    results.CellSettings
		want string
	}{
		{results.CellSettings{Mesh: "sidecar", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "sidecar (config from istiod)"},
		{results.CellSettings{Mesh: "ambient", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "ambient (config from istiod)"},
		{results.CellSettings{Mesh: "ambient", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "ambient"},
		{results.CellSettings{Mesh: "waypoint", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "waypoint (config from istiod)"},
		{results.CellSettings{Mesh: "sidecar", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "sidecar"},
		{results.CellSettings{Mesh: "none", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "istiod"}}, "none"},
		{results.CellSettings{Mesh: "sidecar", Substrate: "netns"}, "sidecar"},
		{results.CellSettings{Mesh: "linkerd", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "linkerd"}}, "linkerd (config from Linkerd's controllers)"},
		{results.CellSettings{Mesh: "linkerd", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "lab"}}, "linkerd"},
		{results.CellSettings{Mesh: "linkerd", Substrate: "netns"}, "linkerd"},
		{results.CellSettings{Mesh: "none", Substrate: "netns", ControlPlane: &results.ControlPlane{Name: "linkerd"}}, "none"},
		{results.CellSettings{Mesh: "ambient", Substrate: "loopback"}, "ambient (Envoy stand-in for ztunnel)"},
	} {
		if got := meshLabelOf(tc.s); got != tc.want {
			t.Errorf("meshLabelOf(%+v) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
