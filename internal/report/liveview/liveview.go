// Package liveview renders the live view the seed tool's users know (the
// Great Sidecar Debate's tools/sequence.py): a state line (STARTING while
// waiting for an idle lab, RUNNING, DRAINING) with the output path, node
// lines on a cluster, then the categories and their sums, the four ratio
// lines, and every component, each as "avg mC (min - max), avg MiB (min -
// max)"; meshbench adds the running latency and rate of the load. It is a
// pure function of sampling rounds, so both platforms show the same view.
//
// The sums are the seed tool's: mesh = data-plane + control-plane (+ the
// ingress gateway, which the seed tool has not: meshbench counts it as
// mesh), non-mesh = app + load, business = mesh + non-mesh, total =
// business + overhead (+ mesh-idle: mesh infrastructure that serves none of
// the cell's pods, shown apart when there is any). Each sum is taken per sampling round first, then
// its average, minimum and maximum over the rounds (so a sum's minimum is
// the lowest round's sum, not the sum of minima). Mesh ratios are mesh /
// non-mesh, data-plane ratios data-plane / non-mesh, of the averages.
package liveview

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// States of the state line, the seed tool's words.
const (
	Starting = "STARTING" // waiting for the lab to be idle (nothing recorded)
	Running  = "RUNNING"  // the load runs (warm-up, measured window)
	Draining = "DRAINING" // the load has ended; sampling the drain
)

// StateOf maps a lab or cluster phase (platform.Observer.Phase) to the state
// line's state and its detail: prepare and idle are STARTING, warmup and
// measure RUNNING, drain, collect and teardown DRAINING.
func StateOf(phase string) (state, detail string) {
	switch {
	case phase == "" || strings.HasPrefix(phase, "prepare"):
		return Starting, "bringing the lab up"
	case phase == "idle":
		return Starting, "waiting for idle"
	case phase == "warmup":
		return Running, "warm-up, not recorded"
	case phase == "measure":
		return Running, "measured window"
	case phase == "drain":
		return Draining, "sampling after the load"
	}
	return Draining, phase
}

// Load is the load generator's running figures in the measured window.
type Load struct {
	// Known is false when the generator reports nothing until it ends
	// (an external tool); Generator names it then.
	Known        bool
	Generator    string
	RatePerSec   float64
	P50Ns, P99Ns int64
	Sent, Errors int64
	// Workers is how many load workers' figures are merged (a cluster's
	// load pods, results.MergeProgress): the rate and counts are their
	// sums, p50 and p99 the highest worker's (an upper bound of the
	// merged ones). 0 or 1: one worker's own figures.
	Workers int
}

// Node is one cluster node's line: its usage as a share of what it can
// allocate (0: unknown, shown as "-"), and the usage itself over the
// rounds.
type Node struct {
	Name                 string
	CPUShare, MemShare   float64 // fractions of allocatable
	CPUMillicores, Bytes sample.Stats
}

// State is everything one frame shows.
type State struct {
	// Time is the frame's wall clock (the seed tool prints it first).
	Time time.Time
	// Phase is the current phase (StateOf); Output the results directory
	// being written.
	Phase  string
	Output string
	// Nodes are a cluster's node lines; MetricsSource says where the
	// figures come from ("kubelet", "metrics-api", "/proc").
	Nodes         []Node
	MetricsSource string
	// Rounds are the rounds recorded so far (the measured window and the
	// drain; none while STARTING).
	Rounds []sample.Round
	// Memory is what memory figures show: "PSS" (the lab: PSS where read,
	// else RSS) or "working set" (a cluster).
	Memory string
	// Load is the load's running figures; nil before the load starts.
	Load *Load
}

// Render draws the frame as lines (no newline, no cursor codes; the
// caller redraws them in place on a terminal or prints them as they are).
func Render(s State) []string {
	out := head(s)
	if len(s.Rounds) == 0 {
		return append(out, "(resources from the load's start on; nothing recorded while STARTING)")
	}
	sums := sumsOf(s.Rounds)
	line := func(name string, f sample.Figures) string {
		return fmt.Sprintf("%-30s %s", short(name, 30), figures(f))
	}
	out = append(out, line("app", sums.app), line("load", sums.load), "", line("data-plane", sums.dp), line("control-plane", sums.cp))
	if sums.gw.Rounds > 0 {
		out = append(out, line("gateway", sums.gw))
	}
	out = append(out, line("mesh", sums.mesh), line("non-mesh", sums.nonMesh), line("business", sums.business), "",
		line("overhead", sums.overhead))
	if sums.idle.Rounds > 0 {
		// Mesh infrastructure serving none of the cell's pods (ztunnel in
		// a none cell): in the total, not in the mesh's sums.
		out = append(out, line("mesh-idle", sums.idle))
	}
	out = append(out, line("total", sums.total), "")
	r := sums.ratios()
	out = append(out, r[0], r[1], "", r[2], r[3], "")
	for _, c := range sample.Summarize(s.Rounds).Components {
		out = append(out, line(c.Name, c.Figures))
	}
	return append(out, "", footer(s))
}

// Compact is the frame for a log (stderr not a terminal, where a frame is
// printed after every cell rather than redrawn): the state line, the
// metrics source, node and load lines, then one line each for the
// data-plane, mesh, non-mesh, business, overhead and total sums, and the
// four ratios on two lines; no rule, no blank lines, no component rows
// (Render has them). About 10 lines instead of Render's 35 and more.
func Compact(s State) []string {
	var out []string
	for _, l := range head(s) { // without the rule and blank lines
		if l != "" && l != "--------" {
			out = append(out, l)
		}
	}
	if len(s.Rounds) == 0 {
		return append(out, "(resources from the load's start on; nothing recorded while STARTING)")
	}
	sums := sumsOf(s.Rounds)
	line := func(name string, f sample.Figures) string {
		return fmt.Sprintf("  %-12s %s", name, figures(f))
	}
	out = append(out, line("data-plane", sums.dp), line("mesh", sums.mesh), line("non-mesh", sums.nonMesh),
		line("business", sums.business), line("overhead", sums.overhead))
	if sums.idle.Rounds > 0 {
		out = append(out, line("mesh-idle", sums.idle))
	}
	out = append(out, line("total", sums.total))
	cpu := func(f sample.Figures) float64 { return f.CPUMillicores.Avg }
	pair := func(label string, part sample.Figures, partName string) string {
		return fmt.Sprintf("  %-18s CPU %s, memory %s", label, shortRatio(part, sums.nonMesh, partName, cpu), shortRatio(part, sums.nonMesh, partName, memAvg))
	}
	return append(out, pair("mesh ratio:", sums.mesh, "mesh"), pair("data plane ratio:", sums.dp, "data plane"),
		"  "+footer(s)+"; ratios of non-mesh, smaller is better")
}

// shortRatio is a ratio of Compact's: "147.14%", or "- (no mesh)".
func shortRatio(part, of sample.Figures, partName string, fig func(sample.Figures) float64) string {
	switch {
	case part.Rounds == 0:
		return "- (no " + partName + ")"
	case of.Rounds == 0 || fig(of) <= 0:
		return "- (no non-mesh usage yet)"
	}
	return fmt.Sprintf("%.2f%%", fig(part)/fig(of)*100)
}

// head is the lines both frames start with: the state line, the metrics
// source, node lines and the load's line.
func head(s State) []string {
	state, detail := StateOf(s.Phase)
	// The detail before the path: a narrow terminal cuts the line's end.
	h := s.Time.Format("2006-01-02 15:04:05") + " " + state + " (" + detail + ")"
	if s.Output != "" {
		h += " " + s.Output
	}
	out := []string{h, "--------", ""}
	switch {
	case s.MetricsSource != "" && len(s.Nodes) > 0:
		out = append(out, "metrics: "+s.MetricsSource+"; nodes: metrics.k8s.io", "")
	case s.MetricsSource != "":
		out = append(out, "metrics: "+s.MetricsSource, "")
	}
	for _, n := range s.Nodes {
		out = append(out, fmt.Sprintf("Node %-14s %s CPU, %s mem: %s", short(n.Name, 14), share(n.CPUShare), share(n.MemShare), usage(n.CPUMillicores, n.Bytes)))
	}
	if len(s.Nodes) > 0 {
		out = append(out, "")
	}
	if l := s.Load; l != nil {
		switch {
		case l.Known && l.Workers > 1:
			out = append(out, fmt.Sprintf("load: %.1f/s  p50 ≤%s  p99 ≤%s  sent %d  errors %d (running, measured window; %d workers: rate and counts summed, p50/p99 the slowest worker's)",
				l.RatePerSec, dur(l.P50Ns), dur(l.P99Ns), l.Sent, l.Errors, l.Workers))
		case l.Known:
			out = append(out, fmt.Sprintf("load: %.1f/s  p50 %s  p99 %s  sent %d  errors %d (running, measured window)",
				l.RatePerSec, dur(l.P50Ns), dur(l.P99Ns), l.Sent, l.Errors))
		default:
			out = append(out, "load: "+l.Generator+" reports its latency and rate when it ends")
		}
		out = append(out, "")
	}
	return out
}

func footer(s State) string {
	mem := s.Memory
	if mem == "" {
		mem = "PSS"
	}
	return fmt.Sprintf("mC avg (min - max) over %d rounds; MiB: %s avg (min - max)", len(s.Rounds), mem)
}

// sums are the categories and the seed tool's sums over a frame's rounds.
type sums struct {
	app, load, dp, cp, gw, mesh, nonMesh, business, overhead, idle, total sample.Figures
}

func sumsOf(rounds []sample.Round) sums {
	cat := func(names ...string) sample.Figures { return sumOf(rounds, names) }
	return sums{
		app: cat(sample.CategoryApp), load: cat(sample.CategoryLoad),
		dp: cat(sample.CategoryDataPlane), cp: cat(sample.CategoryControlPlane), gw: cat(sample.CategoryGateway),
		mesh:     cat(sample.CategoryDataPlane, sample.CategoryControlPlane, sample.CategoryGateway),
		nonMesh:  cat(sample.CategoryApp, sample.CategoryLoad),
		business: cat(sample.CategoryApp, sample.CategoryLoad, sample.CategoryDataPlane, sample.CategoryControlPlane, sample.CategoryGateway),
		overhead: cat(sample.CategoryOverhead),
		idle:     cat(sample.CategoryMeshIdle),
		total:    cat(sample.Categories...),
	}
}

// ratios are the four ratio lines: mesh CPU, mesh memory, data-plane CPU,
// data-plane memory. A cell without a mesh (none) or without a data plane
// shows "-" and why, not 0.00%: there is nothing to relate.
func (s sums) ratios() [4]string {
	return [4]string{
		ratio("Mesh CPU ratio:", s.mesh, s.nonMesh, "mesh", func(f sample.Figures) float64 { return f.CPUMillicores.Avg }),
		ratio("Mesh memory ratio:", s.mesh, s.nonMesh, "mesh", memAvg),
		ratio("Data plane CPU ratio:", s.dp, s.nonMesh, "data plane", func(f sample.Figures) float64 { return f.CPUMillicores.Avg }),
		ratio("Data plane memory ratio:", s.dp, s.nonMesh, "data plane", memAvg),
	}
}

// NodesOf is the node lines of a cluster's node rounds (metrics.k8s.io's
// node samples, sample.NodeRound): each node's CPU and working set over
// the rounds, and their averages as shares of what it can allocate (0
// when that is unknown), in name order.
func NodesOf(rounds []sample.NodeRound) []Node {
	sums := sample.SummarizeNodes(rounds)
	out := make([]Node, 0, len(sums))
	for _, n := range sums {
		l := Node{Name: n.Name, CPUMillicores: n.CPUMillicores, Bytes: n.MemoryBytes}
		if n.AllocatableCPUMillicores > 0 {
			l.CPUShare = n.CPUMillicores.Avg / n.AllocatableCPUMillicores
		}
		if n.AllocatableMemoryBytes > 0 {
			l.MemShare = n.MemoryBytes.Avg / float64(n.AllocatableMemoryBytes)
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// sumOf is the figures of the processes of the named categories summed in
// every round, then taken over the rounds (sample.Summarize of rounds
// relabelled into one category).
func sumOf(rounds []sample.Round, cats []string) sample.Figures {
	rel := make([]sample.Round, len(rounds))
	for i, r := range rounds {
		rr := sample.Round{Index: r.Index, Time: r.Time}
		for _, x := range r.Samples {
			if slices.Contains(cats, x.Category) {
				x.Category, x.Component = "sum", "sum"
				rr.Samples = append(rr.Samples, x)
			}
		}
		rel[i] = rr
	}
	if g := sample.Summarize(rel).Category("sum"); g != nil {
		return g.Figures
	}
	return sample.Figures{}
}

// memAvg is the average memory of f: PSS where read, else RSS (the
// working set on a cluster comes as RSS).
func memAvg(f sample.Figures) float64 {
	if f.PSSRounds > 0 {
		return f.PSSBytes.Avg
	}
	return f.RSSBytes.Avg
}

func figures(f sample.Figures) string {
	if f.Rounds == 0 {
		return "    - mC (    - -     -),    - MiB (   - -    -)"
	}
	m := f.RSSBytes
	if f.PSSRounds > 0 {
		m = f.PSSBytes
	}
	return usage(f.CPUMillicores, m)
}

func usage(cpu, mem sample.Stats) string {
	const mib = 1 << 20
	return fmt.Sprintf("%5.0f mC (%5.0f - %5.0f), %4.0f MiB (%4.0f - %4.0f)", cpu.Avg, cpu.Min, cpu.Max, mem.Avg/mib, mem.Min/mib, mem.Max/mib)
}

func ratio(label string, part, of sample.Figures, partName string, fig func(sample.Figures) float64) string {
	switch {
	case part.Rounds == 0:
		return fmt.Sprintf("%-26s %7s (no %s)", label, "-", partName)
	case of.Rounds == 0 || fig(of) <= 0:
		return fmt.Sprintf("%-26s %7s (no non-mesh usage yet)", label, "-")
	}
	return fmt.Sprintf("%-26s%7.2f%% (smaller is better)", label, fig(part)/fig(of)*100)
}

// share is a node's usage as a share of its allocatable, "-" when that is
// unknown (0).
func share(f float64) string {
	if f <= 0 {
		return "    - "
	}
	return fmt.Sprintf("%5.2f%%", f*100)
}

// short cuts s to n runes, keeping its end (node names differ at the end,
// as the seed tool's "...abe7a33-0f80").
func short(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "..." + string(r[len(r)-(n-3):])
}

func dur(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3gs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3gµs", float64(d)/1e3)
}
