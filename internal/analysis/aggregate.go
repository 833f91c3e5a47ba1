package analysis

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/mesh"
)

// Options control the analysis.
type Options struct {
	// Level is the confidence level of every interval (0: 0.95).
	Level float64
	// Baseline is the mesh the others are compared with ("": none when
	// the plan has it, else no baseline). A baseline the plan has no cell
	// of gives no baseline either (callers refuse it first).
	Baseline string
	// Resamples per bootstrap (0: stats.DefaultResamples).
	Resamples int
	// Seed makes the bootstrap reproducible: the same directory gives the
	// same report.
	Seed uint64
	// Compare names the axes compared along (CompareAxes; nil: mesh
	// alone). Mesh gives Comparisons; every other axis AxisComparisons
	// and, with mesh, Interactions.
	Compare []string
}

// Group is one Config's repetitions: the median of every figure across
// its valid cells, with a bootstrap interval.
type Group struct {
	Config  Config
	Cells   []*Cell // every cell of the config, valid or not
	Valid   int     // how many are valid (only those are aggregated)
	Figures map[string]stats.Interval
	// Spectrum is the median latency at each of SpectrumPercentiles, with
	// intervals.
	Spectrum []stats.Interval
}

// Comparison is one mesh against the baseline in one scenario.
type Comparison struct {
	Scenario Scenario
	Mesh     string
	Baseline string
	// Diffs maps a figure to the relative difference of medians
	// (mesh/baseline − 1) with its interval.
	Diffs map[string]stats.Interval
	// Ratios maps a figure to median(mesh)/median(baseline).
	Ratios map[string]float64
	// Deltas maps a figure to median(mesh) − median(baseline), in the
	// figure's unit (ms, millicores, MiB): what the mesh adds.
	Deltas map[string]float64
	// RatePerSec is the mesh's median achieved rate (0: unknown), for
	// the CPU it adds per 1000 requests per second.
	RatePerSec float64
}

// Fit is a figure against replicas for one mesh (and the rest of the
// scenario but replicas fixed): the slope is the cost of one more replica.
type Fit struct {
	Mesh      string
	Scenario  Scenario // Replicas is 0: the fit runs over it
	Figure    string
	Slope     stats.Interval
	Intercept float64
	R2        float64
	Points    int
}

// Analysis is a plan's results, aggregated.
type Analysis struct {
	Plan        *Plan
	Level       float64
	Baseline    string     // "": no baseline (the plan has no none and names none)
	Meshes      []string   // in display order: baseline first
	Scenarios   []Scenario // in order: app, rate, replicas, policies, …
	Groups      map[string]*Group
	Comparisons []Comparison
	// Compare are the axes compared along (Options.Compare, mesh when
	// none); AxisComparisons and Interactions hold those other than mesh.
	Compare         []string
	AxisComparisons []AxisComparison
	Interactions    []Interaction
	Fits            []Fit
	Invalid         []*Cell
}

// Group returns the group of mesh in scenario s, or nil.
func (a *Analysis) Group(mesh string, s Scenario) *Group {
	return a.Groups[mesh+"|"+s.Key()]
}

// CompareFigures are the figures comparisons and verdicts are made on.
var CompareFigures = []string{LatencyP50, LatencyP90, LatencyP95, LatencyP99, LatencyMax,
	CPUPrefix + "data-plane", MemPrefix + "data-plane", CPUPrefix + "TOTAL", MemPrefix + "TOTAL", AchievedRate}

// Analyze aggregates a plan's cells.
func Analyze(p *Plan, o Options) *Analysis {
	level := o.Level
	if level == 0 {
		level = stats.DefaultLevel
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x6d657368))
	a := &Analysis{Plan: p, Level: level, Groups: map[string]*Group{}}
	seen := map[string]bool{}
	scen := map[string]Scenario{}
	for _, c := range p.Cells {
		g := a.Groups[c.Config.Key()]
		if g == nil {
			g = &Group{Config: c.Config, Figures: map[string]stats.Interval{}}
			a.Groups[c.Config.Key()] = g
		}
		g.Cells = append(g.Cells, c)
		if c.Valid {
			g.Valid++
		} else {
			a.Invalid = append(a.Invalid, c)
		}
		seen[c.Config.Mesh] = true
		scen[c.Config.Scenario().Key()] = c.Config.Scenario()
	}
	for m := range seen {
		a.Meshes = append(a.Meshes, m)
	}
	a.Baseline = o.Baseline
	if a.Baseline == "" {
		a.Baseline = "none"
	}
	// The baseline names a mode; the meshes may carry a label (MeshLabel).
	for m := range seen {
		if !seen[a.Baseline] && MeshMode(m) == a.Baseline {
			a.Baseline = m
		}
	}
	sort.Slice(a.Meshes, func(i, j int) bool {
		oi, oj := mesh.Order(MeshMode(a.Meshes[i])), mesh.Order(MeshMode(a.Meshes[j]))
		if a.Meshes[i] == a.Baseline {
			oi = -1
		}
		if a.Meshes[j] == a.Baseline {
			oj = -1
		}
		if oi != oj {
			return oi < oj
		}
		return a.Meshes[i] < a.Meshes[j]
	})
	if !seen[a.Baseline] {
		// No baseline: the meshes are compared with each other and
		// along the other axes named, never with a mesh the plan lacks.
		a.Baseline = ""
	}
	for _, s := range scen {
		a.Scenarios = append(a.Scenarios, s)
	}
	sort.Slice(a.Scenarios, func(i, j int) bool { return scenarioLess(a.Scenarios[i], a.Scenarios[j]) })

	// Medians and intervals over the valid repetitions.
	for _, key := range slices.Sorted(maps.Keys(a.Groups)) {
		g := a.Groups[key]
		names := map[string]bool{}
		for _, c := range g.Cells {
			for n := range c.Figures {
				names[n] = true
			}
		}
		for _, n := range slices.Sorted(maps.Keys(names)) {
			g.Figures[n] = stats.BootstrapMedianCI(values(g, n), level, o.Resamples, rng)
		}
		for i := range SpectrumPercentiles {
			var xs []float64
			for _, c := range g.Cells {
				if c.Valid && i < len(c.Spectrum) {
					xs = append(xs, c.Spectrum[i])
				}
			}
			g.Spectrum = append(g.Spectrum, stats.BootstrapMedianCI(xs, level, o.Resamples, rng))
		}
	}
	// Every mesh against the baseline, per scenario.
	for _, s := range a.Scenarios {
		base := a.Group(a.Baseline, s)
		if base == nil {
			continue
		}
		for _, m := range a.Meshes {
			g := a.Group(m, s)
			if m == a.Baseline || g == nil {
				continue
			}
			a.Comparisons = append(a.Comparisons, compare(g, base, s, level, o.Resamples, rng))
		}
	}
	// Pairwise between meshes (not the baseline): the seed reports' "ambient vs sidecar".
	for _, s := range a.Scenarios {
		for i, m1 := range a.Meshes {
			for _, m2 := range a.Meshes[i+1:] {
				if m1 == a.Baseline || m2 == a.Baseline {
					continue
				}
				g1, g2 := a.Group(m1, s), a.Group(m2, s)
				if g1 != nil && g2 != nil {
					a.Comparisons = append(a.Comparisons, compare(g2, g1, s, level, o.Resamples, rng))
				}
			}
		}
	}
	a.Compare = o.Compare
	if len(a.Compare) == 0 {
		a.Compare = []string{AxisMesh}
	}
	for _, axis := range a.Compare {
		if axis == AxisMesh {
			continue
		}
		a.AxisComparisons = append(a.AxisComparisons, axisComparisons(a, axis, level, o.Resamples, rng)...)
		a.Interactions = append(a.Interactions, interactions(a, axis)...)
	}
	a.Fits = fits(a, level)
	return a
}

func compare(g, base *Group, s Scenario, level float64, resamples int, rng *rand.Rand) Comparison {
	c := Comparison{Scenario: s, Mesh: g.Config.Mesh, Baseline: base.Config.Mesh, Diffs: map[string]stats.Interval{},
		Ratios: map[string]float64{}, Deltas: map[string]float64{}}
	for _, f := range CompareFigures {
		av, bv := values(g, f), values(base, f)
		if len(av) == 0 || len(bv) == 0 {
			continue
		}
		c.Diffs[f] = stats.RelativeDiffCI(av, bv, level, resamples, rng)
		c.Deltas[f] = stats.Median(av) - stats.Median(bv)
		if bm := stats.Median(bv); bm != 0 {
			c.Ratios[f] = stats.Median(av) / bm
		}
	}
	if r := values(g, AchievedRate); len(r) > 0 {
		c.RatePerSec = stats.Median(r)
	}
	return c
}

// values are a figure's values over a group's valid cells.
func values(g *Group, name string) []float64 {
	var xs []float64
	for _, c := range g.Cells {
		if v, ok := c.Figures[name]; ok && c.Valid {
			xs = append(xs, v)
		}
	}
	return xs
}

// fits: data-plane CPU and memory against replicas, per mesh and per
// scenario with the replicas left out, over every valid cell (not medians).
func fits(a *Analysis, level float64) []Fit {
	type key struct {
		mesh string
		s    Scenario
	}
	points := map[key][]*Cell{}
	var keys []key
	for _, c := range a.Plan.Cells {
		if !c.Valid {
			continue
		}
		s := c.Config.Scenario()
		s.Replicas = 0
		k := key{c.Config.Mesh, s}
		if _, ok := points[k]; !ok {
			keys = append(keys, k)
		}
		points[k] = append(points[k], c)
	}
	var out []Fit
	for _, k := range keys {
		cells := points[k]
		distinct := map[int]bool{}
		for _, c := range cells {
			distinct[c.Config.Replicas] = true
		}
		if len(distinct) < 2 {
			continue
		}
		for _, f := range []string{MemPrefix + "data-plane", CPUPrefix + "data-plane", MemPrefix + "TOTAL"} {
			var x, y []float64
			for _, c := range cells {
				if v, ok := c.Figures[f]; ok {
					x, y = append(x, float64(c.Config.Replicas)), append(y, v)
				}
			}
			if len(x) < 2 {
				continue
			}
			slope, icpt, r2, ci := stats.LinearFit(x, y, level)
			ci.Estimate = slope
			out = append(out, Fit{Mesh: k.mesh, Scenario: k.s, Figure: f, Slope: ci, Intercept: icpt, R2: r2, Points: len(x)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Scenario.Key() != out[j].Scenario.Key() {
			return scenarioLess(out[i].Scenario, out[j].Scenario)
		}
		return mesh.Order(MeshMode(out[i].Mesh)) < mesh.Order(MeshMode(out[j].Mesh))
	})
	return out
}

func scenarioLess(a, b Scenario) bool {
	if a.App != b.App {
		return a.App < b.App
	}
	ra, rb := RateValue(a.Rate), RateValue(b.Rate)
	if ra != rb && !(math.IsNaN(ra) && math.IsNaN(rb)) {
		if math.IsNaN(ra) {
			return false
		}
		if math.IsNaN(rb) {
			return true
		}
		return ra < rb
	}
	if a.Replicas != b.Replicas {
		return a.Replicas < b.Replicas
	}
	if a.Policies != b.Policies {
		return a.Policies < b.Policies
	}
	return a.Key() < b.Key()
}

// Verdict is the one-line summary of a comparison in the seed reports'
// style: "ambient vs sidecar: ~20% lower p50; ~1/2 the data-plane CPU;
// ~1/4 the data-plane memory". Differences whose interval spans zero say
// "no significant difference"; below stats.MinJudgedRuns valid runs on a
// side there is no summary, only "2 runs: too few to judge; run 3 or
// more".
func (c Comparison) Verdict() string {
	head := c.Mesh + " vs " + c.Baseline
	parts := verdictParts(c.Diffs, c.Ratios, c.Deltas, c.RatePerSec, "")
	if len(parts) == 0 {
		return head + ": nothing to compare"
	}
	return head + ": " + strings.Join(parts, "; ")
}

// verdictFigures are the figures a verdict words: p50, p99, and the data
// plane's CPU and memory, or the whole lab's when one side has no data
// plane.
func verdictFigures(diffs map[string]stats.Interval) []string {
	if _, ok := diffs[CPUPrefix+"data-plane"]; ok {
		return []string{LatencyP50, LatencyP99, CPUPrefix + "data-plane", MemPrefix + "data-plane"}
	}
	return []string{LatencyP50, LatencyP99, CPUPrefix + "TOTAL", MemPrefix + "TOTAL"}
}

// tooFew returns the fewest runs behind the verdict figures of diffs and
// whether that is too few to judge (0, false when no figure has runs).
func tooFew(diffs map[string]stats.Interval) (int, bool) {
	n := 0
	for _, f := range verdictFigures(diffs) {
		if iv, ok := diffs[f]; ok && iv.N > 0 && (n == 0 || iv.N < n) {
			n = iv.N
		}
	}
	return n, n > 0 && n < stats.MinJudgedRuns
}

// verdictParts words the differences of a comparison, one part per
// figure: p50, p99, and the data plane's CPU and memory (the whole lab's
// when one side has no data plane). Each part carries the absolute
// difference of medians beside the ratio (deltas; "+0.72 ms", "+35
// mCPU, +70 mCPU per 1000 rps" with rate, the compared side's achieved
// rate, "+12.5 MiB"), so a large ratio of a small figure reads as what it
// adds. subject starts a part that states a difference ("B has " in a
// compare of two result sets). With fewer than stats.MinJudgedRuns runs
// on a side, the one part says so instead (stats.TooFewText).
func verdictParts(diffs map[string]stats.Interval, ratios, deltas map[string]float64, rate float64, subject string) []string {
	if n, few := tooFew(diffs); few {
		return []string{stats.TooFewText(n)}
	}
	var parts []string
	say := func(fig, label, unit string, perRate bool) {
		iv, ok := diffs[fig]
		if !ok {
			return
		}
		abs := ""
		if d, ok := deltas[fig]; ok && !math.IsNaN(d) {
			abs = " (" + signed(d) + " " + unit
			if perRate && rate > 0 && d != 0 {
				abs += ", " + signed(d/rate*1000) + " " + unit + " per 1000 rps"
			}
			abs += ")"
		}
		switch r := stats.HumanRatio(ratios[fig]); {
		case math.IsNaN(iv.Estimate):
			parts = append(parts, label+": n/a")
			return
		case iv.HasInterval() && !iv.Significant():
			parts = append(parts, label+": no significant difference"+abs)
			return
		case r == "about the same":
			parts = append(parts, label+": about the same"+abs)
		case strings.HasSuffix(r, "lower") || strings.HasSuffix(r, "higher"):
			parts = append(parts, subject+r+" "+label+abs) // "~20% lower p50 (−0.1 ms)"
		default:
			parts = append(parts, subject+r+" the "+label+abs) // "~1/2 the data-plane CPU", "~3× the p99 (+0.72 ms)"
		}
	}
	figs := verdictFigures(diffs)
	labels := map[string]string{LatencyP50: "p50", LatencyP99: "p99", CPUPrefix + "data-plane": "data-plane CPU",
		MemPrefix + "data-plane": "data-plane memory", CPUPrefix + "TOTAL": "total CPU", MemPrefix + "TOTAL": "total memory"}
	for _, f := range figs {
		unit := "ms"
		switch {
		case strings.HasPrefix(f, CPUPrefix):
			unit = "mCPU"
		case strings.HasPrefix(f, MemPrefix):
			unit = "MiB"
		}
		say(f, labels[f], unit, strings.HasPrefix(f, CPUPrefix))
	}
	return parts
}

// signed prints a difference with its sign and three significant digits,
// without an exponent: "+0.723", "−12.5", "+1230", "0".
func signed(v float64) string {
	if v == 0 {
		return "0"
	}
	mag := math.Abs(v)
	digits := max(0, 2-int(math.Floor(math.Log10(mag))))
	scale := math.Pow10(digits)
	mag = math.Round(mag*scale) / scale
	out := strconv.FormatFloat(mag, 'f', -1, 64)
	if v < 0 {
		return "−" + out
	}
	return "+" + out
}
