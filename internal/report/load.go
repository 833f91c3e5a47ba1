// Package report renders stored results for people: pure functions of the
// results, no measurement.
package report

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/results"
)

// LoadFormats lists the formats WriteLoad accepts.
var LoadFormats = []string{"text", "json", "hdr", "vegeta-json"}

// WriteLoad renders r in format ("text", "json", "hdr" or "vegeta-json",
// the metrics document of `vegeta report -type=json`).
func WriteLoad(w io.Writer, r *results.LoadResult, format string) error {
	switch format {
	case "text", "":
		return LoadText(w, r)
	case "json":
		return r.Write(w)
	case "hdr":
		return LoadHDR(w, r)
	case "vegeta-json":
		return LoadVegetaJSON(w, r)
	}
	return fmt.Errorf("output format %q: allowed: %s", format, strings.Join(LoadFormats, ", "))
}

// LoadText writes the report. It opens with the block `vegeta report`
// prints, byte for byte in its layout (labels, brackets, alignment, number
// formats, two spaces after each code:count, one line per distinct error
// under "Error Set:"), so parsers written for vegeta read it. meshbench's
// own lines follow after a blank line, each with a prefix vegeta never
// prints: the load model, the tail percentiles, service time, schedule lag,
// drops, the count of each error, the generator and warnings.
func LoadText(w io.Writer, r *results.LoadResult) error {
	lat, svc, lag, err := r.Histograms()
	if err != nil {
		return err
	}
	// An external generator may not report a histogram: say so rather
	// than print zeros.
	unknown := func(h interface{ Count() int64 }) bool {
		return r.Generator != nil && h.Count() == 0 && r.Completed > 0
	}
	if err := vegetaBlock(w, r, lat, unknown(lat)); err != nil {
		return err
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, Headline(r))
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.StripEscape)
	if !unknown(lat) {
		fmt.Fprintf(tw, "Tail latency\t[99.9, 99.99]\t%s, %s\n", pctText(lat, 99.9), pctText(lat, 99.99))
	}
	if unknown(svc) {
		fmt.Fprintf(tw, "Service time\t[mean, 50, 90, 99, 99.9, max]\tunknown (not reported by %s)\n", r.Generator.Name)
	} else {
		fmt.Fprintf(tw, "Service time\t[mean, 50, 90, 99, 99.9, max]\t%s, %s, %s, %s, %s, %s\n",
			DurNs(int64(math.Round(svc.MeanNs()))), pctText(svc, 50), pctText(svc, 90),
			pctText(svc, 99), pctText(svc, 99.9), DurNs(svc.MaxNs()))
	}
	if r.Bulk() {
		bps := r.ThroughputBytesPerSec()
		fmt.Fprintf(tw, "Throughput\t[bytes/s, Gb/s, bytes in window]\t%.0f, %.3f, %d\n", bps, bps*8/1e9, r.BytesIn)
	}
	if r.Model == results.ModelOpen {
		if unknown(lag) {
			fmt.Fprintf(tw, "Sched. lag\t[mean, 50, 99, max]\tunknown (not reported by %s)\n", r.Generator.Name)
		} else {
			fmt.Fprintf(tw, "Sched. lag\t[mean, 50, 99, max]\t%s, %s, %s, %s\n",
				DurNs(int64(math.Round(lag.MeanNs()))), pctText(lag, 50), pctText(lag, 99), DurNs(lag.MaxNs()))
		}
		fmt.Fprintf(tw, "Dropped\t[total, ratio]\t%d, %.2f%%\n", r.Dropped, 100*ratio(r.Dropped, r.Scheduled))
		if r.NotSent > 0 {
			fmt.Fprintf(tw, "Not sent\t[total, ratio]\t%d, %.2f%%\n", r.NotSent, 100*ratio(r.NotSent, r.Scheduled))
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(tw, "Error count\t[kind, count, error]\t%s, %d, %s\n", e.Kind, e.Count, e.Message)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if g := r.Generator; g != nil {
		fmt.Fprintf(w, "Generator: %s %s; histograms %s\n", g.Name, g.Version, g.Histograms)
		for _, n := range g.Notes {
			fmt.Fprintln(w, "NOTE: "+n)
		}
	}
	for _, warn := range Warnings(r) {
		fmt.Fprintln(w, "WARNING: "+warn)
	}
	return nil
}

// pctText is percentile p of h, or "= max" when h holds too few values
// for p to be anything but its maximum (latency.Resolves: p99.9 of 250
// answers). The vegeta block keeps vegeta's own figures.
func pctText(h *latency.Recorder, p float64) string {
	if n := h.Count() + h.OutOfRange(); n > 0 && !latency.Resolves(n, p) {
		return "= max"
	}
	return DurNs(h.Percentile(p))
}

// vegetaBlock writes what `vegeta report` (v12) prints, in its exact
// layout, from meshbench's figures.
func vegetaBlock(w io.Writer, r *results.LoadResult, lat *latency.Recorder, latUnknown bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.StripEscape)
	attack, wait := r.AttackDuration(), r.Wait()
	fmt.Fprintf(tw, "Requests\t[total, rate, throughput]\t%d, %.2f, %.2f\n", r.Sent, r.AchievedRatePerSec(), r.ThroughputPerSec())
	fmt.Fprintf(tw, "Duration\t[total, attack, wait]\t%s, %s, %s\n", Dur(attack+wait), Dur(attack), Dur(wait))
	if latUnknown {
		fmt.Fprintf(tw, "Latencies\t[min, mean, 50, 90, 95, 99, max]\tunknown (not reported by %s)\n", r.Generator.Name)
	} else {
		fmt.Fprintf(tw, "Latencies\t[min, mean, 50, 90, 95, 99, max]\t%s, %s, %s, %s, %s, %s, %s\n",
			DurNs(lat.MinNs()), DurNs(int64(math.Round(lat.MeanNs()))), DurNs(lat.Percentile(50)), DurNs(lat.Percentile(90)),
			DurNs(lat.Percentile(95)), DurNs(lat.Percentile(99)), DurNs(lat.MaxNs()))
	}
	fmt.Fprintf(tw, "Bytes In\t[total, mean]\t%d, %.2f\n", r.BytesIn, meanOf(r.BytesIn, r.Completed))
	fmt.Fprintf(tw, "Bytes Out\t[total, mean]\t%d, %.2f\n", r.BytesOut, meanOf(r.BytesOut, r.Completed))
	fmt.Fprintf(tw, "Success\t[ratio]\t%.2f%%\n", 100*r.SuccessRatio())
	fmt.Fprintf(tw, "Status Codes\t[code:count]\t%s\n", statusCodes(r.StatusCodes))
	fmt.Fprintln(tw, "Error Set:")
	for _, e := range r.Errors {
		fmt.Fprintln(tw, e.Message)
	}
	return tw.Flush()
}

// Headline names the load model in words; every rendering carries it so
// open- and closed-loop results are never confused.
func Headline(r *results.LoadResult) string {
	var b strings.Builder
	switch {
	case r.Model == results.ModelClosed:
		b.WriteString("Load model: CLOSED loop (max throughput; latencies are queueing-dominated)")
	case r.Bulk():
		b.WriteString("Load model: BULK throughput (each connection reads one endless answer; its latency is the time to the first byte)")
	default:
		from := "latency from intended send time"
		if g := r.Generator; g != nil && g.LatencyFromActualSend {
			from = "latency from actual send (" + g.Name + "'s timing; its own lateness unmeasured)"
		}
		fmt.Fprintf(&b, "Load model: open loop (throttled) at %s/s, %s", fmtFloat(r.TargetRatePerSec), from)
		if r.Arrivals != "" {
			fmt.Fprintf(&b, "; %s arrivals (seed %d)", r.Arrivals, r.Seed)
		}
		if r.SendTickNs > 0 {
			fmt.Fprintf(&b, "; sent in %v ticks (each tick's lag counted)", time.Duration(r.SendTickNs))
		}
	}
	fmt.Fprintf(&b, "; %s; %d connection", r.Protocol, r.Connections)
	if r.Connections != 1 {
		b.WriteString("s")
	}
	switch r.RequestsPerConnection {
	case 0:
	case 1:
		b.WriteString(", a new connection per request")
	default:
		fmt.Fprintf(&b, ", a new connection every %d requests", r.RequestsPerConnection)
	}
	fmt.Fprintf(&b, "; %s measured", Dur(time.Duration(r.DurationNs)))
	if r.WarmupNs > 0 {
		fmt.Fprintf(&b, " after %s warm-up", Dur(time.Duration(r.WarmupNs)))
	}
	if r.Workers > 1 {
		fmt.Fprintf(&b, "; merged from %d workers", r.Workers)
	}
	if r.Generator != nil {
		fmt.Fprintf(&b, "; generator %s %s", r.Generator.Name, r.Generator.Version)
	}
	return b.String()
}

// Warnings lists, in plain words, every way the run fell short: rate not
// reached, drops, errors, interruption, values out of histogram range.
func Warnings(r *results.LoadResult) []string {
	var out []string
	if r.Interrupted {
		out = append(out, fmt.Sprintf("interrupted: the run was stopped early; these figures cover the %d requests sent before that", r.Sent))
	}
	if r.Model == results.ModelOpen && r.Scheduled > 0 && !r.Interrupted {
		short := 1 - float64(r.Sent)/float64(r.Scheduled)
		if short > results.RateShortfallTolerance {
			out = append(out, fmt.Sprintf("target rate not reached: sent %d of %d scheduled requests (%.2f%% short)", r.Sent, r.Scheduled, 100*short))
		}
	}
	if r.NotSent > 0 {
		out = append(out, fmt.Sprintf("%d requests not sent: %s; a request in flight then got at most the %s timeout",
			r.NotSent, r.NotSentReason, Dur(time.Duration(r.TimeoutNs))))
		if r.Sent == 0 && r.WarmupNs > 0 {
			out = append(out, fmt.Sprintf("no request of the measured window was sent: the connections stayed busy with the %s warm-up's requests, which the target did not answer in time (run with --warmup 0s to see their errors)",
				Dur(time.Duration(r.WarmupNs))))
		}
	}
	if n := r.LocalErrors(); n > 0 {
		out = append(out, fmt.Sprintf("%d requests failed in the load generator itself (%s errors: out of file descriptors or local ports), not in the target", n, loadgen.KindLocal))
	}
	if r.Dropped > 0 {
		out = append(out, fmt.Sprintf("%d requests dropped: every connection was busy and the queue (%d) was full", r.Dropped, r.MaxQueue))
	}
	if failed := r.Completed - r.Success; failed > 0 && r.Bulk() {
		out = append(out, fmt.Sprintf("%d of %d bulk streams ended before the measured window did", failed, r.Completed))
	} else if failed > 0 {
		out = append(out, fmt.Sprintf("%d of %d requests failed (%.2f%%)", failed, r.Completed, 100*ratio(failed, r.Completed)))
	}
	if r.Latency.OutOfRange > 0 {
		out = append(out, fmt.Sprintf("%d latencies above 60s (the histogram's ceiling) are counted at the top: percentiles among them print as ≥ 60s; the mean covers the others only", r.Latency.OutOfRange))
	}
	return out
}

// LoadHDR writes the latency percentile spectrum in HdrHistogram's
// classic text layout (values in milliseconds).
func LoadHDR(w io.Writer, r *results.LoadResult) error {
	lat, _, _, err := r.Histograms()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "# %s\n", Headline(r))
	fmt.Fprintf(w, "# latency from intended send time, in milliseconds; %d values\n", lat.Count())
	_, err = lat.Histogram().PercentilesPrint(w, 5, 1e6)
	return err
}

func statusCodes(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + strconv.FormatInt(m[k], 10) + "  "
	}
	// vegeta writes two spaces after every code:count, the last one too.
	return strings.Join(parts, "")
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func meanOf(total, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(total) / float64(n)
}

func fmtFloat(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// DurNs formats a latency in nanoseconds like Dur; a latency at the
// histogram's ceiling (saturated, see package latency) prints as "≥ 60s".
func DurNs(ns int64) string {
	if ns >= latency.HighestNs {
		return fmt.Sprintf("≥ %ds", latency.HighestNs/int64(time.Second))
	}
	return Dur(time.Duration(ns))
}

// Dur formats a duration the way vegeta's reports do: three decimals in
// the unit Go picks below a minute (706.584µs, 1.137ms, 4.982s), whole
// seconds above (2m55s, 5m0s).
func Dur(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return d.String()
	case d < time.Millisecond:
		return d.Round(time.Nanosecond).String()
	case d < time.Second:
		return d.Round(time.Microsecond).String()
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}
