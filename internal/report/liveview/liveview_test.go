package liveview

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

const mib = 1 << 20

// sidecarRounds are three rounds of a sidecar lab: the app, the load, two
// sidecars and meshbench itself, each with CPU (m) and PSS (MiB) per round.
func sidecarRounds() []sample.Round { return rounds(true) }

// noneRounds are the same rounds without the sidecars: a none cell.
func noneRounds() []sample.Round { return rounds(false) }

func rounds(sidecars bool) []sample.Round {
	t0 := time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC)
	procs := []struct {
		pid             int
		name, comp, cat string
		cpu, mem        [3]float64
	}{
		{10, "server-0 app", "app static", sample.CategoryApp, [3]float64{100, 120, 80}, [3]float64{25, 25, 26}},
		{11, "load", "load", sample.CategoryLoad, [3]float64{130, 150, 120}, [3]float64{39, 39, 39}},
		{12, "client-sidecar", "client sidecar", sample.CategoryDataPlane, [3]float64{170, 200, 160}, [3]float64{41, 41, 41}},
		{13, "server-0-sidecar", "server sidecar", sample.CategoryDataPlane, [3]float64{160, 190, 150}, [3]float64{41, 41, 42}},
		{14, "meshbench", "meshbench", sample.CategoryOverhead, [3]float64{40, 70, 30}, [3]float64{31, 31, 31}},
	}
	var rounds []sample.Round
	for i := range 3 {
		r := sample.Round{Index: i, Time: t0.Add(time.Duration(i) * time.Second)}
		for _, p := range procs {
			if !sidecars && p.cat == sample.CategoryDataPlane {
				continue
			}
			r.Samples = append(r.Samples, sample.Sample{Target: sample.Target{PID: p.pid, Name: p.name, Component: p.comp, Category: p.cat},
				Time: r.Time, CPUMillicores: p.cpu[i], RSSBytes: uint64(p.mem[i]+10) * mib, PSSBytes: uint64(p.mem[i]) * mib, HasPSS: true})
		}
		rounds = append(rounds, r)
	}
	return rounds
}

// TestRender: the frames of a sidecar cell on the lab (RUNNING with the
// load's running figures, DRAINING with an external generator, STARTING
// before anything is recorded) and of a cluster (node lines, metrics
// source, working set), each a golden file.
func TestRender(t *testing.T) {
	at := time.Date(2026, 11, 24, 14, 32, 35, 0, time.UTC)
	for _, tt := range []struct {
		name string
		s    State
	}{
		{"running", State{Time: at, Phase: "measure", Output: "results/bench-x/cells/sidecar-static-r1000-x1-p0-http-pod-mtls-rep1.partial",
			Rounds: sidecarRounds(), Load: &Load{Known: true, RatePerSec: 999.6, P50Ns: 412_000, P99Ns: 1_870_000, Sent: 2999}}},
		{"draining-fortio", State{Time: at, Phase: "drain", Output: "results/run", Rounds: sidecarRounds(), Load: &Load{Generator: "fortio"}}},
		{"starting", State{Time: at, Phase: "idle", Output: "results/run"}},
		{"cluster", State{Time: at, Phase: "measure", Output: "results/bench-k/cells/sidecar-rep1.partial", MetricsSource: "kubelet (/metrics/resource)",
			Memory: "working set", Rounds: sidecarRounds(),
			Nodes: []Node{{Name: "meshbench-node-abe7a33-0f80", CPUShare: 0.0571, MemShare: 0.0268, CPUMillicores: sample.Stats{Min: 24, Max: 245, Avg: 224}, Bytes: sample.Stats{Min: 333 * mib, Max: 361 * mib, Avg: 356 * mib}}}}},
		// A cluster with three load workers: the running figures merged
		// (rate summed, p50/p99 labelled as the slowest worker's), node
		// lines from NodesOf.
		{"cluster-workers", State{Time: at, Phase: "measure", Output: "results/bench-k/cells/none-rep1.partial", MetricsSource: "metrics.k8s.io",
			Memory: "working set", Rounds: noneRounds(), Nodes: NodesOf(nodeRounds()),
			Load: &Load{Known: true, RatePerSec: 299.7, P50Ns: 1_210_000, P99Ns: 4_400_000, Sent: 2997, Workers: 3}}},
		// A none cell: no mesh, no data plane: its ratio lines say "-"
		// and why, not 0.00%.
		{"none", State{Time: at, Phase: "measure", Output: "results/run", Rounds: noneRounds()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testutil.Golden(t, "frame-"+tt.name+".golden", []byte(strings.Join(Render(tt.s), "\n")+"\n"))
			// The compact frame (a log): the same head, sums and ratios,
			// no component rows.
			testutil.Golden(t, "compact-"+tt.name+".golden", []byte(strings.Join(Compact(tt.s), "\n")+"\n"))
		})
	}
}

// TestRatiosWithoutMesh: a cell without a mesh shows "-" (no mesh) on
// every ratio line, never 0.00%; one with a data plane shows numbers.
func TestRatiosWithoutMesh(t *testing.T) {
	for _, tt := range []struct {
		name          string
		rounds        []sample.Round
		want, compact []string // in Render's frame, in Compact's
	}{
		// none: nothing of the mesh was sampled.
		{"none", noneRounds(), []string{"Mesh CPU ratio:                  - (no mesh)", "Data plane memory ratio:         - (no data plane)"},
			[]string{"mesh ratio:        CPU - (no mesh), memory - (no mesh)", "data plane ratio:  CPU - (no data plane)"}},
		// sidecar: 1030 mC of mesh over 700 of non-mesh.
		{"sidecar", sidecarRounds(), []string{"Mesh CPU ratio:            147.14%", "Data plane CPU ratio:      147.14%"},
			[]string{"mesh ratio:        CPU 147.14%", "data plane ratio:  CPU 147.14%"}},
	} {
		for i, frame := range [][]string{Render(State{Phase: "measure", Rounds: tt.rounds}), Compact(State{Phase: "measure", Rounds: tt.rounds})} {
			text := strings.Join(frame, "\n")
			want := tt.want
			if i == 1 {
				want = tt.compact
			}
			for _, w := range want {
				if !strings.Contains(text, w) {
					t.Errorf("%s: frame lacks %q:\n%s", tt.name, w, text)
				}
			}
			if strings.Contains(text, "0.00%") {
				t.Errorf("%s: frame has a 0.00%% ratio:\n%s", tt.name, text)
			}
		}
	}
}

// nodeRounds are two rounds of two nodes, one of them without its
// allocatable resources known.
func nodeRounds() []sample.NodeRound {
	t0 := time.Date(2026, 11, 24, 14, 0, 0, 0, time.UTC)
	return []sample.NodeRound{
		{Index: 0, Time: t0, Nodes: []sample.NodeSample{
			{Name: "meshbench-node-2", CPUMillicores: 300, MemoryBytes: 900 * mib, AllocatableCPUMillicores: 2000, AllocatableMemoryBytes: 8192 * mib},
			{Name: "meshbench-node-1", CPUMillicores: 100, MemoryBytes: 500 * mib}}},
		{Index: 1, Time: t0.Add(10 * time.Second), Nodes: []sample.NodeSample{
			{Name: "meshbench-node-2", CPUMillicores: 500, MemoryBytes: 1100 * mib, AllocatableCPUMillicores: 2000, AllocatableMemoryBytes: 8192 * mib},
			{Name: "meshbench-node-1", CPUMillicores: 200, MemoryBytes: 520 * mib}}},
	}
}

// TestNodesOf: each node's usage over the rounds, its average as a share
// of its allocatable (0 when unknown), in name order.
func TestNodesOf(t *testing.T) {
	got := NodesOf(nodeRounds())
	if len(got) != 2 || got[0].Name != "meshbench-node-1" || got[1].Name != "meshbench-node-2" {
		t.Fatalf("nodes %+v, want node-1 then node-2", got)
	}
	n1, n2 := got[0], got[1]
	// node-2: CPU 300 and 500 → avg 400 of 2000 = 20%; memory avg 1000
	// MiB of 8192.
	if n2.CPUMillicores.Avg != 400 || n2.CPUMillicores.Min != 300 || n2.CPUMillicores.Max != 500 ||
		math.Abs(n2.CPUShare-0.2) > 1e-12 || math.Abs(n2.MemShare-1000.0/8192) > 1e-12 {
		t.Errorf("node-2 %+v", n2)
	}
	// node-1: no allocatable known: no shares.
	if n1.CPUMillicores.Avg != 150 || n1.CPUShare != 0 || n1.MemShare != 0 || n1.Bytes.Max != 520*mib {
		t.Errorf("node-1 %+v", n1)
	}
}

// TestSums: the seed tool's sums, round by round: business = mesh +
// non-mesh and total = business + overhead hold for averages, minima and
// maxima are those of the per-round sums, and the ratios are of the
// averages.
func TestSums(t *testing.T) {
	r := sidecarRounds()
	f := func(cats ...string) sample.Figures { return sumOf(r, cats) }
	mesh := f(sample.CategoryDataPlane, sample.CategoryControlPlane, sample.CategoryGateway)
	non := f(sample.CategoryApp, sample.CategoryLoad)
	bus := f(sample.CategoryApp, sample.CategoryLoad, sample.CategoryDataPlane, sample.CategoryControlPlane, sample.CategoryGateway)
	total := f(sample.Categories...)
	over := f(sample.CategoryOverhead)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	// Per-round sums: mesh 330, 390, 310; non-mesh 230, 270, 200.
	for _, c := range []struct {
		what           string
		got            sample.Stats
		min, max, mean float64
	}{
		{"mesh", mesh.CPUMillicores, 310, 390, 1030.0 / 3},
		{"non-mesh", non.CPUMillicores, 200, 270, 700.0 / 3},
		{"business", bus.CPUMillicores, 510, 660, 1730.0 / 3},
		{"total", total.CPUMillicores, 540, 730, 1870.0 / 3},
	} {
		if !near(c.got.Min, c.min) || !near(c.got.Max, c.max) || !near(c.got.Avg, c.mean) {
			t.Errorf("%s CPU %+v, want min %v max %v avg %v", c.what, c.got, c.min, c.max, c.mean)
		}
	}
	if !near(bus.CPUMillicores.Avg, mesh.CPUMillicores.Avg+non.CPUMillicores.Avg) || !near(total.CPUMillicores.Avg, bus.CPUMillicores.Avg+over.CPUMillicores.Avg) {
		t.Error("business ≠ mesh + non-mesh or total ≠ business + overhead")
	}
	lines := strings.Join(Render(State{Phase: "measure", Rounds: r}), "\n")
	// 1030/700 = 147.14%.
	if !strings.Contains(lines, "Mesh CPU ratio:            147.14% (smaller is better)") {
		t.Errorf("frame lacks the mesh CPU ratio 147.14%%:\n%s", lines)
	}
}

// TestStateOf: every lab phase has its seed-tool state.
func TestStateOf(t *testing.T) {
	for phase, want := range map[string]string{"": Starting, "prepare": Starting, "prepare/apps": Starting, "idle": Starting,
		"warmup": Running, "measure": Running, "drain": Draining, "collect": Draining, "teardown": Draining} {
		if got, _ := StateOf(phase); got != want {
			t.Errorf("phase %q: %s, want %s", phase, got, want)
		}
	}
}
