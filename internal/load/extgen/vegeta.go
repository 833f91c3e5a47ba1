package extgen

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/results"
)

// VegetaVersion is the tsenart/vegeta release meshbench is written and
// tested against (the UDS seed reports' tool): its attack flags and its
// CSV encoding (`vegeta encode --to csv`).
const VegetaVersion = "12.12.0"

// vegeta runs `vegeta attack` and reads its own encoded results through
// `vegeta encode --to csv`: one row per request (send time, status,
// latency, bytes out and in, error), so the latency histogram is exact.
type vegeta struct {
	c   *Config
	bin string
	dir string
}

// version reads the module version vegeta was built as (go install
// github.com/tsenart/vegeta/v12@v12.12.0 stamps it in the build info;
// `vegeta -version` prints it only when built with its own ldflags).
func (v *vegeta) version(ctx context.Context) (string, error) {
	if version, ok := builtVersion(v.bin, func(path, _ string) bool {
		return strings.HasPrefix(path, "github.com/tsenart/vegeta")
	}); ok {
		return version, nil
	}
	b, err := runVersion(ctx, v.bin, "-version")
	if err != nil || !bytes.HasPrefix(b, []byte("Version:")) {
		return "", fmt.Errorf("%s -version printed %q: not vegeta (%v)", v.bin, tail(b), err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(strings.TrimPrefix(line, "Version:")), nil
}

func (v *vegeta) out(phase string) string { return filepath.Join(v.dir, phase+".vegeta.bin") }

func (v *vegeta) cleanup(phase string) { _ = os.Remove(v.out(phase)) }

// args: open loop at the rate with one worker per connection to start
// with (vegeta adds workers without bound when they are all busy, its
// default); closed loop is -rate=0 with -max-workers = connections.
func (v *vegeta) args(phase string, d time.Duration) ([]string, error) {
	l := &v.c.Load
	targets := filepath.Join(v.dir, "targets.txt")
	var t strings.Builder
	fmt.Fprintf(&t, "%s %s\n", l.Request.Method, l.Targets[0].Raw)
	if l.Request.Host != "" {
		fmt.Fprintf(&t, "Host: %s\n", l.Request.Host)
	}
	body, err := v.c.bodyFile(v.dir)
	if err != nil {
		return nil, err
	}
	if body != "" {
		fmt.Fprintf(&t, "@%s\n", body)
	}
	if err := os.WriteFile(targets, []byte(t.String()), 0o600); err != nil {
		return nil, err
	}
	n := strconv.Itoa(l.Connections)
	a := []string{v.bin, "attack", "-targets", targets, "-output", v.out(phase), "-duration", durationArg(d),
		"-timeout", durationArg(l.Timeout), "-connections", n, "-max-connections", n,
		"-keepalive=" + strconv.FormatBool(l.KeepAlive)}
	if l.Load.Closed() {
		a = append(a, "-rate", "0", "-max-workers", n)
	} else {
		a = append(a, "-rate", strconv.FormatFloat(l.Load.Rate().PerSecond(), 'f', -1, 64)+"/1s", "-workers", n)
	}
	for _, h := range headerArgs(l.Request.Headers) {
		if h != "-H" {
			a = append(a, "-header", h)
		}
	}
	tf := v.c.TLSFiles
	if tf.CAFile != "" {
		a = append(a, "-root-certs", tf.CAFile)
	}
	if tf.CertFile != "" {
		a = append(a, "-cert", tf.CertFile, "-key", tf.KeyFile)
	}
	if tf.Insecure {
		a = append(a, "-insecure")
	}
	return a, nil
}

// result encodes the measured run's results to CSV with vegeta itself and
// keeps the binary results (KeepResults) for `vegeta report` and `plot`.
func (v *vegeta) result(out *execOut) (*results.LoadResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, v.bin, "encode", "--to", "csv", v.out("measure"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("vegeta encode --to csv: %w: %s", err, tail(stderr.Bytes()))
	}
	res, err := vegetaResult(v.c, bytes.NewReader(b), out.started)
	if err != nil {
		return nil, err
	}
	if v.c.KeepResults != "" {
		if err := copyFile(v.out("measure"), v.c.KeepResults); err != nil {
			return nil, fmt.Errorf("keeping vegeta's results: %w", err)
		}
		res.Generator.Notes = append(res.Generator.Notes, "vegeta's own results: "+v.c.KeepResults+" (vegeta report / vegeta plot read it)")
	}
	return res, nil
}

// vegetaResult reads `vegeta encode --to csv` rows: timestamp (ns since
// the epoch, when the request was sent), status code (0 for a transport
// error), latency (ns), bytes out, bytes in, error, body, attack, seq,
// method, url, headers.
func vegetaResult(c *Config, in io.Reader, anchor time.Time) (*results.LoadResult, error) {
	r := c.base()
	g := r.Generator
	r.StartedAt = anchor.UTC()
	lat := latency.NewRecorder()
	errs := map[string]int64{}
	cr := csv.NewReader(in)
	cr.FieldsPerRecord = -1
	first, lastSend, lastEnd := int64(0), int64(0), int64(0)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("vegeta's CSV: %w", err)
		}
		if len(rec) < 6 {
			return nil, fmt.Errorf("vegeta's CSV: %d fields, want 12 (timestamp, code, latency, bytes out, bytes in, error, …)", len(rec))
		}
		ts, e1 := strconv.ParseInt(rec[0], 10, 64)
		code, e2 := strconv.Atoi(rec[1])
		ns, e3 := strconv.ParseInt(rec[2], 10, 64)
		bout, e4 := strconv.ParseInt(rec[3], 10, 64)
		bin, e5 := strconv.ParseInt(rec[4], 10, 64)
		if err := errors.Join(e1, e2, e3, e4, e5); err != nil || ns < 0 {
			return nil, fmt.Errorf("vegeta's CSV row %q: %v", strings.Join(rec[:6], ","), err)
		}
		r.Completed++
		r.BytesOut += bout
		r.BytesIn += bin
		if first == 0 || ts < first {
			first = ts
		}
		lastSend = max(lastSend, ts)
		lastEnd = max(lastEnd, ts+ns)
		if code == 0 { // a transport error: no answer
			errs[rec[5]]++
			continue
		}
		cs := strconv.Itoa(code)
		r.StatusCodes[cs]++
		if isSuccess(cs) {
			r.Success++
		}
		lat.Record(ns)
	}
	for msg, n := range errs {
		r.Errors = append(r.Errors, results.ErrorCount{Kind: errorKind(msg), Message: msg, Count: n})
	}
	sort.Slice(r.Errors, func(i, j int) bool {
		if r.Errors[i].Count != r.Errors[j].Count {
			return r.Errors[i].Count > r.Errors[j].Count
		}
		return r.Errors[i].Message < r.Errors[j].Message
	})
	r.Sent = r.Completed
	if r.Completed > 0 {
		r.FirstSendNs, r.LastSendNs, r.LastEndNs = first, lastSend, lastEnd
		r.StartedAt = time.Unix(0, first).UTC()
		r.EndedAt = time.Unix(0, lastEnd).UTC()
	} else {
		r.EndedAt = r.StartedAt
	}
	g.LatencyFromActualSend = true
	g.Histograms = fmt.Sprintf("exact: from vegeta's %d per-request results (vegeta encode --to csv), to the nanosecond; answered requests only", r.Completed-errCount(errs))
	if len(errs) > 0 {
		g.PartialHistograms = true
	}
	g.Notes = append(g.Notes,
		"latency: vegeta's, from when the request was actually sent, not from its intended send time: the schedule lag is unknown, and when vegeta falls behind the wait is in neither (service time = latency here)",
		"dropped: vegeta never drops; when every worker is busy it starts another (no bound), and a tick it could not serve in time is sent late")
	if c.Load.Load.Closed() {
		g.Notes = append(g.Notes, "closed loop: -rate=0 with -max-workers = connections")
	}
	var err error
	if r.Latency, err = lat.Encode(); err != nil {
		return nil, err
	}
	if r.ServiceTime, err = lat.Encode(); err != nil {
		return nil, err
	}
	if r.ScheduleLag, err = latency.NewRecorder().Encode(); err != nil {
		return nil, err
	}
	return r, nil
}

func errCount(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}
