package extgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// FortioVersion is the fortio release meshbench is written and tested
// against (Istio's benchmark tool): its load flags and its JSON result
// (`fortio load -json FILE`).
const FortioVersion = "1.68.2"

// FortioModule is fortio's Go module path (go install
// fortio.org/fortio@vFortioVersion builds the binary).
const FortioModule = "fortio.org/fortio"

// fortioResolution is fortio's histogram resolution (-r) in seconds:
// fortio's buckets are multiples of it (1–11, then 12, 14 … 100, 120 …
// 1000, 2000 … 100000), so at 10 µs they run from 10 µs to 1 s with at
// most 20% relative width between 100 µs and 10 ms, the range of a mesh
// benchmark. fortio's default of 1 ms would put every request of a
// loopback lab into one bucket. Istio's own benchmark runner passes the
// same value.
const fortioResolution = "0.00001"

// fortio runs `fortio load` and reads the JSON result it writes (-json):
// its duration histogram (fortio's buckets, with the exact count, min,
// max and sum), return codes and sizes.
type fortio struct {
	c   *Config
	bin string
	dir string
}

// version reads the module version fortio was built as (go install
// stamps it), else asks `fortio version`.
func (f *fortio) version(ctx context.Context) (string, error) {
	if v, ok := builtVersion(f.bin, func(path, version string) bool {
		return path == FortioModule && version != "" && version != "(devel)"
	}); ok {
		return v, nil
	}
	b, err := runVersion(ctx, f.bin, "version")
	v := strings.TrimSpace(string(b))
	if err != nil || v == "" || strings.ContainsAny(v, " \n") || v[0] < '0' || v[0] > '9' {
		return "", fmt.Errorf("%s version printed %q: not fortio (%v)", f.bin, tail(b), err)
	}
	return v, nil
}

func (f *fortio) out(phase string) string { return filepath.Join(f.dir, phase+".fortio.json") }

func (f *fortio) cleanup(phase string) { _ = os.Remove(f.out(phase)) }

// args: -c connections (one goroutine and connection each), -qps the
// total rate (0: closed loop), -nocatchup so a thread that fell behind
// skips a late request instead of sending a catch-up burst (fortio's
// default; meshbench's method forbids it: the skipped requests show as
// not sent), -uniform to spread the threads' start over one interval,
// -allow-initial-errors so a target that fails its first requests is
// measured (its failures counted) instead of fortio aborting.
func (f *fortio) args(phase string, d time.Duration) ([]string, error) {
	l := &f.c.Load
	a := []string{f.bin, "load", "-json", f.out(phase), "-t", durationArg(d), "-c", strconv.Itoa(l.Connections),
		"-timeout", durationArg(l.Timeout), "-r", fortioResolution, "-p", "50,90,95,99,99.9",
		"-gomaxprocs", strconv.Itoa(max(f.c.Threads, 1)), "-allow-initial-errors", "-logger-json=false", "-quiet"}
	if l.Load.Closed() {
		a = append(a, "-qps", "0")
	} else {
		a = append(a, "-qps", strconv.FormatFloat(l.Load.Rate().PerSecond(), 'f', -1, 64), "-nocatchup", "-uniform")
	}
	if !l.KeepAlive {
		a = append(a, "-keepalive=false")
	}
	if l.Request.Method != "" && l.Request.Method != "GET" {
		a = append(a, "-X", l.Request.Method)
	}
	body, err := f.c.bodyFile(f.dir)
	if err != nil {
		return nil, err
	}
	if body != "" {
		a = append(a, "-payload-file", body)
	}
	a = append(a, headerArgs(l.Request.Headers)...)
	if l.Request.Host != "" {
		a = append(a, "-H", "Host: "+l.Request.Host)
	}
	tf := f.c.TLSFiles
	if tf.CAFile != "" {
		a = append(a, "-cacert", tf.CAFile)
	}
	if tf.CertFile != "" {
		a = append(a, "-cert", tf.CertFile, "-key", tf.KeyFile)
	}
	if tf.Insecure {
		a = append(a, "-k")
	}
	return append(a, l.Targets[0].Raw), nil
}

// result reads fortio's JSON of the measured run and keeps it
// (KeepResults) for fortio's own report UI and for comparison.
func (f *fortio) result(out *execOut) (*results.LoadResult, error) {
	b, err := os.ReadFile(f.out("measure"))
	if err != nil {
		return nil, fmt.Errorf("fortio's JSON result: %w", err)
	}
	res, err := fortioResult(f.c, b, out.started)
	if err != nil {
		return nil, err
	}
	if f.c.KeepResults != "" {
		if err := copyFile(f.out("measure"), f.c.KeepResults); err != nil {
			return nil, fmt.Errorf("keeping fortio's JSON: %w", err)
		}
		res.Generator.Notes = append(res.Generator.Notes, "fortio's own JSON result: "+f.c.KeepResults+" (fortio report serves it)")
	}
	return res, nil
}

// fortioJSON is the part of fortio's JSON result meshbench reads
// (fortio.org/fortio/fhttp HTTPRunnerResults, periodic.RunnerResults).
type fortioJSON struct {
	RunType                 string
	StartTime               time.Time
	ActualQPS               float64
	ActualDuration          int64 // ns
	NumThreads              int
	Version                 string
	DurationHistogram       *fortioHistogram
	ErrorsDurationHistogram *fortioHistogram
	RetCodes                map[string]int64
	Sizes                   *fortioHistogram // whole answer: headers and body
	HeaderSizes             *fortioHistogram
	SocketCount             int64
}

// fortioHistogram is fortio's stats.HistogramData: exact count, min, max
// and sum; buckets [Start, End] with counts (the first bucket starts at
// Min, the last ends at Max); fortio's own interpolated percentiles.
type fortioHistogram struct {
	Count         int64
	Min, Max, Sum float64
	Avg           float64
	Data          []fortioBucket
	Percentiles   []struct{ Percentile, Value float64 }
}

type fortioBucket struct {
	Start, End float64
	Percent    float64
	Count      int64
}

// recorder rebuilds an HDR histogram from fortio's buckets: each bucket's
// count is spread evenly over its interval (fortio's own percentiles
// interpolate linearly inside a bucket, so they agree), with the exact
// min and max kept as values. At most fortioPointsPerBucket distinct
// values per bucket.
func (h *fortioHistogram) recorder() (*latency.Recorder, error) {
	r := latency.NewRecorder()
	if h == nil {
		return r, nil
	}
	var n int64
	for i, b := range h.Data {
		if b.Count < 0 || b.End < b.Start || b.Start < 0 || math.IsNaN(b.Start) || math.IsInf(b.End, 0) {
			return nil, fmt.Errorf("bucket %d [%g, %g] count %d: not a bucket", i, b.Start, b.End, b.Count)
		}
		n += b.Count
	}
	if n != h.Count {
		return nil, fmt.Errorf("the buckets hold %d values but the count is %d", n, h.Count)
	}
	last := len(h.Data) - 1
	for i, b := range h.Data {
		c := b.Count
		if c == 0 {
			continue
		}
		if i == 0 { // the exact minimum
			r.Record(secondsNs(h.Min))
			c--
		}
		if i == last && c > 0 { // the exact maximum
			r.Record(secondsNs(h.Max))
			c--
		}
		pts := min(c, fortioPointsPerBucket)
		for k := int64(0); k < pts; k++ {
			// pts points at the middles of pts equal parts; the counts
			// split as evenly as integers allow.
			v := b.Start + (b.End-b.Start)*(float64(k)+0.5)/float64(pts)
			share := c/pts + boolInt(k < c%pts)
			r.RecordN(secondsNs(v), share)
		}
	}
	return r, nil
}

// fortioScheduled is how many requests fortio 1.68 schedules for a rate,
// a duration and c connections (periodic.runQPSSetup): n = ⌊rate ×
// seconds⌋, at least 2 (then 1 thread); at most n/2 threads; n / threads
// each, the remainder dropped.
func fortioScheduled(ratePerSec float64, d time.Duration, c int) int64 {
	n := int64(ratePerSec * d.Seconds())
	threads := int64(max(c, 1))
	if n < 2 {
		n, threads = 2, 1
	}
	if 2*threads > n {
		threads = n / 2
	}
	return n / threads * threads
}

// fortioPointsPerBucket bounds the distinct values recorded per bucket.
const fortioPointsPerBucket = 200

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// fortioResult builds the result from fortio's JSON. anchor is the wall
// clock when fortio was started (fortio's StartTime is used when set).
func fortioResult(c *Config, b []byte, anchor time.Time) (*results.LoadResult, error) {
	var j fortioJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("fortio's JSON: %w", err)
	}
	if j.DurationHistogram == nil || j.RetCodes == nil {
		return nil, errors.New("fortio's JSON: no DurationHistogram or RetCodes: not the result of fortio load")
	}
	if j.RunType != "" && j.RunType != "HTTP" {
		return nil, fmt.Errorf("fortio's JSON: run type %q, want HTTP", j.RunType)
	}
	r := c.base()
	g := r.Generator
	start := anchor
	if !j.StartTime.IsZero() {
		start = j.StartTime
	}
	r.StartedAt = start.UTC()
	r.EndedAt = start.Add(time.Duration(j.ActualDuration)).UTC()
	var answers, socket int64
	for code, n := range j.RetCodes {
		k, err := strconv.Atoi(code)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("fortio's JSON: return code %q: %d", code, n)
		}
		if k <= 0 { // -1: connection or socket error, no answer
			socket += n
			continue
		}
		answers += n
		r.StatusCodes[code] += n
		if isSuccess(code) {
			r.Success += n
		}
	}
	if socket > 0 {
		r.Errors = append(r.Errors, results.ErrorCount{Kind: "other",
			Message: "fortio socket errors (code -1: connect, read or write failure, or its -timeout)", Count: socket})
	}
	r.Completed = answers + socket
	r.Sent = r.Completed
	if h := j.DurationHistogram; h.Count != r.Completed {
		return nil, fmt.Errorf("fortio's JSON: %d durations but %d return codes", h.Count, r.Completed)
	}
	lat, err := j.DurationHistogram.recorder()
	if err != nil {
		return nil, fmt.Errorf("fortio's duration histogram: %w", err)
	}
	if j.Sizes != nil {
		r.BytesIn = int64(math.Round(j.Sizes.Sum))
		if j.HeaderSizes != nil {
			r.BytesIn -= int64(math.Round(j.HeaderSizes.Sum))
		}
	}
	if n := int64(len(c.Load.Request.Body)); n > 0 {
		r.BytesOut = n * r.Sent
		g.Notes = append(g.Notes, "bytes_out: the request body's size times the requests sent (fortio does not count it)")
	}
	if !c.Load.Load.Closed() {
		// fortio's own schedule is what it was asked to send; what it
		// left out by its integer split is said, not counted as missed.
		asked := r.Scheduled
		r.Scheduled = fortioScheduled(c.Load.Load.Rate().PerSecond(), c.Load.Duration, c.Load.Connections)
		if asked != r.Scheduled {
			g.Notes = append(g.Notes, fmt.Sprintf("schedule: fortio splits rate × duration (%d requests) among its %d connections by integer division and schedules %d; the %d left over are never scheduled, so the achieved rate is up to (connections − 1) / duration below the target",
				asked, c.Load.Connections, r.Scheduled, asked-r.Scheduled))
		}
		if r.Scheduled > r.Sent {
			r.NotSent = r.Scheduled - r.Sent
			r.NotSentReason = "fortio skipped them (-nocatchup): each was due while its connection's thread was still busy or late"
		}
	}
	g.Histograms = fmt.Sprintf("reconstructed from fortio's %d buckets (-r %ss: 10 µs to 1 s, at most 20%% wide from 100 µs to 10 ms), each bucket's count spread evenly over it; exact count, min and max", len(j.DurationHistogram.Data), fortioResolution)
	g.PartialHistograms = true
	g.LatencyFromActualSend = true
	pct := make([]string, 0, len(j.DurationHistogram.Percentiles))
	for _, p := range j.DurationHistogram.Percentiles {
		pct = append(pct, fmt.Sprintf("p%s %s", strconv.FormatFloat(p.Percentile, 'f', -1, 64), time.Duration(secondsNs(p.Value))))
	}
	g.Notes = append(g.Notes,
		"latency: fortio's, from when each request was actually sent, not from its intended send time: the schedule lag is unknown (service time = latency here)",
		fmt.Sprintf("fortio's own figures: mean %s, %s; %.2f/s over %s", time.Duration(secondsNs(j.DurationHistogram.Avg)), strings.Join(pct, ", "), j.ActualQPS, time.Duration(j.ActualDuration)),
		"dropped: fortio does not queue; with -nocatchup a thread behind its schedule skips the late request (counted as not sent)",
		"send times: not reported per request; the window is fortio's start time and its actual duration")
	if socket > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("the latency histogram includes the %d socket errors' durations (fortio keeps no separate histogram of answers)", socket))
	}
	if c.Load.Load.Closed() {
		g.Notes = append(g.Notes, "closed loop: -qps 0, each of -c connections sends when its last answer arrives")
	}
	if r.Latency, err = lat.Encode(); err != nil {
		return nil, err
	}
	if r.ServiceTime, err = lat.Encode(); err != nil {
		return nil, err
	}
	if r.ScheduleLag, err = latency.NewRecorder().Encode(); err != nil {
		return nil, err
	}
	sort.SliceStable(r.Errors, func(i, k int) bool { return r.Errors[i].Count > r.Errors[k].Count })
	return r, nil
}
