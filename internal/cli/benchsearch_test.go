package cli

import (
	"bufio"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/bench"
	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestBenchSearchKnownCapacityAndResume runs a capacity-search plan on the
// local lab without a mesh, its one app replica bounded at 4 requests of
// 2 ms each (capacity exactly 2000/s; the reasoning is
// TestLoadSearchKnownCapacity's: below 2000/s evenly spaced requests never
// queue, above it the queue grows without bound, so every rate ≤ 2000/s
// meets p99 ≤ 10 ms and every rate ≥ 2100/s misses it). It interrupts the
// plan (SIGINT) after the third probe, resumes it, and checks that:
// the first probes were not run again (same start times), the search went
// on from where it stopped, and it found 2000/s within its 5% precision.
// The objective is 10 ms unless this machine's timer lag needs more
// (knownCapacityP99).
func TestBenchSearchKnownCapacityAndResume(t *testing.T) {
	p99 := knownCapacityP99(t, 2*time.Millisecond, 4, testutil.Timing(t))
	bin := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "plan")
	planFile := filepath.Join(t.TempDir(), "search.yaml")
	// 4 s probes: see TestLoadSearchKnownCapacity for why on a shared machine.
	yml := "axes:\n  mesh: [none]\nrepetitions: 1\nseed: 9\nduration: 4s\nwarmup: 1s\ndrain: 200ms\n" +
		"app_concurrency: 4\napp_service_time: 2ms\n" +
		"search: {slo: {p99: " + p99.String() + ", errors: 0.1%}, from: 100, to: 20000, precision: 5%}\n"
	if err := os.WriteFile(planFile, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	// First run: interrupted once probe 3 has ended.
	cmd := exec.Command(bin, "bench", planFile, "--out", out, "--loopback-net", "64")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var log strings.Builder
	sent := false
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if !sent && strings.Contains(line, "-probe3: ") {
			_ = cmd.Process.Signal(syscall.SIGINT)
			sent = true
		}
	}
	err = cmd.Wait()
	if !sent {
		t.Fatalf("the plan ended before probe 3 (%v):\n%s", err, log.String())
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("interrupted run: %v, want exit %d\n%s", err, ExitInterrupted, log.String())
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Complete || len(m.Order) < 3 {
		t.Fatalf("after the interrupt: complete %v, %d probes", m.Complete, len(m.Order))
	}
	before := map[string]time.Time{}
	for _, id := range m.Order {
		if st := m.Cells[id]; st.Finished() {
			rm, err := results.ReadManifest(results.CellDir(out, id))
			if err != nil {
				t.Fatal(err)
			}
			before[id] = rm.StartedAt
		}
	}
	// Resume: the finished probes are judged from their files, not run.
	res := exec.Command(bin, "bench", "--resume", out, "--loopback-net", "64")
	var so, se strings.Builder
	res.Stdout, res.Stderr = &so, &se
	if err := res.Run(); err != nil {
		t.Fatalf("resume: %v\n%s\n%s", err, so.String(), se.String())
	}
	t.Logf("first run:\n%s\nresumed:\n%s\n%s", log.String(), se.String(), so.String())
	for id := range before {
		if strings.Contains(se.String(), id+" at ") {
			t.Errorf("resume ran finished probe %s again", id)
		}
		rm, err := results.ReadManifest(results.CellDir(out, id))
		if err != nil || !rm.StartedAt.Equal(before[id]) {
			t.Errorf("probe %s rewritten by the resume (%v)", id, err)
		}
	}
	foundCapacity(t, out, 2000)
	for _, f := range []string{"report.txt", "probes.csv", "report.html", "plots/load-curve-1.png", "plots/load-curve-1.svg"} {
		if _, err := os.Stat(filepath.Join(out, ReportDir, f)); err != nil {
			t.Errorf("report file %s: %v", f, err)
		}
	}
	if !strings.Contains(so.String(), "Capacity at p99 ≤ "+p99.String()+", errors ≤ 0.1%") {
		t.Errorf("stdout lacks the capacity report:\n%s", so.String())
	}
}

// TestBenchSearchSecondKnownCapacity: a second known answer on the lab
// without a mesh, with another K and s: one app replica serving at most 2
// requests at once, 4 ms each, has a capacity of exactly 2/4ms = 500/s.
// At r ≤ 500/s evenly spaced requests arrive at least 2 ms apart, so at
// most 2 are ever in service and none waits: latency ≈ 4 ms plus
// loopback, far under the objective's 20 ms. Above it the queue grows by
// (r − 500) per second: over the 1-s warm-up and 4-s window a rate 5%
// above (525/s) queues 125 requests, 250 ms of waiting, so p99 misses 20
// ms by far (even 1% above, 505/s, adds 50 ms by the window's end). The
// search must therefore end with 500/s met and the next rate probed
// missed: within its 5% precision of 500/s. The objective is 20 ms unless
// this machine's timer lag needs more (knownCapacityP99).
func TestBenchSearchSecondKnownCapacity(t *testing.T) {
	p99 := knownCapacityP99(t, 4*time.Millisecond, 2, testutil.Timing(t))
	bin := testutil.BuildMeshbench(t)
	out := filepath.Join(t.TempDir(), "plan")
	planFile := filepath.Join(t.TempDir(), "search.yaml")
	yml := "axes:\n  mesh: [none]\nrepetitions: 1\nseed: 11\nduration: 4s\nwarmup: 1s\ndrain: 200ms\n" +
		"app_concurrency: 2\napp_service_time: 4ms\n" +
		"search: {slo: {p99: " + p99.String() + ", errors: 0.1%}, from: 100, to: 5000, precision: 5%}\n"
	if err := os.WriteFile(planFile, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "bench", planFile, "--out", out, "--loopback-net", "66")
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench: %v\n%s\n%s", err, so.String(), se.String())
	}
	t.Logf("%s\n%s", se.String(), so.String())
	foundCapacity(t, out, 500)
}

// foundCapacity reads the plan in out back through analysis and checks
// its one search found a capacity within the 5% precision of want.
func foundCapacity(t *testing.T, out string, want float64) {
	t.Helper()
	pd, err := analysis.ReadPlan(out)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Parse("search.yaml", pd.PlanYAML)
	if err != nil {
		t.Fatal(err)
	}
	a, err := analysis.AnalyzeSearch(pd, bench.SearchAnalysisOptions(p))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Groups) != 1 || len(a.Groups[0].Runs) != 1 {
		t.Fatalf("groups %+v", a.Groups)
	}
	r := a.Groups[0].Runs[0]
	if r.Unfinished || r.Result.Kind != "found" {
		t.Fatalf("search %s: %+v", r.ID, r.Result)
	}
	if d := math.Abs(r.Result.Capacity-want) / want; d > 0.05 {
		t.Errorf("found %v/s, want within 5%% of %v/s", r.Result.Capacity, want)
	}
}
