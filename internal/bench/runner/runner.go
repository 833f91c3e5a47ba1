// Package runner runs a benchmark plan's cells on a platform.Platform (the
// local lab, a Kubernetes cluster, or a fake in tests), one after the
// other in the plan's order, writing each finished cell into the plan
// results directory as it ends, and resumes an interrupted plan without
// re-running or overwriting a finished cell. It knows no platform's
// options: a cell is its ID and its settings (platform.Cell).
//
// A cell is written into cells/ID.partial and renamed to cells/ID when it
// has ended; the plan manifest is rewritten atomically after each cell.
// On resume, .partial directories (a cell cut short) are discarded and
// their cells run again, and so are cells that failed (they measured
// nothing: a full disk, an address in use); cells that ran are not, even
// when they were judged invalid.
//
// Consecutive cells with the same Topology may share what the platform
// keeps up between them (the local lab: local.Platform); the runner tears
// the platform down before a cell of another topology, after a cell cut
// short, and at the end.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
)

// Options is a plan run.
type Options struct {
	// Dir is the plan results directory. Without Resume it must not exist
	// (or be empty); with Resume it must hold a plan run of the same plan.
	Dir    string
	Resume bool
	// PlanYAML is the plan with every default filled in; it is written to
	// DIR/plan.yaml, and on resume must equal what is there.
	PlanYAML []byte
	// Seed is the seed the order came from, recorded in the manifest.
	Seed int64
	// Cells are the cells in the order they run.
	Cells []platform.Cell
	// Version and EnvoyVersion go into the manifest.
	Version, EnvoyVersion string
	// Platform is where the cells run, for the manifest: "local" or
	// "kube"; "": On's name.
	Platform string
	// On is the platform the cells run on.
	On platform.Platform
	// Substrate is the local lab's network of every cell, for the
	// manifest ("netns", "loopback"); a resume must run on the one the
	// plan started on: a plan never mixes substrates.
	Substrate string
	// Progress, when set, is called before each cell runs (res nil) and
	// after it ends (res as the platform returned it, possibly nil).
	Progress func(ev Event)
}

// Event reports a cell starting or ending.
type Event struct {
	Index, Total int // Index counts from 1 over every cell of the plan
	Skipped      int // cells already finished before this run started
	Cell         platform.Cell
	Started      time.Time
	Done         bool // false: starting; true: ended
	Status       *results.CellStatus
	Result       *platform.Result
	Err          error
}

// Run runs every unfinished cell and returns the manifest as it stands at
// the end. A cancelled ctx stops after discarding the cell it cut short;
// the plan can then be resumed. It returns ctx's error in that case.
func Run(ctx context.Context, o Options) (*results.PlanManifest, error) {
	m, err := open(o)
	if err != nil {
		return nil, err
	}
	skipped := 0
	for _, c := range o.Cells {
		if m.Cells[c.ID].Finished() {
			skipped++
		}
	}
	on := o.On
	defer on.Teardown("")
	for i, c := range o.Cells {
		st := m.Cells[c.ID]
		if st.Finished() {
			continue
		}
		if err := ctx.Err(); err != nil {
			return m, err
		}
		ev := Event{Index: i + 1, Total: len(o.Cells), Skipped: skipped, Cell: c, Started: time.Now()}
		if o.Progress != nil {
			o.Progress(ev)
		}
		partial := results.CellDir(o.Dir, c.ID) + results.PartialSuffix
		if err := os.RemoveAll(partial); err != nil {
			return m, err
		}
		st.Started = ev.Started.UTC()
		res, runErr := on.RunCell(ctx, platform.CellRun{Cell: c, Dir: partial, PlanDir: o.Dir, Manifest: m})
		if ctx.Err() != nil {
			// Cut short: not a measurement. Discard it; resume runs it again.
			_ = os.RemoveAll(partial)
			*st = results.CellStatus{State: results.CellPending}
			on.Teardown("interrupted")
			_ = save(o.Dir, m)
			return m, ctx.Err()
		}
		st.Ended = time.Now().UTC()
		_, manifestErr := os.Stat(filepath.Join(partial, results.ManifestFile))
		switch {
		case (res == nil || res.Manifest == nil) && manifestErr == nil:
			// Failed after its directory was written (a cluster cell whose
			// mesh check failed keeps the checks): kept, as failed.
			st.State, st.Valid = results.CellFailed, false
			st.Error = errString(runErr)
			if err := os.Rename(partial, results.CellDir(o.Dir, c.ID)); err != nil {
				return m, err
			}
		case res == nil || res.Manifest == nil:
			// Nothing was measured (e.g. an address in use): no directory.
			_ = os.RemoveAll(partial)
			st.State, st.Valid = results.CellFailed, false
			st.Error = errString(runErr)
		default:
			st.State, st.Valid, st.Invalid = results.CellDone, res.Manifest.Valid, res.Manifest.Invalid
			if runErr != nil {
				st.State, st.Valid, st.Error = results.CellFailed, false, errString(runErr)
			}
			if err := os.Rename(partial, results.CellDir(o.Dir, c.ID)); err != nil {
				return m, err
			}
			res.Dir = results.CellDir(o.Dir, c.ID)
		}
		// Tear down now what the next cell to run will not use, so its
		// teardown is not counted in the next cell's time. A lab a fault
		// ran on is not handed on: what the fault leaves behind (a
		// balancer still avoiding the replica it saw slow, a restarted
		// proxy's fresh state) would reach the next cell.
		if next := nextPending(m, o.Cells, i+1); next == nil || next.Topology != c.Topology || !c.Settings.Fault.Zero() {
			on.Teardown("")
		}
		m.Complete = allFinished(m, o.Cells)
		if err := save(o.Dir, m); err != nil {
			return m, err
		}
		if o.Progress != nil {
			ev.Done, ev.Status, ev.Result, ev.Err = true, st, res, runErr
			o.Progress(ev)
		}
	}
	m.Complete = allFinished(m, o.Cells)
	return m, save(o.Dir, m)
}

// nextPending is the first unfinished cell from index from on, or nil.
func nextPending(m *results.PlanManifest, cells []platform.Cell, from int) *platform.Cell {
	for i := from; i < len(cells); i++ {
		if !m.Cells[cells[i].ID].Finished() {
			return &cells[i]
		}
	}
	return nil
}

// FailedSuffix ends the name a failed cell's directory is kept under when
// a resume runs the cell again (cells/ID.failed-N, N the resume).
const FailedSuffix = ".failed-"

// keepFailed moves a failed cell's directory, if it left one, to
// cells/ID.failed-N.
func keepFailed(planDir, id string, resume int) error {
	dir := results.CellDir(planDir, id)
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	return os.Rename(dir, dir+FailedSuffix+strconv.Itoa(resume))
}

func errString(err error) string {
	if err == nil {
		return "no result"
	}
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

func allFinished(m *results.PlanManifest, cells []platform.Cell) bool {
	for _, c := range cells {
		if !m.Cells[c.ID].Finished() {
			return false
		}
	}
	return true
}

func save(dir string, m *results.PlanManifest) error {
	m.Updated = time.Now().UTC()
	return results.WritePlanManifest(dir, m)
}

// open creates the plan directory, or checks and reopens it on resume.
func open(o Options) (*results.PlanManifest, error) {
	if len(o.Cells) == 0 {
		return nil, errors.New("the plan has no cells")
	}
	if o.On == nil {
		return nil, errors.New("no platform to run the cells on")
	}
	seen := map[string]bool{}
	order := make([]string, len(o.Cells))
	for i, c := range o.Cells {
		if c.ID == "" || strings.ContainsAny(c.ID, "/\\") || seen[c.ID] {
			return nil, fmt.Errorf("cell ID %q: must be unique, non-empty, without path separators", c.ID)
		}
		seen[c.ID] = true
		order[i] = c.ID
	}
	if o.Resume {
		return reopen(o, order)
	}
	if entries, err := os.ReadDir(o.Dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("results directory %s already holds files; resume it with --resume, or choose another", o.Dir)
	}
	if err := os.MkdirAll(filepath.Join(o.Dir, results.CellsDir), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(o.Dir, results.PlanFile), o.PlanYAML, 0o644); err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	platform := o.Platform
	if platform == "" {
		platform = o.On.Name()
	}
	m := &results.PlanManifest{Schema: results.PlanSchema, MeshbenchVersion: o.Version, EnvoyVersion: o.EnvoyVersion,
		Platform: platform, Substrate: o.Substrate, Seed: o.Seed, Created: now, Host: results.ReadHost(), Order: order,
		Cells: map[string]*results.CellStatus{}}
	for _, id := range order {
		m.Cells[id] = &results.CellStatus{State: results.CellPending}
	}
	return m, save(o.Dir, m)
}

// reopen checks that Dir holds this plan, discards half-written cells and
// returns the manifest, each cell's state checked against the directory.
func reopen(o Options, order []string) (*results.PlanManifest, error) {
	m, err := results.ReadPlanManifest(o.Dir)
	if err != nil {
		return nil, err
	}
	old, err := os.ReadFile(filepath.Join(o.Dir, results.PlanFile))
	if err != nil {
		return nil, err
	}
	if !plan.SameYAML(old, o.PlanYAML) {
		return nil, fmt.Errorf("%s holds another plan than the one given: resume with the plan in it (meshbench bench --resume %s)", o.Dir, o.Dir)
	}
	if m.Seed != o.Seed || strings.Join(m.Order, ",") != strings.Join(order, ",") {
		return nil, fmt.Errorf("%s was run with seed %d; resuming needs the same seed and order", o.Dir, m.Seed)
	}
	if m.Substrate != "" && m.Substrate != o.Substrate {
		return nil, fmt.Errorf("%s ran on the %s substrate and would resume on %s: a plan never mixes substrates (resume where namespaces can be made, or give --substrate %s)",
			o.Dir, m.Substrate, o.Substrate, m.Substrate)
	}
	entries, err := os.ReadDir(filepath.Join(o.Dir, results.CellsDir))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), results.PartialSuffix) {
			if err := os.RemoveAll(filepath.Join(o.Dir, results.CellsDir, e.Name())); err != nil {
				return nil, err
			}
		}
	}
	for _, id := range order {
		st := m.Cells[id]
		if st == nil {
			st = &results.CellStatus{State: results.CellPending}
			m.Cells[id] = st
		}
		if st.State == results.CellFailed {
			// A cell that failed (a full disk, an address in use, a lab
			// that did not start) measured nothing: it runs again. What
			// it left is kept beside it as ID.failed-N. A cell that ran
			// and was judged invalid is done: that is a result.
			if err := keepFailed(o.Dir, id, m.Resumes+1); err != nil {
				return nil, err
			}
			*st = results.CellStatus{State: results.CellPending}
		}
		// A cell recorded as done whose directory is gone is run again; a
		// directory the manifest does not know (a crash between rename and
		// save) is discarded and run again.
		_, statErr := os.Stat(filepath.Join(results.CellDir(o.Dir, id), results.ManifestFile))
		switch {
		case st.State == results.CellDone && statErr != nil:
			*st = results.CellStatus{State: results.CellPending}
		case !st.Finished() && statErr == nil:
			if err := os.RemoveAll(results.CellDir(o.Dir, id)); err != nil {
				return nil, err
			}
		}
	}
	m.Resumes++
	return m, save(o.Dir, m)
}
