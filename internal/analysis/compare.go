package analysis

import (
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/mesh"
)

// SetComparison is two result sets (two plan directories: two versions of
// a mesh, two machines) compared config by config: B against A.
type SetComparison struct {
	A, B  *Analysis
	Level float64
	// Configs are the configs with at least one valid cell on both sides,
	// ordered by scenario, then mesh.
	Configs []ConfigDiff
	// OnlyA and OnlyB are the configs with a valid cell on one side only
	// (absent from the other, or only invalid there), in the same order.
	OnlyA, OnlyB []Config
	// MethodDifferences names what differs between the sets besides the
	// configs (settings, machine, versions), one line each; a difference
	// between the sets may come from any of them.
	MethodDifferences []string
}

// ConfigDiff is one config measured in both sets.
type ConfigDiff struct {
	Config Config
	// A and B are the config's groups: medians over each side's valid
	// repetitions with their intervals.
	A, B *Group
	// Diffs maps each of CompareFigures measured on both sides to the
	// relative difference of medians B/A − 1 (−0.2: B is 20% lower) with
	// its bootstrap interval over both sides' valid repetitions.
	Diffs map[string]stats.Interval
	// Ratios maps a figure to median(B)/median(A) (absent when A's is 0).
	Ratios map[string]float64
	// Deltas maps a figure to median(B) − median(A) in its unit; RatePerSec
	// is B's median achieved rate (0: unknown).
	Deltas     map[string]float64
	RatePerSec float64
}

// CompareSets compares b against a: for every config with valid cells in
// both, the relative difference of each of CompareFigures with a
// percentile-bootstrap interval (stats.RelativeDiffCI), resampling each
// side's valid repetitions. Invalid cells are never used; they stay counted
// in each side's Analysis (Invalid, Plan.Failed, Plan.Missing). o.Level,
// o.Resamples and o.Seed apply to both sides' medians and to the
// differences; o.Baseline only orders the meshes. The result is the same
// for the same inputs and seed.
func CompareSets(a, b *Plan, o Options) *SetComparison {
	sc := &SetComparison{A: Analyze(a, o), B: Analyze(b, o), MethodDifferences: methodDifferences(a, b)}
	sc.Level = sc.A.Level
	rng := rand.New(rand.NewPCG(o.Seed, 0x636d70)) // "cmp"
	keys := map[string]Config{}
	for _, an := range []*Analysis{sc.A, sc.B} {
		for k, g := range an.Groups {
			keys[k] = g.Config
		}
	}
	cfgs := make([]Config, 0, len(keys))
	for _, c := range keys {
		cfgs = append(cfgs, c)
	}
	sort.Slice(cfgs, func(i, j int) bool { return configLess(cfgs[i], cfgs[j]) })
	for _, c := range cfgs {
		ga, gb := sc.A.Groups[c.Key()], sc.B.Groups[c.Key()]
		inA, inB := ga != nil && ga.Valid > 0, gb != nil && gb.Valid > 0
		switch {
		case inA && inB:
			sc.Configs = append(sc.Configs, diffGroups(c, ga, gb, sc.Level, o.Resamples, rng))
		case inA:
			sc.OnlyA = append(sc.OnlyA, c)
		case inB:
			sc.OnlyB = append(sc.OnlyB, c)
		}
	}
	return sc
}

func diffGroups(c Config, a, b *Group, level float64, resamples int, rng *rand.Rand) ConfigDiff {
	d := ConfigDiff{Config: c, A: a, B: b, Diffs: map[string]stats.Interval{}, Ratios: map[string]float64{}, Deltas: map[string]float64{}}
	if r := values(b, AchievedRate); len(r) > 0 {
		d.RatePerSec = stats.Median(r)
	}
	// The fault figures too, in a scenario with a fault (absent
	// elsewhere): what the same fault cost in A and in B.
	for _, f := range append(slices.Clone(CompareFigures), FaultFigures...) {
		av, bv := values(a, f), values(b, f)
		if len(av) == 0 || len(bv) == 0 {
			continue
		}
		d.Diffs[f] = stats.RelativeDiffCI(bv, av, level, resamples, rng)
		d.Deltas[f] = stats.Median(bv) - stats.Median(av)
		if am := stats.Median(av); am != 0 {
			d.Ratios[f] = stats.Median(bv) / am
		}
	}
	return d
}

// configLess orders configs by scenario, then mesh (mesh.Order, then name).
func configLess(a, b Config) bool {
	sa, sb := a.Scenario(), b.Scenario()
	if sa != sb {
		return scenarioLess(sa, sb)
	}
	oa, ob := mesh.Order(MeshMode(a.Mesh)), mesh.Order(MeshMode(b.Mesh))
	if oa != ob {
		return oa < ob
	}
	return a.Mesh < b.Mesh
}

// Verdict is the config's one-line summary, e.g. "sidecar, static, 50 rps,
// 1 replica: B has ~20% lower p50; p99: no significant difference;
// data-plane CPU: no significant difference; data-plane memory: no
// significant difference". It speaks of p50, p99 and the data plane's CPU
// and memory (the whole lab's when the mesh has no data plane). A
// difference whose interval spans zero is "no significant difference",
// whatever its estimate; a side with one run says "(one run, no interval)".
func (d ConfigDiff) Verdict() string {
	head := d.Config.Mesh + ", " + d.Config.Scenario().String()
	parts := verdictParts(d.Diffs, d.Ratios, d.Deltas, d.RatePerSec, "B has ")
	if len(parts) == 0 {
		return head + ": nothing to compare"
	}
	return head + ": " + strings.Join(parts, "; ")
}
