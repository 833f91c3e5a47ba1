package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/measure/hops"
	"github.com/meshbench/meshbench/internal/report/plot"
)

// HopsText writes a cell's hop attribution as a waterfall: each HTTP
// hop's own time, the untimed rest, the app's time and the total, at
// p50, p90, p95 and p99, with each part's share of the mesh's added
// latency (total − app). Shares are of means, which add up exactly
// (percentiles do not). Then what is missing, the L4 hops that are not
// timed, the app's own calls, and the seed's method beside it.
func HopsText(w io.Writer, r *hops.Result) error {
	if r == nil {
		return nil
	}
	fmt.Fprintf(w, "Hop timing (Envoy access logs, µs; %d of %d measured requests found at every hop", r.Complete, r.Requests)
	if r.Failed > 0 {
		fmt.Fprintf(w, ", %d failed", r.Failed)
	}
	fmt.Fprintln(w, "):")
	added := r.Total.MeanNs
	if r.App != nil {
		added -= r.App.MeanNs
	}
	rows := append([]hops.Stat{}, r.Hops...)
	rows = append(rows, r.Untimed)
	shared := len(rows)
	if r.App != nil {
		rows = append(rows, *r.App)
	}
	rows = append(rows, r.Total)
	width := len("hop")
	for _, s := range rows {
		width = max(width, len([]rune(s.Name)))
	}
	pad := func(s string) string { return s + strings.Repeat(" ", width-len([]rune(s))) }
	fmt.Fprintf(w, "  %s %9s %9s %9s %9s %8s\n", pad("hop"), "p50", "p90", "p95", "p99", "share")
	for i, s := range rows {
		sh := ""
		if i < shared && added > 0 {
			sh = fmt.Sprintf("%.1f%%", 100*s.MeanNs/added)
		}
		line := fmt.Sprintf("  %s %9s %9s %9s %9s %8s", pad(s.Name), hopDur(s.P50Ns), hopDur(s.P90Ns), hopDur(s.P95Ns), hopDur(s.P99Ns), sh)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	if r.App != nil {
		fmt.Fprintf(w, "  share: of the mesh's added latency, mean total − mean app = %s (means add up, percentiles do not)\n", hopDur(int64(added)))
	} else {
		fmt.Fprintln(w, "  share: of the whole service time: no HTTP proxy on the path, so nothing is timed, the app's time included")
	}
	if len(r.L4) > 0 {
		fmt.Fprintf(w, "  untimed L4 hops (no per-request timing in Envoy): %s\n", strings.Join(r.L4, "; "))
	}
	if r.Traversals > 0 && added > 0 && r.App != nil {
		fmt.Fprintf(w, "  seed's method: added %s over %d proxy traversals = %s per traversal\n",
			hopDur(int64(added)), r.Traversals, hopDur(int64(added/float64(r.Traversals))))
	}
	if len(r.ProxyCPU) > 0 {
		var parts []string
		for _, p := range r.ProxyCPU {
			parts = append(parts, fmt.Sprintf("%s %.0f ms", p.Proxy, p.CPUMsPer1000Rq))
		}
		fmt.Fprintf(w, "  proxy CPU per 1000 requests, hop logging on: %s (its cost: compare with a run without --hops)\n", strings.Join(parts, ", "))
	}
	for _, c := range r.Calls {
		var parts []string
		for _, h := range c.Hops {
			parts = append(parts, fmt.Sprintf("%s %s", h.Name, hopDur(h.P50Ns)))
		}
		if c.App != nil {
			parts = append(parts, fmt.Sprintf("%s app %s", c.Service, hopDur(c.App.P50Ns)))
		}
		fmt.Fprintf(w, "  call to %s, within the app's time (p50): %s\n", c.Service, strings.Join(parts, ", "))
		for _, m := range c.Missing {
			fmt.Fprintf(w, "    missing from %s: %s\n", m.Hop, requests(m.Requests))
		}
	}
	for _, m := range r.Missing {
		fmt.Fprintf(w, "  missing from %s: %s (not in the waterfall)\n", m.Hop, requests(m.Requests))
	}
	var notes []string
	if r.OverTotal > 0 {
		notes = append(notes, fmt.Sprintf("%d requests' hops exceeded their service time (untimed counted as 0)", r.OverTotal))
	}
	if r.Duplicates > 0 {
		notes = append(notes, fmt.Sprintf("%d second records of a request at one hop (retries; the longest kept)", r.Duplicates))
	}
	if r.Malformed > 0 {
		notes = append(notes, fmt.Sprintf("%d lines unreadable", r.Malformed))
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "  note: %s\n", strings.Join(notes, "; "))
	}
	return nil
}

// hopDur prints ns as µs below a millisecond, else ms with 2 decimals.
func hopDur(ns int64) string {
	if ns < 1_000_000 {
		return fmt.Sprintf("%dµs", (ns+500)/1000)
	}
	return fmt.Sprintf("%.2fms", float64(ns)/1e6)
}

func requests(n int64) string {
	if n == 1 {
		return "1 request"
	}
	return fmt.Sprintf("%d requests", n)
}

// writeHopSplits writes scenario s's waterfalls of a plan with hop
// timing: per mesh its parts (medians over repetitions) with their share
// of the mesh's added time within the cell (total − app, means), then
// the mesh's added latency against the baseline split over its timed
// hops, and the seed's method beside it.
func writeHopSplits(w io.Writer, splits []analysis.HopSplit, s analysis.Scenario) {
	first := true
	for _, hs := range splits {
		if hs.Scenario != s {
			continue
		}
		if first {
			fmt.Fprintln(w, "  Hop timing (hops: true; Envoy access logs; medians over the repetitions, ms):")
			first = false
		}
		var added float64
		for _, p := range hs.Parts {
			if p.Timed || p.Name == hops.UntimedName {
				added += p.MeanMs
			}
		}
		fmt.Fprintf(w, "    %s (%d runs with hop timing):\n", hs.Mesh, hs.Cells)
		rows := [][]string{{"      hop", "p50", "p95", "p99", "mean", "share"}}
		for _, p := range hs.Parts {
			sh := ""
			if (p.Timed || p.Name == hops.UntimedName) && added > 0 {
				sh = fmt.Sprintf("%.1f%%", 100*p.MeanMs/added)
			}
			rows = append(rows, []string{"      " + p.Name, ms3(p.P50Ms), ms3(p.P95Ms), ms3(p.P99Ms), ms3(p.MeanMs), sh})
		}
		writeAligned(w, rows)
		if math.IsNaN(hs.AddedP95Ms) {
			continue
		}
		var parts []string
		for _, p := range hs.Parts {
			if p.Timed {
				parts = append(parts, fmt.Sprintf("%s %s", p.Name, ms2(p.MeanMs)))
			}
		}
		parts = append(parts, "untimed "+ms2(hs.UntimedAddedMs))
		fmt.Fprintf(w, "      %s adds %s ms at p95, %s ms at p50, %s ms on average vs %s: %s (means)\n",
			hs.Mesh, ms2(hs.AddedP95Ms), ms2(hs.AddedP50Ms), ms2(hs.AddedMeanMs), hs.Baseline, strings.Join(parts, ", "))
		if hs.Traversals > 0 {
			fmt.Fprintf(w, "      seed's method: %s ms at p95 / %d proxy traversals = %s ms per traversal\n",
				ms2(hs.AddedP95Ms), hs.Traversals, ms2(hs.AddedP95Ms/float64(hs.Traversals)))
		}
	}
}

func ms2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func ms3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// hopCharts are the plan's waterfalls as stacked bars, one chart per
// scenario with hop timing: one bar per mesh, its timed hops from the
// bottom (the path's first hop lowest), then the untimed rest and the
// app, each its mean over the request (median over repetitions), so a
// bar's height is the mean service time.
func hopCharts(a *analysis.Analysis) ([]NamedChart, error) {
	splits, _ := analysis.HopSplits(a)
	var out []NamedChart
	for i, s := range a.Scenarios {
		var meshes []string
		var order []string
		vals := map[string]map[string]float64{}
		for _, hs := range splits {
			if hs.Scenario != s {
				continue
			}
			meshes = append(meshes, hs.Mesh)
			for _, p := range hs.Parts {
				if vals[p.Name] == nil {
					vals[p.Name] = map[string]float64{}
					order = append(order, p.Name)
				}
				vals[p.Name][hs.Mesh] = p.MeanMs
			}
		}
		if len(meshes) == 0 {
			continue
		}
		// Timed hops first (in first-seen order), then untimed, then apps.
		rank := func(n string) int {
			switch {
			case n == hops.UntimedName:
				return 1
			case strings.HasPrefix(n, "app "):
				return 2
			}
			return 0
		}
		slices.SortStableFunc(order, func(x, y string) int { return rank(x) - rank(y) })
		var layers []plot.Layer
		for _, n := range order {
			l := plot.Layer{Name: n}
			for _, m := range meshes {
				l.Values = append(l.Values, vals[n][m])
			}
			layers = append(layers, l)
		}
		title := "where the latency goes (" + s.String() + ")"
		c, err := plot.StackedBars(plot.ChartOptions{Title: title, YLabel: "mean time per request (ms)",
			Caption: "One bar per mesh: the mean time per request in each timed hop (the path's first hop lowest), then the untimed rest and the app; " +
				"each the median over the valid runs, so a bar's height is the mean service time. No band."}, meshes, layers)
		if err != nil {
			return nil, fmt.Errorf("plot hops-%d: %w", i+1, err)
		}
		out = append(out, NamedChart{Name: fmt.Sprintf("hops-%d", i+1), Title: title, Chart: c})
	}
	return out, nil
}
