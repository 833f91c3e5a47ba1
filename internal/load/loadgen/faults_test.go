package loadgen

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/workload"
)

// The fault suite: targets that misbehave the way a misconfigured mesh
// does (hung, reading forever, slow, resetting, answering garbage), and
// cancellation with requests in flight. Every case asserts the engine's
// bounds: a run ends within warm-up + duration + EndGrace + timeout, and a
// cancelled run returns at once. The margins below (faultSlack) are
// generous because these tests share 2 loaded cores with other builds; on
// the old engine the hung cases took tens of seconds, far outside them.

// faultSlack is the allowance on top of a bound for goroutine scheduling,
// connection closing and a busy machine (2 cores at a load average of 20
// delayed a return by 2.2 s once). The old engine overran these bounds by
// tens of seconds: a hung target held every queued ticket for a timeout,
// and Ctrl-C waited for the 30-s request timeout.
const faultSlack = 4 * time.Second

// faultServer accepts connections on loopback and hands each to handle in
// its own goroutine. Everything it opened is closed when the test ends.
func faultServer(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// hang keeps the connection open and neither reads nor answers.
func hang(c net.Conn) { _, _ = io.Copy(io.Discard, &blockedReader{c: c}) }

// blockedReader never reads from c until c is closed (the server's
// receive buffer fills, as with a frozen process).
type blockedReader struct{ c net.Conn }

func (b *blockedReader) Read(p []byte) (int, error) {
	// A zero-length read waits for nothing; poll for the close instead.
	for {
		_ = b.c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := b.c.Read(nil); err != nil && !isTimeout(err) {
			return 0, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// readForever reads and discards every byte and never answers.
func readForever(c net.Conn) { _, _ = io.Copy(io.Discard, c) }

// resetAfterRequest reads the request and resets the connection (RST).
func resetAfterRequest(c net.Conn) {
	buf := make([]byte, 4096)
	_, _ = c.Read(buf)
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// garbage answers every read with bytes that are no HTTP response.
func garbage(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := c.Read(buf); err != nil {
			return
		}
		if _, err := c.Write([]byte("SSH-2.0-OpenSSH_9.2\r\nnot http at all\r\n\r\n")); err != nil {
			return
		}
	}
}

func TestFaultTargetsEndOnTime(t *testing.T) {
	hung := faultServer(t, hang)
	reader := faultServer(t, readForever)
	reset := faultServer(t, resetAfterRequest)
	junk := faultServer(t, garbage)
	slow := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: 3 * time.Second}})
	const (
		rate     = 100
		duration = time.Second
		warmup   = 200 * time.Millisecond
		timeout  = time.Second
	)
	tests := []struct {
		name   string
		target string
		kind   string // the error kind every failure must have
		stuck  bool   // every connection stays busy: tickets pile up and are not sent
	}{
		// Accepts and never reads nor answers: every request times out.
		{"hung HTTP/1.1", "http://" + hung + "/", KindTimeout, true},
		// The same target under h2c: the client waits for SETTINGS.
		{"hung h2c", "h2c://" + hung + "/", KindTimeout, true},
		// gRPC over a hung connection: DeadlineExceeded.
		{"hung gRPC", "grpc://" + hung, KindTimeout, true},
		// Raw TCP echo that never echoes.
		{"hung TCP", "tcp://" + hung, KindTimeout, true},
		// Reads every byte, answers none.
		{"reads forever HTTP/1.1", "http://" + reader + "/", KindTimeout, true},
		// Answers after 3 s, beyond the 1-s timeout.
		{"answers after 3s", "http://" + slow + "/", KindTimeout, true},
		// Resets each connection after reading the request: fast failures,
		// every ticket sent.
		{"resets", "http://" + reset + "/", KindReset, false},
		// Answers with bytes that are no HTTP: protocol errors, every
		// ticket sent.
		{"answers garbage", "http://" + junk + "/", KindProtocol, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig(targets(t, false, tt.target), rate, duration)
			cfg.Warmup, cfg.Timeout, cfg.Connections = warmup, timeout, 4
			cfg.Request.Body = []byte("ping") // the TCP row needs request bytes; harmless elsewhere
			if strings.HasPrefix(tt.target, "http") {
				cfg.Request.Method = "POST"
			}
			start := time.Now()
			res := mustRun(t, cfg)
			took := time.Since(start)
			bound := warmup + duration + EndGrace + timeout
			if took > bound+faultSlack {
				t.Errorf("run took %v, bound %v (+%v slack)", took, bound, faultSlack)
			}
			if res.Success != 0 {
				t.Errorf("%d successes from a broken target", res.Success)
			}
			for k, n := range res.Errors {
				if k.Kind != tt.kind {
					t.Errorf("%d errors of kind %q (%s), want %s", n, k.Kind, k.Message, tt.kind)
				}
			}
			// Equal failures group under one message: no ephemeral port
			// (each connection's own) splits them.
			if len(res.Errors) > 2 {
				t.Errorf("%d distinct error messages, want the failures grouped: %v", len(res.Errors), res.Errors)
			}
			// Every scheduled request is accounted for exactly once.
			if got := res.Sent + res.Dropped + res.NotSent; got != int64(res.Scheduled) {
				t.Errorf("sent %d + dropped %d + not sent %d = %d, scheduled %d", res.Sent, res.Dropped, res.NotSent, got, res.Scheduled)
			}
			if res.Completed != res.Sent || res.Canceled != 0 {
				t.Errorf("completed %d canceled %d of %d sent: every request sent must end in an answer or an error", res.Completed, res.Canceled, res.Sent)
			}
			if res.LastSend > duration+EndGrace {
				t.Errorf("a request started at %v, after the window (%v) and its grace", res.LastSend, duration)
			}
			if tt.stuck {
				// 4 connections held ~1 s each: at most a handful of the
				// 100 scheduled requests can have started.
				if res.Sent > 20 || res.NotSent == 0 {
					t.Errorf("sent %d, not sent %d: want few sent and the rest not sent", res.Sent, res.NotSent)
				}
			} else if res.NotSent != 0 || res.Sent != int64(res.Scheduled) {
				t.Errorf("sent %d of %d, not sent %d: a fast-failing target gets every request", res.Sent, res.Scheduled, res.NotSent)
			}
		})
	}
}

// TestCancelAbandonsInFlight: Ctrl-C (a cancelled context) with requests
// in flight returns at once on every client, and those requests count as
// canceled, never as answers or errors.
func TestCancelAbandonsInFlight(t *testing.T) {
	hung := faultServer(t, hang)
	slow := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: 20 * time.Second}})
	tests := []struct {
		name   string
		target string
	}{
		{"HTTP/1.1, hung target", "http://" + hung + "/"},
		{"HTTP/1.1, 20-s server", "http://" + slow + "/"},
		{"h2c, 20-s server", "h2c://" + slow + "/"},
		{"gRPC, hung target", "grpc://" + hung},
		{"TCP, hung target", "tcp://" + hung},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := baseConfig(targets(t, false, tt.target), 50, 30*time.Second)
			cfg.Timeout, cfg.Connections = 30*time.Second, 4
			cfg.Request.Body = []byte("ping")
			if strings.HasPrefix(tt.target, "http") || strings.HasPrefix(tt.target, "h2c") {
				cfg.Request.Method = "POST"
			}
			ctx, cancel := context.WithCancel(context.Background())
			const after = 500 * time.Millisecond
			time.AfterFunc(after, cancel)
			start := time.Now()
			res, err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > after+faultSlack {
				t.Errorf("cancelled run took %v to return; want within %v of the cancel", took, faultSlack)
			} else {
				t.Logf("returned %v after the cancel", (took - after).Round(time.Millisecond))
			}
			if !res.Interrupted || res.Sent == 0 {
				t.Fatalf("interrupted %v, sent %d", res.Interrupted, res.Sent)
			}
			if res.Canceled != res.Sent || res.Completed != 0 || res.Success != 0 || len(res.Errors) != 0 {
				t.Errorf("sent %d: canceled %d, completed %d, success %d, errors %v; want all canceled", res.Sent, res.Canceled, res.Completed, res.Success, res.Errors)
			}
		})
	}
}

// TestFileLimit runs in a child process whose file limit (soft and hard)
// is 64 + 40: EnsureFileLimit refuses more connections than fit, and a run
// that exhausts the descriptors anyway classifies the failures as the load
// generator's (local), never the target's.
func TestFileLimit(t *testing.T) {
	if os.Getenv("MESHBENCH_FD_CHILD") == "1" {
		fileLimitChild(t)
		return
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to lower the file limit in a child: " + err.Error())
	}
	cmd := exec.Command(sh, "-c", `ulimit -n 104 && exec "$0" -test.run '^TestFileLimit$' -test.v`, os.Args[0])
	// The target runs here, with this process's descriptors: only the
	// generator in the child runs short.
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cmd.Env = append(os.Environ(), "MESHBENCH_FD_CHILD=1", "MESHBENCH_FD_TARGET="+static)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFileLimit") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

func fileLimitChild(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Max != 104 {
		t.Fatalf("child limit %+v (%v), want hard 104", lim, err)
	}
	if err := EnsureFileLimit(40); err != nil {
		t.Errorf("40 connections in 104 files refused: %v", err)
	}
	err := EnsureFileLimit(5000)
	if err == nil || !strings.Contains(err.Error(), "--connections 5000") || !strings.Contains(err.Error(), "at most 40 connections") {
		t.Errorf("5000 connections in 104 files: %v", err)
	}
	// Bypass the check: 150 connections need more descriptors than exist.
	cfg := baseConfig(targets(t, false, "http://"+os.Getenv("MESHBENCH_FD_TARGET")+"/"), 300, 500*time.Millisecond)
	cfg.Connections, cfg.Timeout = 150, time.Second
	res := mustRun(t, cfg)
	var local int64
	for k, n := range res.Errors {
		if k.Kind != KindLocal {
			t.Errorf("%d errors of kind %q (%s): out of descriptors is the generator's failure (local)", n, k.Kind, k.Message)
		}
		local += n
	}
	if local == 0 {
		t.Errorf("no local errors with 150 connections in 104 descriptors: %+v", res.Errors)
	}
}
