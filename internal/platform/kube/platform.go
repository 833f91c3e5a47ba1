package kube

import (
	"context"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
)

// Platform runs a plan's cells on a cluster (platform.Platform), each cell
// bringing its own namespaces up and down (Run).
type Platform struct {
	// Options are every cell's options but its settings and OutDir, which
	// each cell sets: the cluster, the namespaces and images, the
	// timeouts, the metrics source, the log, the version. Spec.FacesChart
	// installs the Faces chart for the cells of the faces app.
	Options Options
	// Installs are the cells (by ID) that install their mesh with its CLI
	// (InstallMesh); the others verify the one installed.
	Installs map[string]bool
	// IstioProfile, when set, is the profile every cell of an Istio mode
	// installs with (Options.IstioProfile).
	IstioProfile string
}

// Name is results.PlatformKube.
func (*Platform) Name() string { return results.PlatformKube }

// RunCell runs r.Cell on the cluster.
func (p *Platform) RunCell(ctx context.Context, r platform.CellRun) (*platform.Result, error) {
	o := p.cellOptions(r.Cell)
	o.OutDir = r.Dir
	res, err := Run(ctx, o)
	if res == nil {
		return nil, err
	}
	return &platform.Result{Dir: res.Dir, Manifest: res.Manifest, Load: res.Load}, err
}

// cellOptions are the options cell c runs with.
func (p *Platform) cellOptions(c platform.Cell) Options {
	o := p.Options
	o.Settings = c.Settings
	o.Spec.FacesChart = p.Options.Spec.FacesChart && c.Settings.Mesh.App == topology.AppFaces
	o.InstallMesh = p.Installs[c.ID]
	if m, ok := mesh.Get(string(c.Settings.Mesh.Mode)); ok && m.Product == mesh.Istio {
		o.IstioProfile = p.IstioProfile
	}
	return o
}

// Teardown does nothing: a cell leaves nothing up.
func (*Platform) Teardown(string) {}
