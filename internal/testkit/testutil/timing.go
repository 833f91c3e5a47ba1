package testutil

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/sys/precise"
)

// LaneEnv names the test lane a test process runs in (docs/testing.md).
// `go test ./...` runs packages side by side, so a timing-sensitive test
// (a known capacity, coordinated omission, a closed loop's rate, hop
// timing, CPU readings: a verdict that depends on how promptly this
// machine runs it) would share the cores with the heavy ones (real nodes,
// istiod). `make test` therefore runs three lanes one after the other:
//
//   - LaneMain: every package but internal/e2e side by side; Timing skips
//     its tests.
//   - LaneE2E: internal/e2e alone (real nodes, whose runs must meet their
//     rate); Timing skips its tests too, since the timing lane runs them.
//   - LaneTiming: only the tests that call Timing (hack/lanes finds them),
//     one package at a time, nothing else of the suite beside them.
//
// Unset (a plain `go test`), every test runs.
const LaneEnv = "MESHBENCH_TEST_LANE"

// The lanes LaneEnv names.
const (
	LaneMain   = "main"
	LaneE2E    = "e2e"
	LaneTiming = "timing"
)

// Timer-lag measurement: LagSleeps sleeps of LagSleep each, about a
// second in all; the 99th percentile is then the 10th latest wake.
const (
	LagSleep  = time.Millisecond
	LagSleeps = 1000
)

// Lag is how late this machine woke a sleeping goroutine: the time past
// the sleep asked for, over LagSleeps sleeps of LagSleep on the kernel's
// high-resolution timer (precise.Sleep: the timerfd the load engine's
// pacer and the app's service time sleep on). Tens of µs at the median
// on a quiet machine; milliseconds when other work at the same priority
// shares the cores.
type Lag struct {
	P50, P99, Max time.Duration
}

func (l Lag) String() string {
	return fmt.Sprintf("p50 %v, p99 %v, max %v over %d sleeps of %v",
		l.P50.Round(time.Microsecond), l.P99.Round(time.Microsecond), l.Max.Round(time.Microsecond), LagSleeps, LagSleep)
}

// Timing marks t as timing-sensitive: the first statement of a top-level
// test function, where hack/lanes finds it. It skips t under -short
// (`make check`) and in the main lane (`make test` runs it in the timing
// lane). Otherwise it measures the machine's timer lag now, logs it (so
// a failure shows how busy the machine was) and returns it for the
// bounds that depend on it.
func Timing(t testing.TB) Lag {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatalf("testutil.Timing called in subtest %s: call it in the top-level test, where hack/lanes finds it", t.Name())
	}
	if testing.Short() {
		t.Skip("timing-sensitive: not under -short; `make test` runs it in the timing lane (make test-timing)")
	}
	if lane := os.Getenv(LaneEnv); lane == LaneMain || lane == LaneE2E {
		t.Skip("timing-sensitive: `make test` runs it in the timing lane, alone (make test-timing)")
	}
	lag := MeasureTimerLag(t)
	t.Logf("timer lag on this machine: %v", lag)
	return lag
}

// MeasureTimerLag sleeps LagSleeps times for LagSleep and returns how late
// the wakes came.
func MeasureTimerLag(t testing.TB) Lag {
	t.Helper()
	late := make([]time.Duration, 0, LagSleeps)
	for range LagSleeps {
		t0 := time.Now()
		if err := precise.Sleep(context.Background(), LagSleep); err != nil {
			t.Fatalf("measuring the timer lag: %v", err)
		}
		late = append(late, max(time.Since(t0)-LagSleep, 0))
	}
	slices.Sort(late)
	return Lag{P50: late[len(late)/2], P99: late[len(late)*99/100], Max: late[len(late)-1]}
}
