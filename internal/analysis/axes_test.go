package analysis_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
)

// axesPlan builds a plan in memory: meshes none and sidecar, each at 0 and
// 4 policies and at open loop 300 rps and closed loop, five valid
// repetitions each, whose p50 and p95 are base × mult(config) × jitter.
// Only the figures given depend on the config.
func axesPlan(mult func(c analysis.Config) float64) *analysis.Plan {
	p := &analysis.Plan{Failed: map[string]string{}}
	jitter := []float64{1, 1.01, 0.99, 1.02, 0.98}
	for _, mesh := range []string{"none", "sidecar"} {
		for _, pol := range []int{0, 4} {
			for _, rate := range []string{"300", "max"} {
				cfg := analysis.Config{Mesh: mesh, App: "static", Rate: rate, Replicas: 1, Policies: pol, Protocol: "http", MTLS: true}
				for rep, j := range jitter {
					m := mult(cfg)
					f := map[string]float64{
						analysis.LatencyP50:          m * j,
						analysis.LatencyP95:          2 * m * j,
						analysis.CPUPrefix + "TOTAL": 100 * j,
					}
					if mesh != "none" {
						f[analysis.CPUPrefix+"data-plane"] = 40 * j
					}
					p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("%s-p%d-r%s-rep%d", mesh, pol, rate, rep+1), Config: cfg, Valid: true, Figures: f})
				}
			}
		}
	}
	return p
}

// TestAxisComparisons: along policies, every mesh and load has its 4 vs 0
// line, and policies changed nothing (+0%, not significant); along
// load_model, closed loop doubles sidecar's latency but none's by only
// 1.2×, which the comparison and the interaction line both say.
func TestAxisComparisons(t *testing.T) {
	p := axesPlan(func(c analysis.Config) float64 {
		switch {
		case c.Rate == "max" && c.Mesh == "sidecar":
			return 2
		case c.Rate == "max":
			return 1.2
		}
		return 1
	})
	a := analysis.Analyze(p, analysis.Options{Seed: 1, Compare: []string{"mesh", "policies", "load_model"}})
	byAxis := map[string][]analysis.AxisComparison{}
	for _, c := range a.AxisComparisons {
		byAxis[c.Axis] = append(byAxis[c.Axis], c)
	}
	// 2 meshes × 2 loads for policies; 2 meshes × 2 policy counts for load_model.
	if len(byAxis["policies"]) != 4 || len(byAxis["load_model"]) != 4 {
		t.Fatalf("%d policies and %d load_model comparisons, want 4 each", len(byAxis["policies"]), len(byAxis["load_model"]))
	}
	for _, c := range a.AxisComparisons {
		t.Log(c.Verdict())
	}
	for _, in := range a.Interactions {
		t.Log(in.Verdict())
	}
	for _, c := range byAxis["policies"] {
		if c.Base.Policies != 0 || c.Other.Policies != 4 || c.OtherValue != "4 policies" || c.BaseValue != "0 policies" {
			t.Errorf("policies comparison %+v vs %+v: want 4 vs 0", c.Other, c.Base)
		}
		iv := c.Diffs[analysis.LatencyP50]
		if iv.Estimate != 0 || iv.Significant() {
			t.Errorf("%s: p50 %+v, want 0 and not significant", c.Verdict(), iv)
		}
		v := c.Verdict()
		if !strings.Contains(v, "4 policies vs 0 policies: p50 +0% [") || !strings.Contains(v, "not significant (0 ms)") {
			t.Errorf("verdict %q does not say 4 vs 0, p50 +0%%, not significant, 0 ms added", v)
		}
	}
	for _, c := range byAxis["load_model"] {
		want := 0.2
		if c.Base.Mesh == "sidecar" {
			want = 1
		}
		iv := c.Diffs[analysis.LatencyP95]
		if math.Abs(iv.Estimate-want) > 1e-9 || !iv.Significant() || c.Other.Rate != "max" || c.Base.Rate != "300" {
			t.Errorf("%s: p95 %+v, want %+v significant, closed vs open", c.Verdict(), iv, want)
		}
		// The absolute difference of medians beside the relative one:
		// p95 is 2 ms × the multiplier (sidecar 2 → 4 ms, none 2 → 2.4 ms);
		// CPU is the same on both sides, and open and closed loop run at
		// unrelated rates, so no CPU per 1000 rps.
		wantAbs := map[string]string{"sidecar": "(+2 ms)", "none": "(+0.4 ms)"}[c.Base.Mesh]
		if v := c.Verdict(); !strings.Contains(v, "] "+wantAbs) || strings.Contains(v, "per 1000 rps") {
			t.Errorf("verdict %q: want p95 %s and no CPU per 1000 rps", v, wantAbs)
		}
	}
	// Interactions: sidecar vs none per policy count (load_model) and per
	// load (policies).
	var lm []analysis.Interaction
	for _, in := range a.Interactions {
		if in.Axis == "load_model" {
			lm = append(lm, in)
		}
	}
	if len(lm) != 2 {
		t.Fatalf("%d load_model interactions, want 2 (one per policy count)", len(lm))
	}
	for _, in := range lm {
		// closed: 2/1.2 − 1 = +67%; open: +0%.
		got := in.A.Diffs[analysis.LatencyP95].Estimate
		if in.AValue != "closed loop" || math.Abs(got-(2/1.2-1)) > 1e-9 || in.B.Diffs[analysis.LatencyP95].Estimate != 0 {
			t.Errorf("interaction %s: closed-loop p95 overhead %v, want +67%% first and +0%% open", in.Verdict(), got)
		}
		v := in.Verdict()
		if !strings.HasPrefix(v, "sidecar vs none (static") || !strings.Contains(v, "p95 +67% [") || !strings.Contains(v, "under closed loop, +0% [") ||
			!strings.Contains(v, "under open loop at 300 rps") {
			t.Errorf("interaction verdict %q", v)
		}
		// Each side's absolute difference: closed loop 4 − 2.4 = +1.6 ms
		// at p95, open loop 2 − 2 = 0.
		if !strings.Contains(v, "] (+1.6 ms) under closed loop") || !strings.Contains(v, "(0 ms) under open loop") {
			t.Errorf("interaction verdict %q: want +1.6 ms under closed loop and 0 ms under open loop at p95", v)
		}
	}
}

// TestAxisDefault: without compare, only the meshes are compared.
func TestAxisDefault(t *testing.T) {
	a := analysis.Analyze(axesPlan(func(analysis.Config) float64 { return 1 }), analysis.Options{Seed: 1})
	if len(a.AxisComparisons) != 0 || len(a.Interactions) != 0 || len(a.Comparisons) == 0 {
		t.Errorf("%d axis comparisons, %d interactions, %d mesh comparisons; want 0, 0, some", len(a.AxisComparisons), len(a.Interactions), len(a.Comparisons))
	}
}

// TestAxisGenerator: the same cells measured by meshbench's engine and by
// vegeta and fortio are compared generator against the engine, each line
// naming the two tools and the mesh ("vegeta vs meshbench on sidecar
// (…): p50 …; load generator CPU …"), with the tools' own CPU (the lab's
// load category) compared too; the scenarios keep the generators apart.
func TestAxisGenerator(t *testing.T) {
	p := &analysis.Plan{Failed: map[string]string{}}
	jitter := []float64{1, 1.01, 0.99, 1.02, 0.98}
	// p50 and load CPU per generator: vegeta 1.5× the engine's p50 and 3×
	// its CPU; fortio the same p50, 2× the CPU.
	p50 := map[string]float64{"": 1, "vegeta": 1.5, "fortio": 1}
	cpu := map[string]float64{"": 50, "vegeta": 150, "fortio": 100}
	for _, mesh := range []string{"none", "sidecar"} {
		for _, gen := range []string{"", "vegeta", "fortio"} {
			cfg := analysis.Config{Mesh: mesh, App: "static", Rate: "1000", Replicas: 1, Protocol: "http", MTLS: true, Generator: gen}
			for rep, j := range jitter {
				f := map[string]float64{analysis.LatencyP50: p50[gen] * j, analysis.CPUPrefix + "load": cpu[gen] * j, analysis.CPUPrefix + "TOTAL": 300 * j}
				p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("%s-g%s-rep%d", mesh, gen, rep+1), Config: cfg, Valid: true, Figures: f})
			}
		}
	}
	a := analysis.Analyze(p, analysis.Options{Seed: 1, Compare: []string{"mesh", "generator"}})
	var gens []analysis.AxisComparison
	for _, c := range a.AxisComparisons {
		if c.Axis == analysis.AxisGenerator {
			gens = append(gens, c)
			t.Log(c.Verdict())
		}
	}
	// 2 meshes × 3 pairs (vegeta vs meshbench, fortio vs meshbench, fortio vs vegeta).
	if len(gens) != 6 {
		t.Fatalf("%d generator comparisons, want 6", len(gens))
	}
	for _, c := range gens {
		if c.BaseValue != "meshbench" {
			continue
		}
		wantP50, wantCPU := p50[c.Other.Generator]-1, cpu[c.Other.Generator]/50-1
		if got := c.Diffs[analysis.LatencyP50].Estimate; math.Abs(got-wantP50) > 1e-9 {
			t.Errorf("%s: p50 %+.2f, want %+.2f", c.Verdict(), got, wantP50)
		}
		if got := c.Diffs[analysis.CPUPrefix+"load"].Estimate; math.Abs(got-wantCPU) > 1e-9 {
			t.Errorf("%s: load CPU %+.2f, want %+.2f", c.Verdict(), got, wantCPU)
		}
		v := c.Verdict()
		if strings.Contains(v, "by ") {
			t.Errorf("verdict %q names a generator in its scenario", v)
		}
		if !strings.HasPrefix(v, c.OtherValue+" vs meshbench on "+c.Base.Mesh+" (static, 1000 rps, 1 replica): p50 ") || !strings.Contains(v, "load generator CPU +") {
			t.Errorf("verdict %q", v)
		}
		// The tool's own CPU in mCPU beside the ratio: vegeta 150 − 50,
		// fortio 100 − 50 (no achieved rate in these cells: no per 1000 rps).
		if want := fmt.Sprintf("] (+%.0f mCPU)", cpu[c.Other.Generator]-50); !strings.Contains(v, want) {
			t.Errorf("verdict %q: want load generator CPU %s", v, want)
		}
	}
	// The meshes are compared within each generator's scenario.
	scen := map[string]bool{}
	for _, s := range a.Scenarios {
		scen[s.String()] = true
	}
	if !scen["static, 1000 rps, 1 replica"] || !scen["static, 1000 rps, 1 replica, by vegeta"] || len(scen) != 3 {
		t.Errorf("scenarios %v: want one per generator", scen)
	}
}

// TestParamsAxes: a later axis (proxy_threads here) compares like the
// others; a setting every cell shares (16 connections) is folded out of
// the configs and their labels; mode none, run at one thread count, is
// the baseline at every count.
func TestParamsAxes(t *testing.T) {
	p := &analysis.Plan{Failed: map[string]string{}}
	jitter := []float64{1, 1.01, 0.99, 1.02, 0.98}
	for _, mesh := range []string{"none", "sidecar"} {
		for _, threads := range []int{1, 2} {
			if mesh == "none" && threads == 2 {
				continue // skipped by the plan: no proxy
			}
			cfg := analysis.Config{Mesh: mesh, App: "static", Rate: "1000", Replicas: 1, Protocol: "http", MTLS: true,
				Params: analysis.Params{Connections: 16, ProxyThreads: threads}}
			for rep, j := range jitter {
				p99 := 10 * j
				if threads == 2 {
					p99 = 5 * j // twice the threads, half the tail
				}
				f := map[string]float64{analysis.LatencyP50: j, analysis.LatencyP99: p99, analysis.CPUPrefix + "TOTAL": 100 * j}
				p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("%s-t%d-rep%d", mesh, threads, rep+1), Config: cfg, Valid: true, Figures: f})
			}
		}
	}
	a := analysis.Analyze(p, analysis.Options{Seed: 1, Compare: []string{"mesh", "proxy_threads"}})
	var got []analysis.AxisComparison
	for _, c := range a.AxisComparisons {
		if c.Axis == analysis.AxisProxyThreads {
			got = append(got, c)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%d proxy_threads comparisons, want sidecar's one", len(got))
	}
	v := got[0].Verdict()
	if !strings.HasPrefix(v, "sidecar (static, 1000 rps, 1 replica): 2 proxy threads vs 1 proxy thread: ") ||
		!strings.Contains(v, "p99 −50% [") || strings.Contains(v, "connections") {
		t.Errorf("verdict %q: want sidecar's 2 vs 1 proxy threads, p99 −50%%, and no connections (every cell has 16)", v)
	}
	for _, s := range a.Scenarios {
		if s.Connections != 0 {
			t.Errorf("scenario %s keeps the connections every cell shares", s)
		}
	}
	// none ran at one thread count only: sidecar at 2 threads is
	// compared with it too.
	vsNone := 0
	for _, c := range a.Comparisons {
		if c.Mesh == "sidecar" && c.Baseline == "none" {
			vsNone++
		}
	}
	if vsNone != 2 {
		t.Errorf("%d sidecar vs none comparisons, want one per thread count", vsNone)
	}
}

// TestBulkVerdict: a bulk comparison is worded in throughput and CPU per
// Gb/s (what a Gb/s costs), not in latency or a CPU total that moves
// with the throughput.
func TestBulkVerdict(t *testing.T) {
	p := &analysis.Plan{Failed: map[string]string{}}
	for _, mesh := range []string{"sidecar", "ambient"} {
		for rep, j := range []float64{1, 1.01, 0.99, 1.02, 0.98} {
			gbps, perGbps := 2*j, 300*j
			if mesh == "ambient" {
				gbps, perGbps = 4*j, 150*j
			}
			f := map[string]float64{analysis.LatencyP50: 50 * j, analysis.ThroughputGbps: gbps,
				analysis.CPUPrefix + "data-plane": gbps * perGbps, analysis.CPUPerGbpsPrefix + "data-plane": perGbps}
			cfg := analysis.Config{Mesh: mesh, App: "static", Rate: "bulk", Replicas: 1, Protocol: "http", MTLS: true}
			p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("%s-rep%d", mesh, rep+1), Config: cfg, Valid: true, Figures: f})
		}
	}
	a := analysis.Analyze(p, analysis.Options{Seed: 1, Baseline: "sidecar"})
	if len(a.Comparisons) != 1 {
		t.Fatalf("%d comparisons, want ambient vs sidecar", len(a.Comparisons))
	}
	v := a.Comparisons[0].Verdict()
	if !strings.Contains(v, "~2× the throughput (+2 Gb/s)") || !strings.Contains(v, "~1/2 the data-plane CPU per Gb/s (−150 mCPU per Gb/s)") ||
		strings.Contains(v, "p50") {
		t.Errorf("verdict %q: want throughput and data-plane CPU per Gb/s, no latency", v)
	}
}
