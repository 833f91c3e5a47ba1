package extgen

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/load/loadgen"
)

// standIn returns the path of a stand-in script for gen (testdata/standin)
// and the file it logs its runs to.
func standIn(t *testing.T, gen, mode string) (bin, log string) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("testdata", "standin", gen))
	if err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(t.TempDir(), "runs.log")
	t.Setenv("STANDIN_LOG", log)
	t.Setenv("STANDIN_MODE", mode)
	return bin, log
}

func logLines(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// TestRunStandIns runs the whole path — version, warm-up run, measured
// run, parse — with stand-ins that print the recorded output.
func TestRunStandIns(t *testing.T) {
	for _, tt := range []struct {
		gen, rate, version  string
		warmArg, measureArg string
		completed           int64
	}{
		{Oha, "200", "1.16.0", "-z 1s", "-z 2s", 400},
		{Wrk2, "100", "4.0.0-standin [epoll]", "-d 1s", "-d 2s", 1505},
	} {
		t.Run(tt.gen, func(t *testing.T) {
			bin, log := standIn(t, tt.gen, "")
			c := testConfig(t, tt.gen, tt.rate, 2*time.Second, 8)
			c.Path = bin
			r, err := Run(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			runs := logLines(t, log)
			if len(runs) != 2 || !strings.Contains(runs[0], tt.warmArg) || !strings.Contains(runs[1], tt.measureArg) {
				t.Fatalf("runs %q: want a warm-up with %q, then the measured run with %q", runs, tt.warmArg, tt.measureArg)
			}
			g := r.Generator
			if g.Name != tt.gen || g.Version != tt.version || len(g.Commands) != 1 || !strings.HasPrefix(g.Commands[0], bin+" ") {
				t.Errorf("generator %+v", g)
			}
			if r.Completed != tt.completed || r.Interrupted {
				t.Errorf("completed %d interrupted %v, want %d", r.Completed, r.Interrupted, tt.completed)
			}
			roundTrip(t, r)
		})
	}
}

// TestRunOverrun: a tool that runs past duration + timeout + grace is
// killed with its whole process group; nothing it started is left.
func TestRunOverrun(t *testing.T) {
	bin, log := standIn(t, Oha, "hang")
	c := testConfig(t, Oha, "10", 100*time.Millisecond, 1)
	c.Path, c.Load.Warmup, c.Load.Timeout, c.Grace = bin, 0, 100*time.Millisecond, 2*time.Second
	start := time.Now()
	_, err := Run(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "ran past its time limit of 2.2s") {
		t.Fatalf("error %v, want the time limit", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v to give up", d)
	}
	b, err := os.ReadFile(log + ".child")
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The child is reaped by init once its parent is gone: allow a moment.
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if time.Now().After(deadline) {
			_ = syscall.Kill(child, syscall.SIGKILL)
			t.Fatalf("the tool's child %d survived the kill", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunInterrupted: canceling the context interrupts the measured run
// with SIGINT; the tool's report of what it measured is the result,
// marked interrupted.
func TestRunInterrupted(t *testing.T) {
	bin, log := standIn(t, Oha, "interrupt")
	c := testConfig(t, Oha, "100", time.Minute, 2)
	c.Path, c.Load.Warmup = bin, 0
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // interrupt once the stand-in handles SIGINT (at most 10 s)
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat(log + ".ready"); err == nil {
				break
			}
		}
		cancel()
	}()
	r, err := Run(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Interrupted || r.Completed != 99 || r.Latency.Count != 0 {
		t.Errorf("interrupted %v, completed %d, latency values %d; want true, 99, 0", r.Interrupted, r.Completed, r.Latency.Count)
	}
	if !strings.Contains(strings.Join(r.Generator.Notes, " "), "interrupted") {
		t.Errorf("notes %q do not say why the histograms are empty", r.Generator.Notes)
	}
	roundTrip(t, r)
	// Interrupted during the warm-up: no result.
	c.Load.Warmup = time.Minute
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	if _, err := Run(ctx, c); !errors.Is(err, context.Canceled) {
		t.Errorf("interrupted warm-up: error %v", err)
	}
}

// TestWrkIsNotWrk2: Debian's wrk (wg/wrk, no -R) is recognised and
// refused by name, not run with flags it does not know.
func TestWrkIsNotWrk2(t *testing.T) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Skip("no wrk on $PATH")
	}
	out, _ := exec.Command(wrk, "-v").CombinedOutput()
	if strings.Contains(string(out), "--rate") {
		t.Skipf("%s is wrk2", wrk)
	}
	c := testConfig(t, Wrk2, "100", 2*time.Second, 8)
	c.Path = wrk
	_, err = Run(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "not wrk2") {
		t.Errorf("error %v, want wrk refused as not wrk2", err)
	}
}

// TestValidate: what a tool cannot do is refused up front, every reason
// at once, each naming the flag.
func TestValidate(t *testing.T) {
	target := func(raw string, h2 bool) loadgen.Target {
		tg, err := loadgen.ParseTarget(raw, h2)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	}
	for _, tt := range []struct {
		name   string
		gen    string
		change func(c *Config)
		want   []string // substrings; none: valid
	}{
		{"oha open loop", Oha, func(*Config) {}, nil},
		{"oha closed loop, fractional rate, sub-second times", Oha, func(c *Config) {
			c.Load.Load, c.Load.Duration = loadgen.ClosedLoop, 1500*time.Millisecond
		}, nil},
		{"oha https with CA and client certificate", Oha, func(c *Config) {
			c.Load.Targets = []loadgen.Target{target("https://127.0.0.1:8443/", false)}
			c.TLSFiles = loadgen.TLSFiles{CAFile: "ca.pem", CertFile: "c.pem", KeyFile: "k.pem"}
		}, nil},
		{"tcp", Oha, func(c *Config) { c.Load.Targets = []loadgen.Target{target("tcp://127.0.0.1:9000", false)} },
			[]string{"speaks tcp", "HTTP/1.1 only"}},
		{"h2", Wrk2, func(c *Config) { c.Load.Targets = []loadgen.Target{target("http://127.0.0.1:8080/", true)} },
			[]string{"speaks h2"}},
		{"grpc", Oha, func(c *Config) { c.Load.Targets = []loadgen.Target{target("grpc://127.0.0.1:50051", false)} },
			[]string{"speaks grpc"}},
		{"two targets", Oha, func(c *Config) { c.Load.Targets = append(c.Load.Targets, c.Load.Targets[0]) },
			[]string{"exactly one target, got 2"}},
		{"server name", Oha, func(c *Config) { c.TLSFiles.ServerName = "x" }, []string{"--server-name"}},
		{"wrk2 open loop", Wrk2, func(*Config) {}, nil},
		{"wrk2 everything wrong", Wrk2, func(c *Config) {
			c.Load.Load, _ = loadgen.ParseLoad("33.3")
			c.Load.Duration, c.Load.Warmup, c.Load.Timeout = 1500*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
			c.Threads, c.Load.Connections = 3, 8
			c.Load.Targets = []loadgen.Target{target("https://127.0.0.1:8443/", false)}
			c.TLSFiles.CAFile = "ca.pem"
		}, []string{"--rate 33.3/s: wrk2 takes whole requests", "--connections 8 over 3 wrk2 threads", "--duration 1.5s", "--warmup 500ms",
			"--timeout 100ms", "--cacert", "pass --insecure"}},
		{"wrk2 rate not divided by its threads", Wrk2, func(c *Config) { c.Threads = 3; c.Load.Connections = 9 },
			[]string{"--rate 100/s over 3 wrk2 threads"}},
		{"wrk2 closed loop", Wrk2, func(c *Config) { c.Load.Load = loadgen.ClosedLoop }, []string{"--max: wrk2 has no closed loop"}},
		{"unknown generator", "hey", func(*Config) {}, []string{`--generator "hey": allowed: meshbench, oha, wrk2, vegeta, fortio`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig(t, tt.gen, "100", 10*time.Second, 8)
			tt.change(&c)
			err := c.Validate()
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestArgs: the command lines the tools get (recorded in every result).
func TestArgs(t *testing.T) {
	c := testConfig(t, Oha, "33.3", 1500*time.Millisecond, 4)
	c.Load.Request.Method = "POST"
	c.Load.Request.Body = []byte("a\"b\n")
	c.Load.Request.Headers = map[string][]string{"X-B": {"2"}, "X-A": {"1"}}
	c.Load.KeepAlive = false
	dir := t.TempDir()
	o := &oha{c: &c, bin: "oha", dir: dir}
	a, err := o.args("measure", c.Load.Duration)
	if err != nil {
		t.Fatal(err)
	}
	want := "oha --no-tui --output-format json --db-url " + dir + "/measure.db -z 1500ms -c 4 -w -t 30s --worker-threads 1 -q 33.3 --latency-correction -m POST -H 'X-A: 1' -H 'X-B: 2' -D " + dir + "/body --disable-keepalive http://127.0.0.1:8080/"
	if got := shellJoin(a); got != want {
		t.Errorf("oha:\n got %s\nwant %s", got, want)
	}
	c = testConfig(t, Wrk2, "100", 10*time.Second, 8)
	c.Threads = 2
	c.Load.Request.Method, c.Load.Request.Body, c.Load.Request.Host = "PUT", []byte{'x', 0, '"'}, "svc"
	w := &wrk2{c: &c, bin: "wrk2", dir: dir}
	if a, err = w.args("measure", c.Load.Duration); err != nil {
		t.Fatal(err)
	}
	want = "wrk2 -t 2 -c 8 -d 10s -R 100 --latency --u_latency --timeout 30s -H 'Host: svc' -s " + dir + "/request.lua http://127.0.0.1:8080/"
	if got := shellJoin(a); got != want {
		t.Errorf("wrk2:\n got %s\nwant %s", got, want)
	}
	lua, err := os.ReadFile(filepath.Join(dir, "request.lua"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(lua), "wrk.method = \"PUT\"\nwrk.body = \"x\\000\\\"\"\n"; got != want {
		t.Errorf("lua script %q, want %q", got, want)
	}
}
