package workload

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// TestControlDelay: through the control socket a replica without faults
// starts answering 150 ms later and stops again; its measured waits
// say so (every waited answer at least the delay asked, the stats
// restarted by a reset), health probes never wait, and a bad delay is
// refused with what is allowed.
func TestControlDelay(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "app.sock")
	s := startServer(t, Config{Kind: KindStatic, Control: sock})
	c := Control{Path: sock}
	ctx := context.Background()
	url := "http://" + s.Addr() + "/"
	cl := h1Client(t)
	timed := func() time.Duration {
		t0 := time.Now()
		get(t, cl, http.MethodGet, url)
		return time.Since(t0)
	}
	if d := timed(); d > 100*time.Millisecond {
		t.Fatalf("healthy answer took %v", d)
	}
	if st, err := c.Stats(ctx, false); err != nil || st.Answers != 0 {
		t.Fatalf("stats before any delay: %+v, %v (an answer that did not wait is not counted)", st, err)
	}
	prev, err := c.SetDelay(ctx, 150*time.Millisecond)
	if err != nil || prev != 0 {
		t.Fatalf("SetDelay: %v (previous %v)", err, prev)
	}
	for range 3 {
		if d := timed(); d < 150*time.Millisecond {
			t.Errorf("answer with a 150ms extra delay took %v", d)
		}
	}
	t0 := time.Now()
	get(t, cl, http.MethodGet, "http://"+s.Addr()+"/healthz")
	if d := time.Since(t0); d > 100*time.Millisecond {
		t.Errorf("health probe took %v: it must never wait", d)
	}
	st, err := c.Stats(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if st.Answers != 3 || st.Measured.MinNs < int64(150*time.Millisecond) || st.ExtraDelayNs != int64(150*time.Millisecond) {
		t.Errorf("stats after 3 delayed answers: %+v", st)
	}
	if st2, _ := c.Stats(ctx, false); st2.Answers != 0 || !st2.Since.After(st.Since) {
		t.Errorf("stats after a reset: %+v", st2)
	}
	if prev, err := c.SetDelay(ctx, 0); err != nil || prev != 150*time.Millisecond {
		t.Fatalf("SetDelay(0): %v (previous %v)", err, prev)
	}
	if d := timed(); d > 100*time.Millisecond {
		t.Errorf("answer after the delay was lifted took %v", d)
	}
	if _, err := c.do(ctx, http.MethodPut, "/delay", "2h"); err == nil || !strings.Contains(err.Error(), "allowed a duration, 0s to 1h0m0s") {
		t.Errorf("PUT /delay 2h: %v", err)
	}
}

// TestControlGRPC: the gRPC app takes a delay through its control socket
// too (its fault interceptor runs from the start when a socket is
// served), and its injected errors stay as configured.
func TestControlGRPC(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "app.sock")
	s := startServer(t, Config{Kind: KindGRPC, Control: sock})
	cl := testgrpc.NewTestServiceClient(grpcConn(t, s.Addr()))
	if _, err := (Control{Path: sock}).SetDelay(context.Background(), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := cl.EmptyCall(context.Background(), &testgrpc.Empty{}); status.Code(err) != codes.OK {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 100*time.Millisecond {
		t.Errorf("call with a 100ms extra delay took %v", d)
	}
}

// TestDelayAccuracy: a fixed 3 ms delay, measured by the server itself,
// is never shorter than asked and overshoots by little at the median
// (the Sleeper wakes early by the timer's recent lateness); the bound is
// the machine's timer lag at the median plus 100 µs, so a busy machine
// loosens it only as much as its timer is late.
func TestDelayAccuracy(t *testing.T) {
	lag := testutil.Timing(t)
	sock := filepath.Join(t.TempDir(), "app.sock")
	s := startServer(t, Config{Kind: KindStatic, Control: sock, Faults: Faults{Delay: 3 * time.Millisecond}})
	cl := h1Client(t)
	for range 200 {
		get(t, cl, http.MethodGet, "http://"+s.Addr()+"/")
	}
	st, err := (Control{Path: sock}).Stats(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("3ms asked: measured min %v p50 %v p99 %v; overshoot p50 %v p99 %v",
		time.Duration(st.Measured.MinNs), time.Duration(st.Measured.P50Ns), time.Duration(st.Measured.P99Ns),
		time.Duration(st.Overshoot.P50Ns), time.Duration(st.Overshoot.P99Ns))
	if st.Answers != 200 || st.Measured.MinNs < int64(3*time.Millisecond) {
		t.Errorf("200 answers asked 3ms: %d measured, min %v", st.Answers, time.Duration(st.Measured.MinNs))
	}
	if bound := lag.P50 + 100*time.Microsecond; time.Duration(st.Overshoot.P50Ns) > bound {
		t.Errorf("median overshoot %v above %v", time.Duration(st.Overshoot.P50Ns), bound)
	}
}
