package extgen

import (
	"context"
	"database/sql"
	"encoding/json"
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

	_ "modernc.org/sqlite" // database/sql driver "sqlite": oha's per-request records
)

// oha runs hatoo/oha. Its measured run prints the JSON summary on stdout
// (counts, status codes, the error set) and writes every answered request
// to an SQLite file (--db-url): offsets from oha's start, in seconds, of
// the request's intended send time (start_latency_correction, with
// --latency-correction), actual send (start) and end, its status and body
// bytes. The histograms are built exactly from those rows.
type oha struct {
	c   *Config
	bin string
	dir string
}

// ohaDeadline is oha's message for a request cut short at the end of the
// run (not sent with -w, which waits for requests in flight).
const ohaDeadline = "aborted due to deadline"

func (o *oha) version(ctx context.Context) (string, error) {
	b, err := runVersion(ctx, o.bin, "--version")
	if err != nil {
		return "", fmt.Errorf("%s --version: %w: %s", o.bin, err, tail(b))
	}
	v := strings.TrimSpace(string(b))
	if !strings.HasPrefix(v, "oha ") {
		return "", fmt.Errorf("%s --version printed %q: not oha", o.bin, tail(b))
	}
	return strings.TrimPrefix(v, "oha "), nil
}

func (o *oha) db(phase string) string { return filepath.Join(o.dir, phase+".db") }

func (o *oha) cleanup(phase string) { _ = os.Remove(o.db(phase)) }

func (o *oha) args(phase string, d time.Duration) ([]string, error) {
	l := &o.c.Load
	_ = os.Remove(o.db(phase)) // oha appends to an existing table
	a := []string{o.bin, "--no-tui", "--output-format", "json", "--db-url", o.db(phase),
		"-z", durationArg(d), "-c", strconv.Itoa(l.Connections), "-w", "-t", durationArg(l.Timeout),
		"--worker-threads", strconv.Itoa(max(o.c.Threads, 1))}
	if !l.Load.Closed() {
		a = append(a, "-q", strconv.FormatFloat(l.Load.Rate().PerSecond(), 'f', -1, 64), "--latency-correction")
	}
	a = append(a, "-m", l.Request.Method)
	a = append(a, headerArgs(l.Request.Headers)...)
	if l.Request.Host != "" {
		a = append(a, "--host", l.Request.Host)
	}
	body, err := o.c.bodyFile(o.dir)
	if err != nil {
		return nil, err
	}
	if body != "" {
		a = append(a, "-D", body)
	}
	if !l.KeepAlive {
		a = append(a, "--disable-keepalive")
	}
	tf := o.c.TLSFiles
	if tf.CAFile != "" {
		a = append(a, "--cacert", tf.CAFile)
	}
	if tf.CertFile != "" {
		a = append(a, "--cert", tf.CertFile, "--key", tf.KeyFile)
	}
	if tf.Insecure {
		a = append(a, "--insecure")
	}
	return append(a, l.Targets[0].Raw), nil
}

// ohaSummary is the part of oha's JSON summary meshbench reads.
type ohaSummary struct {
	Summary struct {
		Total     float64 `json:"total"`     // seconds from oha's start to its end
		TotalData int64   `json:"totalData"` // body bytes of the answers
	} `json:"summary"`
	StatusCodeDistribution map[string]int64 `json:"statusCodeDistribution"`
	ErrorDistribution      map[string]int64 `json:"errorDistribution"`
}

func (o *oha) result(out *execOut) (*results.LoadResult, error) {
	db := o.db("measure")
	if _, err := os.Stat(db); os.IsNotExist(err) {
		db = ""
	} else if err != nil {
		return nil, err
	}
	res, err := ohaResult(o.c, out.stdout, db, out.started)
	if err != nil {
		return nil, err
	}
	if out.interrupted && db == "" {
		res.Generator.Notes = append(res.Generator.Notes, "interrupted: oha writes no per-request records when interrupted, so the histograms are empty and the counts are its summary's")
	}
	return res, nil
}

// ohaResult builds the result from oha's JSON summary and its SQLite
// records in the SQLite file db ("" when oha wrote none, as when
// interrupted). anchor is the
// wall clock when oha was started: oha's offsets are from its own start,
// a few milliseconds later (process start, runtime, DNS pre-lookup).
func ohaResult(c *Config, summary []byte, db string, anchor time.Time) (*results.LoadResult, error) {
	var s ohaSummary
	if err := json.Unmarshal(summary, &s); err != nil {
		return nil, fmt.Errorf("oha's JSON summary: %w", err)
	}
	r := c.base()
	g := r.Generator
	r.StartedAt = anchor.UTC()
	r.EndedAt = anchor.Add(time.Duration(s.Summary.Total * float64(time.Second))).UTC()
	var errCount int64
	for msg, n := range s.ErrorDistribution {
		if n <= 0 {
			continue
		}
		if msg == ohaDeadline {
			r.Canceled += n
			continue
		}
		errCount += n
		r.Errors = append(r.Errors, results.ErrorCount{Kind: errorKind(msg), Message: msg, Count: n})
	}
	sort.Slice(r.Errors, func(i, j int) bool {
		if r.Errors[i].Count != r.Errors[j].Count {
			return r.Errors[i].Count > r.Errors[j].Count
		}
		return r.Errors[i].Message < r.Errors[j].Message
	})
	var answers int64
	for code, n := range s.StatusCodeDistribution {
		if _, err := strconv.Atoi(code); err != nil || n < 0 {
			return nil, fmt.Errorf("status code %q: %d in oha's summary", code, n)
		}
		answers += n
	}
	lat, svc, lag := latency.NewRecorder(), latency.NewRecorder(), latency.NewRecorder()
	if db == "" {
		for code, n := range s.StatusCodeDistribution {
			r.StatusCodes[code] += n
			if isSuccess(code) {
				r.Success += n
			}
		}
		r.BytesIn = s.Summary.TotalData
		g.Histograms = "none: oha wrote no per-request records"
		g.PartialHistograms = true
	} else {
		rows, err := ohaRows(db)
		if err != nil {
			return nil, fmt.Errorf("oha's database: %w", err)
		}
		if int64(len(rows)) != answers {
			return nil, fmt.Errorf("oha's summary counts %d answers but its database holds %d", answers, len(rows))
		}
		var first, lastSend, lastEnd float64 = math.Inf(1), math.Inf(-1), math.Inf(-1)
		corrected := 0
		for _, row := range rows {
			code := strconv.Itoa(row.status)
			r.StatusCodes[code]++
			if isSuccess(code) {
				r.Success++
			}
			r.BytesIn += row.bytes
			lat.Record(secondsNs(row.duration))
			svc.Record(secondsNs(row.end - row.start))
			if row.intended != nil {
				corrected++
				lag.Record(secondsNs(row.start - *row.intended))
			}
			first = min(first, row.start)
			lastSend = max(lastSend, row.start)
			lastEnd = max(lastEnd, row.end)
		}
		for code, n := range s.StatusCodeDistribution {
			if r.StatusCodes[code] != n {
				return nil, fmt.Errorf("status %s: oha's summary counts %d but its database %d", code, n, r.StatusCodes[code])
			}
		}
		if len(rows) > 0 {
			r.FirstSendNs = anchor.Add(secondsDur(first)).UnixNano()
			r.LastSendNs = anchor.Add(secondsDur(lastSend)).UnixNano()
			r.LastEndNs = anchor.Add(secondsDur(lastEnd)).UnixNano()
			r.EndedAt = anchor.Add(secondsDur(lastEnd)).UTC()
		}
		if !c.Load.Load.Closed() && corrected != len(rows) {
			return nil, fmt.Errorf("%d of %d records have no intended send time: was --latency-correction given?", len(rows)-corrected, len(rows))
		}
		g.Histograms = fmt.Sprintf("exact: from oha's %d per-request records (its SQLite output), to the nanosecond", len(rows))
		if errCount > 0 {
			g.PartialHistograms = true
			g.Notes = append(g.Notes, fmt.Sprintf("the %d failed requests are not in the histograms: oha keeps no timing for them", errCount))
		}
	}
	r.Completed = answers + errCount
	r.Sent = r.Completed + r.Canceled
	if n := int64(len(c.Load.Request.Body)); n > 0 {
		r.BytesOut = n * r.Sent
		g.Notes = append(g.Notes, "bytes_out: the request body's size times the requests sent (oha does not count it)")
	}
	sendTimes := "send times: oha's offsets from its start, placed on the wall clock at the moment meshbench started oha (oha's own start is a few milliseconds later)"
	if db == "" {
		sendTimes = "send times: unknown without per-request records; the window runs from meshbench starting oha for oha's total time"
	}
	g.Notes = append(g.Notes, sendTimes,
		"dropped: oha never drops; it queues without bound, and requests still queued at the end are never sent (they show as sent below scheduled)")
	if c.Load.Load.Closed() {
		g.Notes = append(g.Notes, "closed loop: latency is answer time minus actual send time; no schedule lag")
	} else {
		g.Notes = append(g.Notes, "intended send time: when oha's ticker woke (tokio's millisecond timer), so the ticker's own lateness is in neither latency nor schedule lag")
	}
	var err error
	if r.Latency, err = lat.Encode(); err != nil {
		return nil, err
	}
	if r.ServiceTime, err = svc.Encode(); err != nil {
		return nil, err
	}
	if r.ScheduleLag, err = lag.Encode(); err != nil {
		return nil, err
	}
	return r, nil
}

// isSuccess reports whether an HTTP status counts as a success (2xx, 3xx),
// as meshbench's engine counts it.
func isSuccess(code string) bool {
	n, err := strconv.Atoi(code)
	return err == nil && n >= 200 && n < 400
}

// secondsNs converts oha's float seconds to nanoseconds, rounded: oha
// computes them from nanosecond durations, so rounding recovers those
// within a nanosecond.
func secondsNs(s float64) int64 { return int64(math.Round(s * 1e9)) }

func secondsDur(s float64) time.Duration { return time.Duration(secondsNs(s)) }

// ohaRow is one record of oha's table.
type ohaRow struct {
	start, end, duration float64  // seconds from oha's start; duration = end − intended (or start)
	intended             *float64 // start_latency_correction, nil without --latency-correction
	status               int
	bytes                int64
}

// ohaRows reads oha's table "oha" from the SQLite database file path,
// read-only, with modernc.org/sqlite (SQLite in pure Go).
func ohaRows(path string) ([]ohaRow, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&immutable=1")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	q, err := db.Query(`SELECT rowid, start, start_latency_correction, "end", duration, status, len_bytes FROM oha ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("reading its table oha: %w", err)
	}
	defer q.Close()
	var rows []ohaRow
	for q.Next() {
		var rowid int64
		var start, intended, end, duration, status, bytes any
		if err := q.Scan(&rowid, &start, &intended, &end, &duration, &status, &bytes); err != nil {
			return nil, err
		}
		var row ohaRow
		var ok [5]bool
		row.start, ok[0] = realValue(start)
		row.end, ok[1] = realValue(end)
		row.duration, ok[2] = realValue(duration)
		st, ok3 := status.(int64)
		row.bytes, ok[4] = bytes.(int64)
		ok[3] = ok3 && st >= 0 && st <= 999
		row.status = int(st)
		for _, o := range ok {
			if !o {
				return nil, fmt.Errorf("row %d: a column is missing or of the wrong type", rowid)
			}
		}
		if intended != nil {
			f, ok := realValue(intended)
			if !ok {
				return nil, fmt.Errorf("row %d: start_latency_correction is not a number", rowid)
			}
			row.intended = &f
		}
		if row.end < row.start || row.duration < 0 || row.bytes < 0 {
			return nil, fmt.Errorf("row %d: inconsistent times (start %g, end %g, duration %g)", rowid, row.start, row.end, row.duration)
		}
		rows = append(rows, row)
	}
	if err := q.Err(); err != nil {
		return nil, err
	}
	return rows, nil
}

// realValue reads a REAL column, which SQLite may store as an integer
// when it has no fractional part.
func realValue(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int64:
		return float64(x), true
	}
	return 0, false
}
