package workload

// Real-time tests: real servers on 127.0.0.1, real clients, no mocks.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// startServer starts cfg on a free loopback port and shuts it down when the
// test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return s
}

// h1Client speaks HTTP/1.1 only, with keep-alive.
func h1Client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// h2cClient speaks HTTP/2 over cleartext with prior knowledge.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// get does one request and returns the status and body.
func get(t *testing.T, c *http.Client, method, url string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, url, err)
	}
	return resp, body
}

func TestStaticHTTP1AndH2C(t *testing.T) {
	s := startServer(t, Config{Kind: KindStatic})
	for _, tc := range []struct {
		name       string
		client     *http.Client
		protoMajor int
	}{
		{name: "http/1.1", client: h1Client(t), protoMajor: 1},
		{name: "h2c", client: h2cClient(t), protoMajor: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Any method and path answers the index page.
			for _, mp := range [][2]string{{"GET", "/"}, {"GET", "/index.html"}, {"POST", "/any/path?q=1"}} {
				resp, body := get(t, tc.client, mp[0], "http://"+s.Addr()+mp[1])
				if resp.StatusCode != 200 || resp.ProtoMajor != tc.protoMajor {
					t.Fatalf("%s %s: status %d proto %s, want 200 HTTP/%d", mp[0], mp[1], resp.StatusCode, resp.Proto, tc.protoMajor)
				}
				if len(body) != 615 || !bytes.Equal(body, StaticBody(615)) {
					t.Fatalf("%s %s: %d-byte body, want nginx's 615-byte page", mp[0], mp[1], len(body))
				}
				if ct, cl := resp.Header.Get("Content-Type"), resp.Header.Get("Content-Length"); ct != "text/html" || cl != "615" {
					t.Errorf("headers Content-Type=%q Content-Length=%q", ct, cl)
				}
			}
			resp, body := get(t, tc.client, "GET", "http://"+s.Addr()+"/healthz")
			if resp.StatusCode != 200 || string(body) != "ok\n" {
				t.Errorf("/healthz: %d %q", resp.StatusCode, body)
			}
		})
	}
}

func TestStaticBodySize(t *testing.T) {
	for _, n := range []int{1, 10_000} {
		s := startServer(t, Config{Kind: KindStatic, BodySize: n})
		resp, body := get(t, h1Client(t), "GET", "http://"+s.Addr()+"/")
		if resp.StatusCode != 200 || len(body) != n || resp.ContentLength != int64(n) {
			t.Errorf("body-size %d: status %d, %d bytes, Content-Length %d", n, resp.StatusCode, len(body), resp.ContentLength)
		}
	}
}

func TestStaticErrorRatio(t *testing.T) {
	const n, ratio, seed = 1000, 0.2, 42
	s := startServer(t, Config{Kind: KindStatic, Faults: Faults{ErrorRatio: ratio, ErrorStatus: 503, Seed: seed}})
	c := h1Client(t)
	fails := 0
	for range n {
		resp, body := get(t, c, "GET", "http://"+s.Addr()+"/")
		switch resp.StatusCode {
		case 200:
		case 503:
			if string(body) != InjectedErrorMessage+"\n" {
				t.Fatalf("injected error body %q", body)
			}
			fails++
		default:
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// Sequential requests draw from the seeded stream in order: the count
	// is exact.
	if want := expectedFailures(seed, ratio, n); fails != want {
		t.Errorf("%d injected errors of %d, want exactly %d for seed %d", fails, n, want, seed)
	}
	// And it is near the ratio: Binomial(1000, 0.2) has sd ≈ 12.6.
	if fails < 200-63 || fails > 200+63 {
		t.Errorf("%d injected errors of %d, want about %d", fails, n, int(n*ratio))
	}
	// Health probes are exempt, even when every request fails.
	s = startServer(t, Config{Kind: KindStatic, Faults: Faults{ErrorRatio: 1}})
	if resp, _ := get(t, c, "GET", "http://"+s.Addr()+"/healthz"); resp.StatusCode != 200 {
		t.Errorf("/healthz with error ratio 1: status %d, want 200", resp.StatusCode)
	}
	if resp, _ := get(t, c, "GET", "http://"+s.Addr()+"/"); resp.StatusCode != DefaultErrorStatus {
		t.Errorf("error ratio 1: status %d, want %d", resp.StatusCode, DefaultErrorStatus)
	}
}

func TestStaticFixedDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	s := startServer(t, Config{Kind: KindStatic, Faults: Faults{Delay: delay}})
	c := h1Client(t)
	get(t, c, "GET", "http://"+s.Addr()+"/healthz") // connect first; /healthz is not delayed
	begin := time.Now()
	if resp, _ := get(t, c, "GET", "http://"+s.Addr()+"/"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if took := time.Since(begin); took < delay || took > delay+500*time.Millisecond {
		t.Errorf("request took %v, want %v (+ up to 500ms)", took, delay)
	}
}

func TestStaticStall(t *testing.T) {
	const every, stallFor = 400 * time.Millisecond, 150 * time.Millisecond
	s := startServer(t, Config{Kind: KindStatic, Faults: Faults{StallEvery: every, StallFor: stallFor}})
	c := h1Client(t)
	get(t, c, "GET", "http://"+s.Addr()+"/healthz") // connect outside the measurement

	// Aim 50ms into the next window that starts at least 100ms from now.
	k := time.Since(s.Started())/every + 1
	if time.Until(s.Started().Add(k*every)) < 100*time.Millisecond {
		k++
	}
	windowStart := s.Started().Add(k * every)
	windowEnd := windowStart.Add(stallFor)
	time.Sleep(time.Until(windowStart.Add(50 * time.Millisecond)))
	sent := time.Now()
	if !sent.Before(windowEnd) {
		t.Skipf("the test slept past the stall window (sent %v after its end); machine too loaded", sent.Sub(windowEnd))
	}
	if resp, _ := get(t, c, "GET", "http://"+s.Addr()+"/"); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	answered := time.Now()
	if answered.Before(windowEnd) {
		t.Errorf("answered %v before the stall window ended", windowEnd.Sub(answered))
	}
	// Loose: the machine may be busy; early answers are the real failure.
	if late := answered.Sub(windowEnd); late > 150*time.Millisecond {
		t.Errorf("answered %v after the stall window ended, want within 150ms", late)
	}
	// Outside a window there is no wait.
	time.Sleep(time.Until(windowEnd.Add(50 * time.Millisecond)))
	begin := time.Now()
	get(t, c, "GET", "http://"+s.Addr()+"/")
	if took := time.Since(begin); took > 150*time.Millisecond {
		t.Errorf("request between windows took %v, want no stall", took)
	}
}

func grpcConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func TestGRPC(t *testing.T) {
	s := startServer(t, Config{Kind: KindGRPC})
	cc := grpcConn(t, s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tc := testgrpc.NewTestServiceClient(cc)

	payload := bytes.Repeat([]byte("meshbench"), 100)
	resp, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: payload}})
	if err != nil {
		t.Fatalf("UnaryCall echo: %v", err)
	}
	if !bytes.Equal(resp.GetPayload().GetBody(), payload) {
		t.Errorf("echo returned %d bytes, want the %d sent", len(resp.GetPayload().GetBody()), len(payload))
	}
	for _, n := range []int32{10, 100_000} {
		resp, err = tc.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: n, Payload: &testgrpc.Payload{Body: payload}})
		if err != nil || len(resp.GetPayload().GetBody()) != int(n) {
			t.Errorf("UnaryCall response_size %d: %d bytes, err %v", n, len(resp.GetPayload().GetBody()), err)
		}
	}
	if _, err := tc.UnaryCall(ctx, &testgrpc.SimpleRequest{ResponseSize: -1}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("UnaryCall response_size -1: %v, want InvalidArgument", err)
	}
	if _, err := tc.EmptyCall(ctx, &testgrpc.Empty{}); err != nil {
		t.Errorf("EmptyCall: %v", err)
	}
	hc := healthpb.NewHealthClient(cc)
	for _, svc := range []string{"", GRPCServiceName} {
		hr, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q: %v, %v; want SERVING", svc, hr.GetStatus(), err)
		}
	}
}

func TestGRPCInjectedError(t *testing.T) {
	s := startServer(t, Config{Kind: KindGRPC, Faults: Faults{ErrorRatio: 1}})
	cc := grpcConn(t, s.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := testgrpc.NewTestServiceClient(cc).UnaryCall(ctx, &testgrpc.SimpleRequest{})
	if st := status.Convert(err); st.Code() != codes.Unavailable || st.Message() != InjectedErrorMessage {
		t.Errorf("UnaryCall with error ratio 1: %v, want Unavailable %q", err, InjectedErrorMessage)
	}
	// The health service is exempt.
	hr, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health with error ratio 1: %v, %v; want SERVING", hr.GetStatus(), err)
	}
}

func TestTCPEcho(t *testing.T) {
	s := startServer(t, Config{Kind: KindTCP})
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// Several reads' worth, so the server echoes across buffer refills.
	sent := make([]byte, 3*TCPReadBuffer+123)
	_, _ = rand.Read(sent)
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(sent)
		werr <- err
	}()
	got := make([]byte, len(sent))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading echo: %v", err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("writing: %v", err)
	}
	if !bytes.Equal(got, sent) {
		t.Errorf("echo differs from the %d bytes sent", len(sent))
	}
}

func TestTCPInjectedErrorResets(t *testing.T) {
	s := startServer(t, Config{Kind: KindTCP, Faults: Faults{ErrorRatio: 1}})
	c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read(make([]byte, 16))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after injected error: %v, want connection reset", err)
	}
}

// TestShutdownFinishesInFlight starts a delayed request on each kind, shuts
// the server down while it is in flight and expects a complete answer.
func TestShutdownFinishesInFlight(t *testing.T) {
	const delay = 400 * time.Millisecond
	tests := []struct {
		kind Kind
		do   func(t *testing.T, addr string) error // one request, nil when answered in full
	}{
		{kind: KindStatic, do: func(t *testing.T, addr string) error {
			resp, err := h1Client(t).Get("http://" + addr + "/")
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil && (resp.StatusCode != 200 || len(body) != 615) {
				err = errors.New("incomplete answer: " + resp.Status)
			}
			return err
		}},
		{kind: KindGRPC, do: func(t *testing.T, addr string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := testgrpc.NewTestServiceClient(grpcConn(t, addr)).EmptyCall(ctx, &testgrpc.Empty{})
			return err
		}},
		{kind: KindTCP, do: func(t *testing.T, addr string) error {
			c, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte("ping")); err != nil {
				return err
			}
			got := make([]byte, 4)
			if _, err := io.ReadFull(c, got); err != nil {
				return err
			}
			if string(got) != "ping" {
				return errors.New("echo " + string(got))
			}
			return nil
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			s, err := Start(context.Background(), Config{Kind: tt.kind, Listen: "127.0.0.1:0", Faults: Faults{Delay: delay}})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- tt.do(t, s.Addr()) }()
			time.Sleep(delay / 2) // the request is now waiting out its delay
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			begin := time.Now()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if took := time.Since(begin); took > 2*time.Second {
				t.Errorf("Shutdown took %v", took)
			}
			if err := <-done; err != nil {
				t.Errorf("in-flight request: %v", err)
			}
			if s.Err() != nil {
				t.Errorf("Err after Shutdown: %v", s.Err())
			}
			if c, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
				c.Close()
				t.Errorf("still accepting after Shutdown")
			}
		})
	}
}

// TestShutdownGraceExpires: when the grace runs out, Shutdown closes
// everything and reports it.
func TestShutdownGraceExpires(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(string(kind), func(t *testing.T) {
			cfg := Config{Kind: kind, Listen: "127.0.0.1:0", Faults: Faults{Delay: time.Hour}}
			if kind == KindFace {
				// Backends are never reached: the hour-long delay comes first.
				cfg.SmileyURL, cfg.ColorAddr = "http://127.0.0.1:9/", "127.0.0.1:9"
			}
			s, err := Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			c, err := net.DialTimeout("tcp", s.Addr(), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// A request that will never be answered in time.
			switch kind {
			case KindStatic:
				_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			case KindTCP:
				_, err = io.WriteString(c, "ping")
			case KindGRPC:
				cc := grpcConn(t, s.Addr())
				go func() { _, _ = testgrpc.NewTestServiceClient(cc).EmptyCall(context.Background(), &testgrpc.Empty{}) }()
			}
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			begin := time.Now()
			if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Shutdown = %v, want deadline exceeded", err)
			}
			if took := time.Since(begin); took > 2*time.Second {
				t.Errorf("forced Shutdown took %v", took)
			}
		})
	}
}

func TestStartAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Start(context.Background(), Config{Kind: KindStatic, Listen: ln.Addr().String()})
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Start on a bound port: %v, want EADDRINUSE naming %s", err, ln.Addr())
	}
}
