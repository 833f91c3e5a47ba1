package extgen

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/results"
)

// testConfig is a run as `meshbench load` would configure it.
func testConfig(t *testing.T, gen, rate string, d time.Duration, conns int) Config {
	t.Helper()
	tg, err := loadgen.ParseTarget("http://127.0.0.1:8080/", false)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Generator: gen, Version: "test", Load: loadgen.Config{
		Targets: []loadgen.Target{tg}, Duration: d, Warmup: time.Second, Timeout: 30 * time.Second,
		Connections: conns, KeepAlive: true, Request: loadgen.RequestSpec{Method: "GET"}}}
	if rate == "" {
		c.Load.Load = loadgen.ClosedLoop
	} else if c.Load.Load, err = loadgen.ParseLoad(rate); err != nil {
		t.Fatal(err)
	}
	return c
}

// fixturePath is testdata/name.
func fixturePath(name string) string { return filepath.Join("testdata", name) }

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip writes r as JSON and reads it back, so every result the
// parsers build passes the reader's checks.
func roundTrip(t *testing.T, r *results.LoadResult) *results.LoadResult {
	t.Helper()
	var b bytes.Buffer
	if err := r.Write(&b); err != nil {
		t.Fatal(err)
	}
	back, err := results.Read(&b)
	if err != nil {
		t.Fatalf("result does not read back: %v", err)
	}
	return back
}

// ohaJSON is the part of oha's summary the tests compare with.
type ohaJSON struct {
	Summary struct {
		Fastest, Slowest, Average float64
		TotalData                 int64
	}
}

// TestOhaRecorded reads oha 1.16.0's real output (testdata/oha/README.md
// says how each was recorded) and checks the histograms against oha's own
// summary: the per-request records give the exact extremes, so meshbench's
// min and max equal oha's fastest and slowest to the nanosecond, and the
// mean to rounding; HDR's percentiles are within its 0.1% precision of
// oha's (which are exact order statistics).
func TestOhaRecorded(t *testing.T) {
	anchor := time.Date(2026, 11, 22, 6, 21, 0, 0, time.UTC)
	for _, tt := range []struct {
		name      string
		rate      string // "" closed loop
		d         time.Duration
		conns     int
		db        bool
		completed int64
		success   int64
		codes     map[string]int64
		errors    int64 // requests that failed (not in the histograms)
		partial   bool
	}{
		// 200/s for 2 s over 4 connections, 5% of answers 503.
		{"open", "200", 2 * time.Second, 4, true, 400, 379, map[string]int64{"200": 379, "503": 21}, 0, false},
		// Closed loop for 50 ms: no intended send time, no schedule lag.
		{"closed", "", 50 * time.Millisecond, 2, true, 478, 453, map[string]int64{"200": 453, "503": 25}, 0, false},
		// Nothing listens: 20 refused, no answer, empty histograms.
		{"refused", "20", time.Second, 2, true, 20, 0, map[string]int64{}, 20, true},
		// Rows of 6 KB (a 6000-byte URL): SQLite overflow pages.
		{"longurl", "10", 300 * time.Millisecond, 1, true, 3, 3, map[string]int64{"200": 3}, 0, false},
		// Interrupted: summary only, oha wrote no database.
		{"interrupted", "100", 3 * time.Second, 2, false, 99, 97, map[string]int64{"200": 97, "503": 2}, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, Oha, tt.rate, tt.d, tt.conns)
			summary := readFixture(t, "oha/"+tt.name+".json")
			db := ""
			if tt.db {
				db = fixturePath("oha/" + tt.name + ".db")
			}
			r, err := ohaResult(&c, summary, db, anchor)
			if err != nil {
				t.Fatal(err)
			}
			r = roundTrip(t, r)
			if r.Completed != tt.completed || r.Sent != tt.completed || r.Success != tt.success {
				t.Errorf("sent %d completed %d success %d, want %d %d %d", r.Sent, r.Completed, r.Success, tt.completed, tt.completed, tt.success)
			}
			if len(r.StatusCodes) != len(tt.codes) {
				t.Errorf("status codes %v, want %v", r.StatusCodes, tt.codes)
			}
			for k, v := range tt.codes {
				if r.StatusCodes[k] != v {
					t.Errorf("status codes %v, want %v", r.StatusCodes, tt.codes)
				}
			}
			var nerr int64
			for _, e := range r.Errors {
				nerr += e.Count
			}
			if nerr != tt.errors {
				t.Errorf("errors %v, want %d", r.Errors, tt.errors)
			}
			if r.Generator == nil || r.Generator.PartialHistograms != tt.partial {
				t.Fatalf("generator %+v, want partial histograms %v", r.Generator, tt.partial)
			}
			lat, svc, lag, err := r.Histograms()
			if err != nil {
				t.Fatal(err)
			}
			var s ohaJSON
			if err := json.Unmarshal(summary, &s); err != nil {
				t.Fatal(err)
			}
			if r.BytesIn != s.Summary.TotalData {
				t.Errorf("bytes in %d, oha's total data %d", r.BytesIn, s.Summary.TotalData)
			}
			if !tt.db {
				if lat.Count() != 0 || !strings.HasPrefix(r.Generator.Histograms, "none") {
					t.Errorf("no database but histograms %q with %d values", r.Generator.Histograms, lat.Count())
				}
				return
			}
			answers := tt.completed - tt.errors
			if lat.Count() != answers || svc.Count() != answers {
				t.Errorf("histograms hold %d and %d values, want %d answers", lat.Count(), svc.Count(), answers)
			}
			if tt.rate == "" && lag.Count() != 0 {
				t.Errorf("closed loop: schedule lag holds %d values", lag.Count())
			}
			if tt.rate != "" && lag.Count() != answers {
				t.Errorf("schedule lag holds %d values, want %d", lag.Count(), answers)
			}
			if answers == 0 {
				return
			}
			if got, want := lat.MinNs(), secondsNs(s.Summary.Fastest); got != want {
				t.Errorf("min %d ns, oha's fastest %d ns", got, want)
			}
			if got, want := lat.MaxNs(), secondsNs(s.Summary.Slowest); got != want {
				t.Errorf("max %d ns, oha's slowest %d ns", got, want)
			}
			if got, want := lat.MeanNs(), s.Summary.Average*1e9; math.Abs(got-want) > 1 {
				t.Errorf("mean %.1f ns, oha's average %.1f ns", got, want)
			}
			// Percentiles: HDR's value at p is the exact order statistic
			// from the records, at the rank hdrhistogram-go uses (p·n
			// rounded, at least 1), to HDR's 3 digits.
			rows, err := ohaRows(db)
			if err != nil {
				t.Fatal(err)
			}
			sorted := make([]int64, len(rows))
			for i, row := range rows {
				sorted[i] = secondsNs(row.duration)
			}
			slices.Sort(sorted)
			for _, p := range []float64{50, 90, 99, 99.9} {
				exact := sorted[max(int(p/100*float64(len(sorted))+0.5), 1)-1]
				if got := lat.Percentile(p); math.Abs(float64(got-exact)) > float64(exact)/1000+1 {
					t.Errorf("p%v %d ns, exact order statistic %d ns", p, got, exact)
				}
			}
			// Service time and schedule lag add up: end − intended =
			// (end − start) + (start − intended), each rounded once.
			if tt.rate != "" && math.Abs(float64(lat.SumNs()-svc.SumNs()-lag.SumNs())) > float64(answers) {
				t.Errorf("latency sum %d ≠ service time %d + lag %d (± 1 ns per request)", lat.SumNs(), svc.SumNs(), lag.SumNs())
			}
			if r.FirstSendNs < anchor.UnixNano() || r.LastSendNs < r.FirstSendNs || r.LastEndNs < r.LastSendNs {
				t.Errorf("send times %d..%d, last end %d, anchor %d", r.FirstSendNs, r.LastSendNs, r.LastEndNs, anchor.UnixNano())
			}
		})
	}
}

// TestOhaRows checks the SQLite reader on a row known from another reader
// (Python's sqlite3 module read open.db's row with the earliest intended
// send time as these values).
func TestOhaRows(t *testing.T) {
	rows, err := ohaRows(fixturePath("oha/open.db"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 400 {
		t.Fatalf("%d rows, want 400", len(rows))
	}
	want := ohaRow{start: 0.000739077, end: 0.003975602, duration: 0.003359848, status: 200, bytes: 615}
	found := false
	for _, r := range rows {
		if r.intended != nil && *r.intended == 0.000615754 {
			found = true
			r.intended = nil
			if r != want {
				t.Errorf("row %+v, want %+v", r, want)
			}
		}
	}
	if !found {
		t.Error("no row with intended send time 0.000615754")
	}
	long, err := ohaRows(fixturePath("oha/longurl.db"))
	if err != nil || len(long) != 3 {
		t.Fatalf("longurl.db: %d rows, %v", len(long), err)
	}
}

// TestOhaResultRejects: inconsistent or foreign input is an error, never a
// silently wrong result.
func TestOhaResultRejects(t *testing.T) {
	c := testConfig(t, Oha, "200", 2*time.Second, 4)
	open := readFixture(t, "oha/open.json")
	// A file that is not a database, and open.db cut short.
	dir := t.TempDir()
	notDB, truncated := filepath.Join(dir, "x.db"), filepath.Join(dir, "truncated.db")
	os.WriteFile(notDB, []byte(strings.Repeat("x", 4096)), 0o644)
	os.WriteFile(truncated, readFixture(t, "oha/open.db")[:5000], 0o644)
	anchor := time.Unix(0, 0)
	for _, tt := range []struct {
		name     string
		summary  []byte
		db       string
		closed   bool
		contains string
	}{
		// The summary is not JSON.
		{"not json", []byte("Summary:\n  Success rate: 100%"), fixturePath("oha/open.db"), false, "JSON summary"},
		// Another run's database: the counts disagree.
		{"other database", open, fixturePath("oha/closed.db"), false, "database holds 478"},
		// Not a database at all.
		{"not sqlite", open, notDB, false, "file is not a database"},
		// Truncated database.
		{"truncated", open, truncated, false, "malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ohaResult(&c, tt.summary, tt.db, anchor)
			if err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %v, want one containing %q", err, tt.contains)
			}
		})
	}
	// An open-loop run whose records have no intended send time (run
	// without --latency-correction) is refused.
	if _, err := ohaResult(&c, readFixture(t, "oha/closed.json"), fixturePath("oha/closed.db"), anchor); err == nil || !strings.Contains(err.Error(), "--latency-correction") {
		t.Errorf("records without intended send time: error %v", err)
	}
}
