package kube

import (
	"testing"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
)

// TestPlatformCellOptions: each cell runs with the platform's options and
// its own settings; it installs its mesh only when Installs names it, an
// Istio cell with the plan's Istio profile (Linkerd's and mode none's
// keep theirs), and only the faces app's cells with the Faces chart.
func TestPlatformCellOptions(t *testing.T) {
	p := &Platform{Options: Options{Spec: Spec{AppNamespace: "mb-app", FacesChart: true}, Keep: true},
		Installs: map[string]bool{"sidecar-1": true}, IstioProfile: mesh.IstioProfileAmbient}
	for _, tt := range []struct {
		id      string
		mode    topology.Mode
		app     topology.App
		install bool
		profile string
		chart   bool
	}{
		{"sidecar-1", topology.ModeSidecar, topology.AppStatic, true, mesh.IstioProfileAmbient, false}, // installs Istio, ambient profile
		{"sidecar-2", topology.ModeSidecar, topology.AppFaces, false, mesh.IstioProfileAmbient, true},  // verifies it; the chart for faces
		{"linkerd-1", ModeLinkerd, topology.AppFaces, false, "", true},                                 // not an Istio mode: no profile
		{"none-1", topology.ModeNone, topology.AppStatic, false, "", false},                            // no mesh
	} {
		o := topology.DefaultOptions()
		o.Mode, o.App = tt.mode, tt.app
		got := p.cellOptions(platform.Cell{ID: tt.id, Settings: platform.Settings{Mesh: o, Workers: 3}})
		if got.InstallMesh != tt.install || got.IstioProfile != tt.profile || got.Spec.FacesChart != tt.chart ||
			got.Mesh.Mode != tt.mode || got.Workers != 3 || !got.Keep || got.Spec.AppNamespace != "mb-app" {
			t.Errorf("%s: install %v, profile %q, chart %v, mode %s, workers %d, keep %v, namespace %q; want %v, %q, %v, %s, 3, true, mb-app",
				tt.id, got.InstallMesh, got.IstioProfile, got.Spec.FacesChart, got.Mesh.Mode, got.Workers, got.Keep, got.Spec.AppNamespace,
				tt.install, tt.profile, tt.chart, tt.mode)
		}
	}
}
