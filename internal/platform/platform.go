// Package platform is what every platform shares, above its
// implementations (kind's providers, k6's output/ above
// internal/output/*): one cell's settings (Settings), the Platform a
// plan's cells run on and the cell it is handed (Cell, CellRun, Result).
// The implementations are under it: local/ (the lab on this machine,
// netlab/ its network namespaces) and kube/ (a Kubernetes cluster).
package platform

import (
	"context"
	"errors"

	"github.com/meshbench/meshbench/internal/results"
)

// Platform is where a plan's cells run: the local lab, a Kubernetes
// cluster, or a fake in tests. bench/runner drives it: RunCell for each
// unfinished cell, in order, and Teardown whenever what the platform keeps
// between cells (the local lab shared by consecutive cells of one
// Topology) will not serve the next cell, after a cell cut short, and at
// the end of every run, also after an error.
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

// Cell is one run of a plan as a Platform is handed it: its ID and its
// settings, the same on every platform.
type Cell struct {
	// ID names the cell; it is a directory name.
	ID       string
	Settings Settings
	// Topology, when not empty, lets consecutive cells with the same value
	// run on one lab; empty: the cell brings its own up and down. Cells on
	// a cluster always bring their own.
	Topology string
}

// CellRun is one cell as the runner hands it to a Platform.
type CellRun struct {
	Cell Cell
	// Dir is where the cell's results go (its .partial directory).
	Dir string
	// PlanDir and Manifest are the plan's directory and manifest, for
	// records of what is kept between cells (results.LabRecord).
	PlanDir  string
	Manifest *results.PlanManifest
}

// Result is what a cell's run left, on any platform.
type Result struct {
	Dir      string
	Manifest *results.RunManifest
	Load     *results.LoadResult
}

// ErrInvalid marks a run that finished but must not be used as a
// measurement; the manifest says why.
var ErrInvalid = errors.New("run invalid")
