package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/local"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestMain removes the meshbench build the tests make.
func TestMain(m *testing.M) { testutil.Main(m) }

// labCells: n real cells of mode none (no Envoy needed), 1 s each, for
// the local lab.
func labCells(n int) []platform.Cell {
	var out []platform.Cell
	for i := range n {
		mo := topology.DefaultOptions()
		mo.LoopbackNet = 60
		out = append(out, platform.Cell{ID: "none-r100-rep" + string(rune('0'+i)), Settings: platform.Settings{Mesh: mo, Load: loadgen.OpenLoopPerSecond(100),
			Duration: time.Second, Warmup: 200 * time.Millisecond, SampleInterval: 250 * time.Millisecond, Drain: 250 * time.Millisecond}})
	}
	return out
}

// TestRunInterruptedThenResumed interrupts a plan while its second cell
// runs, then resumes it: the finished cell is not run again, the cut cell
// is discarded and run again, the platform is torn down after the cut, and
// the final directory has the same structure as an uninterrupted run's.
func TestRunInterruptedThenResumed(t *testing.T) {
	cs := fakeCells(3)
	dir := filepath.Join(t.TempDir(), "plan")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The second cell gets going, writes its manifest, and is interrupted.
	on := &fakePlatform{block: map[string]func(){cs[1].ID: cancel}}
	o := Options{Dir: dir, PlanYAML: []byte("plan: test\n"), Seed: 7, Cells: cs, Version: "test", On: on}
	m, err := Run(ctx, o)
	if err == nil {
		t.Fatal("interrupted plan returned no error")
	}
	if st := m.Cells[cs[0].ID]; st.State != results.CellDone || !st.Valid {
		t.Fatalf("first cell %+v, want done and valid", st)
	}
	if st := m.Cells[cs[1].ID]; st.State != results.CellPending {
		t.Fatalf("cut cell %+v, want pending", st)
	}
	if _, err := os.Stat(results.CellDir(dir, cs[1].ID) + results.PartialSuffix); err == nil {
		t.Error("cut cell's partial directory kept")
	}
	first, err := results.ReadManifest(results.CellDir(dir, cs[0].ID))
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a crash mid-cell too: a half-written directory on disk.
	if err := os.MkdirAll(results.CellDir(dir, cs[2].ID)+results.PartialSuffix, 0o755); err != nil {
		t.Fatal(err)
	}

	if got, want := on.took(), "run c1, run c2, teardown interrupted, teardown "; got != want {
		t.Errorf("platform calls %q, want %q", got, want)
	}

	o.Resume, o.Progress = true, nil
	var ran []string
	o.Progress = func(ev Event) {
		if !ev.Done {
			ran = append(ran, ev.Cell.ID)
		}
	}
	m, err = Run(context.Background(), o)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got := strings.Join(ran, ","); got != cs[1].ID+","+cs[2].ID {
		t.Errorf("resume ran %s, want only the unfinished cells", got)
	}
	again, err := results.ReadManifest(results.CellDir(dir, cs[0].ID))
	if err != nil || !again.StartedAt.Equal(first.StartedAt) {
		t.Errorf("finished cell rewritten: %v %v → %v", err, first.StartedAt, again.StartedAt)
	}
	if !m.Complete || m.Resumes != 1 {
		t.Errorf("complete %v resumes %d, want true 1", m.Complete, m.Resumes)
	}

	// Same structure as an uninterrupted run of the same plan.
	dir2 := filepath.Join(t.TempDir(), "plan2")
	o2 := Options{Dir: dir2, PlanYAML: o.PlanYAML, Seed: 7, Cells: cs, Version: "test", On: &fakePlatform{}}
	if _, err := Run(context.Background(), o2); err != nil {
		t.Fatal(err)
	}
	if a, b := tree(t, dir), tree(t, dir2); a != b {
		t.Errorf("resumed plan's files differ from an uninterrupted run's:\n%s\nvs\n%s", a, b)
	}
}

// tree lists the files of a plan directory, logs and samples aside.
func tree(t *testing.T, dir string) string {
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if !d.IsDir() && !strings.HasPrefix(filepath.Base(rel), ".") {
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// TestRunRefusesOtherPlan: resuming with another plan, or starting in a
// directory that holds files, is one clear error and runs nothing.
func TestRunRefusesOtherPlan(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o644)
	cs := []platform.Cell{{ID: "a"}}
	on := &fakePlatform{}
	if _, err := Run(context.Background(), Options{Dir: dir, Cells: cs, On: on}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("start in a used directory: %v", err)
	}
	dir = filepath.Join(t.TempDir(), "p")
	os.MkdirAll(filepath.Join(dir, results.CellsDir), 0o755)
	os.WriteFile(filepath.Join(dir, results.PlanFile), []byte("plan: a\n"), 0o644)
	results.WritePlanManifest(dir, &results.PlanManifest{Schema: results.PlanSchema, Seed: 1, Order: []string{"a"}})
	if _, err := Run(context.Background(), Options{Dir: dir, Resume: true, PlanYAML: []byte("plan: b\n"), Seed: 1, Cells: cs, On: on}); err == nil ||
		!strings.Contains(err.Error(), "another plan") {
		t.Errorf("resume with another plan: %v", err)
	}
	if _, err := Run(context.Background(), Options{Dir: dir, Cells: []platform.Cell{{ID: "a/b"}}, On: on}); err == nil {
		t.Error("cell ID with a path separator accepted")
	}
	// A plan that started on one substrate does not resume on another:
	// its cells would mix network paths.
	results.WritePlanManifest(dir, &results.PlanManifest{Schema: results.PlanSchema, Seed: 1, Order: []string{"a"}, Substrate: "netns"})
	if _, err := Run(context.Background(), Options{Dir: dir, Resume: true, PlanYAML: []byte("plan: a\n"), Seed: 1, Cells: cs, Substrate: "loopback", On: on}); err == nil ||
		!strings.Contains(err.Error(), "never mixes substrates") {
		t.Errorf("resume of a netns plan on loopback: %v", err)
	}
}

// TestRunReusesLabs: consecutive cells of one topology share a lab (the
// same app process serves them), a cell of another topology gets its own,
// a topology that comes back later is started again, the manifest records
// each lab with its cells, and nothing is left running.
func TestRunReusesLabs(t *testing.T) {
	cs := labCells(4)
	for i := range cs {
		cs[i].Topology = "none-x1"
	}
	cs[2].Settings.Mesh.Replicas, cs[2].Topology = 2, "none-x2"
	dir := filepath.Join(t.TempDir(), "plan")
	lab := local.NewPlatform(local.Options{Meshbench: testutil.BuildMeshbench(t), IdleTimeout: 5 * time.Second, Version: "test"})
	m, err := Run(context.Background(), Options{Dir: dir, PlanYAML: []byte("plan: reuse\n"), Seed: 1, Cells: cs, Version: "test", On: lab})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range m.Labs {
		got = append(got, l.Topology+":"+strings.Join(l.Cells, "+"))
		if l.Stopped.IsZero() || l.Error != "" {
			t.Errorf("lab %s: stopped %v, error %q", l.Dir, l.Stopped, l.Error)
		}
		if _, err := os.Stat(filepath.Join(dir, l.Dir, results.LogsDir)); err != nil {
			t.Errorf("lab %s: no logs directory: %v", l.Dir, err)
		}
	}
	want := "none-x1:" + cs[0].ID + "+" + cs[1].ID + ",none-x2:" + cs[2].ID + ",none-x1:" + cs[3].ID
	if strings.Join(got, ",") != want {
		t.Errorf("labs %s, want %s", strings.Join(got, ","), want)
	}
	apps := make([]map[string]int, len(cs))
	for i, c := range cs {
		rm, err := results.ReadManifest(results.CellDir(dir, c.ID))
		if err != nil {
			t.Fatal(err)
		}
		if !rm.Valid {
			t.Errorf("cell %s invalid: %q", c.ID, rm.Invalid)
		}
		apps[i] = map[string]int{}
		for _, p := range rm.Processes {
			if p.Category == "app" {
				apps[i][p.Name] = p.PID
			}
			if err := syscall.Kill(p.PID, 0); err == nil {
				if b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "stat")); len(b) > 0 && !strings.Contains(string(b), ") Z ") {
					t.Errorf("cell %s: %s (pid %d) still running", c.ID, p.Name, p.PID)
				}
			}
		}
	}
	if !reflect.DeepEqual(apps[0], apps[1]) || len(apps[0]) != 1 {
		t.Errorf("cells 1 and 2 ran on apps %v and %v, want the same one", apps[0], apps[1])
	}
	if len(apps[2]) != 2 || reflect.DeepEqual(apps[0], apps[3]) {
		t.Errorf("apps: cell 3 %v (want 2 of its own), cell 4 %v (want a new one, not %v)", apps[2], apps[3], apps[0])
	}
}

// TestResumeRetriesFailedCells: a cell that failed for an environmental
// reason (its lab's address was taken) measured nothing; --resume runs it
// again, keeping what it left as ID.failed-N, and leaves done cells alone.
// (Once, such a plan answered "2 of 2 cells already finished" forever.)
// A cell that failed after writing its manifest is kept, as failed.
func TestResumeRetriesFailedCells(t *testing.T) {
	cs := fakeCells(3)
	dir := filepath.Join(t.TempDir(), "plan")
	// c1 fails measuring nothing; c3 fails after its manifest was written
	// (a cluster cell whose mesh check failed keeps the checks).
	on := &fakePlatform{fail: map[string]error{cs[0].ID: errAddressInUse, cs[2].ID: errors.New("mesh not ready")},
		dirty: map[string]bool{cs[2].ID: true}}
	o := Options{Dir: dir, PlanYAML: []byte("plan: test\n"), Seed: 7, Cells: cs, Version: "test", On: on}
	m, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if st := m.Cells[cs[0].ID]; st.State != results.CellFailed || !strings.Contains(st.Error, "in use") {
		t.Fatalf("first cell %+v, want failed: address in use", st)
	}
	if _, err := os.Stat(results.CellDir(dir, cs[0].ID)); err == nil {
		t.Error("a cell that measured nothing left a directory")
	}
	if st := m.Cells[cs[1].ID]; st.State != results.CellDone {
		t.Fatalf("second cell %+v, want done", st)
	}
	if st := m.Cells[cs[2].ID]; st.State != results.CellFailed || st.Error != "mesh not ready" {
		t.Fatalf("third cell %+v, want failed: mesh not ready", st)
	}
	if _, err := results.ReadManifest(results.CellDir(dir, cs[2].ID)); err != nil {
		t.Errorf("the failed cell's manifest was not kept: %v", err)
	}
	if !m.Complete {
		t.Error("every cell ended (two failed), yet the plan is not complete")
	}
	second, err := results.ReadManifest(results.CellDir(dir, cs[1].ID))
	if err != nil {
		t.Fatal(err)
	}

	o.Resume = true
	var ran []string
	o.Progress = func(ev Event) {
		if !ev.Done {
			ran = append(ran, ev.Cell.ID)
		}
	}
	if m, err = Run(context.Background(), o); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if got, want := strings.Join(ran, ","), cs[0].ID+","+cs[2].ID; got != want {
		t.Errorf("resume ran %q, want only the failed cells %s", got, want)
	}
	if _, err := results.ReadManifest(results.CellDir(dir, cs[2].ID) + FailedSuffix + "1"); err != nil {
		t.Errorf("what the failed cell left is not kept beside it: %v", err)
	}
	if st := m.Cells[cs[0].ID]; st.State != results.CellDone || !st.Valid {
		t.Errorf("retried cell %+v, want done and valid", st)
	}
	again, err := results.ReadManifest(results.CellDir(dir, cs[1].ID))
	if err != nil || !again.StartedAt.Equal(second.StartedAt) {
		t.Errorf("done cell rewritten: %v", err)
	}
	if !m.Complete {
		t.Error("plan not complete after the retry")
	}
}

// TestRunTearsDown: the platform is torn down when the next cell to run
// has another topology (so its teardown is not timed as part of that
// cell), after the last cell, and once more at the end of the run.
func TestRunTearsDown(t *testing.T) {
	cs := fakeCells(5)
	for i, topo := range []string{"a", "a", "b", "", ""} {
		cs[i].Topology = topo
	}
	on := &fakePlatform{}
	dir := filepath.Join(t.TempDir(), "plan")
	m, err := Run(context.Background(), Options{Dir: dir, PlanYAML: []byte("plan: t\n"), Seed: 1, Cells: cs, On: on})
	if err != nil {
		t.Fatal(err)
	}
	want := "run c1, run c2, teardown , run c3, teardown , run c4, run c5, teardown , teardown "
	if got := on.took(); got != want {
		t.Errorf("platform calls\n%s\nwant\n%s", got, want)
	}
	if m.Platform != "fake" || !m.Complete {
		t.Errorf("manifest platform %q complete %v, want the platform's name and complete", m.Platform, m.Complete)
	}
}

// A lab a fault ran on is torn down after that cell, even when the next
// cell shares its topology: Linkerd's balancer, still avoiding a replica
// it had seen slow seconds before, made the healthy cell after a
// slow-replica cell on the same lab invalid (no request reached that
// replica).
func TestRunTearsDownAfterAFault(t *testing.T) {
	f, err := fault.Parse("slow-replica:1=50ms@3s+3s")
	if err != nil {
		t.Fatal(err)
	}
	cs := fakeCells(4)
	for i := range cs {
		cs[i].Topology = "a"
	}
	cs[1].Settings.Fault = f
	on := &fakePlatform{}
	dir := filepath.Join(t.TempDir(), "plan")
	if _, err := Run(context.Background(), Options{Dir: dir, PlanYAML: []byte("plan: t\n"), Seed: 1, Cells: cs, On: on}); err != nil {
		t.Fatal(err)
	}
	want := "run c1, run c2, teardown , run c3, run c4, teardown , teardown "
	if got := on.took(); got != want {
		t.Errorf("platform calls\n%s\nwant\n%s", got, want)
	}
}
