package loadgen

import (
	"context"
	"io"
	"log"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
	"github.com/meshbench/meshbench/internal/workload"
)

// startApp runs one of meshbench's built-in workloads on a loopback port.
func startApp(t *testing.T, cfg workload.Config) string {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	s, err := workload.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return s.Addr()
}

func targets(t *testing.T, http2 bool, raw ...string) []Target {
	t.Helper()
	var out []Target
	for _, r := range raw {
		tg, err := ParseTarget(r, http2)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

func baseConfig(ts []Target, rate uint64, d time.Duration) Config {
	return Config{Targets: ts, Load: OpenLoop(Rate{Freq: rate, Per: time.Second}), Duration: d,
		Timeout: 5 * time.Second, Connections: 2, MaxQueue: 1000, KeepAlive: true}
}

func mustRun(t *testing.T, cfg Config) *Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRunProtocols(t *testing.T) {
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	grpcAddr := startApp(t, workload.Config{Kind: workload.KindGRPC})
	tcpAddr := startApp(t, workload.Config{Kind: workload.KindTCP})
	tests := []struct {
		name     string
		target   string
		http2    bool
		body     []byte
		code     int
		bytesIn  int64 // per request
		bytesOut int64
	}{
		{"HTTP/1.1 static page, 615 bytes", "http://" + static + "/", false, nil, 200, 615, 0},
		{"h2c prior knowledge", "h2c://" + static + "/", false, nil, 200, 615, 0},
		{"--http2 on http:// is h2c", "http://" + static + "/", true, nil, 200, 615, 0},
		{"HTTP/1.1 POST body counted out", "http://" + static + "/", false, []byte("hello"), 200, 615, 5},
		{"gRPC unary echo", "grpc://" + grpcAddr, false, []byte("0123456789"), 0, 10, 10},
		{"TCP echo of 615 bytes", "tcp://" + tcpAddr, false, make([]byte, 615), tcpOK, 615, 615},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := baseConfig(targets(t, tt.http2, tt.target), 200, 500*time.Millisecond)
			cfg.Request.Body = tt.body
			if tt.body != nil && tt.code == 200 {
				cfg.Request.Method = "POST"
			}
			res := mustRun(t, cfg)
			if res.Sent != 100 || res.Scheduled != 100 {
				t.Fatalf("sent %d of %d scheduled, want 100", res.Sent, res.Scheduled)
			}
			if res.Success != 100 || res.Codes[tt.code] != 100 {
				t.Fatalf("success %d, codes %v, errors %v", res.Success, res.Codes, res.Errors)
			}
			if res.BytesIn != 100*tt.bytesIn || res.BytesOut != 100*tt.bytesOut {
				t.Errorf("bytes in/out %d/%d, want %d/%d", res.BytesIn, res.BytesOut, 100*tt.bytesIn, 100*tt.bytesOut)
			}
			if res.Latency.Count() != 100 || res.ServiceTime.Count() != 100 || res.ScheduleLag.Count() != 100 {
				t.Errorf("histogram counts %d/%d/%d", res.Latency.Count(), res.ServiceTime.Count(), res.ScheduleLag.Count())
			}
			// Latency from the intended time is never below the service time.
			if res.Latency.MinNs() < res.ServiceTime.MinNs() {
				t.Errorf("latency min %d below service min %d", res.Latency.MinNs(), res.ServiceTime.MinNs())
			}
		})
	}
}

func TestRunMTLS(t *testing.T) {
	pki := testutil.NewTestPKI(t)
	var h2Requests atomic.Int64 // requests the server saw over HTTP/2
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			h2Requests.Add(1)
		}
		if len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client cert", 495)
			return
		}
		io.WriteString(w, r.TLS.PeerCertificates[0].Subject.CommonName)
	}))
	srv.TLS = pki.ServerTLS()
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // rejected handshakes are expected here
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	url := "https://" + srv.Listener.Addr().String() + "/"

	for _, h2 := range []bool{false, true} {
		good, err := TLSFiles{CAFile: pki.CAFile, CertFile: pki.ClientCertFile, KeyFile: pki.ClientKeyFile}.Config()
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig(targets(t, h2, url), 100, 300*time.Millisecond)
		cfg.TLS = good
		h2Requests.Store(0)
		res := mustRun(t, cfg)
		if res.Success != 30 || res.BytesIn != 30*int64(len("client")) {
			t.Fatalf("http2=%v: mTLS success %d bytes %d errors %v", h2, res.Success, res.BytesIn, res.Errors)
		}
		// h2 over TLS (ALPN) when asked, HTTP/1.1 otherwise: never a fallback.
		if want := map[bool]int64{false: 0, true: 30}[h2]; h2Requests.Load() != want {
			t.Errorf("http2=%v: the server saw %d of 30 requests over HTTP/2, want %d", h2, h2Requests.Load(), want)
		}
	}

	// A client certificate from another CA is refused: every request is a TLS error.
	bad, err := TLSFiles{CAFile: pki.CAFile, CertFile: pki.OtherClientCertFile, KeyFile: pki.OtherClientKeyFile}.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig(targets(t, false, url), 100, 200*time.Millisecond)
	cfg.TLS = bad
	res := mustRun(t, cfg)
	if res.Success != 0 || res.Codes[0] != res.Sent || res.Sent != 20 {
		t.Fatalf("foreign client cert: success %d codes %v", res.Success, res.Codes)
	}
	for k := range res.Errors {
		if k.Kind != KindTLS && k.Kind != KindReset && k.Kind != KindClosed {
			t.Errorf("error kind %q (%s), want tls (or the reset/close the server answers with)", k.Kind, k.Message)
		}
	}
	// Without the CA the server certificate is not trusted.
	cfg.TLS, _ = TLSFiles{}.Config()
	res = mustRun(t, cfg)
	for k := range res.Errors {
		if k.Kind != KindTLS {
			t.Errorf("untrusted server: error kind %q (%s), want tls", k.Kind, k.Message)
		}
	}
	if err := Preflight(context.Background(), cfg.Targets, cfg.TLS, time.Second); err == nil {
		t.Error("preflight accepted an untrusted server certificate")
	}
}

func TestRunRoundRobinTargets(t *testing.T) {
	var hits [3]atomic.Int64
	var urls []string
	for i := range hits {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+"/")
	}
	cfg := baseConfig(targets(t, false, urls...), 300, time.Second)
	cfg.Connections = 3
	// baseConfig's waiting room (1000 tickets): with none (MaxQueue 0) a
	// loaded 2-core machine that stalls the three connections for a few
	// ms dropped 10–83 of the 300 requests; round-robin is what this
	// test checks, and every request must still be answered.
	res := mustRun(t, cfg)
	if res.Success != 300 {
		t.Fatalf("success %d, sent %d, dropped %d, errors %v", res.Success, res.Sent, res.Dropped, res.Errors)
	}
	for i := range hits {
		if n := hits[i].Load(); n < 30 {
			t.Errorf("target %d got %d of 300 requests; round-robin should spread them", i, n)
		}
	}
}

func TestRunDropsWhenQueueFull(t *testing.T) {
	slow := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: 100 * time.Millisecond}})
	cfg := baseConfig(targets(t, false, "http://"+slow+"/"), 100, time.Second)
	cfg.Connections = 1
	cfg.MaxQueue = 2
	res := mustRun(t, cfg)
	// One connection answers 10 per second; the queue holds 2: most of the
	// 100 scheduled requests are dropped, and every one is accounted for.
	if res.Dropped < 70 {
		t.Errorf("dropped %d, want most of 100", res.Dropped)
	}
	if res.Sent+res.Dropped+res.NotSent != int64(res.Scheduled) {
		t.Errorf("sent %d + dropped %d + not sent %d != scheduled %d", res.Sent, res.Dropped, res.NotSent, res.Scheduled)
	}
}

func TestRunClosedLoop(t *testing.T) {
	testutil.Timing(t)
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := baseConfig(targets(t, false, "http://"+static+"/"), 1, 300*time.Millisecond)
	cfg.Load = ClosedLoop
	cfg.Warmup = 100 * time.Millisecond
	res := mustRun(t, cfg)
	if res.Sent < 100 || res.Success != res.Completed {
		t.Fatalf("closed loop sent %d, success %d/%d", res.Sent, res.Success, res.Completed)
	}
	// In a closed loop the latency is the service time: no schedule.
	if res.ScheduleLag.MaxNs() != 0 {
		t.Errorf("closed loop has schedule lag %d", res.ScheduleLag.MaxNs())
	}
	if res.LastSend > 300*time.Millisecond {
		t.Errorf("last send at %v, after the measured window", res.LastSend)
	}
}

func TestRunErrorsClassified(t *testing.T) {
	// A port nobody listens on: bind, learn the port, close.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := baseConfig(targets(t, false, "http://"+addr+"/"), 100, 200*time.Millisecond)
	res := mustRun(t, cfg)
	if res.Sent != 20 || res.Success != 0 || res.Codes[0] != 20 {
		t.Fatalf("sent %d success %d codes %v", res.Sent, res.Success, res.Codes)
	}
	for k, n := range res.Errors {
		if k.Kind != KindRefused {
			t.Errorf("%d errors of kind %q (%s), want refused", n, k.Kind, k.Message)
		}
	}
	if err := Preflight(context.Background(), cfg.Targets, nil, time.Second); err == nil {
		t.Error("preflight did not report the refused target")
	}

	// Injected HTTP 503s are answers with a failed status: counted under
	// their code and listed in the error set as vegeta lists them.
	flaky := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{ErrorRatio: 1, ErrorStatus: 503}})
	res = mustRun(t, baseConfig(targets(t, false, "http://"+flaky+"/"), 100, 200*time.Millisecond))
	want := map[ErrorKey]int64{{Kind: KindStatus, Message: "503 Service Unavailable"}: 20}
	if res.Codes[503] != 20 || res.Success != 0 || !maps.Equal(res.Errors, want) {
		t.Errorf("503s: codes %v success %d errors %v, want %v", res.Codes, res.Success, res.Errors, want)
	}

	// Timeouts on many connections (each its own local port) are one
	// entry of the error set, not one per connection.
	stalled := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: 2 * time.Second}})
	cfg = baseConfig(targets(t, false, "http://"+stalled+"/"), 200, 300*time.Millisecond)
	cfg.Connections, cfg.Timeout = 32, 50*time.Millisecond
	res = mustRun(t, cfg)
	if len(res.Errors) != 1 || res.Completed < 32 {
		t.Errorf("%d timeouts on 32 connections gave %d error entries, want 1: %v", res.Completed, len(res.Errors), res.Errors)
	}
	for k := range res.Errors {
		if k.Kind != KindTimeout || strings.Contains(k.Message, "raw-") {
			t.Errorf("timeout entry %q (%s): want kind timeout and no internal words", k.Kind, k.Message)
		}
	}

	// A request that outlives --timeout is a timeout error.
	slow := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: 300 * time.Millisecond}})
	cfg = baseConfig(targets(t, false, "http://"+slow+"/"), 20, 100*time.Millisecond)
	cfg.Timeout = 50 * time.Millisecond
	res = mustRun(t, cfg)
	for k := range res.Errors {
		if k.Kind != KindTimeout {
			t.Errorf("error kind %q (%s), want timeout", k.Kind, k.Message)
		}
	}
	if res.Success != 0 || res.Completed != 2 {
		t.Errorf("timeouts: success %d completed %d", res.Success, res.Completed)
	}
}

func TestRunInterrupted(t *testing.T) {
	slow := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: 20 * time.Millisecond}})
	cfg := baseConfig(targets(t, false, "http://"+slow+"/"), 100, 30*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("cancelled run took %v to return", took)
	}
	if !res.Interrupted || res.Sent < 30 || res.Sent > 60 {
		t.Fatalf("interrupted=%v sent=%d", res.Interrupted, res.Sent)
	}
	// In-flight requests cut by the interrupt are not errors of the target.
	if len(res.Errors) != 0 {
		t.Errorf("errors after interrupt: %v", res.Errors)
	}
	if res.Completed+res.Canceled != res.Sent {
		t.Errorf("completed %d + canceled %d != sent %d", res.Completed, res.Canceled, res.Sent)
	}
}

func TestRunWarmupNotCounted(t *testing.T) {
	testutil.Timing(t)
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := baseConfig(targets(t, false, "http://"+static+"/"), 100, 500*time.Millisecond)
	cfg.Warmup = 300 * time.Millisecond
	res := mustRun(t, cfg)
	if res.Sent != 50 || res.Scheduled != 50 {
		t.Fatalf("sent %d scheduled %d, want 50 (warm-up excluded)", res.Sent, res.Scheduled)
	}
	if res.FirstSend > 5*time.Millisecond || res.LastSend < 480*time.Millisecond {
		t.Errorf("measured window sends at %v..%v, want 0..490ms", res.FirstSend, res.LastSend)
	}
}

func TestValidate(t *testing.T) {
	cfg := Config{}
	err := cfg.Validate()
	if err == nil {
		t.Fatal("empty config accepted")
	}
	for _, want := range []string{"no target", "rate", "duration", "timeout", "connections"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("validation error lacks %q: %v", want, err)
		}
	}
}

// TestAnsweredAt: an answer ends when the kernel received it, converted
// from the wall clock through Do's return; a receive time that cannot be
// right (no time, before the send, after Do returned) leaves Do's return.
func TestAnsweredAt(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	now := start.Add(2 * time.Second)
	const actual = 1500 * time.Millisecond // the send, since start
	for _, tt := range []struct {
		name    string
		arrived time.Time // zero: the client could not tell
		want    time.Duration
	}{
		{"no receive time: when Do returned", time.Time{}, 2 * time.Second},
		{"received 300 ms before Do returned", now.Add(-300 * time.Millisecond), 1700 * time.Millisecond},
		{"received as it was sent", start.Add(actual), actual},
		{"received before the send: the clock stepped", start.Add(actual - time.Millisecond), 2 * time.Second},
		{"received after Do returned: the clock stepped", now.Add(time.Millisecond), 2 * time.Second},
	} {
		out := Outcome{}
		if !tt.arrived.IsZero() {
			out.arrivedUnixNs = tt.arrived.UnixNano()
		}
		if got := answeredAt(now, start, actual, out); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRunSendTick: a real run with a 1-ms tick at 2000/s keeps the whole
// schedule (none dropped or lost), and the tick's lag is in the schedule
// lag (up to one tick, about a quarter of it on average here) and in the
// latency, which is counted from the intended send time.
func TestRunSendTick(t *testing.T) {
	testutil.Timing(t)
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := baseConfig(targets(t, false, "http://"+static+"/"), 2000, time.Second)
	cfg.SendTick = time.Millisecond
	res := mustRun(t, cfg)
	if res.Sent != int64(res.Scheduled) || res.Scheduled != 2000 || res.Dropped != 0 || res.Completed != res.Sent {
		t.Fatalf("scheduled %d sent %d completed %d dropped %d, want 2000 each and none dropped", res.Scheduled, res.Sent, res.Completed, res.Dropped)
	}
	lag, lat, svc := res.ScheduleLag.MeanNs(), res.Latency.MeanNs(), res.ServiceTime.MeanNs()
	// Half the requests are due on a tick, half 500 µs before one: a mean
	// lag near 250 µs (plus the wake-ups' own delay); exact spacing has a
	// few µs.
	if lag < 150e3 || lag > 900e3 {
		t.Errorf("mean schedule lag %.0f ns, want the tick's ~250 µs", lag)
	}
	if d := lat - svc - lag; d < -20e3 || d > 20e3 {
		t.Errorf("latency mean %.0f ≠ service %.0f + lag %.0f: the tick's lag is not counted in latency", lat, svc, lag)
	}
}
