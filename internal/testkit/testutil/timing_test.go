package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// timingProbeEnv makes TestTimingProbe call Timing: TestTimingLanes runs
// this test binary again with it set.
const timingProbeEnv = "MESHBENCH_TIMING_PROBE"

func TestTimingProbe(t *testing.T) {
	if os.Getenv(timingProbeEnv) != "1" {
		t.Skip("run by TestTimingLanes")
	}
	Timing(t)
}

// TestTimingLanes runs TestTimingProbe in a child per lane: skipped in the
// main and e2e lanes and under -short, measured (its lag logged) in the timing
// lane and when no lane is named.
func TestTimingLanes(t *testing.T) {
	for _, tc := range []struct {
		lane  string
		short bool
		want  string
	}{
		{"", false, "timer lag on this machine: p50 "},
		{LaneTiming, false, "timer lag on this machine: p50 "},
		{LaneMain, false, "SKIP: TestTimingProbe"},
		{LaneE2E, false, "SKIP: TestTimingProbe"},
		{LaneTiming, true, "SKIP: TestTimingProbe"},
	} {
		args := []string{"-test.run", "^TestTimingProbe$", "-test.v"}
		if tc.short {
			args = append(args, "-test.short")
		}
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = append(os.Environ(), timingProbeEnv+"=1", LaneEnv+"="+tc.lane)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("lane %q, short %v: %v, want %q in:\n%s", tc.lane, tc.short, err, tc.want, out)
		}
	}
}

func TestMeasureTimerLag(t *testing.T) {
	lag := MeasureTimerLag(t)
	if lag.P50 < 0 || lag.P50 > lag.P99 || lag.P99 > lag.Max {
		t.Errorf("lag %v: want 0 ≤ p50 ≤ p99 ≤ max", lag)
	}
}
