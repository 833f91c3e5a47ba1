package loadgen

import (
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/workload"
)

// TestStreamPathsAgree: the engine asks for the path the static app
// streams at (the two packages may not import each other).
func TestStreamPathsAgree(t *testing.T) {
	if StreamPath != workload.StreamPath {
		t.Fatalf("loadgen.StreamPath %q, workload.StreamPath %q", StreamPath, workload.StreamPath)
	}
}

// TestRunBulk streams from the real static app: every connection reads
// to the window's end, the bytes counted are those of the window, and a
// target whose answer ends is an error, not a throughput.
func TestRunBulk(t *testing.T) {
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := Config{Targets: targets(t, false, "http://"+static+StreamPath), Load: Bulk, Warmup: 200 * time.Millisecond,
		Duration: 500 * time.Millisecond, Timeout: 2 * time.Second, Connections: 3, KeepAlive: true}
	started := time.Now()
	res := mustRun(t, cfg)
	if took := time.Since(started); took > 2*time.Second {
		t.Errorf("a 0.7-s bulk run took %v", took)
	}
	if res.Sent != 3 || res.Completed != 3 || res.Success != 3 || res.Codes[200] != 3 || len(res.Errors) != 0 {
		t.Fatalf("streams: sent %d, completed %d, success %d, codes %v, errors %v", res.Sent, res.Completed, res.Success, res.Codes, res.Errors)
	}
	// Loopback carries hundreds of MB/s even on a busy machine; a stream
	// that counted nothing, or counted the warm-up too, is wrong in
	// orders of magnitude, not percent.
	if res.BytesIn < 1<<20 {
		t.Errorf("bytes in the window: %d, want megabytes", res.BytesIn)
	}
	if res.Latency.Count() != 3 {
		t.Errorf("time to first byte recorded %d times, want once per stream", res.Latency.Count())
	}

	// The default page ends after 615 bytes: each stream fails.
	cfg.Targets = targets(t, false, "http://"+static+"/")
	res = mustRun(t, cfg)
	if res.Success != 0 || res.Completed != 3 || len(res.Errors) != 1 {
		t.Errorf("finite answer: success %d, completed %d, errors %v; want 3 failed streams", res.Success, res.Completed, res.Errors)
	}
	if err := (&Config{Targets: targets(t, false, "tcp://"+static), Load: Bulk, Duration: time.Second, Timeout: time.Second, Connections: 1,
		Request: RequestSpec{Body: []byte("x")}}).Validate(); err == nil {
		t.Error("bulk against a tcp:// target accepted")
	}
}

// TestRequestsPerConnection counts the connections a server accepts: 0
// keeps the two connections for the whole run, N opens one per N
// requests, on HTTP/1.1 and TCP.
func TestRequestsPerConnection(t *testing.T) {
	var accepted atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok")) }),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Add(1)
			}
		}}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	// With 10 requests a connection the count depends on how the 100
	// requests fell to the 2 workers: each worker opens ceil(n/10), so 50
	// and 50 make 10 connections, 51 and 49 make 11 (seen beside other
	// work). A worker ignoring the limit makes 2; one closing after 9
	// makes at least 12.
	for _, tt := range []struct {
		perConn  int
		want     int64
		wantUpTo int64
	}{{0, 2, 2}, {1, 100, 100}, {10, 10, 11}} {
		accepted.Store(0)
		cfg := baseConfig(targets(t, false, "http://"+ln.Addr().String()+"/"), 200, 500*time.Millisecond)
		cfg.RequestsPerConnection = tt.perConn
		res := mustRun(t, cfg)
		if res.Success != 100 {
			t.Fatalf("requests per connection %d: success %d of 100, errors %v", tt.perConn, res.Success, res.Errors)
		}
		if got := accepted.Load(); got < tt.want || got > tt.wantUpTo {
			t.Errorf("requests per connection %d: server accepted %d connections, want %d to %d", tt.perConn, got, tt.want, tt.wantUpTo)
		}
	}
	// TCP: an echo listener of its own counts the connections.
	var tcpAccepted atomic.Int64
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tl.Close() })
	go func() {
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			tcpAccepted.Add(1)
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	cfg := baseConfig(targets(t, false, "tcp://"+tl.Addr().String()), 200, 500*time.Millisecond)
	cfg.Request.Body = make([]byte, 100)
	cfg.RequestsPerConnection = 1
	if res := mustRun(t, cfg); res.Success != 100 || tcpAccepted.Load() != 100 {
		t.Errorf("tcp, a connection per request: success %d of 100, %d connections, errors %v", res.Success, tcpAccepted.Load(), res.Errors)
	}
	bad := baseConfig(targets(t, false, "h2c://"+ln.Addr().String()+"/"), 200, time.Second)
	bad.RequestsPerConnection = 1
	if err := bad.Validate(); err == nil {
		t.Error("requests per connection on h2c accepted")
	}
}
