package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// PlanSchema names the version of a plan results directory's manifest.
const PlanSchema = "meshbench.plan/v1"

// Files and directories of a plan results directory:
//
//	DIR/plan.yaml            the plan, every default filled in
//	DIR/plan-manifest.json   PlanManifest: seed, cell order, state of every cell
//	DIR/cells/ID/            one run results directory per finished cell
//	DIR/cells/ID.partial/    a cell being written; discarded on resume
//	DIR/labs/KEY.N/          a topology several cells ran on: certificates,
//	                         Envoy configs, the apps' and Envoys' logs
const (
	PlanFile         = "plan.yaml"
	PlanManifestFile = "plan-manifest.json"
	CellsDir         = "cells"
	PartialSuffix    = ".partial"
	LabsDir          = "labs"
)

// Cell states in a PlanManifest.
const (
	CellPending = "pending" // not run yet (or discarded half-written)
	CellDone    = "done"    // finished; Valid says whether it may be used
	CellFailed  = "failed"  // ended with an error; its results are kept, invalid
)

// PlanManifest describes a plan run: what was asked, in which order the
// cells run, and where each stands. It is rewritten (atomically) after
// every cell, so an interrupted plan can resume.
type PlanManifest struct {
	Schema           string `json:"schema"`
	MeshbenchVersion string `json:"meshbench_version"`
	EnvoyVersion     string `json:"envoy_version,omitempty"`
	Platform         string `json:"platform"`
	// Substrate is the local lab's network every cell ran on: "netns" or
	// "loopback" ("" on a cluster, and in plans from before substrates).
	Substrate string    `json:"substrate,omitempty"`
	Seed      int64     `json:"seed"` // the seed of the cell order
	Created   time.Time `json:"created"`
	Updated   time.Time `json:"updated"`
	Host      Host      `json:"host"`
	// Order lists the cell IDs in the order they run.
	Order []string `json:"order"`
	// Cells maps a cell ID to its state.
	Cells map[string]*CellStatus `json:"cells"`
	// Resumes counts how often the plan was resumed.
	Resumes int `json:"resumes"`
	// Complete is true once every cell is done or failed.
	Complete bool `json:"complete"`
	// Labs lists the topologies the runner kept up across cells, in the
	// order they started.
	Labs []*LabRecord `json:"labs,omitempty"`
}

// LabRecord is one running topology of a plan run and the cells that ran
// on it.
type LabRecord struct {
	Dir      string    `json:"dir"` // relative to the plan directory
	Topology string    `json:"topology"`
	Started  time.Time `json:"started"`
	Stopped  time.Time `json:"stopped,omitzero"`
	Cells    []string  `json:"cells,omitempty"`
	// Error says why it failed to start, was given up or failed to stop.
	Error string `json:"error,omitempty"`
}

// CellStatus is where one cell of a plan stands.
type CellStatus struct {
	State   string    `json:"state"` // CellPending, CellDone, CellFailed
	Valid   bool      `json:"valid"`
	Invalid []string  `json:"invalid,omitempty"`
	Error   string    `json:"error,omitempty"`
	Started time.Time `json:"started,omitzero"`
	Ended   time.Time `json:"ended,omitzero"`
}

// Finished reports whether the cell must not run again.
func (c *CellStatus) Finished() bool { return c.State == CellDone || c.State == CellFailed }

// CellDir is the results directory of a finished cell.
func CellDir(planDir, id string) string { return filepath.Join(planDir, CellsDir, id) }

// WritePlanManifest writes m to dir atomically (a temporary file renamed),
// so a crash never leaves half a manifest.
func WritePlanManifest(dir string, m *PlanManifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, PlanManifestFile), append(b, '\n'), 0o644)
}

// ReadPlanManifest reads dir's plan manifest.
func ReadPlanManifest(dir string) (*PlanManifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, PlanManifestFile))
	if err != nil {
		return nil, fmt.Errorf("%s is not a plan results directory: %w", dir, err)
	}
	var m PlanManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, PlanManifestFile), err)
	}
	if m.Schema != PlanSchema {
		return nil, fmt.Errorf("%s: schema %q, this meshbench reads %q", filepath.Join(dir, PlanManifestFile), m.Schema, PlanSchema)
	}
	if m.Cells == nil {
		m.Cells = map[string]*CellStatus{}
	}
	return &m, nil
}
