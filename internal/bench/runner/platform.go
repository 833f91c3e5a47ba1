package runner

import (
	"context"

	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
)

// Platform is where a plan's cells run: the local lab, a Kubernetes
// cluster, or a fake in tests. Run drives it: RunCell for each unfinished
// cell, in order, and Teardown whenever what the platform keeps between
// cells (the local lab shared by consecutive cells of one Topology) will
// not serve the next cell, after a cell cut short, and at the end of every
// run, also after an error.
type Platform interface {
	// Name is the platform as the plan manifest records it
	// (results.PlatformLocal, results.PlatformKube).
	Name() string
	// RunCell prepares what r.Cell needs (or reuses what the previous cell
	// left up), runs it and writes its results into r.Dir. A nil Result
	// means nothing was measured.
	RunCell(ctx context.Context, r CellRun) (*Result, error)
	// Teardown ends whatever the platform keeps between cells, noting why
	// in the plan manifest when why is not empty. It is safe to call when
	// nothing is up.
	Teardown(why string)
}

// CellRun is one cell as Run hands it to a Platform.
type CellRun struct {
	Cell Cell
	// Dir is where the cell's results go (its .partial directory).
	Dir string
	// PlanDir and Manifest are the plan's directory and manifest, for
	// records of what is kept between cells (results.LabRecord).
	PlanDir  string
	Manifest *results.PlanManifest
}

// platformFor is the platform of o: o.On, or else the cluster when the
// cells carry Kube options, or else the local lab.
func platformFor(o Options) Platform {
	switch {
	case o.On != nil:
		return o.On
	case len(o.Cells) > 0 && o.Cells[0].Kube != nil:
		return kubePlatform{}
	}
	return &localPlatform{}
}

// localPlatform runs cells on the local lab: Cell.Lab, one lab shared by
// consecutive cells of one Topology (labs).
type localPlatform struct{ labs labs }

func (*localPlatform) Name() string { return results.PlatformLocal }

func (p *localPlatform) RunCell(ctx context.Context, r CellRun) (*Result, error) {
	p.labs.planDir, p.labs.m = r.PlanDir, r.Manifest
	lo := r.Cell.Lab
	lo.OutDir = r.Dir
	return p.labs.run(ctx, r.Cell, lo)
}

func (p *localPlatform) Teardown(why string) { p.labs.stop(why) }

// kubePlatform runs cells on a cluster: Cell.Kube, each cell bringing its
// own namespaces up and down.
type kubePlatform struct{}

func (kubePlatform) Name() string { return results.PlatformKube }

func (kubePlatform) RunCell(ctx context.Context, r CellRun) (*Result, error) {
	o := *r.Cell.Kube
	o.OutDir = r.Dir
	res, err := kube.Run(ctx, o)
	if res == nil {
		return nil, err
	}
	return &Result{Dir: res.Dir, Manifest: res.Manifest, Load: res.Load}, err
}

func (kubePlatform) Teardown(string) {}
