package extgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// wrk2 runs giltene/wrk2 (whose binary is called wrk): constant
// throughput -R with --latency and --u_latency, whose output holds two
// HdrHistogram percentile spectra — latency from the intended send time
// ("Recorded Latency") and from the actual send ("Uncorrected Latency") —
// and the run's totals. The histograms are reconstructed from the spectra.
type wrk2 struct {
	c   *Config
	bin string
	dir string
}

// validateWrk2 lists what wrk2 cannot do of c.
func (c *Config) validateWrk2() []error {
	var errs []error
	l := &c.Load
	threads := max(c.Threads, 1)
	if l.Load.Closed() {
		errs = append(errs, errors.New("--max: wrk2 has no closed loop (its -R rate is required); use --generator oha or meshbench"))
	} else {
		per := l.Load.Rate().PerSecond()
		switch {
		case per != math.Trunc(per) || per < 1:
			errs = append(errs, fmt.Errorf("--rate %s/s: wrk2 takes whole requests per second; with --workers, use a rate the workers divide exactly", strconv.FormatFloat(per, 'f', -1, 64)))
		case int64(per)%int64(threads) != 0:
			errs = append(errs, fmt.Errorf("--rate %d/s over %d wrk2 threads (--cpus): wrk2 divides the rate by its threads and drops the remainder; use a rate the threads divide", int64(per), threads))
		}
	}
	if l.Connections%threads != 0 || l.Connections < threads {
		errs = append(errs, fmt.Errorf("--connections %d over %d wrk2 threads (--cpus): wrk2 divides the connections by its threads and drops the remainder; use a multiple of the threads", l.Connections, threads))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
		zero bool
	}{{"duration", l.Duration, false}, {"warmup", l.Warmup, true}, {"timeout", l.Timeout, false}} {
		if d.v%time.Second != 0 || (!d.zero && d.v < time.Second) {
			errs = append(errs, fmt.Errorf("--%s %v: wrk2 takes whole seconds", d.flag, d.v))
		}
	}
	tf := c.TLSFiles
	if tf.CAFile != "" || tf.CertFile != "" || tf.KeyFile != "" {
		errs = append(errs, errors.New("--cacert/--cert/--key: wrk2 takes no certificates; use --generator oha or meshbench"))
	}
	for _, t := range l.Targets {
		if t.TLS && !tf.Insecure {
			errs = append(errs, fmt.Errorf("target %q: wrk2 does not verify the server's certificate; pass --insecure to accept that", t.Raw))
		}
	}
	return errs
}

func (w *wrk2) version(ctx context.Context) (string, error) {
	// wrk -v prints its version, then its usage (no URL given), exit 1.
	b, _ := runVersion(ctx, w.bin, "-v")
	first, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(first, "wrk ") {
		return "", fmt.Errorf("%s -v printed %q: not wrk2", w.bin, tail(b))
	}
	if !bytes.Contains(b, []byte("--rate")) {
		return "", fmt.Errorf("%s is wrk (%s), not wrk2: it has no --rate; build giltene/wrk2 and pass its binary with --generator-path", w.bin, strings.TrimSpace(first))
	}
	v, _, _ := strings.Cut(strings.TrimPrefix(first, "wrk "), " Copyright")
	return strings.TrimSpace(v), nil
}

func (w *wrk2) cleanup(string) {}

func (w *wrk2) args(phase string, d time.Duration) ([]string, error) {
	l := &w.c.Load
	threads := max(w.c.Threads, 1)
	a := []string{w.bin, "-t", strconv.Itoa(threads), "-c", strconv.Itoa(l.Connections),
		"-d", durationArg(d), "-R", strconv.FormatInt(int64(l.Load.Rate().PerSecond()), 10),
		"--latency", "--u_latency", "--timeout", durationArg(l.Timeout)}
	a = append(a, headerArgs(l.Request.Headers)...)
	if l.Request.Host != "" {
		a = append(a, "-H", "Host: "+l.Request.Host)
	}
	if !l.KeepAlive {
		a = append(a, "-H", "Connection: close")
	}
	if l.Request.Method != "GET" || len(l.Request.Body) > 0 {
		// Method and body are set from a Lua script (wrk's only way).
		p := filepath.Join(w.dir, "request.lua")
		script := "wrk.method = " + luaString([]byte(l.Request.Method)) + "\n"
		if len(l.Request.Body) > 0 {
			script += "wrk.body = " + luaString(l.Request.Body) + "\n"
		}
		if err := os.WriteFile(p, []byte(script), 0o600); err != nil {
			return nil, err
		}
		a = append(a, "-s", p)
	}
	return append(a, l.Targets[0].Raw), nil
}

// luaString quotes b as a Lua string literal, every byte outside
// printable ASCII as a decimal escape.
func luaString(b []byte) string {
	var s strings.Builder
	s.WriteByte('"')
	for _, c := range b {
		switch {
		case c == '"' || c == '\\':
			s.WriteByte('\\')
			s.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			s.WriteByte(c)
		default:
			fmt.Fprintf(&s, "\\%03d", c)
		}
	}
	s.WriteByte('"')
	return s.String()
}

func (w *wrk2) result(out *execOut) (*results.LoadResult, error) {
	return wrk2Result(w.c, out.stdout, out.started)
}

// wrk2Output is what meshbench reads of wrk2's output.
type wrk2Output struct {
	calibrations int                      // "Thread calibration" lines
	spectra      map[string]*wrk2Spectrum // by kind: "recorded", "uncorrected"
	requests     int64                    // "N requests in T, B read"
	runtime      time.Duration
	read         string // B, as printed (rounded, binary units)
	socket       [4]int64
	non2xx3xx    int64
}

// wrk2Spectrum is one "Detailed Percentile spectrum" (HdrHistogram's
// classic percentile output, values in milliseconds).
type wrk2Spectrum struct {
	rows                []wrk2Row
	meanMs, maxMs       float64
	totalCount, buckets int64
}

type wrk2Row struct {
	valueMs    float64
	percentile float64
	total      int64
}

var (
	wrk2RequestsRe = regexp.MustCompile(`^\s*(\d+) requests in ([0-9.]+)(us|ms|s|m|h), ([0-9.]+[KMGTP]?B) read\s*$`)
	wrk2SocketRe   = regexp.MustCompile(`^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)\s*$`)
	wrk2StatusRe   = regexp.MustCompile(`^\s*Non-2xx or 3xx responses: (\d+)\s*$`)
	wrk2MeanRe     = regexp.MustCompile(`^\s*#\[Mean\s*=\s*([0-9.]+), StdDeviation\s*=\s*([0-9.]+)\]\s*$`)
	wrk2MaxRe      = regexp.MustCompile(`^\s*#\[Max\s*=\s*([0-9.]+), Total count\s*=\s*(\d+)\]\s*$`)
	wrk2BucketsRe  = regexp.MustCompile(`^\s*#\[Buckets\s*=\s*(\d+), SubBuckets\s*=\s*(\d+)\]\s*$`)
)

// parseWrk2 reads wrk2's printed output.
func parseWrk2(b []byte) (*wrk2Output, error) {
	o := &wrk2Output{spectra: map[string]*wrk2Spectrum{}, requests: -1}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var kind string       // spectrum being read
	var cur *wrk2Spectrum // its rows, after "Detailed Percentile spectrum:"
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := sc.Text()
		trim := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trim, "Thread calibration:"):
			o.calibrations++
		case strings.HasPrefix(trim, "Latency Distribution (HdrHistogram - "):
			kind = "recorded"
			if strings.Contains(trim, "Uncorrected") {
				kind = "uncorrected"
			}
			if o.spectra[kind] != nil {
				return nil, fmt.Errorf("line %d: a second %s latency distribution", lineNo, kind)
			}
			cur = nil
		case trim == "Detailed Percentile spectrum:":
			if kind == "" {
				return nil, fmt.Errorf("line %d: a percentile spectrum outside a latency distribution", lineNo)
			}
			cur = &wrk2Spectrum{totalCount: -1}
			o.spectra[kind] = cur
		case cur != nil && strings.HasPrefix(trim, "#["):
			if m := wrk2MeanRe.FindStringSubmatch(trim); m != nil {
				cur.meanMs, _ = strconv.ParseFloat(m[1], 64)
			} else if m := wrk2MaxRe.FindStringSubmatch(trim); m != nil {
				cur.maxMs, _ = strconv.ParseFloat(m[1], 64)
				cur.totalCount, _ = strconv.ParseInt(m[2], 10, 64)
			} else if m := wrk2BucketsRe.FindStringSubmatch(trim); m != nil {
				cur.buckets, _ = strconv.ParseInt(m[1], 10, 64)
				cur, kind = nil, "" // the footer's last line
			} else {
				return nil, fmt.Errorf("line %d: %q: not a spectrum footer", lineNo, trim)
			}
		case cur != nil && trim != "" && !strings.HasPrefix(trim, "Value"):
			f := strings.Fields(trim)
			if len(f) != 4 {
				return nil, fmt.Errorf("line %d: %q: not a spectrum row (Value Percentile TotalCount 1/(1-Percentile))", lineNo, trim)
			}
			v, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			n, err3 := strconv.ParseInt(f[2], 10, 64)
			if err := errors.Join(err1, err2, err3); err != nil || v < 0 || p < 0 || p > 1 || n < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("line %d: %q: not a spectrum row", lineNo, trim)
			}
			cur.rows = append(cur.rows, wrk2Row{valueMs: v, percentile: p, total: n})
		default:
			if m := wrk2RequestsRe.FindStringSubmatch(line); m != nil {
				o.requests, _ = strconv.ParseInt(m[1], 10, 64)
				d, err := wrk2Duration(m[2], m[3])
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", lineNo, err)
				}
				o.runtime, o.read = d, m[4]
			} else if m := wrk2SocketRe.FindStringSubmatch(line); m != nil {
				for i := range o.socket {
					o.socket[i], _ = strconv.ParseInt(m[i+1], 10, 64)
				}
			} else if m := wrk2StatusRe.FindStringSubmatch(line); m != nil {
				o.non2xx3xx, _ = strconv.ParseInt(m[1], 10, 64)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var errs []error
	if o.requests < 0 {
		errs = append(errs, errors.New(`no "N requests in T, B read" line`))
	}
	if o.spectra["recorded"] == nil {
		errs = append(errs, errors.New("no recorded latency spectrum (was --latency given? is this wrk2?)"))
	}
	for k, s := range o.spectra {
		if s.totalCount < 0 {
			errs = append(errs, fmt.Errorf("%s spectrum: no \"Total count\" footer", k))
		}
	}
	return o, errors.Join(errs...)
}

// wrk2Duration reads wrk's format_time_us output ("30.00s", "1.00m").
func wrk2Duration(num, unit string) (time.Duration, error) {
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("run time %s%s: %w", num, unit, err)
	}
	mult := map[string]float64{"us": 1e3, "ms": 1e6, "s": 1e9, "m": 60e9, "h": 3600e9}[unit]
	return time.Duration(math.Round(f * mult)), nil
}

// recorder rebuilds a histogram from the spectrum: each row's count since
// the row before is recorded at the row's value (HdrHistogram prints each
// percentile step at the highest value equivalent to it, so the values
// between two printed values are attributed to the upper one).
func (s *wrk2Spectrum) recorder() (*latency.Recorder, error) {
	r := latency.NewRecorder()
	var prev int64
	for i, row := range s.rows {
		if row.total < prev {
			return nil, fmt.Errorf("row %d: total count %d falls below the previous %d", i+1, row.total, prev)
		}
		r.RecordN(int64(math.Round(row.valueMs*1e6)), row.total-prev)
		prev = row.total
	}
	if prev != s.totalCount {
		return nil, fmt.Errorf("the rows count %d values but the footer's total count is %d", prev, s.totalCount)
	}
	return r, nil
}

// wrk2Result builds the result of a wrk2 run from its output. anchor is
// the wall clock when wrk2 was started.
func wrk2Result(c *Config, out []byte, anchor time.Time) (*results.LoadResult, error) {
	o, err := parseWrk2(out)
	if err != nil {
		return nil, err
	}
	r := c.base()
	g := r.Generator
	rec := o.spectra["recorded"]
	lat, err := rec.recorder()
	if err != nil {
		return nil, fmt.Errorf("recorded latency spectrum: %w", err)
	}
	if lat.Count()+lat.OutOfRange() > o.requests {
		return nil, fmt.Errorf("the spectrum holds %d values but wrk2 counts %d answers", lat.Count()+lat.OutOfRange(), o.requests)
	}
	svc := latency.NewRecorder()
	points := fmt.Sprintf("%d points", len(rec.rows))
	if u := o.spectra["uncorrected"]; u != nil {
		if svc, err = u.recorder(); err != nil {
			return nil, fmt.Errorf("uncorrected latency spectrum: %w", err)
		}
		points = fmt.Sprintf("%d and %d points", len(rec.rows), len(u.rows))
	} else {
		g.Notes = append(g.Notes, "service_time: unknown: wrk2 printed no uncorrected spectrum (--u_latency)")
	}
	g.Histograms = "reconstructed from wrk2's percentile spectrum (" + points + "): each count between two printed values is attributed to the upper value; latency from wrk2's corrected spectrum, service time from its uncorrected one"
	g.PartialHistograms = true
	g.Notes = append(g.Notes,
		fmt.Sprintf("min, mean and max are the reconstructed histogram's; wrk2's own: mean %.3f ms, max %.3f ms", rec.meanMs, rec.maxMs),
		"schedule_lag: unknown: wrk2 does not report it")
	if o.calibrations > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("wrk2 restarts its histograms after its calibration (about 10 s after its start), so they hold %d of the %d answers", rec.totalCount, o.requests))
	}
	connect, read, write, timeout := o.socket[0], o.socket[1], o.socket[2], o.socket[3]
	for _, e := range []results.ErrorCount{
		{Kind: "timeout", Message: "wrk2 socket timeouts (its periodic check of requests older than --timeout)", Count: timeout},
		{Kind: "other", Message: "wrk2 socket connect errors", Count: connect},
		{Kind: "other", Message: "wrk2 socket read errors", Count: read},
		{Kind: "other", Message: "wrk2 socket write errors", Count: write},
	} {
		if e.Count > 0 {
			r.Errors = append(r.Errors, e)
		}
	}
	sort.SliceStable(r.Errors, func(i, j int) bool { return r.Errors[i].Count > r.Errors[j].Count })
	socket := connect + read + write + timeout
	r.Completed = o.requests + socket
	r.Sent = r.Completed
	r.Success = o.requests - o.non2xx3xx
	if r.Success < 0 {
		return nil, fmt.Errorf("%d responses above 399 of %d", o.non2xx3xx, o.requests)
	}
	if socket > 0 {
		g.Notes = append(g.Notes, fmt.Sprintf("wrk2's %d socket errors are its counts of events, not of requests: each is counted here as one failed request sent", socket))
	}
	g.Notes = append(g.Notes,
		fmt.Sprintf("status codes: wrk2 counts only the answers with a status above 399 (%d), not each code", o.non2xx3xx),
		fmt.Sprintf("bytes_in: left 0: wrk2 counts every byte read, headers included, and prints it rounded (%s)", o.read),
		"send times: not reported; the window runs from meshbench starting wrk2 for wrk2's run time",
		"dropped: wrk2 does not drop; behind its schedule it sends at twice the rate to catch up")
	r.StartedAt = anchor.UTC()
	r.EndedAt = anchor.Add(o.runtime).UTC()
	if r.Latency, err = lat.Encode(); err != nil {
		return nil, err
	}
	if r.ServiceTime, err = svc.Encode(); err != nil {
		return nil, err
	}
	if r.ScheduleLag, err = latency.NewRecorder().Encode(); err != nil {
		return nil, err
	}
	return r, nil
}
