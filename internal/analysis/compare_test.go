package analysis_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
)

// comparePlan builds a plan in memory: five valid repetitions of each of
// the given meshes at static 50 rps, whose p50 is scale(mesh) × (1, 1.01,
// 0.99, 1.02, 0.98) ms and whose other figures do not depend on the scale
// (mesh none has no data plane).
func comparePlan(scale func(mesh string) float64, meshes ...string) *analysis.Plan {
	p := &analysis.Plan{Failed: map[string]string{}}
	jitter := []float64{1, 1.01, 0.99, 1.02, 0.98}
	for _, mesh := range meshes {
		cfg := analysis.Config{Mesh: mesh, App: "static", Rate: "50", Replicas: 1, Protocol: "http", MTLS: true}
		for rep, j := range jitter {
			f := map[string]float64{
				analysis.LatencyP50:          scale(mesh) * j,
				analysis.LatencyP99:          5 * j,
				analysis.CPUPrefix + "TOTAL": 100 * j,
				analysis.AchievedRate:        50,
			}
			if mesh != "none" {
				f[analysis.CPUPrefix+"data-plane"] = 40 * j
			}
			p.Cells = append(p.Cells, &analysis.Cell{ID: fmt.Sprintf("%s-rep%d", mesh, rep+1), Config: cfg, Valid: true, Figures: f})
		}
	}
	return p
}

func one(string) float64 { return 1 }

// TestCompareSetsShift: B's sidecar p50 is exactly 0.8× A's over five
// repetitions each: −20%, significant, said in the verdict; the figures
// that did not change are 0% and not significant; none did not change at all.
func TestCompareSetsShift(t *testing.T) {
	a := comparePlan(one, "none", "sidecar")
	b := comparePlan(func(m string) float64 {
		if m == "sidecar" {
			return 0.8
		}
		return 1
	}, "none", "sidecar")
	sc := analysis.CompareSets(a, b, analysis.Options{Seed: 1})
	if len(sc.Configs) != 2 || len(sc.OnlyA) != 0 || len(sc.OnlyB) != 0 {
		t.Fatalf("configs %d, only A %v, only B %v; want 2 in both", len(sc.Configs), sc.OnlyA, sc.OnlyB)
	}
	if sc.Configs[0].Config.Mesh != "none" || sc.Configs[1].Config.Mesh != "sidecar" {
		t.Errorf("order: %s, %s; want none, sidecar", sc.Configs[0].Config.Mesh, sc.Configs[1].Config.Mesh)
	}
	side := sc.Configs[1]
	p50 := side.Diffs[analysis.LatencyP50]
	if math.Abs(p50.Estimate+0.2) > 1e-12 || !p50.Significant() || p50.N != 5 || p50.Level != 0.95 {
		t.Errorf("sidecar p50 diff %+v, want −0.2, significant, n=5, level 0.95", p50)
	}
	if math.Abs(side.Ratios[analysis.LatencyP50]-0.8) > 1e-12 {
		t.Errorf("sidecar p50 ratio %v, want 0.8", side.Ratios[analysis.LatencyP50])
	}
	for _, d := range sc.Configs {
		for _, f := range analysis.CompareFigures {
			iv, ok := d.Diffs[f]
			measured := f != analysis.MemPrefix+"data-plane" && f != analysis.MemPrefix+"TOTAL" &&
				f != analysis.LatencyP90 && f != analysis.LatencyP95 && f != analysis.LatencyMax &&
				!strings.HasPrefix(f, analysis.CPUPerGbpsPrefix) && f != analysis.ThroughputGbps && // bulk cells' only
				(d.Config.Mesh != "none" || f != analysis.CPUPrefix+"data-plane")
			if ok != measured {
				t.Errorf("%s %s: in Diffs %v, want %v", d.Config.Mesh, f, ok, measured)
				continue
			}
			if !ok || (d.Config.Mesh == "sidecar" && f == analysis.LatencyP50) {
				continue
			}
			if iv.Estimate != 0 || iv.Significant() {
				t.Errorf("%s %s: %+v, want 0 and not significant", d.Config.Mesh, f, iv)
			}
		}
	}
	// The absolute difference of medians stands beside each ratio.
	want := "sidecar, static, 50 rps, 1 replica: B has ~20% lower p50 (−0.2 ms); p99: no significant difference (0 ms); " +
		"data-plane CPU: no significant difference (0 mCPU)"
	if got := side.Verdict(); got != want {
		t.Errorf("verdict\n got %q\nwant %q", got, want)
	}
	// Without a data plane the verdict speaks of the whole lab.
	if got := sc.Configs[0].Verdict(); !strings.Contains(got, "total CPU: no significant difference") {
		t.Errorf("none's verdict %q lacks the total CPU", got)
	}
	// B vs A is the other way round: +25%.
	back := analysis.CompareSets(b, a, analysis.Options{Seed: 1}).Configs[1]
	if iv := back.Diffs[analysis.LatencyP50]; math.Abs(iv.Estimate-0.25) > 1e-12 || !iv.Significant() {
		t.Errorf("A vs B p50 %+v, want +0.25 significant", iv)
	}
	if got := back.Verdict(); !strings.HasPrefix(got, "sidecar, static, 50 rps, 1 replica: B has ~25% higher p50 (+0.2 ms);") {
		t.Errorf("reverse verdict %q", got)
	}
}

// TestCompareSetsOnlyAndInvalid: a config on one side only is listed, not
// compared; a config whose cells on one side are all invalid counts as
// absent there; invalid cells never enter a difference.
func TestCompareSetsOnlyAndInvalid(t *testing.T) {
	a := comparePlan(one, "none", "sidecar", "ambient")
	b := comparePlan(one, "none", "sidecar", "waypoint")
	// B's sidecar: one invalid repetition far off, which must not count.
	for _, c := range b.Cells {
		if c.ID == "sidecar-rep1" {
			c.Valid, c.Invalid = false, []string{"target rate not reached"}
			c.Figures[analysis.LatencyP50] = 1000
		}
	}
	// A's none: every repetition invalid.
	for _, c := range a.Cells {
		if c.Config.Mesh == "none" {
			c.Valid = false
		}
	}
	sc := analysis.CompareSets(a, b, analysis.Options{Seed: 1})
	if len(sc.Configs) != 1 || sc.Configs[0].Config.Mesh != "sidecar" {
		t.Fatalf("compared %d configs, want sidecar only", len(sc.Configs))
	}
	d := sc.Configs[0]
	if d.B.Valid != 4 || len(d.B.Cells) != 5 {
		t.Errorf("B sidecar: %d of %d valid, want 4 of 5", d.B.Valid, len(d.B.Cells))
	}
	if iv := d.Diffs[analysis.LatencyP50]; iv.Significant() || iv.Hi > 0.1 || iv.N != 4 {
		t.Errorf("p50 diff %+v: the invalid run got in", iv)
	}
	mesh := func(cs []analysis.Config) string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Mesh)
		}
		return strings.Join(out, ",")
	}
	if got := mesh(sc.OnlyA); got != "ambient" {
		t.Errorf("only in A: %s, want ambient", got)
	}
	if got := mesh(sc.OnlyB); got != "none,waypoint" {
		t.Errorf("only in B: %s, want none,waypoint (A's none has no valid cell)", got)
	}
	if len(sc.A.Invalid) != 5 || len(sc.B.Invalid) != 1 {
		t.Errorf("invalid cells: A %d, B %d; want 5, 1", len(sc.A.Invalid), len(sc.B.Invalid))
	}
}

// TestCompareSetsFixture: a plan against itself: every difference is 0%
// and not significant, in every config of the plan; the same seed gives
// the same intervals.
func TestCompareSetsFixture(t *testing.T) {
	p := readPlan(t, smallDir)
	sc := analysis.CompareSets(p, p, analysis.Options{Seed: 7})
	if len(sc.Configs) != 6 || len(sc.OnlyA)+len(sc.OnlyB) != 0 {
		t.Fatalf("%d configs in both, %d on one side; want 6, 0", len(sc.Configs), len(sc.OnlyA)+len(sc.OnlyB))
	}
	again := analysis.CompareSets(p, p, analysis.Options{Seed: 7})
	for i, d := range sc.Configs {
		if len(d.Diffs) == 0 {
			t.Errorf("%s: no differences", d.Config.Key())
		}
		for f, iv := range d.Diffs {
			if iv.Estimate != 0 || iv.Significant() || !iv.HasInterval() {
				t.Errorf("%s %s: %+v, want 0, an interval, not significant", d.Config.Key(), f, iv)
			}
			if again.Configs[i].Diffs[f] != iv {
				t.Errorf("%s %s: not reproducible", d.Config.Key(), f)
			}
		}
		if v := d.Verdict(); strings.Contains(v, "B has") {
			t.Errorf("verdict %q claims a difference", v)
		}
	}
}
