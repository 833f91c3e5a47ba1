package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// TestRequestIDs: with RequestIDs every request carries its own id, on
// every client that speaks HTTP (HTTP/1.1 patched in place, h2, gRPC
// metadata), and OnRequest reports every request sent with its number,
// window and times; the ids the server saw are exactly those.
func TestRequestIDs(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	saw := func(id string) {
		mu.Lock()
		seen[id]++
		mu.Unlock()
	}
	protoMajors := map[string]int{} // the HTTP server's ids → the HTTP major version each came in
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		protoMajors[r.Header.Get("X-Request-Id")] = r.ProtoMajor
		mu.Unlock()
		saw(r.Header.Get("X-Request-Id"))
		w.Write([]byte("ok"))
	})
	// HTTP/1.1 and h2c with prior knowledge on one port.
	h1 := httptest.NewUnstartedServer(h)
	h1.Config.Protocols = new(http.Protocols)
	h1.Config.Protocols.SetHTTP1(true)
	h1.Config.Protocols.SetUnencryptedHTTP2(true)
	h1.Start()
	defer h1.Close()
	// A real gRPC server whose interceptor records the metadata (the
	// service itself answers Unimplemented: the ids are the point).
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		saw(strings.Join(md.Get("x-request-id"), ","))
		return handler(ctx, req)
	}))
	testpb.RegisterTestServiceServer(gs, &testpb.UnimplementedTestServiceServer{})
	go gs.Serve(lis)
	defer gs.Stop()
	for _, tc := range []struct {
		name, target string
		http2        bool
		closed       bool
		h2c          bool // the server sees HTTP/2
	}{
		// The pre-serialised request, its id rewritten per request.
		{"http1", h1.URL + "/", false, false, false},
		// A user header of the same name is replaced, not doubled.
		{"http1 closed loop", h1.URL + "/", false, true, false},
		// net/http's request per call.
		{"h2c", "h2c://" + strings.TrimPrefix(h1.URL, "http://") + "/", false, false, true},
		// gRPC metadata.
		{"grpc", "grpc://" + lis.Addr().String(), false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			clear(protoMajors)
			mu.Unlock()
			cfg := baseConfig(targets(t, tc.http2, tc.target), 200, 500*time.Millisecond)
			cfg.Warmup = 100 * time.Millisecond
			cfg.RequestIDs = "run7"
			cfg.Request.Headers = http.Header{"X-Request-Id": {"user-set"}}
			cfg.Request.Body = []byte("x")
			if tc.closed {
				cfg.Load = ClosedLoop
			}
			var rmu sync.Mutex
			var recs []RequestRecord
			cfg.OnRequest = func(r RequestRecord) {
				rmu.Lock()
				recs = append(recs, r)
				rmu.Unlock()
			}
			res := mustRun(t, cfg)
			mu.Lock()
			defer mu.Unlock()
			measured := 0
			for _, r := range recs {
				id := RequestID("run7", r.N)
				if seen[id] != 1 {
					t.Errorf("request %d: server saw id %q %d times", r.N, id, seen[id])
				}
				if major, ok := protoMajors[id]; ok && tc.h2c != (major == 2) {
					t.Errorf("request %d: came in over HTTP/%d", r.N, major)
				}
				if r.Measured {
					measured++
				}
				if r.End < r.Sent || r.Sent < 0 {
					t.Errorf("request %d: sent %v, end %v", r.N, r.Sent, r.End)
				}
			}
			if len(recs) != len(seen) || len(recs) == 0 {
				t.Errorf("%d records, server saw %d distinct ids: %v", len(recs), len(seen), seen)
			}
			if int64(measured) != res.Sent {
				t.Errorf("%d records measured, result sent %d", measured, res.Sent)
			}
		})
	}
}

func TestRequestIDFormat(t *testing.T) {
	if got := RequestID("a", 255); got != "a-00000000000000ff" {
		t.Errorf("RequestID = %q", got)
	}
	for _, tc := range []struct {
		prefix string
		ok     bool
	}{
		{"run7", true},                   // letters and digits
		{"7f3a-cell.2_x", true},          // the allowed punctuation
		{"", false},                      // empty
		{"-x", false},                    // starting with punctuation
		{"a b", false},                   // a space would end the header value
		{strings.Repeat("a", 33), false}, // too long
	} {
		if err := CheckRequestIDPrefix(tc.prefix); (err == nil) != tc.ok {
			t.Errorf("CheckRequestIDPrefix(%q) = %v", tc.prefix, err)
		}
	}
}
