package bench

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/netlab"
	"github.com/meshbench/meshbench/internal/results"
)

// TestNeedsEnvoy: which local cells run an Envoy on each substrate.
func TestNeedsEnvoy(t *testing.T) {
	netns := &netlab.Substrate{}
	for _, tt := range []struct {
		mode    topology.Mode
		gateway bool
		netns   bool
		want    bool
	}{
		{topology.ModeNone, false, false, false},   // no mesh, no gateway: no proxy
		{topology.ModeNone, true, false, true},     // the gateway is an Envoy
		{topology.ModeSidecar, false, false, true}, // sidecars
		{topology.ModeAmbient, false, false, true}, // loopback: Envoy stands in for ztunnel
		{topology.ModeAmbient, false, true, false}, // netns: the real ztunnel
		{topology.ModeWaypoint, false, true, true}, // netns: the waypoint is an Envoy
		{topology.ModeLinkerd, false, true, false}, // linkerd2-proxy, no Envoy
		{topology.ModeLinkerd, true, true, true},   // but its gateway is one
	} {
		o := topology.DefaultOptions()
		o.Mode, o.Gateway = tt.mode, tt.gateway
		var got bool
		if tt.netns {
			got = NeedsEnvoy(o, netns)
		} else {
			got = NeedsEnvoy(o, nil)
		}
		if got != tt.want {
			t.Errorf("NeedsEnvoy(%s, gateway %v, netns %v) = %v; want %v", tt.mode, tt.gateway, tt.netns, got, tt.want)
		}
	}
}

// TestChooseSubstrateBadChoice: an unknown --substrate is a usage error
// naming what is allowed, before anything is looked for.
func TestChooseSubstrateBadChoice(t *testing.T) {
	_, _, err := ChooseSubstrate("bridge", "", "", []topology.Options{topology.DefaultOptions()})
	var ue *UsageError
	if !errors.As(err, &ue) || err.Error() != `--substrate "bridge": allowed: auto, netns, loopback` {
		t.Errorf("err %v; want a usage error naming auto, netns, loopback", err)
	}
}

// TestPlanMeshInstalls: on a cluster with --install-mesh, the first cell
// of each mesh CLI installs it (Istio's modes share istioctl; the cells
// a resume does not run again do not count), and every Istio mode
// installs with the ambient profile when the plan holds an ambient cell
// (switching profiles would remove ztunnel). Without --install-mesh no
// cell installs.
func TestPlanMeshInstalls(t *testing.T) {
	cell := func(id string, mode topology.Mode) platform.Cell {
		o := topology.DefaultOptions()
		o.Mode = mode
		return platform.Cell{ID: id, Settings: platform.Settings{Mesh: o}}
	}
	cells := []platform.Cell{cell("sidecar-1", topology.ModeSidecar), cell("ambient-1", topology.ModeAmbient),
		cell("linkerd-1", topology.ModeLinkerd), cell("sidecar-2", topology.ModeSidecar), cell("none-1", topology.ModeNone)}
	installs, profile, err := planMeshInstalls(t.TempDir(), false, cells, true)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(installs, map[string]bool{"sidecar-1": true, "linkerd-1": true}) || profile != mesh.IstioProfileAmbient {
		t.Errorf("installs %v, profile %q; want sidecar-1 and linkerd-1, ambient", installs, profile)
	}
	// On resume, a finished cell's install is done: the next one of its
	// mesh installs.
	dir := t.TempDir()
	m := &results.PlanManifest{Schema: results.PlanSchema, Cells: map[string]*results.CellStatus{"sidecar-1": {State: results.CellDone}}}
	if err := results.WritePlanManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	if installs, _, err := planMeshInstalls(dir, true, cells, true); err != nil || !maps.Equal(installs, map[string]bool{"ambient-1": true, "linkerd-1": true}) {
		t.Errorf("resumed: installs %v, %v; want ambient-1 and linkerd-1", installs, err)
	}
	if installs, profile, _ := planMeshInstalls(t.TempDir(), false, cells[:1], false); len(installs) != 0 || profile != "" {
		t.Errorf("a sidecar plan without --install-mesh: installs %v, profile %q; want none, the mode's own", installs, profile)
	}
}

// TestLabLine: bench's first line names the substrate and, per mesh,
// what is real and what stands in: ztunnel's Envoy stand-in on
// loopback, the real binaries (by sha256) on netns, Linkerd's control
// plane as the lab's stand-in, and istiod not run in Istio's modes.
func TestLabLine(t *testing.T) {
	dir := t.TempDir()
	zt, lp := filepath.Join(dir, "ztunnel"), filepath.Join(dir, "linkerd2-proxy")
	if err := os.WriteFile(zt, []byte("z"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lp, []byte("l"), 0o755); err != nil {
		t.Fatal(err)
	}
	bin := &envoy.Binary{Version: "1.40.0"}
	all := []topology.Mode{topology.ModeNone, topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint, topology.ModeLinkerd}
	netns := LabLine(&netlab.Substrate{Ztunnel: zt, LinkerdProxy: lp}, all, bin)
	for _, want := range []string{"on the netns substrate", "none: no proxy", "sidecar: real Envoy 1.40.0 sidecars, istio-init's capture",
		"ambient: real ztunnel (Istio's, sha256 594e519ae499…)", "waypoint: real ztunnel and a real Envoy 1.40.0 waypoint; in Istio's modes istiod is not run",
		"linkerd: real linkerd2-proxy (Linkerd's, sha256 acac86c0e609…), proxy-init's capture; its control plane: the lab's stand-in"} {
		if !strings.Contains(netns, want) {
			t.Errorf("netns line lacks %q:\n%s", want, netns)
		}
	}
	loop := LabLine(nil, all[:4], bin)
	for _, want := range []string{"on the loopback substrate", "ambient: Envoy 1.40.0 STANDS IN for ztunnel", "waypoint: Envoy 1.40.0 STANDS IN for ztunnel"} {
		if !strings.Contains(loop, want) {
			t.Errorf("loopback line lacks %q:\n%s", want, loop)
		}
	}
	if strings.Contains(loop, "real ztunnel") || strings.Contains(LabLine(nil, all[:1], nil), "istiod") {
		t.Errorf("loopback claims a real ztunnel, or none names istiod")
	}
}
