// Package sample measures the CPU and memory of the processes meshbench
// starts, from Linux's /proc, on a fixed period.
//
// Every process is registered as a Target with a name ("server-0
// sidecar"), a component ("server sidecar") and a category (app, load,
// data-plane, control-plane, gateway, overhead). Each sampling round reads
// every target's CPU ticks (/proc/PID/stat) and RSS (/proc/PID/status);
// every Sampler.PSSEvery rounds, it also reads PSS (/proc/PID/smaps_rollup,
// 14 to 36 times as costly as the other two): a sample says whether it has
// PSS, and PSS figures are over the rounds that read it. CPU is the tick
// difference since the process's previous reading over the wall time
// between the two readings, in millicores. A process's first reading is its baseline and yields no
// sample. A process that has exited (or whose PID now belongs to another
// process) is marked gone: its series ends with a gap record and it is read
// no more. Nothing is interpolated.
//
// The sampler reads its own process too (category overhead) and measures
// the CPU and wall time each round costs.
//
// Raw data first: every round can be written as JSON lines (WriteRound,
// read back by ReadRounds), and Summarize recomputes every figure from the
// rounds. Rollups follow the seed reports' per-namespace tables: in each
// round, the processes of a component, a category or the total are summed;
// min, max and avg are then taken over the rounds.
package sample

import (
	"errors"
	"fmt"
	"slices"
)

// Categories of processes, in the order reports list them.
const (
	CategoryApp          = "app"           // the workloads under test
	CategoryLoad         = "load"          // load generators
	CategoryDataPlane    = "data-plane"    // sidecars, node proxies, waypoints
	CategoryControlPlane = "control-plane" // istiod and the like
	CategoryGateway      = "gateway"       // ingress/egress gateways
	CategoryOverhead     = "overhead"      // meshbench itself and other helpers
	// CategoryMeshIdle is mesh infrastructure that runs but serves no
	// workload of the cell (ztunnel on a cluster with the ambient profile,
	// in a none or sidecar cell whose namespace is not enrolled): shown,
	// never in the data plane's sums.
	CategoryMeshIdle = "mesh-idle"
)

// Categories lists every category in report order.
var Categories = []string{CategoryApp, CategoryLoad, CategoryDataPlane, CategoryControlPlane, CategoryGateway, CategoryMeshIdle, CategoryOverhead}

// ValidCategory reports whether c is one of Categories.
func ValidCategory(c string) bool { return slices.Contains(Categories, c) }

// Target is one process to sample and the labels its figures are rolled up
// by.
type Target struct {
	// PID is the process ID (> 0).
	PID int `json:"pid"`
	// Name identifies the process in reports, e.g. "server-0 sidecar".
	Name string `json:"name"`
	// Component groups processes of the same role, e.g. "server sidecar",
	// "node proxy node2", "waypoint", "app static", "load".
	Component string `json:"component"`
	// Category is one of Categories.
	Category string `json:"category"`
}

// Validate reports every problem of t at once.
func (t Target) Validate() error {
	var errs []error
	if t.PID <= 0 {
		errs = append(errs, fmt.Errorf("PID %d is not positive", t.PID))
	}
	if t.Name == "" {
		errs = append(errs, errors.New("empty name"))
	}
	if t.Component == "" {
		errs = append(errs, errors.New("empty component"))
	}
	if !ValidCategory(t.Category) {
		errs = append(errs, fmt.Errorf("category %q is not one of %v", t.Category, Categories))
	}
	if len(errs) > 0 {
		return fmt.Errorf("sample target %q: %w", t.Name, errors.Join(errs...))
	}
	return nil
}
