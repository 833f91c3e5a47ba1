package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
)

// Search is one capacity search of a plan: a configuration and a
// repetition. Its probes are cells with IDs ProbeID(ID, n).
type Search struct {
	ID string
	// Settings are the configuration's; each probe sets its Load.
	Settings platform.Settings
}

// SearchOptions is a plan of capacity searches.
type SearchOptions struct {
	Dir      string
	Resume   bool
	PlanYAML []byte
	Seed     int64
	// Rounds are the searches, one round per repetition, each in the order
	// its probes interleave: probe 1 of every search of the round in this
	// order, then probe 2 of those still searching, and so on.
	Rounds [][]Search
	// Config is the search (from, to, precision, growth).
	Config capacity.Config
	// ProbeID names probe n (from 1) of a search.
	ProbeID func(searchID string, n int) string
	// Judge reads a finished probe cell's directory and says whether it met
	// the objective (or the generator was the limit). It is the only
	// input of the search besides Config, so a resumed search replays
	// its stored probes without running them again.
	Judge func(cellDir string, rate float64) (capacity.Probe, error)

	Version, EnvoyVersion string
	Progress              func(ev Event)
	// On runs the probes.
	On platform.Platform
}

// errProbeFailed marks a probe that left nothing to judge.
var errProbeFailed = errors.New("probe failed")

// RunSearches runs every search step by step until each has ended, writing
// every probe as a cell of the plan directory (cells/ID, manifest order in
// the order probes ran). On resume, finished probes are judged from their
// directories and never run again; a probe cut short is discarded and run
// again. It returns each search's result by ID.
func RunSearches(ctx context.Context, o SearchOptions) (map[string]capacity.Result, *results.PlanManifest, error) {
	m, err := openSearch(o)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]capacity.Result{}
	on := o.On
	defer on.Teardown("")
	total := 0
	for _, r := range o.Rounds {
		total += len(r)
	}
	index := 0
	for _, round := range o.Rounds {
		probes := map[string][]capacity.Probe{}
		active := append([]Search(nil), round...)
		for step := 1; len(active) > 0; step++ {
			var still []Search
			for _, s := range active {
				rate, done, res, err := nextProbe(o, m, s, probes)
				if err != nil {
					return out, m, err
				}
				if done {
					out[s.ID] = res
					continue
				}
				id := o.ProbeID(s.ID, len(probes[s.ID])+1)
				if st := m.Cells[id]; st != nil && st.Finished() {
					// nextProbe judged every finished probe; a finished
					// one here means the search moved on without it.
					return out, m, fmt.Errorf("probe %s: finished but not judged", id)
				}
				if err := ctx.Err(); err != nil {
					return out, m, err
				}
				index++
				p, err := runProbe(ctx, o, m, on, s, id, rate, index, total)
				if ctx.Err() != nil {
					return out, m, ctx.Err()
				}
				if err != nil {
					p = capacity.Probe{RatePerSec: rate, Failed: true, Reason: errString(err)}
				}
				probes[s.ID] = append(probes[s.ID], p)
				still = append(still, s)
			}
			active = still
		}
	}
	m.Complete = true
	return out, m, save(o.Dir, m)
}

// nextProbe replays search s's finished probes (judging each from its
// directory once, into probes) and returns the next rate, or the result.
func nextProbe(o SearchOptions, m *results.PlanManifest, s Search, probes map[string][]capacity.Probe) (float64, bool, capacity.Result, error) {
	for {
		rate, done, res := capacity.Next(o.Config, probes[s.ID])
		if done {
			return 0, true, res, nil
		}
		id := o.ProbeID(s.ID, len(probes[s.ID])+1)
		st := m.Cells[id]
		if st == nil || !st.Finished() {
			return rate, false, capacity.Result{}, nil
		}
		p, err := judgeStored(o, id, st, rate)
		if err != nil {
			return 0, false, capacity.Result{}, err
		}
		probes[s.ID] = append(probes[s.ID], p)
	}
}

// judgeStored judges a probe finished before (a resumed plan).
func judgeStored(o SearchOptions, id string, st *results.CellStatus, rate float64) (capacity.Probe, error) {
	dir := results.CellDir(o.Dir, id)
	if _, err := os.Stat(filepath.Join(dir, results.ManifestFile)); err != nil {
		return capacity.Probe{RatePerSec: rate, Failed: true, Reason: st.Error}, nil
	}
	p, err := o.Judge(dir, rate)
	if err != nil {
		return capacity.Probe{}, fmt.Errorf("judging probe %s: %w", id, err)
	}
	return p, nil
}

// runProbe runs one probe as a cell and judges it.
func runProbe(ctx context.Context, o SearchOptions, m *results.PlanManifest, on platform.Platform, s Search, id string, rate float64,
	index, total int) (capacity.Probe, error) {
	c := platform.Cell{ID: id, Settings: s.Settings}
	r, rerr := loadgen.RateOf(rate)
	if rerr != nil {
		return capacity.Probe{}, fmt.Errorf("probe %s: %w", id, rerr)
	}
	c.Settings.Load = loadgen.OpenLoop(r)
	st := &results.CellStatus{State: results.CellPending}
	if old := m.Cells[id]; old == nil {
		m.Order = append(m.Order, id)
	}
	m.Cells[id] = st
	ev := Event{Index: index, Total: total, Cell: c, Started: time.Now()}
	if o.Progress != nil {
		o.Progress(ev)
	}
	partial := results.CellDir(o.Dir, id) + results.PartialSuffix
	if err := os.RemoveAll(partial); err != nil {
		return capacity.Probe{}, err
	}
	st.Started = ev.Started.UTC()
	// A fresh lab per probe (no Topology: the lab is not kept), and on a
	// cluster every probe deploys its app and deletes it: probes of
	// different configurations alternate.
	res, runErr := on.RunCell(ctx, platform.CellRun{Cell: c, Dir: partial, PlanDir: o.Dir, Manifest: m})
	if ctx.Err() != nil {
		_ = os.RemoveAll(partial)
		*st = results.CellStatus{State: results.CellPending}
		on.Teardown("interrupted")
		_ = save(o.Dir, m)
		return capacity.Probe{}, ctx.Err()
	}
	st.Ended = time.Now().UTC()
	var judged capacity.Probe
	var err error
	if res == nil || res.Manifest == nil {
		_ = os.RemoveAll(partial)
		st.State, st.Valid, st.Error = results.CellFailed, false, errString(runErr)
		err = fmt.Errorf("%w: %s", errProbeFailed, errString(runErr))
	} else {
		st.State, st.Valid, st.Invalid = results.CellDone, res.Manifest.Valid, res.Manifest.Invalid
		if e := os.Rename(partial, results.CellDir(o.Dir, id)); e != nil {
			return capacity.Probe{}, e
		}
		res.Dir = results.CellDir(o.Dir, id)
		judged, err = o.Judge(res.Dir, rate)
		if runErr != nil && !errors.Is(runErr, platform.ErrInvalid) {
			st.State, st.Valid, st.Error = results.CellFailed, false, errString(runErr)
			err = runErr
		}
	}
	if e := save(o.Dir, m); e != nil {
		return capacity.Probe{}, e
	}
	if o.Progress != nil {
		ev.Done, ev.Status, ev.Result, ev.Err = true, st, res, runErr
		o.Progress(ev)
	}
	return judged, err
}

// openSearch creates the plan directory, or checks and reopens it on
// resume. The manifest's order grows as probes run.
func openSearch(o SearchOptions) (*results.PlanManifest, error) {
	if len(o.Rounds) == 0 {
		return nil, errors.New("the plan has no searches")
	}
	if o.On == nil {
		return nil, errors.New("no platform to run the probes on")
	}
	if o.Resume {
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
		if m.Seed != o.Seed {
			return nil, fmt.Errorf("%s was run with seed %d; resuming needs the same seed", o.Dir, m.Seed)
		}
		entries, err := os.ReadDir(filepath.Join(o.Dir, results.CellsDir))
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if filepath.Ext(e.Name()) == results.PartialSuffix {
				if err := os.RemoveAll(filepath.Join(o.Dir, results.CellsDir, e.Name())); err != nil {
					return nil, err
				}
			}
		}
		for id, st := range m.Cells {
			if !st.Finished() {
				*st = results.CellStatus{State: results.CellPending}
				_ = os.RemoveAll(results.CellDir(o.Dir, id))
			}
		}
		m.Resumes++
		return m, save(o.Dir, m)
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
	m := &results.PlanManifest{Schema: results.PlanSchema, MeshbenchVersion: o.Version, EnvoyVersion: o.EnvoyVersion,
		Platform: o.On.Name(), Seed: o.Seed, Created: time.Now().UTC(), Host: results.ReadHost(),
		Cells: map[string]*results.CellStatus{}}
	return m, save(o.Dir, m)
}
