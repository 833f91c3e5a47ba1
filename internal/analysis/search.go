package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis/capacity"
	"github.com/meshbench/meshbench/internal/analysis/slo"
	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/results"
)

// SearchOptions are what a capacity-search plan judges its probes with.
type SearchOptions struct {
	Objective slo.Objective
	Config    capacity.Config
	// RateShortfall and LoadCPU are the plan's thresholds: the rate
	// tolerance and the generator's CPU limit (fraction of one core).
	RateShortfall, LoadCPU float64
	Baseline               string
	Level                  float64
	Seed                   uint64
	// ProbeID names probe n of a search; ParseProbeID splits a cell ID.
	ProbeID      func(searchID string, n int) string
	ParseProbeID func(id string) (searchID string, n int, ok bool)
}

// JudgeProbe judges one probe cell's directory against the objective: its
// load result, the load generator's CPU from its resources, and the
// search's first probe (its lowest rate, a sibling directory) as the
// target's unloaded service time.
func JudgeProbe(dir string, o SearchOptions) (slo.Outcome, float64, error) {
	lr, err := results.ReadFile(filepath.Join(dir, results.LoadFile))
	if err != nil {
		return slo.Outcome{}, 0, err
	}
	sum, _, err := readResources(dir)
	if err != nil {
		return slo.Outcome{}, 0, err
	}
	loadCPU := -1.0
	for _, g := range sum.Categories {
		if g.Name == sample.CategoryLoad {
			loadCPU = g.Figures.CPUMillicores.Avg / 1000
		}
	}
	out := slo.Evaluate(o.Objective, slo.Input{Load: lr, RateShortfall: o.RateShortfall, LoadCPU: loadCPU, LoadCPUMax: o.LoadCPU,
		UnloadedServiceNs: unloadedService(dir, o)})
	return out, loadCPU, nil
}

// unloadedService is the mean service time of the first probe of the
// search that probe directory dir belongs to; 0 for the first probe
// itself, or when it left no load result.
func unloadedService(dir string, o SearchOptions) float64 {
	if o.ProbeID == nil || o.ParseProbeID == nil {
		return 0
	}
	sid, n, ok := o.ParseProbeID(filepath.Base(dir))
	if !ok || n <= 1 {
		return 0
	}
	first, err := results.ReadFile(filepath.Join(filepath.Dir(dir), o.ProbeID(sid, 1), results.LoadFile))
	if err != nil {
		return 0
	}
	return first.ServiceMeanNs()
}

// SearchProbe is one probe of a search, read back.
type SearchProbe struct {
	CellID     string      `json:"cell_id"`
	N          int         `json:"n"`
	RatePerSec float64     `json:"rate_per_sec"`
	Outcome    slo.Outcome `json:"outcome"`
	LoadCPU    float64     `json:"load_cpu"`
	// Figures are the cell's figures (CPU per category, data-plane CPU per
	// 1000 rps, …), as for any cell.
	Figures map[string]float64 `json:"figures"`
}

// SearchRun is one search (a configuration and a repetition): its probes
// in order and how it ended.
type SearchRun struct {
	ID         string          `json:"id"`
	Config     Config          `json:"config"`
	Probes     []SearchProbe   `json:"probes"`
	Result     capacity.Result `json:"result"`
	Unfinished bool            `json:"unfinished,omitempty"` // the plan stopped before the search ended
}

// CapacityGroup is a mesh's capacity in one scenario, over repetitions.
type CapacityGroup struct {
	Mesh     string      `json:"mesh"`
	Scenario Scenario    `json:"scenario"`
	Runs     []SearchRun `json:"runs"`
	// Capacity is the median capacity over the searches that found one,
	// with its interval; NaN when none did.
	Capacity stats.Interval `json:"capacity"`
	// Text says the capacity for people: "1950/s [1900, 2000]", or what
	// the searches said when they did not all find one ("≥ 50000/s").
	Text string `json:"text"`
}

// CapacityComparison is a mesh's capacity against the baseline's.
type CapacityComparison struct {
	Mesh     string   `json:"mesh"`
	Baseline string   `json:"baseline"`
	Scenario Scenario `json:"scenario"`
	// Diff is the relative difference of the medians (−0.39: 39% less
	// capacity), with its interval; NaN when a side has no capacity.
	Diff stats.Interval `json:"diff"`
	// Verdict is one line: "sidecar: 61% of none's capacity at p99 ≤ 5ms".
	Verdict string `json:"verdict"`
}

// SearchAnalysis is a capacity-search plan read back.
type SearchAnalysis struct {
	Objective   string               `json:"objective"`
	Search      capacity.Config      `json:"search"`
	Groups      []CapacityGroup      `json:"groups"`
	Comparisons []CapacityComparison `json:"comparisons"`
}

// AnalyzeSearch groups a plan directory's probe cells into searches,
// judges every probe from its files, replays each search (capacity.Next)
// and compares capacities against the baseline.
func AnalyzeSearch(p *Plan, o SearchOptions) (*SearchAnalysis, error) {
	runs := map[string]*SearchRun{}
	var order []string
	for _, c := range p.Cells {
		sid, n, ok := o.ParseProbeID(c.ID)
		if !ok {
			continue
		}
		out, cpu, err := JudgeProbe(c.Dir, o)
		if err != nil {
			return nil, fmt.Errorf("cell %s: %w", c.ID, err)
		}
		r := runs[sid]
		if r == nil {
			cfg := c.Config
			cfg.Rate = "search"
			r = &SearchRun{ID: sid, Config: cfg}
			runs[sid] = r
			order = append(order, sid)
		}
		r.Probes = append(r.Probes, SearchProbe{CellID: c.ID, N: n, RatePerSec: out.TargetRatePerSec, Outcome: out, LoadCPU: cpu, Figures: c.Figures})
	}
	for id := range p.Failed {
		if sid, n, ok := o.ParseProbeID(id); ok && runs[sid] != nil {
			runs[sid].Probes = append(runs[sid].Probes, SearchProbe{CellID: id, N: n, Outcome: slo.Outcome{Reasons: []string{p.Failed[id]}}})
		}
	}
	a := &SearchAnalysis{Objective: o.Objective.String(), Search: o.Config}
	groups := map[string]*CapacityGroup{}
	var gkeys []string
	for _, sid := range order {
		r := runs[sid]
		sort.Slice(r.Probes, func(i, j int) bool { return r.Probes[i].N < r.Probes[j].N })
		var probes []capacity.Probe
		for _, pr := range r.Probes {
			if pr.Outcome.TargetRatePerSec == 0 && len(pr.Outcome.Reasons) > 0 && pr.Figures == nil {
				probes = append(probes, capacity.Probe{RatePerSec: pr.RatePerSec, Failed: true, Reason: pr.Outcome.Reasons[0]})
				continue
			}
			probes = append(probes, capacity.ProbeOf(pr.RatePerSec, pr.Outcome))
		}
		_, done, res := capacity.Next(o.Config, probes)
		r.Result, r.Unfinished = res, !done
		key := r.Config.Key()
		g := groups[key]
		if g == nil {
			g = &CapacityGroup{Mesh: r.Config.Mesh, Scenario: r.Config.Scenario()}
			groups[key] = g
			gkeys = append(gkeys, key)
		}
		g.Runs = append(g.Runs, *r)
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x636170)) // "cap"
	for _, k := range gkeys {
		g := groups[k]
		g.Capacity, g.Text = summarize(g.Runs, o.Level, rng)
		a.Groups = append(a.Groups, *g)
	}
	sort.SliceStable(a.Groups, func(i, j int) bool {
		if a.Groups[i].Scenario != a.Groups[j].Scenario {
			return scenarioLess(a.Groups[i].Scenario, a.Groups[j].Scenario)
		}
		return mesh.Order(MeshMode(a.Groups[i].Mesh)) < mesh.Order(MeshMode(a.Groups[j].Mesh))
	})
	for _, g := range a.Groups {
		if MeshMode(g.Mesh) == MeshMode(o.Baseline) {
			continue
		}
		var base *CapacityGroup
		for i := range a.Groups {
			if MeshMode(a.Groups[i].Mesh) == MeshMode(o.Baseline) && a.Groups[i].Scenario == g.Scenario {
				base = &a.Groups[i]
			}
		}
		if base == nil {
			continue
		}
		c := CapacityComparison{Mesh: g.Mesh, Baseline: base.Mesh, Scenario: g.Scenario}
		mine, theirs := found(g.Runs), found(base.Runs)
		obj := o.Objective.Human()
		if len(mine) == len(g.Runs) && len(theirs) == len(base.Runs) && len(mine) > 0 && len(theirs) > 0 {
			c.Diff = stats.RelativeDiffCI(mine, theirs, o.Level, 0, rng)
			pct := func(v float64) string { return fmt.Sprintf("%.0f%%", (1+v)*100) }
			c.Verdict = fmt.Sprintf("%s: %s of %s's capacity at %s", g.Mesh, pct(c.Diff.Estimate), base.Mesh, obj)
			if c.Diff.HasInterval() {
				c.Verdict += fmt.Sprintf(" [%s, %s]", pct(c.Diff.Lo), pct(c.Diff.Hi))
				switch {
				case c.Diff.TooFew():
					c.Verdict += ", " + stats.TooFewText(c.Diff.N)
				case !c.Diff.Significant():
					c.Verdict += ", not significant"
				}
			}
			c.Verdict += fmt.Sprintf(" (%s vs %s)", g.Text, base.Text)
		} else {
			c.Diff = stats.Interval{Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
			c.Verdict = fmt.Sprintf("%s: %s vs %s's %s at %s: no ratio (not every search found a capacity)", g.Mesh, g.Text, base.Mesh, base.Text, obj)
		}
		a.Comparisons = append(a.Comparisons, c)
	}
	return a, nil
}

// found lists the capacities of the runs that bracketed one.
func found(runs []SearchRun) []float64 {
	var out []float64
	for _, r := range runs {
		if !r.Unfinished && r.Result.Kind == capacity.Found {
			out = append(out, r.Result.Capacity)
		}
	}
	return out
}

// summarize is a group's capacity: the median and interval when every
// search found one; otherwise each search's result, said plainly.
func summarize(runs []SearchRun, level float64, rng *rand.Rand) (stats.Interval, string) {
	caps := found(runs)
	if len(caps) == len(runs) && len(caps) > 0 {
		iv := stats.BootstrapMedianCI(caps, level, 0, rng)
		t := capacity.FormatRate(iv.Estimate) + "/s"
		if iv.HasInterval() {
			t += fmt.Sprintf(" [%s, %s]", capacity.FormatRate(iv.Lo), capacity.FormatRate(iv.Hi))
		}
		return iv, t
	}
	var parts []string
	for _, r := range runs {
		if r.Unfinished {
			parts = append(parts, "unfinished")
			continue
		}
		parts = append(parts, r.Result.Short())
	}
	return stats.Interval{Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}, strings.Join(parts, "; ")
}

// CapacitySetComparison compares the capacities of two search plans (B vs
// A), configuration by configuration.
type CapacitySetComparison struct {
	Objective string
	// Rows are the configurations found in both, in A's order.
	Rows []CapacityRow
	// OnlyA and OnlyB list configurations found on one side only.
	OnlyA, OnlyB []string
	// Mismatch is set when the two plans searched at different objectives:
	// their capacities answer different questions.
	Mismatch string
}

// CapacityRow is one configuration's capacity on both sides.
type CapacityRow struct {
	Config       string
	A, B         string // each side's CapacityGroup.Text
	Diff         stats.Interval
	Verdict      string
	Incomparable bool // a side has a search that found no number
}

// CompareCapacities compares b's capacities with a's.
func CompareCapacities(a, b *SearchAnalysis, level float64, seed uint64) *CapacitySetComparison {
	out := &CapacitySetComparison{Objective: a.Objective}
	if a.Objective != b.Objective {
		out.Mismatch = fmt.Sprintf("A searched at %s, B at %s: the capacities answer different questions", a.Objective, b.Objective)
	}
	label := func(g CapacityGroup) string { return g.Mesh + ", " + scenarioLabelOf(g.Scenario) }
	bg := map[string]CapacityGroup{}
	for _, g := range b.Groups {
		bg[label(g)] = g
	}
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(seed, 0x636d70)) // "cmp"
	for _, g := range a.Groups {
		k := label(g)
		seen[k] = true
		other, ok := bg[k]
		if !ok {
			out.OnlyA = append(out.OnlyA, k)
			continue
		}
		row := CapacityRow{Config: k, A: g.Text, B: other.Text}
		fa, fb := found(g.Runs), found(other.Runs)
		if len(fa) != len(g.Runs) || len(fb) != len(other.Runs) || len(fa) == 0 || len(fb) == 0 {
			row.Incomparable = true
			row.Diff = stats.Interval{Estimate: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
			row.Verdict = fmt.Sprintf("%s: B %s vs A %s: no ratio (not every search found a capacity)", k, other.Text, g.Text)
		} else {
			row.Diff = stats.RelativeDiffCI(fb, fa, level, 0, rng)
			row.Verdict = fmt.Sprintf("%s: B's capacity %s A's (%s vs %s)", k, stats.HumanDiff(row.Diff), other.Text, g.Text)
			if row.Diff.TooFew() {
				row.Verdict = fmt.Sprintf("%s: B %s vs A %s: %s", k, other.Text, g.Text, stats.TooFewText(row.Diff.N))
			}
			if row.Diff.HasInterval() {
				row.Verdict += fmt.Sprintf(", B vs A %+.0f%% [%+.0f%%, %+.0f%%]", row.Diff.Estimate*100, row.Diff.Lo*100, row.Diff.Hi*100)
			}
		}
		out.Rows = append(out.Rows, row)
	}
	for _, g := range b.Groups {
		if k := label(g); !seen[k] {
			out.OnlyB = append(out.OnlyB, k)
		}
	}
	return out
}

// scenarioLabelOf is a search scenario's label without the rate.
func scenarioLabelOf(s Scenario) string {
	return strings.Replace(s.String(), "search rps", "capacity search", 1)
}
