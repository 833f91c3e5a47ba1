package runner

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
)

// fakePlatform is a Platform that measures nothing: a stand-in for the
// local lab and the cluster in the tests of Run's own logic (order, resume,
// interruption, failures, when to tear down), so they need no real cells;
// TestRunReusesLabs runs real cells on the local lab, and the kube package
// runs real cells on a cluster.
type fakePlatform struct {
	mu    sync.Mutex
	calls []string          // "run ID" and "teardown WHY" in the order they came
	fail  map[string]error  // cells that fail once with this error, measuring nothing
	block map[string]func() // cells that call this once, then wait for their ctx to end
	dirty map[string]bool   // failing cells that leave their manifest behind
	run   int               // cells run, for distinct start times
}

func (*fakePlatform) Name() string { return "fake" }

// RunCell writes a valid run manifest into r.Dir, as a cell that ran
// would, or fails or blocks as the cell is set up to.
func (f *fakePlatform) RunCell(ctx context.Context, r platform.CellRun) (*platform.Result, error) {
	id := r.Cell.ID
	f.mu.Lock()
	f.calls = append(f.calls, "run "+id)
	f.run++
	n := f.run
	err, fails := f.fail[id]
	delete(f.fail, id)
	block := f.block[id]
	delete(f.block, id)
	f.mu.Unlock()
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return nil, err
	}
	m := &results.RunManifest{Schema: results.RunSchema, Platform: "fake", Valid: true,
		StartedAt: time.Date(2026, 1, 1, 0, 0, n, 0, time.UTC)}
	if block != nil {
		block()
		<-ctx.Done()
		return &platform.Result{Dir: r.Dir, Manifest: m}, ctx.Err()
	}
	if fails {
		if f.dirty[id] {
			if werr := writeManifest(r.Dir, m); werr != nil {
				return nil, werr
			}
		}
		return nil, err
	}
	if err := writeManifest(r.Dir, m); err != nil {
		return nil, err
	}
	return &platform.Result{Dir: r.Dir, Manifest: m}, nil
}

func (f *fakePlatform) Teardown(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "teardown "+why)
}

func (f *fakePlatform) took() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.calls, ", ")
}

func writeManifest(dir string, m *results.RunManifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, results.ManifestFile), b, 0o644)
}

// fakeCells are n cells named c1, c2, … for a fake platform.
func fakeCells(n int) []platform.Cell {
	var out []platform.Cell
	for i := range n {
		out = append(out, platform.Cell{ID: "c" + string(rune('1'+i))})
	}
	return out
}

var errAddressInUse = errors.New("listen tcp 127.0.60.1:8080: bind: address already in use")
