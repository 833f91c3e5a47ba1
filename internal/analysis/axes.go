package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis/stats"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
)

// The axes a plan can compare along (plan `compare:`). Mesh is the
// default and is what Comparisons hold; every other axis gets
// AxisComparisons and, crossed with mesh, Interactions.
const (
	AxisMesh      = "mesh"
	AxisApp       = "app"
	AxisRate      = "rate"
	AxisReplicas  = "replicas"
	AxisPolicies  = "policies"
	AxisProtocol  = "protocol"
	AxisGateway   = "gateway"
	AxisMTLS      = "mtls"
	AxisLoadModel = "load_model"
	AxisGenerator = "generator"
)

// CompareAxes are the axes a plan can name in `compare:`, in report order.
var CompareAxes = []string{AxisMesh, AxisPolicies, AxisMTLS, AxisLoadModel, AxisGateway, AxisProtocol, AxisReplicas, AxisRate, AxisApp, AxisGenerator}

// LoadModel is "closed" for a closed-loop config (Rate "max") and "open"
// otherwise.
func (c Config) LoadModel() string {
	if c.Rate == loadgen.ClosedLoopText {
		return "closed"
	}
	return "open"
}

// axisValue is c's value on axis as a sortable key and as words ("4
// policies", "mTLS off", "closed loop"), and rest, the key of c with that
// axis left out: two configs with equal rest differ only on axis. For
// load_model the rate is left out too (a closed-loop cell has none), so a
// closed-loop config pairs with the open-loop config of every rate.
func axisValue(c Config, axis string) (order float64, words, rest string) {
	r := c
	switch axis {
	case AxisMesh:
		r.Mesh = ""
		return float64(mesh.Order(MeshMode(c.Mesh))), c.Mesh, r.Key()
	case AxisApp:
		r.App = ""
		return 0, c.App, r.Key()
	case AxisRate:
		r.Rate = ""
		if c.Rate == loadgen.ClosedLoopText {
			return math.Inf(1), "closed loop", r.Key()
		}
		return RateValue(c.Rate), c.Rate + " rps", r.Key()
	case AxisReplicas:
		r.Replicas = 0
		return float64(c.Replicas), plural(c.Replicas, "replica"), r.Key()
	case AxisPolicies:
		r.Policies = 0
		return float64(c.Policies), plural(c.Policies, "policy"), r.Key()
	case AxisProtocol:
		r.Protocol = ""
		o := map[string]float64{"http": 0, "h2": 1, "grpc": 2, "tcp": 3}[c.Protocol]
		return o, c.Protocol, r.Key()
	case AxisGateway:
		r.Gateway = false
		if c.Gateway {
			return 1, "through the gateway", r.Key()
		}
		return 0, "direct", r.Key()
	case AxisMTLS:
		r.MTLS = false
		if c.MTLS {
			return 1, "mTLS on", r.Key()
		}
		return 0, "mTLS off", r.Key()
	case AxisLoadModel:
		r.Rate = ""
		if c.Rate == loadgen.ClosedLoopText {
			return 1, "closed loop", r.Key()
		}
		return 0, "open loop at " + c.Rate + " rps", r.Key()
	case AxisGenerator:
		// meshbench's engine first: the others are compared with it.
		r.Generator = ""
		if c.Generator == "" {
			return 0, "meshbench", r.Key()
		}
		return 1 + float64(generatorOrder(c.Generator)), c.Generator, r.Key()
	}
	return 0, "", ""
}

// generatorOrder orders the external generators: the seeds' own tools
// first, then the others by name.
func generatorOrder(g string) int {
	switch g {
	case "vegeta":
		return 0
	case "fortio":
		return 1
	case "oha":
		return 2
	case "wrk2":
		return 3
	}
	return 4
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	if strings.HasSuffix(word, "y") {
		return strconv.Itoa(n) + " " + strings.TrimSuffix(word, "y") + "ies"
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// AxisComparison is one configuration against another that differs from
// it only on Axis: Other vs Base, the base being the axis's lower value
// (0 policies, mTLS off, open loop, direct, http, fewer replicas, lower
// rate).
type AxisComparison struct {
	Axis        string
	Base, Other Config
	// BaseValue and OtherValue word the two values ("0 policies", "4
	// policies").
	BaseValue, OtherValue string
	// Diffs maps a figure to the relative difference of medians
	// (other/base − 1) with its interval; Ratios to median(other)/median(base).
	Diffs  map[string]stats.Interval
	Ratios map[string]float64
	// Deltas maps a figure to median(other) − median(base) in its unit
	// (ms, mCPU, MiB, rps); RatePerSec is the other side's median achieved
	// rate (0: unknown), for CPU per 1000 rps.
	Deltas     map[string]float64
	RatePerSec float64
}

// Interaction is how a mesh's overhead against the baseline changes
// between two values of another axis: the baseline comparison at A's
// value and at B's ("sidecar vs none: p95 +95% under closed loop, +20%
// under open loop at 300 rps"; "with 4 policies", "at 300 rps" on other
// axes).
type Interaction struct {
	Axis                 string
	Mesh, Baseline       string
	AValue, BValue       string
	A, B                 Comparison // the mesh vs the baseline at each value
	AScenario, BScenario Scenario
}

// axisComparisons compares every pair of groups that differ only on axis.
func axisComparisons(a *Analysis, axis string, level float64, resamples int, rng *rand.Rand) []AxisComparison {
	type member struct {
		g     *Group
		order float64
		words string
	}
	byRest := map[string][]member{}
	var rests []string
	for _, key := range sortedGroupKeys(a) {
		g := a.Groups[key]
		o, w, rest := axisValue(g.Config, axis)
		if _, ok := byRest[rest]; !ok {
			rests = append(rests, rest)
		}
		byRest[rest] = append(byRest[rest], member{g, o, w})
	}
	var out []AxisComparison
	for _, rest := range rests {
		ms := byRest[rest]
		sort.SliceStable(ms, func(i, j int) bool { return ms[i].order < ms[j].order })
		for i := range ms {
			for j := i + 1; j < len(ms); j++ {
				b, o := ms[i], ms[j]
				if b.order == o.order { // same value (load_model: two open-loop rates)
					continue
				}
				c := compare(o.g, b.g, Scenario{}, level, resamples, rng)
				if axis == AxisGenerator {
					// What each generator itself costs: the lab samples
					// the tool's processes as load.
					f := CPUPrefix + "load"
					if ov, bv := values(o.g, f), values(b.g, f); len(ov) > 0 && len(bv) > 0 {
						c.Diffs[f] = stats.RelativeDiffCI(ov, bv, level, resamples, rng)
						c.Deltas[f] = stats.Median(ov) - stats.Median(bv)
					}
				}
				out = append(out, AxisComparison{Axis: axis, Base: b.g.Config, Other: o.g.Config,
					BaseValue: b.words, OtherValue: o.words, Diffs: c.Diffs, Ratios: c.Ratios, Deltas: c.Deltas, RatePerSec: c.RatePerSec})
			}
		}
	}
	return out
}

// sortedGroupKeys are a's group keys in the scenario order, meshes in
// display order within a scenario.
func sortedGroupKeys(a *Analysis) []string {
	var keys []string
	for _, s := range a.Scenarios {
		for _, m := range a.Meshes {
			if g := a.Group(m, s); g != nil {
				keys = append(keys, g.Config.Key())
			}
		}
	}
	return keys
}

// interactions pairs the baseline comparisons (mesh vs baseline) whose
// scenarios differ only on axis.
func interactions(a *Analysis, axis string) []Interaction {
	var out []Interaction
	var base []Comparison
	for _, c := range a.Comparisons {
		if c.Baseline == a.Baseline {
			base = append(base, c)
		}
	}
	for i, c1 := range base {
		for _, c2 := range base[i+1:] {
			if c1.Mesh != c2.Mesh {
				continue
			}
			cfg1 := Config{Mesh: c1.Mesh, App: c1.Scenario.App, Rate: c1.Scenario.Rate, Replicas: c1.Scenario.Replicas, Policies: c1.Scenario.Policies, Protocol: c1.Scenario.Protocol, Gateway: c1.Scenario.Gateway, MTLS: c1.Scenario.MTLS, Generator: c1.Scenario.Generator}
			cfg2 := Config{Mesh: c2.Mesh, App: c2.Scenario.App, Rate: c2.Scenario.Rate, Replicas: c2.Scenario.Replicas, Policies: c2.Scenario.Policies, Protocol: c2.Scenario.Protocol, Gateway: c2.Scenario.Gateway, MTLS: c2.Scenario.MTLS, Generator: c2.Scenario.Generator}
			o1, w1, r1 := axisValue(cfg1, axis)
			o2, w2, r2 := axisValue(cfg2, axis)
			if r1 != r2 || o1 == o2 {
				continue
			}
			in := Interaction{Axis: axis, Mesh: c1.Mesh, Baseline: c1.Baseline, AValue: w1, BValue: w2, A: c1, B: c2, AScenario: c1.Scenario, BScenario: c2.Scenario}
			if o1 < o2 { // the higher value first: "under closed loop, … under open loop"
				in.AValue, in.BValue, in.A, in.B, in.AScenario, in.BScenario = w2, w1, c2, c1, c2.Scenario, c1.Scenario
			}
			out = append(out, in)
		}
	}
	return out
}

// Label names where an axis comparison was made: the mesh and the
// scenario with the compared axis left out ("ambient (static, 300 rps, 1
// replica)").
func (c AxisComparison) Label() string {
	s := c.Base.Scenario()
	switch c.Axis {
	case AxisMesh:
		return s.String()
	case AxisPolicies:
		s.Policies = 0
	case AxisMTLS:
		s.MTLS = true
	case AxisGateway:
		s.Gateway = false
	case AxisProtocol:
		s.Protocol = ""
	case AxisGenerator:
		s.Generator = "" // both tools are in the line's head
	}
	text := s.String()
	switch c.Axis {
	case AxisRate, AxisLoadModel:
		// the rate is in the values
		parts := strings.Split(text, ", ")
		if len(parts) > 1 {
			text = strings.Join(append(parts[:1], parts[2:]...), ", ")
		}
	case AxisReplicas:
		parts := strings.Split(text, ", ")
		if len(parts) > 2 {
			text = strings.Join(append(parts[:2], parts[3:]...), ", ")
		}
	}
	return c.Base.Mesh + " (" + text + ")"
}

// Verdict is the comparison's line: "ambient (static, 300 rps, 1
// replica): 4 policies vs 0 policies: p50 +1% [−2%, +3%] not significant
// (+0.004 ms); data-plane CPU +3% [−2%, +8%] not significant (+2.1 mCPU,
// +7 mCPU per 1000 rps)". Each part carries the absolute difference of
// medians beside the relative one, as mesh verdicts do.
func (c AxisComparison) Verdict() string {
	head := c.Label() + ": " + c.OtherValue + " vs " + c.BaseValue
	rate := c.RatePerSec
	switch c.Axis {
	case AxisRate:
		// Both sides carry load: the CPU the rate's increase adds, per
		// 1000 rps of that increase (the marginal cost).
		rate = c.Deltas[AchievedRate]
	case AxisLoadModel:
		rate = 0 // open and closed loop run at unrelated rates
	}
	parts := diffParts(c.Diffs, c.Deltas, rate, []string{LatencyP50, LatencyP95, LatencyP99}, true)
	if c.Axis == AxisGenerator {
		// "vegeta vs meshbench on sidecar (static, 100 rps, 1 replica):
		// p50 …; load CPU …": the same cell measured by two tools.
		head = c.OtherValue + " vs " + c.BaseValue + " on " + c.Label()
		if iv, ok := c.Diffs[CPUPrefix+"load"]; ok {
			parts = append(parts, "load generator CPU "+diffText(iv)+deltaText(CPUPrefix+"load", c.Deltas, c.RatePerSec))
		}
	}
	if len(parts) == 0 {
		return head + ": nothing to compare"
	}
	_, few := FewestRuns(c.Diffs)
	return head + ": " + strings.Join(parts, "; ") + few
}

// Verdict is the interaction's line: "sidecar vs none (static, 1
// replica): p95 +95% [+80%, +110%] (+0.61 ms) under closed loop, +20%
// [+15%, +25%] (+0.09 ms) under open loop at 300 rps; …", each side's
// relative difference with its absolute one.
func (in Interaction) Verdict() string {
	s := in.AScenario
	label := Config{Mesh: in.Mesh, App: s.App, Rate: s.Rate, Replicas: s.Replicas, Policies: s.Policies, Protocol: s.Protocol, Gateway: s.Gateway, MTLS: s.MTLS}
	ac := AxisComparison{Axis: in.Axis, Base: label}
	head := in.Mesh + " vs " + in.Baseline + " " + strings.TrimPrefix(ac.Label(), in.Mesh+" ")
	prep := "with" // "with 4 policies", "with mTLS on"
	if in.Axis == AxisLoadModel || in.Axis == AxisRate {
		prep = "under" // "under closed loop"
	}
	if in.Axis == AxisRate {
		prep = "at"
	}
	var parts []string
	for _, f := range []struct{ fig, label string }{{LatencyP50, "p50"}, {LatencyP95, "p95"}, {LatencyP99, "p99"},
		{CPUPrefix + "data-plane", "data-plane CPU"}, {CPUPrefix + "TOTAL", "total CPU"}, {AchievedRate, "achieved rate"}} {
		a, aok := in.A.Diffs[f.fig]
		b, bok := in.B.Diffs[f.fig]
		if !aok || !bok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s%s %s %s, %s%s %s %s", f.label,
			diffText(a), deltaText(f.fig, in.A.Deltas, in.A.RatePerSec), prep, in.AValue,
			diffText(b), deltaText(f.fig, in.B.Deltas, in.B.RatePerSec), prep, in.BValue))
	}
	if len(parts) == 0 {
		return head + ": nothing to compare"
	}
	_, few := FewestRuns(in.A.Diffs, in.B.Diffs)
	return head + ": " + strings.Join(parts, "; ") + few
}

// diffParts words the differences of figs, then the data plane's CPU and
// memory (the whole lab's when one side has no data plane): "p50 +3%
// [−2%, +8%] not significant (+0.01 ms)", with the absolute difference of
// deltas (CPU also per 1000 rps of rate).
func diffParts(diffs map[string]stats.Interval, deltas map[string]float64, rate float64, figs []string, resources bool) []string {
	var parts []string
	say := func(fig, label string) {
		if iv, ok := diffs[fig]; ok {
			parts = append(parts, label+" "+diffText(iv)+deltaText(fig, deltas, rate))
		}
	}
	for _, f := range figs {
		say(f, strings.TrimSuffix(strings.TrimPrefix(f, "latency_"), "_ms"))
	}
	if resources {
		if _, ok := diffs[CPUPrefix+"data-plane"]; ok {
			say(CPUPrefix+"data-plane", "data-plane CPU")
			say(MemPrefix+"data-plane", "data-plane memory")
		} else {
			say(CPUPrefix+"TOTAL", "total CPU")
			say(MemPrefix+"TOTAL", "total memory")
		}
		say(AchievedRate, "achieved rate")
	}
	return parts
}

// deltaText is the absolute difference of fig's medians in its unit, in
// parentheses after a space: " (+0.72 ms)", " (+35 mCPU, +70 mCPU per 1000
// rps)" (per 1000 rps of rate, the compared side's achieved rate, when
// known and above 0), " (+12.5 MiB)", " (−3 rps)"; "" when deltas has no finite value
// for fig or its unit is unknown.
func deltaText(fig string, deltas map[string]float64, rate float64) string {
	d, ok := deltas[fig]
	if !ok || math.IsNaN(d) || math.IsInf(d, 0) {
		return ""
	}
	switch {
	case strings.HasPrefix(fig, "latency_") && strings.HasSuffix(fig, "_ms"):
		return " (" + signed(d) + " ms)"
	case strings.HasPrefix(fig, CPUPrefix):
		if rate > 0 && d != 0 {
			return " (" + signed(d) + " mCPU, " + signed(d/rate*1000) + " mCPU per 1000 rps)"
		}
		return " (" + signed(d) + " mCPU)"
	case strings.HasPrefix(fig, MemPrefix):
		return " (" + signed(d) + " MiB)"
	case fig == AchievedRate:
		// To 0.1 rps: smaller differences are the schedule's rounding.
		if r := math.Round(d*10) / 10; r != 0 {
			return " (" + signed(r) + " rps)"
		}
		return " (0 rps)"
	}
	return ""
}

// diffText is "+3% [−2%, +8%] not significant", "+25% [+10%, +40%]", or
// "+3% (one run, no interval)"; with too few runs to judge (2) the
// interval alone, neither significant nor not: the line says why once
// (FewestRuns).
func diffText(iv stats.Interval) string {
	if math.IsNaN(iv.Estimate) {
		return "n/a"
	}
	s := signedPct(iv.Estimate)
	if !iv.HasInterval() {
		return s + " (one run, no interval)"
	}
	s += " [" + signedPct(iv.Lo) + ", " + signedPct(iv.Hi) + "]"
	if !iv.TooFew() && !iv.Significant() {
		s += " not significant"
	}
	return s
}

// FewestRuns returns the fewest runs a side behind any of diffs (0 when
// none has runs) and, when that is too few to judge, the note a line of
// them ends with ("; 2 runs: too few to judge; run 3 or more").
func FewestRuns(diffs ...map[string]stats.Interval) (int, string) {
	n := 0
	for _, d := range diffs {
		for _, iv := range d {
			if iv.N > 0 && (n == 0 || iv.N < n) {
				n = iv.N
			}
		}
	}
	if n > 0 && n < stats.MinJudgedRuns {
		return n, "; " + stats.TooFewText(n)
	}
	return n, ""
}

func signedPct(x float64) string {
	p := math.Round(x * 100)
	if p == 0 {
		return "+0%"
	}
	if p < 0 {
		return fmt.Sprintf("−%.0f%%", -p)
	}
	return fmt.Sprintf("+%.0f%%", p)
}
