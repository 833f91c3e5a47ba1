package extgen

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/latency"
	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// TestFortioReal: the real fortio (the pinned build) against real HTTP
// servers, each row a different thing fortio's JSON must carry into
// meshbench's result.
func TestFortioReal(t *testing.T) {
	bin := toolBinary(t, Fortio)
	body := strings.Repeat("x", 615)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/delay": // a fixed 5 ms service time
			time.Sleep(5 * time.Millisecond)
		case "/errors": // every 4th answer a 503
			if n.Add(1)%4 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	// A port nobody listens on: every request refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + l.Addr().String() + "/"
	l.Close()
	for _, tt := range []struct {
		name, url, rate string
		scheduled       int64 // open loop: rate × 2 s
	}{
		{"open", srv.URL + "/", "200", 400},       // counts: sent + skipped = the schedule, all 200, 615-byte bodies
		{"closed", srv.URL + "/", "", 0},          // closed loop: some requests, all 200
		{"delay", srv.URL + "/delay", "50", 100},  // the known 5 ms shows in the reconstructed histogram
		{"errors", srv.URL + "/errors", "40", 80}, // 503s are answers that failed
		{"refused", refused, "20", 40},            // socket errors are failed requests, not a tool failure
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, Fortio, tt.rate, 2*time.Second, 2)
			tg, err := loadgen.ParseTarget(tt.url, false)
			if err != nil {
				t.Fatal(err)
			}
			c.Load.Targets, c.Load.Warmup, c.Load.Timeout, c.Path = []loadgen.Target{tg}, 300*time.Millisecond, 2*time.Second, bin
			c.KeepResults = filepath.Join(t.TempDir(), "fortio.json")
			r, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if r.Generator.Name != Fortio || r.Generator.Version != FortioVersion {
				t.Errorf("generator %s %s, want fortio %s", r.Generator.Name, r.Generator.Version, FortioVersion)
			}
			// fortio's -nocatchup skips a late request: what was not sent
			// is counted, so sent + not sent is exactly the schedule.
			if tt.scheduled > 0 && (r.Scheduled != tt.scheduled || r.Sent+r.NotSent != tt.scheduled) {
				t.Errorf("scheduled %d, sent %d + not sent %d; want %d", r.Scheduled, r.Sent, r.NotSent, tt.scheduled)
			}
			if r.Completed == 0 || r.Completed != r.Sent {
				t.Fatalf("completed %d of %d sent", r.Completed, r.Sent)
			}
			back := roundTrip(t, r)
			lat, err := latency.Decode(back.Latency)
			if err != nil {
				t.Fatal(err)
			}
			if lat.Count() != r.Completed {
				t.Errorf("latency histogram holds %d values, want %d", lat.Count(), r.Completed)
			}
			var own fortioJSON
			b, err := os.ReadFile(c.KeepResults)
			if err != nil {
				t.Fatalf("fortio's own JSON not kept: %v", err)
			}
			if err := json.Unmarshal(b, &own); err != nil {
				t.Fatal(err)
			}
			// min and max are fortio's exact ones (HDR keeps 3 digits).
			for _, m := range []struct {
				what      string
				got, want int64
			}{{"min", lat.MinNs(), secondsNs(own.DurationHistogram.Min)}, {"max", lat.MaxNs(), secondsNs(own.DurationHistogram.Max)}} {
				if math.Abs(float64(m.got-m.want)) > 0.001*float64(m.want)+1 {
					t.Errorf("%s %d ns, fortio's %d ns", m.what, m.got, m.want)
				}
			}
			// The reconstructed percentiles agree with fortio's own, which
			// interpolate linearly inside the same buckets: within 3% plus
			// 20 µs (the spread over 200 points per bucket and HDR's 3
			// digits; a misread bucket would be off by a bucket, ≥ 10%).
			for _, p := range own.DurationHistogram.Percentiles {
				if float64(own.DurationHistogram.Count)*(100-p.Percentile)/100 < 20 {
					// Fewer than 20 values above it: the tail's buckets
					// hold a value or two, and where inside a bucket a
					// lone value sits is a guess in both (up to half a
					// bucket apart).
					continue
				}
				got, want := float64(lat.Percentile(p.Percentile)), p.Value*1e9
				if math.Abs(got-want) > 0.03*want+20e3 {
					t.Errorf("p%g %.0f ns, fortio's %.0f ns", p.Percentile, got, want)
				}
			}
			switch tt.name {
			case "open", "closed", "delay":
				if r.Success != r.Completed || r.StatusCodes["200"] != r.Completed || r.BytesIn != 615*r.Completed {
					t.Errorf("success %d, codes %v, bytes in %d; want all %d 200 with 615 bytes each", r.Success, r.StatusCodes, r.BytesIn, r.Completed)
				}
			case "errors":
				if r.StatusCodes["503"] == 0 || r.StatusCodes["200"]+r.StatusCodes["503"] != r.Completed || r.Success != r.StatusCodes["200"] {
					t.Errorf("codes %v, success %d of %d; want 200s and 503s, the 200s successes", r.StatusCodes, r.Success, r.Completed)
				}
			case "refused":
				if r.Success != 0 || len(r.Errors) != 1 || r.Errors[0].Count != r.Completed || len(r.StatusCodes) != 0 {
					t.Errorf("success %d, errors %+v, codes %v; want every request a socket error", r.Success, r.Errors, r.StatusCodes)
				}
			}
			if tt.name == "delay" {
				// Every request took at least the server's 5 ms; the median
				// stays under 10 ms even on a loaded 2-core machine (the
				// handler's sleep plus loopback; fortio's buckets there are
				// 1 ms wide, the reconstruction inside them).
				if p50 := time.Duration(lat.Percentile(50)); lat.MinNs() < int64(5*time.Millisecond) || p50 < 5*time.Millisecond || p50 > 10*time.Millisecond {
					t.Errorf("min %v, p50 %v; want ≥ 5ms and p50 < 10ms", time.Duration(lat.MinNs()), p50)
				}
			}
		})
	}
}

// TestFortioResultBad: fortio JSON that is not a load result, or whose
// counts disagree, is refused with the reason.
func TestFortioResultBad(t *testing.T) {
	c := testConfig(t, Fortio, "100", 2*time.Second, 2)
	for _, tt := range []struct{ name, json, want string }{
		{"not JSON", "Fortio 1.68.2", "fortio's JSON"},
		{"no histogram", `{"RunType":"HTTP","RetCodes":{"200":1}}`, "no DurationHistogram"},
		{"grpc run", `{"RunType":"GRPC","RetCodes":{},"DurationHistogram":{"Count":0}}`, `run type "GRPC"`},
		{"counts disagree", `{"RunType":"HTTP","RetCodes":{"200":2},"DurationHistogram":{"Count":1,"Data":[{"Start":0.001,"End":0.002,"Count":1}]}}`, "1 durations but 2 return codes"},
		{"buckets disagree", `{"RunType":"HTTP","RetCodes":{"200":2},"DurationHistogram":{"Count":2,"Data":[{"Start":0.001,"End":0.002,"Count":1}]}}`, "buckets hold 1 values but the count is 2"},
		{"bad code", `{"RunType":"HTTP","RetCodes":{"ok":2},"DurationHistogram":{"Count":2}}`, `return code "ok"`},
		{"negative bucket", `{"RunType":"HTTP","RetCodes":{"200":1},"DurationHistogram":{"Count":1,"Data":[{"Start":0.002,"End":0.001,"Count":1}]}}`, "not a bucket"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := fortioResult(&c, []byte(tt.json), time.Unix(0, 0))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestFortioScheduled: fortio's own count of requests (periodic.runQPSSetup).
func TestFortioScheduled(t *testing.T) {
	for _, tt := range []struct {
		rate float64
		d    time.Duration
		c    int
		want int64
	}{
		{500, 2 * time.Second, 16, 992},        // 1000 / 16 = 62 each, 8 dropped
		{100, 10 * time.Second, 16, 992},       // the plan defaults
		{100, 10 * time.Second, 10, 1000},      // divides: all of them
		{1, 1 * time.Second, 16, 2},            // at least 2 calls, on 1 thread
		{3, 1 * time.Second, 16, 3},            // 3 calls: at most 1 thread (3/2)
		{10, time.Second, 8, 10},               // 10 calls: 5 threads of 2
		{0.5, 10 * time.Second, 4, 4},          // 5 calls over 2 threads: 4
		{33.3, 1500 * time.Millisecond, 4, 48}, // ⌊49.95⌋ = 49 over 4: 48
	} {
		if got := fortioScheduled(tt.rate, tt.d, tt.c); got != tt.want {
			t.Errorf("rate %g × %v over %d: %d, want %d", tt.rate, tt.d, tt.c, got, tt.want)
		}
	}
}

// FuzzFortio: fortio's JSON parser never panics and what it accepts
// reads back as a valid result.
func FuzzFortio(f *testing.F) {
	for _, name := range []string{"fortio/open.json", "fortio/errors.json"} {
		if b, err := os.ReadFile(fixturePath(name)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"RunType":"HTTP","RetCodes":{"200":1,"-1":1},"DurationHistogram":{"Count":2,"Min":0.001,"Max":0.003,"Data":[{"Start":0.001,"End":0.003,"Count":2}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := testConfig(t, Fortio, "100", 2*time.Second, 2)
		r, err := fortioResult(&c, b, time.Unix(0, 0))
		if err != nil {
			return
		}
		roundTrip(t, r)
	})
}

// TestFortioArgs: the command line fortio gets (recorded in every result).
func TestFortioArgs(t *testing.T) {
	dir := t.TempDir()
	c := testConfig(t, Fortio, "33.3", 1500*time.Millisecond, 4)
	c.Load.Request.Method, c.Load.Request.Body, c.Load.Request.Host = "POST", []byte("x"), "svc"
	c.Load.Request.Headers = map[string][]string{"X-B": {"2"}, "X-A": {"1"}}
	c.Load.KeepAlive = false
	c.TLSFiles = loadgen.TLSFiles{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}
	f := &fortio{c: &c, bin: "fortio", dir: dir}
	a, err := f.args("measure", c.Load.Duration)
	if err != nil {
		t.Fatal(err)
	}
	want := "fortio load -json " + dir + "/measure.fortio.json -t 1500ms -c 4 -timeout 30s -r 0.00001 -p 50,90,95,99,99.9 -gomaxprocs 1 -allow-initial-errors -logger-json=false -quiet" +
		" -qps 33.3 -nocatchup -uniform -keepalive=false -X POST -payload-file " + dir + "/body -H 'X-A: 1' -H 'X-B: 2' -H 'Host: svc' -cacert ca.pem -cert c.pem -key k.pem http://127.0.0.1:8080/"
	if got := shellJoin(a); got != want {
		t.Errorf("fortio:\n got %s\nwant %s", got, want)
	}
	c = testConfig(t, Fortio, "", time.Second, 2)
	f = &fortio{c: &c, bin: "fortio", dir: dir}
	if a, err = f.args("warmup", time.Second); err != nil {
		t.Fatal(err)
	}
	if got := shellJoin(a); !strings.Contains(got, " -qps 0 ") || strings.Contains(got, "nocatchup") {
		t.Errorf("closed loop: %s; want -qps 0 and no -nocatchup", got)
	}
}
