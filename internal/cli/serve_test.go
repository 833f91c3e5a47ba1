package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// lineWriter collects output and signals each complete line; safe for
// concurrent use.
type lineWriter struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	lines   chan string
}

func newLineWriter() *lineWriter { return &lineWriter{lines: make(chan string, 16)} }

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		select {
		case w.lines <- string(w.partial[:i]):
		default:
		}
		w.partial = w.partial[i+1:]
	}
}

func (w *lineWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// serveRun is one in-process `meshbench serve` invocation.
type serveRun struct {
	stdout, stderr *lineWriter
	sigs           chan os.Signal
	code           chan int
}

// startServeRun runs `meshbench serve ARGS...` in-process. The cleanup
// interrupts it and waits for Run to return, even when the test failed.
func startServeRun(t *testing.T, args ...string) *serveRun {
	t.Helper()
	r := &serveRun{stdout: newLineWriter(), stderr: newLineWriter(), sigs: make(chan os.Signal, 1), code: make(chan int, 1)}
	env := &Env{Stdin: strings.NewReader(""), Stdout: r.stdout, Stderr: r.stderr, Signals: r.sigs}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { r.code <- Run(ctx, env, append([]string{"serve"}, args...)) }()
	t.Cleanup(func() {
		select {
		case r.sigs <- os.Interrupt:
		default:
		}
		select {
		case <-r.code:
		case <-time.After(10 * time.Second):
			cancel()
			t.Errorf("serve did not return within 10s of the interrupt")
		}
		cancel()
	})
	return r
}

// waitReady returns the fields of the READY line.
func (r *serveRun) waitReady(t *testing.T) []string {
	t.Helper()
	select {
	case line := <-r.stdout.lines:
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "READY" {
			t.Fatalf("first stdout line %q, want READY KIND ADDR", line)
		}
		return f
	case code := <-r.code:
		r.code <- code
		t.Fatalf("serve exited %d before READY; stderr:\n%s", code, r.stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("no READY line within 10s; stderr:\n%s", r.stderr.String())
	}
	return nil
}

func TestServeReadyThenInterrupt(t *testing.T) {
	for _, kind := range []string{"static", "grpc", "tcp"} {
		t.Run(kind, func(t *testing.T) {
			readyFile := filepath.Join(t.TempDir(), "addr")
			r := startServeRun(t, kind, "--listen", "127.0.0.1:0", "--ready-file", readyFile)
			f := r.waitReady(t)
			addr := f[2]
			if f[1] != kind || !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
				t.Fatalf("READY line %q, want READY %s 127.0.0.1:PORT", strings.Join(f, " "), kind)
			}
			if b, err := os.ReadFile(readyFile); err != nil || string(b) != addr+"\n" {
				t.Errorf("ready file: %q, %v; want %q", b, err, addr+"\n")
			}
			// The server really serves.
			if kind == "static" {
				resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || len(body) != 615 {
					t.Errorf("GET /: %d, %d bytes", resp.StatusCode, len(body))
				}
			} else {
				c, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}

			r.sigs <- os.Interrupt
			select {
			case code := <-r.code:
				r.code <- code // for the cleanup
				if code != ExitOK {
					t.Errorf("exit code %d after interrupt, want %d; stderr:\n%s", code, ExitOK, r.stderr.String())
				}
			case <-time.After(10 * time.Second):
				t.Fatal("serve did not return within 10s of the interrupt")
			}
			if out := r.stdout.String(); out != strings.Join(f, " ")+"\n" {
				t.Errorf("stdout %q, want only the READY line", out)
			}
			if errOut := r.stderr.String(); errOut != "" {
				t.Errorf("stderr %q, want nothing", errOut)
			}
			if _, err := os.Stat(readyFile); !os.IsNotExist(err) {
				t.Errorf("ready file still there after exit: %v", err)
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				c.Close()
				t.Errorf("%s still accepting after serve returned", addr)
			}
		})
	}
}

func TestServeBadInput(t *testing.T) {
	tests := []struct {
		args []string
		want []string // one stderr line per problem, each containing this
	}{
		// No kind.
		{args: nil, want: []string{"serve takes one workload kind (static, grpc, tcp, face), got 0"}},
		// Unknown kind.
		{args: []string{"udp"}, want: []string{`workload kind "udp": allowed: static, grpc, tcp, face`}},
		// Ratio above 1.
		{args: []string{"static", "--error-ratio", "1.5"}, want: []string{"--error-ratio 1.5: allowed: 0 to 1"}},
		// Negative ratio.
		{args: []string{"tcp", "--error-ratio=-0.1"}, want: []string{"--error-ratio -0.1"}},
		// A stall length without a period.
		{args: []string{"static", "--stall-for", "100ms"}, want: []string{"--stall-for 100ms: needs stall-every"}},
		// A stall period without a length.
		{args: []string{"static", "--stall-every", "1s"}, want: []string{"--stall-every 1s: needs stall-for"}},
		// A stall as long as its period.
		{args: []string{"static", "--stall-every", "500ms", "--stall-for", "500ms"}, want: []string{"--stall-for 500ms: must be shorter than stall-every 500ms"}},
		// Negative body.
		{args: []string{"static", "--body-size", "-1"}, want: []string{"--body-size -1: allowed: 1 to"}},
		// Empty body (0 would mean "default" to the library).
		{args: []string{"static", "--body-size", "0"}, want: []string{"--body-size 0"}},
		// Body size on a workload that has none.
		{args: []string{"grpc", "--body-size", "100"}, want: []string{"--body-size applies to the static workload only"}},
		// Error status on a workload without HTTP statuses.
		{args: []string{"tcp", "--error-status", "503"}, want: []string{"--error-status applies to the static workload only"}},
		// A success status as the error status.
		{args: []string{"static", "--error-status", "200"}, want: []string{"--error-status 200: allowed: an HTTP error status, 400 to 599"}},
		// Bad random delay syntax.
		{args: []string{"static", "--delay-dist", "gauss:1ms"}, want: []string{`--delay-dist: invalid delay distribution "gauss:1ms"`}},
		// Negative fixed delay.
		{args: []string{"static", "--delay=-1ms"}, want: []string{"--delay -1ms: allowed: 0s to 1h"}},
		// Not a duration (pflag's own parse error).
		{args: []string{"static", "--delay", "soon"}, want: []string{`"soon" for "--delay"`}},
		// Listen address without a port.
		{args: []string{"static", "--listen", "127.0.0.1"}, want: []string{`--listen "127.0.0.1": allowed: host:port`}},
		// A host written as numbers that is no IP address.
		{args: []string{"static", "--listen", "999.1.1.1:80"}, want: []string{`--listen "999.1.1.1:80": 999.1.1.1 is not an IPv4 address`}},
		// A port out of range.
		{args: []string{"static", "--listen", "127.0.0.1:70000"}, want: []string{`--listen "127.0.0.1:70000": allowed: host:port with a numeric port 0 to 65535`}},
		// Negative grace.
		{args: []string{"static", "--grace=-1s"}, want: []string{"--grace -1s"}},
		// Ready file in a directory that does not exist.
		{args: []string{"static", "--ready-file", "/nonexistent-meshbench-dir/addr"}, want: []string{"--ready-file /nonexistent-meshbench-dir/addr"}},
		// A concurrency bound without a service time.
		{args: []string{"static", "--concurrency", "4"}, want: []string{"--service-time 0s: allowed: above 0s"}},
		// A service time without a bound.
		{args: []string{"static", "--service-time", "2ms"}, want: []string{"--service-time 2ms: needs concurrency too"}},
		// Unknown flag.
		{args: []string{"static", "--bogus"}, want: []string{"--bogus"}},
		// Every problem at once, one line each.
		{args: []string{"static", "--error-ratio", "2", "--body-size", "-5", "--stall-for", "1s"}, want: []string{"--body-size -5", "--stall-for 1s", "--error-ratio 2"}},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}
		code := Run(context.Background(), env, append([]string{"serve"}, tt.args...))
		lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
		if code != ExitUsage || len(lines) != len(tt.want) {
			t.Errorf("serve %q: exit %d, stderr:\n%s\nwant exit %d and %d line(s)", tt.args, code, stderr.String(), ExitUsage, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("serve %q: stderr line %d %q, want it to contain %q", tt.args, i+1, lines[i], w)
			}
		}
		if stdout.Len() != 0 {
			t.Errorf("serve %q: stdout %q, want nothing", tt.args, stdout.String())
		}
	}
}

func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var stdout, stderr bytes.Buffer
	env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr}
	code := Run(context.Background(), env, []string{"serve", "static", "--listen", ln.Addr().String()})
	msg := stderr.String()
	if code != ExitFailure || strings.Count(msg, "\n") != 1 || !strings.Contains(msg, ln.Addr().String()) || !strings.Contains(msg, "address already in use") {
		t.Errorf("serve on a bound port: exit %d, stderr %q; want exit %d and one line naming %s", code, msg, ExitFailure, ln.Addr())
	}
}

// TestServeSubprocess runs serve as its own process: it serves, and exits 0
// on SIGTERM (checked by StartServe's cleanup when the subtest ends).
func TestServeSubprocess(t *testing.T) {
	var addr string
	t.Run("serve", func(t *testing.T) {
		addr = testutil.StartServe(t, "static", "--body-size", "1000")
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(body) != 1000 {
			t.Errorf("GET /: %d, %d bytes; want 200, 1000 bytes", resp.StatusCode, len(body))
		}
	})
	if addr == "" {
		return
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepting after SIGTERM", addr)
	}
}
