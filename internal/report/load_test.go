package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/latency"
	"github.com/meshbench/meshbench/internal/loadgen"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testutil"
)

// fixture builds a deterministic result: the renderers are pure functions
// of it, so golden files pin every character.
func fixture(t *testing.T, closed bool, mod func(r *loadgen.Result)) *results.LoadResult {
	t.Helper()
	tg, _ := loadgen.ParseTarget("http://127.0.0.1:8080/", false)
	start := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	r := &loadgen.Result{
		Config: loadgen.Config{Targets: []loadgen.Target{tg}, Rate: loadgen.Rate{Freq: 20, Per: time.Second},
			Duration: 5 * time.Minute, Warmup: time.Second, Timeout: 30 * time.Second, Connections: 16, MaxQueue: 1000, Closed: closed},
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

// TestVegetaLinesCompatible: the lines vegeta prints keep its exact layout
// (label column 14 wide, bracket column 34 wide), as the seed reports show.
func TestVegetaLinesCompatible(t *testing.T) {
	var buf bytes.Buffer
	if err := LoadText(&buf, fixture(t, false, nil)); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Requests      [total, rate, throughput]         6000, 20.00, 20.00\n",
		"Duration      [total, attack, wait]             5m0s, 5m0s, 706.584µs\n",
		"Bytes In      [total, mean]                     3690000, 615.00\n",
		"Bytes Out     [total, mean]                     0, 0.00\n",
		"Success       [ratio]                           100.00%\n",
		"Status Codes  [code:count]                      200:6000\n",
		"Error Set:\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing vegeta line %q in:\n%s", want, out)
		}
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
	if err := WriteLoad(&buf, res, "yaml"); err == nil || !strings.Contains(err.Error(), "allowed: text, json, hdr") {
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
