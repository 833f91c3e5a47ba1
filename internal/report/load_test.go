package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// fixture builds a deterministic result: the renderers are pure functions
// of it, so golden files pin every character.
func fixture(t *testing.T, closed bool, mod func(r *loadgen.Result)) *results.LoadResult {
	t.Helper()
	tg, _ := loadgen.ParseTarget("http://127.0.0.1:8080/", false)
	start := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	load := loadgen.OpenLoopPerSecond(20)
	if closed {
		load = loadgen.ClosedLoop
	}
	r := &loadgen.Result{
		Config: loadgen.Config{Targets: []loadgen.Target{tg}, Load: load,
			Duration: 5 * time.Minute, Warmup: time.Second, Timeout: 30 * time.Second, Connections: 16, MaxQueue: 1000},
		Start: start, Scheduled: 6000, Sent: 6000, Completed: 6000, Success: 6000, BytesIn: 3690000,
		FirstSend: 0, LastSend: 5*time.Minute - 50*time.Millisecond, LastEnd: 5*time.Minute - 50*time.Millisecond + 706584*time.Nanosecond,
		Codes: map[int]int64{200: 6000}, Errors: map[loadgen.ErrorKey]int64{},
		Latency: latency.NewRecorder(), ServiceTime: latency.NewRecorder(), ScheduleLag: latency.NewRecorder(), ConnectionsN: 16,
	}
	for i := int64(0); i < 6000; i++ {
		svc := 400_000 + (i*7919)%600_000 // 0.4–1 ms, spread deterministically
		if i%1000 == 999 {
			svc = 21_970_000 // a few slow ones
		}
		lag := (i * 104729) % 50_000
		r.Latency.Record(svc + lag)
		r.ServiceTime.Record(svc)
		r.ScheduleLag.Record(lag)
	}
	if mod != nil {
		mod(r)
	}
	out, err := results.FromRun(r, "test")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLoadTextGolden(t *testing.T) {
	tests := []struct {
		golden string
		res    *results.LoadResult
	}{
		{"text_open.golden", fixture(t, false, nil)},
		{"text_closed.golden", fixture(t, true, nil)},
		{"text_problems.golden", fixture(t, false, func(r *loadgen.Result) {
			r.Sent, r.Completed, r.Success, r.Dropped = 5000, 5000, 4990, 1000
			r.Codes = map[int]int64{200: 4985, 503: 5, 0: 10}
			r.Errors = map[loadgen.ErrorKey]int64{
				{Kind: "refused", Message: "dial tcp 127.0.0.1:8080: connect: connection refused"}: 7,
				{Kind: "timeout", Message: "read tcp 127.0.0.1:8080: i/o timeout"}:                 3,
			}
		})},
		// A target that stopped answering: most tickets not sent at the
		// window's end, latencies above the histogram's ceiling printed as
		// "≥ 60s", and a few failures that are the generator's own.
		{"text_hung.golden", fixture(t, false, func(r *loadgen.Result) {
			r.Sent, r.Completed, r.Success, r.NotSent = 1000, 1000, 0, 5000
			r.Codes = map[int]int64{0: 1000}
			r.Errors = map[loadgen.ErrorKey]int64{
				{Kind: loadgen.KindTimeout, Message: "read tcp 127.0.0.1:8080: i/o timeout"}: 996,
				{Kind: loadgen.KindLocal, Message: "dial tcp: socket: too many open files"}:  4,
			}
			r.Latency = latency.NewRecorder()
			for i := range int64(1000) {
				if i < 460 {
					r.Latency.Record(1_000_000 + i*1000)
				} else {
					r.Latency.Record(latency.HighestNs + 1)
				}
			}
		})},
		{"text_interrupted.golden", fixture(t, false, func(r *loadgen.Result) {
			r.Interrupted = true
			r.Sent, r.Completed, r.Success, r.Canceled = 4000, 3990, 3990, 10
			r.Codes = map[int]int64{200: 3990}
		})},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		if err := LoadText(&buf, tt.res); err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, tt.golden, buf.Bytes())
	}
}

// TestVegetaLinesCompatible: the report opens with exactly the block
// `vegeta report` v12 prints (label column 14 wide, bracket column 34
// wide, two spaces after each code:count, one message per error), lines
// contiguous; meshbench's own lines come after a blank line and never
// start with one of vegeta's labels. The expected block was checked
// against vegeta's own text reporter fed the same figures (README).
func TestVegetaLinesCompatible(t *testing.T) {
	res := fixture(t, false, nil)
	res.StatusCodes["503"] = 12
	res.Errors = []results.ErrorCount{{Kind: "status", Message: "503 Service Unavailable", Count: 12},
		{Kind: "timeout", Message: "read tcp 127.0.0.1:8080: i/o timeout", Count: 3}}
	var buf bytes.Buffer
	if err := LoadText(&buf, res); err != nil {
		t.Fatal(err)
	}
	want := "Requests      [total, rate, throughput]         6000, 20.00, 20.00\n" +
		"Duration      [total, attack, wait]             5m0s, 5m0s, 706.584µs\n" +
		"Latencies     [min, mean, 50, 90, 95, 99, max]  400µs, 745.704µs, 724.991µs, 965.631µs, 995.839µs, 1.027ms, 22.01ms\n" +
		"Bytes In      [total, mean]                     3690000, 615.00\n" +
		"Bytes Out     [total, mean]                     0, 0.00\n" +
		"Success       [ratio]                           100.00%\n" +
		"Status Codes  [code:count]                      200:6000  503:12  \n" +
		"Error Set:\n" +
		"503 Service Unavailable\n" +
		"read tcp 127.0.0.1:8080: i/o timeout\n" +
		"\n"
	out := buf.String()
	if !strings.HasPrefix(out, want) {
		t.Fatalf("vegeta block differs:\n got: %q\nwant: %q", out[:min(len(out), len(want))], want)
	}
	for _, line := range strings.Split(strings.TrimSuffix(out[len(want):], "\n"), "\n") {
		for _, label := range []string{"Requests", "Duration", "Latencies", "Bytes In", "Bytes Out", "Success", "Status Codes", "Error Set"} {
			if strings.HasPrefix(line, label) {
				t.Errorf("meshbench's line %q starts with vegeta's label %q", line, label)
			}
		}
	}
	if !regexp.MustCompile(`(?m)^Error count +\[kind, count, error\] +status, 12, 503 Service Unavailable$`).MatchString(out) {
		t.Errorf("error counts missing:\n%s", out)
	}
}

// TestVegetaJSON: the vegeta-json format has vegeta's metrics fields and
// values from the same figures as the text block.
func TestVegetaJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteLoad(&buf, fixture(t, false, nil), "vegeta-json"); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "vegeta.json.golden", buf.Bytes())
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"latencies", "bytes_in", "bytes_out", "earliest", "latest", "end", "duration", "wait",
		"requests", "rate", "throughput", "success", "status_codes", "errors"} {
		if _, ok := m[k]; !ok {
			t.Errorf("vegeta field %q missing", k)
		}
	}
	if l := m["latencies"].(map[string]any); l["50th"].(float64) != 724991 {
		t.Errorf("latencies.50th = %v, want 724991 (the text block's 724.991µs)", l["50th"])
	}
}

func TestLoadJSONAndHDRGolden(t *testing.T) {
	res := fixture(t, false, nil)
	var buf bytes.Buffer
	if err := WriteLoad(&buf, res, "json"); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "result.json.golden", buf.Bytes())
	buf.Reset()
	if err := WriteLoad(&buf, res, "hdr"); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "spectrum.hdr.golden", buf.Bytes())
	if err := WriteLoad(&buf, res, "yaml"); err == nil || !strings.Contains(err.Error(), "allowed: text, json, hdr, vegeta-json") {
		t.Errorf("unknown format error = %v", err)
	}
}

func TestDur(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},                           // zero
		{999, "999ns"},                      // below a microsecond: as is
		{706584, "706.584µs"},               // µs keep ns digits
		{1137123, "1.137ms"},                // ms keep µs digits
		{21970000, "21.97ms"},               // trailing zeros dropped, as Go does
		{5*time.Minute + 706584, "5m0s"},    // minutes round to ms
		{9999500 * time.Microsecond, "10s"}, // rounding carries
		{1500 * time.Millisecond, "1.5s"},   // seconds
	}
	for _, tt := range tests {
		if got := Dur(tt.d); got != tt.want {
			t.Errorf("Dur(%d) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
