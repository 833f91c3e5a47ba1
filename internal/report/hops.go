package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/meshbench/meshbench/internal/hops"
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
