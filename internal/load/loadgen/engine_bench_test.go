package loadgen

import (
	"context"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// The engine's own cost per request, as `meshbench load` runs it: one
// engine thread (GOMAXPROCS 1, the CLI's --cpus default), 16 keep-alive
// HTTP/1.1 connections, per-second intervals and a progress callback every
// second. The target is a separate process, so every figure below is the
// engine's alone: `meshbench serve static` (built once), or the URL in
// MESHBENCH_BENCH_URL (bench/loadgen/run.py's nginx, say).
//
// One benchmark iteration is one request: -benchtime 20000x runs 20 000
// requests, at 5000/s a 4-s window. Reported per request:
//
//	allocs/req, B/req  heap allocations (runtime.MemStats), the engine's garbage
//	cpu-ns/req         user + system CPU of this process (getrusage)
//	ctxsw/req          the process's context switches (voluntary + involuntary):
//	                   each is a thread going to sleep and being woken,
//	                   the largest part of the CPU on a VM
//	p50-µs, p99-µs     latency from the intended send time
//
// ns/op is wall time per request, i.e. the schedule: ignore it. CPU and
// context switches are only as quiet as the machine; allocations are exact.
//
//	go test -run '^$' -bench Engine -benchtime 20000x ./internal/load/loadgen/

func BenchmarkEngineOpen1000(b *testing.B) {
	benchEngine(b, OpenLoop(Rate{Freq: 1000, Per: time.Second}))
}
func BenchmarkEngineOpen5000(b *testing.B) {
	benchEngine(b, OpenLoop(Rate{Freq: 5000, Per: time.Second}))
}
func BenchmarkEngineClosed(b *testing.B) { benchEngine(b, ClosedLoop) }

// The same open loops with every answer read as it arrives (no harvest):
// what reading at the pacer's wake-ups saves.
func BenchmarkEngineOpen1000Eager(b *testing.B) { benchEager(b, 1000) }
func BenchmarkEngineOpen5000Eager(b *testing.B) { benchEager(b, 5000) }

func benchEager(b *testing.B, rate uint64) {
	lazyReads = false
	defer func() { lazyReads = true }()
	benchEngine(b, OpenLoop(Rate{Freq: rate, Per: time.Second}))
}

func benchEngine(b *testing.B, load Load) {
	url := os.Getenv("MESHBENCH_BENCH_URL")
	if url == "" {
		url = "http://" + testutil.StartServe(b, "static") + "/"
	}
	tg, err := ParseTarget(url, false)
	if err != nil {
		b.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	cfg := Config{Targets: []Target{tg}, Load: load, Timeout: 5 * time.Second, Connections: DefaultConnections,
		MaxQueue: 1000, KeepAlive: true, Interval: time.Second, Progress: func(Progress) {}}
	if load.Closed() {
		// A closed loop's count is what the target answers: a short
		// window, each iteration one request of it.
		cfg.Duration = 2 * time.Second
	} else {
		r := load.Rate()
		cfg.Duration = max(time.Duration(float64(b.N)/float64(r.Freq)*float64(r.Per)), time.Second)
	}
	var m0, m1 runtime.MemStats
	var u0, u1 syscall.Rusage
	runtime.GC()
	runtime.ReadMemStats(&m0)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u0)
	b.ResetTimer()
	res, err := Run(context.Background(), cfg)
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &u1)
	runtime.ReadMemStats(&m1)
	if err != nil {
		b.Fatal(err)
	}
	if res.Completed == 0 || res.Success != res.Completed {
		b.Fatalf("completed %d, success %d", res.Completed, res.Success)
	}
	n := float64(res.Completed)
	cpu := time.Duration(syscall.TimevalToNsec(u1.Utime) - syscall.TimevalToNsec(u0.Utime) +
		syscall.TimevalToNsec(u1.Stime) - syscall.TimevalToNsec(u0.Stime))
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/req")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/req")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/req")
	b.ReportMetric(float64(u1.Nvcsw-u0.Nvcsw+u1.Nivcsw-u0.Nivcsw)/n, "ctxsw/req")
	b.ReportMetric(float64(res.Latency.Percentile(50))/1e3, "p50-µs")
	b.ReportMetric(float64(res.Latency.Percentile(99))/1e3, "p99-µs")
}

func TestMain(m *testing.M) { testutil.Main(m) }
