package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestRenderWorkingSet: a table of Kubernetes samples (working set in both
// sample.RSS and sample.PSS, a round of stale samples only) says what Mem is and why a
// round has no samples.
func TestRenderWorkingSet(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	x := func(name, component, category string, cpu float64, memMi uint64) sample.Sample {
		return sample.Sample{Target: sample.Target{Name: name, Component: component, Category: category}, Time: t0,
			CPUMillicores: cpu, RSSBytes: memMi << 20, PSSBytes: memMi << 20, HasPSS: true}
	}
	rounds := []sample.Round{
		{Index: 0, Time: t0, Samples: []sample.Sample{
			x("app/web-0/web", "app web", sample.CategoryApp, 250, 64),
			x("app/web-0/istio-proxy", "web sidecar", sample.CategoryDataPlane, 20, 30),
		}},
		{Index: 1, Time: t0.Add(5 * time.Second)}, // every sample stale
		{Index: 2, Time: t0.Add(10 * time.Second), Samples: []sample.Sample{
			x("app/web-0/web", "app web", sample.CategoryApp, 260, 64),
			x("app/web-0/istio-proxy", "web sidecar", sample.CategoryDataPlane, 21, 31),
		}},
	}
	var b bytes.Buffer
	if err := ResourceTable(&b, sample.Summarize(rounds), TableOptions{By: ByComponent, Memory: sample.WorkingSet}); err != nil {
		t.Fatal(err)
	}
	const want = `Component     CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
app web       250m      260m      255.00m   64Mi      64Mi      64.00Mi
web sidecar   20m       21m       20.50m    30Mi      31Mi      30.50Mi
TOTAL         270m      281m      275.50m   94Mi      95Mi      94.50Mi
CPU in millicores (1000m = one core); Mem is the working set (metrics.k8s.io: memory in use minus inactive file pages, per container) in Mi (2^20 bytes).
Each row is summed over its containers' fresh samples in every round; min, max and avg are over the rounds with one (TOTAL: 2 of 3; a round where metrics.k8s.io served only samples already counted has none).
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if sample.WorkingSet.String() != "working set" || sample.PSS.String() != "PSS" || sample.RSS.String() != "RSS" {
		t.Errorf("Memory names: %s, %s, %s", sample.WorkingSet, sample.PSS, sample.RSS)
	}
}

// TestRenderCounterWorkingSet: a table from the kubelet's counters (equal
// intervals of the measured window) says where CPU and Mem come from and
// that avg is the window's CPU.
func TestRenderCounterWorkingSet(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	x := func(cpu float64) sample.Sample {
		return sample.Sample{Target: sample.Target{Name: "app/web-0/web", Component: "app web", Category: sample.CategoryApp}, Time: t0,
			CPUMillicores: cpu, RSSBytes: 64 << 20, PSSBytes: 64 << 20, HasPSS: true}
	}
	rounds := []sample.Round{
		{Index: 0, Time: t0, Samples: []sample.Sample{x(240)}},
		{Index: 1, Time: t0.Add(time.Second), Samples: []sample.Sample{x(260)}},
	}
	var b bytes.Buffer
	if err := ResourceTable(&b, sample.Summarize(rounds), TableOptions{By: ByCategory, Memory: sample.CounterWorkingSet}); err != nil {
		t.Fatal(err)
	}
	const want = `Category   CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
app        240m      260m      250.00m   64Mi      64Mi      64.00Mi
TOTAL      240m      260m      250.00m   64Mi      64Mi      64.00Mi
CPU in millicores (1000m = one core); Mem is the working set (the kubelet's /metrics/resource: memory in use minus inactive file pages, per container, at each interval's end) in Mi (2^20 bytes).
CPU by the kubelet's cumulative counters over 2 equal intervals of the measured window (each counter interpolated to the intervals' edges): avg is the CPU over the whole window, exactly (over the intervals it ran in, for a container that appeared, disappeared or restarted); min and max are over the intervals.
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if sample.CounterWorkingSet.String() != "working set" {
		t.Errorf("CounterWorkingSet is %q", sample.CounterWorkingSet)
	}
}

// TestResourceTables checks every table layout (golden files) on the
// sampler's scenario, read from its stored summary
// (sample/testdata/summary.json, sample.TestSummaryGolden).
func TestResourceTables(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "measure", "sample", "testdata", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum sample.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opts TableOptions
	}{
		{"components.txt", TableOptions{By: ByComponent}},
		{"categories.txt", TableOptions{By: ByCategory}},
		{"processes.txt", TableOptions{By: ByProcess}},
		{"categories-rss.txt", TableOptions{By: ByCategory, Memory: sample.RSS}},
	} {
		var b bytes.Buffer
		if err := ResourceTable(&b, sum, tt.opts); err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, tt.name, b.Bytes())
	}
	var b bytes.Buffer
	if err := SamplerOverhead(&b, sum); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "overhead.txt", b.Bytes())
}

// TestRenderSeedLayout renders the seed report's first table (000_*.txt,
// "20 requests per second to a single Pod") from its figures and expects
// it byte for byte, with the first header renamed.
func TestRenderSeedLayout(t *testing.T) {
	const seed = `Namespace              CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
istio-tenant-gateway   1m        9m        7.67m     46Mi      47Mi      46.17Mi
nginx                  1m        3m        2.00m     10Mi      10Mi      10.00Mi
istio-system           3m        6m        4.93m     107Mi     111Mi     110.03Mi
TOTAL                  5m        18m       14.60m    163Mi     168Mi     166.21Mi
`
	g := func(name string, cpu sample.Stats, memMi sample.Stats) sample.GroupSummary {
		return sample.GroupSummary{Name: name, Figures: sample.Figures{Rounds: 10, PSSRounds: 10, CPUMillicores: cpu,
			PSSBytes: sample.Stats{Min: memMi.Min * mib, Max: memMi.Max * mib, Avg: memMi.Avg * mib}}}
	}
	s := sample.Summary{Rounds: 10, Components: []sample.GroupSummary{
		g("istio-tenant-gateway", sample.Stats{Min: 1, Max: 9, Avg: 7.67}, sample.Stats{Min: 46, Max: 47, Avg: 46.17}),
		g("nginx", sample.Stats{Min: 1, Max: 3, Avg: 2}, sample.Stats{Min: 10, Max: 10, Avg: 10}),
		g("istio-system", sample.Stats{Min: 3, Max: 6, Avg: 4.93}, sample.Stats{Min: 107, Max: 111, Avg: 110.03}),
	}}
	s.Total = g("", sample.Stats{Min: 5, Max: 18, Avg: 14.6}, sample.Stats{Min: 163, Max: 168, Avg: 166.21}).Figures
	var b bytes.Buffer
	if err := ResourceTable(&b, s, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(b.String(), "CPU in millicores")
	if got := strings.Replace(table, "Component", "Namespace", 1); got != seed {
		t.Errorf("got\n%s\nwant\n%s", got, seed)
	}
}

// TestSamplerOverheadPSSEvery: PSS read every third round, the overhead
// line says so and gives the CPU of a round with and without it (the
// figures of sample's TestPSSEvery scenario).
func TestSamplerOverheadPSSEvery(t *testing.T) {
	st := func(v float64) sample.Stats { return sample.Stats{Min: v, Max: v, Avg: v} }
	s := sample.Summary{Overhead: sample.OverheadSummary{Rounds: 8, PSSRounds: 3, NoPSSRounds: 5, PSSEveryRounds: st(3),
		RoundCPUNsPSS: st(0.25e6), RoundCPUNsNoPSS: st(0.25e6)}}
	var b bytes.Buffer
	if err := SamplerOverhead(&b, s); err != nil {
		t.Fatal(err)
	}
	if want := "PSS read every 3 rounds (3 of the 8 rounds with samples): 0.25ms CPU per round with it, 0.25ms without.\n"; !strings.HasSuffix(b.String(), want) {
		t.Errorf("overhead report:\n%s\nwant it to end with %q", b.String(), want)
	}
}

// TestResourceTablePSSEvery: with PSS read in fewer rounds than the rest,
// a group without a reading shows "-" and the note says so; the RSS table
// has neither (the figures of sample's TestPSSEvery scenario).
func TestResourceTablePSSEvery(t *testing.T) {
	g := func(name string, rounds, pssRounds int, cpu, mem float64) sample.GroupSummary {
		return sample.GroupSummary{Name: name, Figures: sample.Figures{Rounds: rounds, PSSRounds: pssRounds,
			CPUMillicores: sample.Stats{Min: cpu, Max: cpu, Avg: cpu}, RSSBytes: sample.Stats{Min: mem, Max: mem, Avg: mem},
			PSSBytes: sample.Stats{Min: mem, Max: mem, Avg: mem}}}
	}
	s := sample.Summary{Rounds: 6, Components: []sample.GroupSummary{g("a", 5, 2, 100, 200), g("load", 1, 0, 10, 0)}}
	s.Total = g("TOTAL", 5, 2, 110, 200).Figures
	var out bytes.Buffer
	if err := ResourceTable(&out, s, TableOptions{By: ByComponent}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"load        10m       10m       10.00m    -         -         -\n",
		"PSS is not read every round: Mem is over the rounds that read it (TOTAL: 2 of 6); - means no reading.\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table:\n%s\nwant it to contain %q", out.String(), want)
		}
	}
	out.Reset()
	if err := ResourceTable(&out, s, TableOptions{By: ByComponent, Memory: sample.RSS}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "PSS is not read") || strings.Contains(out.String(), " - ") {
		t.Errorf("RSS table:\n%s\nwant RSS everywhere and no PSS note", out.String())
	}
}

// TestSamplerOverheadWording: the PSS schedule in words, for each kind of
// schedule.
func TestSamplerOverheadWording(t *testing.T) {
	ms := 1e6
	for _, tt := range []struct {
		o    sample.OverheadSummary
		want string
	}{
		// sample's TestPSSEvery scenario: every third round, 11 ms with PSS, 2.33 ms without.
		{sample.OverheadSummary{Rounds: 6, PSSRounds: 2, NoPSSRounds: 3, PSSEveryRounds: sample.Stats{Min: 3, Max: 3, Avg: 3},
			RoundCPUNsPSS: sample.Stats{Avg: 11 * ms}, RoundCPUNsNoPSS: sample.Stats{Avg: 7 * ms / 3}},
			"PSS read every 3 rounds (2 of the 5 rounds with samples): 11.00ms CPU per round with it, 2.33ms without.\n"},
		// Never read.
		{sample.OverheadSummary{Rounds: 3, NoPSSRounds: 2}, "PSS not read (0 of the 2 rounds with samples).\n"},
		// Read once.
		{sample.OverheadSummary{Rounds: 3, PSSRounds: 1, NoPSSRounds: 1, RoundCPUNsPSS: sample.Stats{Avg: 4e6}, RoundCPUNsNoPSS: sample.Stats{Avg: 1e6}},
			"PSS read once (1 of the 2 rounds with samples): 4.00ms CPU per round with it, 1.00ms without.\n"},
		// An uneven schedule.
		{sample.OverheadSummary{Rounds: 12, PSSRounds: 3, NoPSSRounds: 8, PSSEveryRounds: sample.Stats{Min: 4, Max: 5, Avg: 4.5}, RoundCPUNsPSS: sample.Stats{Avg: 4e6}, RoundCPUNsNoPSS: sample.Stats{Avg: 1e6}},
			"PSS read every 4 to 5 rounds (3 of the 11 rounds with samples): 4.00ms CPU per round with it, 1.00ms without.\n"},
	} {
		var out bytes.Buffer
		_ = SamplerOverhead(&out, sample.Summary{Overhead: tt.o})
		if !strings.HasSuffix(out.String(), tt.want) {
			t.Errorf("SamplerOverhead(%+v):\n%s\nwant it to end with %q", tt.o, out.String(), tt.want)
		}
	}
}

// TestNamespaceTable: the seed reports' shape (Namespace, then the six
// figures), the rows in their order, TOTAL, and the load apart; a
// namespace without samples shows dashes.
func TestNamespaceTable(t *testing.T) {
	f := func(cpuMin, cpuMax, cpuAvg, memMiB float64) sample.Figures {
		m := memMiB * (1 << 20)
		return sample.Figures{Rounds: 3, PSSRounds: 3, CPUMillicores: sample.Stats{Min: cpuMin, Max: cpuMax, Avg: cpuAvg},
			PSSBytes: sample.Stats{Min: m, Max: m, Avg: m}}
	}
	tb := sample.NamespaceTable{
		Rows: []sample.GroupSummary{{Name: "linkerd", Figures: f(2, 7, 3.17, 78)}, {Name: "meshbench-app", Figures: f(9, 13, 10.49, 21)},
			{Name: "empty"}},
		Total: f(11, 20, 13.66, 99),
		Load:  &sample.GroupSummary{Name: "meshbench-load", Figures: f(30, 40, 31.5, 21)},
	}
	var b strings.Builder
	if err := NamespaceTable(&b, tb, sample.WorkingSet); err != nil {
		t.Fatal(err)
	}
	if err := NamespaceNote(&b, sample.WorkingSet); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "namespace-table.txt", []byte(b.String()))
}

// TestNodeKernelTable: a machine several nodes share is one row named
// for all of them, with the note that it is counted once; a cell
// without figures prints its note alone, never a row of zeros.
func TestNodeKernelTable(t *testing.T) {
	rep := &sample.NodeKernelReport{Machines: []sample.MachineKernel{
		{Nodes: []string{"n0", "n1"}, BootID: "b1", Seconds: 24, NodeCPUm: 740, NodeKernelCPUm: 302, SoftIRQCPUm: 53, PodsSystemCPUm: 12, OutsidePodsCPUm: 290},
		{Nodes: []string{"n2"}, BootID: "b2", Seconds: 25, NodeCPUm: 100, NodeKernelCPUm: 20, SoftIRQCPUm: 2, PodsSystemCPUm: 5, OutsidePodsCPUm: 15},
	}}
	var b strings.Builder
	if err := NodeKernelTable(&b, rep, ""); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"the machine shared by nodes n0, n1   740m", "302m", "290m", "node n2 ", "Nodes n0, n1 report one boot ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	_ = NodeKernelTable(&b, nil, "kernel CPU not measured on every node, so no cell figure: node n3: its reader did not run")
	if out := b.String(); strings.Contains(out, "Machine") || !strings.HasSuffix(out, "did not run.\n") {
		t.Errorf("without figures: %q", out)
	}
}
