package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/schemas"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestBenchBadPlan: a plan file with several problems lists every one with
// its line, exits 2, and runs nothing (no results directory).
func TestBenchBadPlan(t *testing.T) {
	dir := t.TempDir()
	planFile := filepath.Join(dir, "bad.yaml")
	os.WriteFile(planFile, []byte("repetitions: 0\naxes:\n  mesh: [none, istio]\n  rate: [-5]\nduraton: 10s\n"), 0o644)
	out := filepath.Join(dir, "out")
	inv := runCLI(t, nil, "bench", planFile, "--out", out)
	code, stdout, stderr := inv.code, inv.stdout, inv.stderr
	if code != ExitUsage {
		t.Fatalf("exit %d, want %d; stderr %s", code, ExitUsage, stderr)
	}
	for _, want := range []string{"bad.yaml:1:", "bad.yaml:3:", "bad.yaml:4:", "bad.yaml:5:"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if stdout != "" {
		t.Errorf("stdout %q, want nothing", stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("results directory created for a bad plan")
	}
	// Axes in a file and as flags at once: one line, exit 2.
	if inv := runCLI(t, nil, "bench", planFile, "--rate", "5"); inv.code != ExitUsage || !strings.Contains(inv.stderr, "not both (--rate: set it in the plan file") {
		t.Errorf("plan and axis flags: exit %d, %s", inv.code, inv.stderr)
	}
	// A setting that is no axis is refused the same way, named.
	if inv := runCLI(t, nil, "bench", planFile, "--control-plane", "istiod", "--seed", "3"); inv.code != ExitUsage || !strings.Contains(inv.stderr, "(--control-plane: set it in the plan file") {
		t.Errorf("plan and --control-plane: exit %d, %s", inv.code, inv.stderr)
	}
}

// TestBenchRunAndResume runs a small real plan (mode none: apps and load
// generator, no Envoy) with the built binary, checks the comparison and
// the report files, then resumes the finished plan: nothing runs again and
// the report is regenerated.
func TestBenchRunAndResume(t *testing.T) {
	t.Parallel() // waits on short loads: beside the other parallel ones, not after them
	bin := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "plan")
	run := func(args ...string) (string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = t.TempDir()
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		if err := cmd.Run(); err != nil {
			t.Fatalf("meshbench %v: %v\n%s", args, err, se.String())
		}
		return so.String(), se.String()
	}
	stdout, stderr := run("bench", "--mesh", "none", "--rate", "50,100", "--repetitions", "1", "--duration", "1s",
		"--warmup", "200ms", "--drain", "200ms", "--seed", "3", "--out", out, "--loopback-net", "62")
	for _, want := range []string{"== static, 50 rps, 1 replica ==", "== static, 100 rps, 1 replica ==", "p50 ms", "Reports: ", "Plan took"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, "[2/2] none-static-r") || !strings.Contains(stderr, "seed 3") {
		t.Errorf("progress lines missing:\n%s", stderr)
	}
	// stderr is not a terminal: after each cell the compact view (state
	// line, sums, ratios), whose ratios say "-" for a cell without a mesh
	// rather than 0.00%, and no component rows (--components has them).
	for _, want := range []string{"DRAINING (sampling after the load)", "  non-mesh ", "mesh ratio:        CPU - (no mesh), memory - (no mesh)"} {
		if strings.Count(stderr, want) != 2 {
			t.Errorf("stderr has not 2 × %q (one per cell):\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "CPU 0.00%") || strings.Contains(stderr, "memory 0.00%") || strings.Contains(stderr, "\napp static ") {
		t.Errorf("the compact view has a 0.00%% ratio or component rows:\n%s", stderr)
	}
	for _, f := range []string{"report.txt", "report.html", "latency.csv", "figures.csv"} {
		if _, err := os.Stat(filepath.Join(out, ReportDir, f)); err != nil {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil || !m.Complete || m.Seed != 3 {
		t.Fatalf("plan manifest %+v %v", m, err)
	}
	// Both rates of the one topology ran on one lab (topology reuse is
	// the default).
	if len(m.Labs) != 1 || len(m.Labs[0].Cells) != 2 {
		t.Errorf("labs %+v, want one running both cells", m.Labs)
	}
	// Latency over time by default: every cell holds its interval log
	// with one latency line per second of the 1-s window (1 or 2: the
	// last answers may land in the next second), and the report has its
	// two over-time plots per cell.
	for _, id := range m.Order {
		b, err := os.ReadFile(filepath.Join(results.CellDir(out, id), results.HlogFile))
		if n := strings.Count(string(b), "Tag=latency,"); err != nil || n < 1 || n > 2 {
			t.Errorf("cell %s: %s: %v, %d latency intervals:\n%s", id, results.HlogFile, err, n, b)
		}
	}
	for _, f := range []string{"cell-1-latency-over-time.svg", "cell-2-rate-over-time.png"} {
		if _, err := os.Stat(filepath.Join(out, ReportDir, "plots", f)); err != nil {
			t.Errorf("plot %s: %v", f, err)
		}
	}
	// --components: the whole frame, every component's row; with
	// --send-tick, which reaches the cell's load and is recorded.
	ticked := filepath.Join(t.TempDir(), "components")
	stdout, stderr = run("bench", "--mesh", "none", "--rate", "50", "--repetitions", "1", "--duration", "1s",
		"--warmup", "200ms", "--drain", "200ms", "--out", ticked, "--loopback-net", "62", "--components", "--send-tick", "2ms")
	if !strings.Contains(stdout, "Send tick 2ms (send_tick) in 1 of 1 cells") {
		t.Errorf("--send-tick: the report does not say so:\n%s", stdout)
	}
	for _, want := range []string{"\napp static ", "\nMesh CPU ratio:                  - (no mesh)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--components: stderr lacks %q:\n%s", want, stderr)
		}
	}
	if tm, err := results.ReadPlanManifest(ticked); err != nil || len(tm.Order) != 1 {
		t.Errorf("--send-tick plan manifest %+v %v", tm, err)
	} else {
		dir := results.CellDir(ticked, tm.Order[0])
		rm, err := results.ReadManifest(dir)
		lr, lerr := results.ReadFile(filepath.Join(dir, results.LoadFile))
		switch {
		case err != nil || lerr != nil:
			t.Errorf("--send-tick cell: %v %v", err, lerr)
		case rm.Options["send_tick"] != "2ms" || lr.SendTickNs != int64(2*time.Millisecond):
			t.Errorf("--send-tick 2ms: manifest send_tick %v, load result send_tick_ns %d", rm.Options["send_tick"], lr.SendTickNs)
		}
	}
	// Every JSON file of the plan's directory matches its schema.
	checkSchemas(t, out, "plan-manifest.v1.schema.json", "run-manifest.v1.schema.json", "load-result.v1.schema.json",
		"resources.v1.schema.json", "samples.v1.schema.json", schemas.PlanFileSchema)
	first, _ := results.ReadManifest(results.CellDir(out, m.Order[0]))

	_, stderr = run("bench", "--resume", out)
	if strings.Contains(stderr, "running") || !strings.Contains(stderr, "2 of 2 cells already finished") {
		t.Errorf("resume of a finished plan ran cells:\n%s", stderr)
	}
	again, _ := results.ReadManifest(results.CellDir(out, m.Order[0]))
	if first == nil || again == nil || !again.StartedAt.Equal(first.StartedAt) {
		t.Error("resume rewrote a finished cell")
	}

	// --fail-on judges each configuration on its median, after the
	// report, with the results kept; a resumed plan is judged too.
	failOn := []struct {
		name  string
		conds string
		code  int
		want  []string // stderr lines
	}{
		// No configuration's p50 reaches an hour: the plan passes.
		{"passes", "p50>1h,errors>50%", ExitOK, nil},
		// Every latency is ≥ 0 s: both configurations cross it; rate<1
		// holds for neither (50 and 100 rps).
		{"crossed", "p50>=0s,rate<1", ExitThresholds, []string{
			"none, static, 50 rps, 1 replica: p50>=0s: p50 was", "none, static, 100 rps, 1 replica: p50>=0s: p50 was", "(median of 1 runs)"}},
		// A metric that does not exist: bad input, nothing judged.
		{"bad metric", "p42>1ms", ExitUsage, []string{`metric "p42": allowed: p50`}},
	}
	for _, tt := range failOn {
		cmd := exec.Command(bin, "bench", "--resume", out, "--fail-on", tt.conds)
		cmd.Dir = t.TempDir()
		var se strings.Builder
		cmd.Stderr = &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tt.code {
			t.Errorf("%s: --fail-on %q exit %d, want %d\n%s", tt.name, tt.conds, code, tt.code, se.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(se.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", tt.name, w, se.String())
			}
		}
		if tt.code == ExitThresholds && strings.Contains(se.String(), "rate<1") {
			t.Errorf("%s: rate<1 reported crossed at 50 and 100 rps:\n%s", tt.name, se.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, ReportDir, "report.html")); err != nil {
		t.Errorf("report after --fail-on: %v", err)
	}
}
