package loadgen

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/testkit/testutil"
	"github.com/meshbench/meshbench/internal/workload"
)

// TestHarvestWakes: a connection parks only while the harvest is on; a
// tick wakes every parked one, and so does turning it off, so none is
// left waiting for a tick that will not come.
func TestHarvestWakes(t *testing.T) {
	h := newHarvest()
	wake := make(chan struct{}, 1)
	if h.wait(wake) || h.active() {
		t.Fatal("an off harvest parked a connection")
	}
	if h.tick() {
		t.Error("a tick with nobody parked reported a wake-up")
	}
	for _, end := range []struct {
		name string
		wake func() bool
	}{
		{"tick", h.tick},
		{"off", func() bool { h.set(false); return true }},
	} {
		h.set(true)
		const n = 3
		done := make(chan bool, n)
		for range n {
			go func() {
				w := make(chan struct{}, 1)
				done <- h.wait(w)
			}()
		}
		waitParked(t, h, n)
		if !end.wake() {
			t.Errorf("%s: reported no parked connection", end.name)
		}
		for range n {
			if !<-done {
				t.Errorf("%s: a parked connection was refused", end.name)
			}
		}
		if h.tick() {
			t.Errorf("%s: connections still parked after the wake-up", end.name)
		}
	}
}

// waitParked waits (≤ 5 s) until n connections are parked.
func waitParked(t *testing.T, h *harvest, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		h.mu.Lock()
		k := len(h.waiting)
		h.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections parked, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLazyReadsTimedByKernel: at 100 requests/s the pacer wakes every
// 10 ms, and the answers (a millisecond or less away on loopback) are read
// at those wake-ups, several ms after they arrived. Their service time is
// still the target's: timed when read it would be ~5 ms at the median
// (half a period); the kernel's receive time gives well under 2 ms.
func TestLazyReadsTimedByKernel(t *testing.T) {
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := baseConfig(targets(t, false, "http://"+static+"/"), 100, 2*time.Second)
	cfg.Connections = 4
	before := lazyAnswers.Load()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lazy := lazyAnswers.Load() - before
	if res.Success != 200 || lazy < res.Success/2 {
		t.Fatalf("%d answers, %d of them read at the pacer's wake-ups: want 200, most", res.Success, lazy)
	}
	if p50 := time.Duration(res.ServiceTime.Percentile(50)); p50 > 2*time.Millisecond {
		t.Errorf("service time p50 %v with %d answers read at the pacer's wake-ups: timed when read, not when received", p50, lazy)
	}
}

// TestKernelTimeNotBeforeAnswer: timing answers by the kernel's receive
// time never makes them shorter than the target took. The server holds
// every answer 3 ms before writing it; at 200/s (a 5-ms pacer period) the
// answers are read at the pacer's wake-ups, up to 2 ms after they arrived,
// and still no service time or latency (exact minimums) is under the 3 ms:
// the receive time is never earlier than the answer left the server.
func TestKernelTimeNotBeforeAnswer(t *testing.T) {
	const hold = 3 * time.Millisecond
	slow := startApp(t, workload.Config{Kind: workload.KindStatic, Faults: workload.Faults{Delay: hold}})
	cfg := baseConfig(targets(t, false, "http://"+slow+"/"), 200, 2*time.Second)
	cfg.Connections = 4
	before := lazyAnswers.Load()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	lazy := lazyAnswers.Load() - before
	if res.Success != 400 || lazy < res.Success/2 {
		t.Fatalf("%d answers, %d of them read at the pacer's wake-ups: want 400, most", res.Success, lazy)
	}
	if low := time.Duration(res.ServiceTime.MinNs()); low < hold {
		t.Errorf("shortest service time %v: shorter than the %v the server held every answer", low, hold)
	}
	if low := time.Duration(res.Latency.MinNs()); low < hold {
		t.Errorf("shortest latency %v: shorter than the %v the server held every answer", low, hold)
	}
}

// TestDueRequestBeforeReads: at a pacer wake-up the due request leaves
// before the parked connections read what arrived while it slept. At
// 125/s (an 8-ms pacer period, answers read at its wake-ups) each answer
// here costs its connection 2 ms of CPU after it is read (a busy
// OnRequest) on one engine thread (load's --cpus 1), so were the reads
// first, every request would leave 2 ms late; the schedule lag shows it.
func TestDueRequestBeforeReads(t *testing.T) {
	testutil.Timing(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const busy = 2 * time.Millisecond
	static := startApp(t, workload.Config{Kind: workload.KindStatic})
	cfg := baseConfig(targets(t, false, "http://"+static+"/"), 125, time.Second)
	cfg.Connections = 4
	cfg.OnRequest = func(RequestRecord) {
		for t0 := time.Now(); time.Since(t0) < busy; {
		}
	}
	before := lazyAnswers.Load()
	res := mustRun(t, cfg)
	lazy := lazyAnswers.Load() - before
	if res.Success != 125 || lazy < res.Success/2 {
		t.Fatalf("%d answers, %d of them read at the pacer's wake-ups: want 125, most", res.Success, lazy)
	}
	p50 := time.Duration(res.ScheduleLag.Percentile(50))
	t.Logf("%d answers, %d read at the pacer's wake-ups; schedule lag p50 %v", res.Success, lazy, p50)
	if p50 > busy/2 {
		t.Errorf("schedule lag p50 %v with %v spent on each answer read: the reads went before the due request", p50, busy)
	}
}
