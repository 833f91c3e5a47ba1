package local

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/workload"
)

// TestAppArgs: the apps' workload options become `meshbench serve`
// flags, and the manifest records those set.
func TestAppArgs(t *testing.T) {
	exp, err := workload.ParseDistribution("exp:2ms")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		o     Options
		serve string
		want  []string
		opts  map[string]any
	}{
		// Nothing set: no flags, nothing recorded.
		{"none", Options{}, "static", nil, map[string]any{}},
		// A fixed delay: the known answer of hop timing.
		{"delay", Options{Settings: platform.Settings{AppFaults: workload.Faults{Delay: 5 * time.Millisecond}}}, "static",
			[]string{"--delay", "5ms"}, map[string]any{"app_delay": "5ms"}},
		// Errors with a status: static takes the status...
		{"errors static", Options{Settings: platform.Settings{AppFaults: workload.Faults{ErrorRatio: 0.1, ErrorStatus: 500, Seed: 3}}}, "static",
			[]string{"--error-ratio", "0.1", "--error-status", "500", "--seed", "3"},
			map[string]any{"app_error_ratio": 0.1, "app_error_status": 500, "app_seed": int64(3)}},
		// ...gRPC answers UNAVAILABLE and rejects --error-status.
		{"errors grpc", Options{Settings: platform.Settings{AppFaults: workload.Faults{ErrorRatio: 0.1, ErrorStatus: 500}}}, "grpc",
			[]string{"--error-ratio", "0.1"}, map[string]any{"app_error_ratio": 0.1, "app_error_status": 500}},
		// Random delay, stalls and the bound together.
		{"all", Options{Settings: platform.Settings{AppConcurrency: 4, AppServiceTime: 2 * time.Millisecond, AppFaults: workload.Faults{RandomDelay: exp, StallEvery: 2 * time.Second, StallFor: 100 * time.Millisecond}}}, "face",
			[]string{"--concurrency", "4", "--service-time", "2ms", "--delay-dist", "exp:2ms", "--stall-every", "2s", "--stall-for", "100ms"},
			map[string]any{"app_concurrency": 4, "app_service_time": "2ms", "app_delay_dist": "exp:2ms", "app_stall_every": "2s", "app_stall_for": "100ms"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.o.appArgs(tc.serve); !slices.Equal(got, tc.want) {
				t.Errorf("args %q, want %q", got, tc.want)
			}
			got := tc.o.appOptions()
			if len(got) != len(tc.opts) {
				t.Errorf("manifest options %v, want %v", got, tc.opts)
			}
			for k, v := range tc.opts {
				if got[k] != v {
					t.Errorf("manifest %s = %v (%T), want %v (%T)", k, got[k], got[k], v, v)
				}
			}
		})
	}
}

// TestRunRecordsAppDelay: a cell whose app delays every answer 3 ms
// records the waits the real app measured over the window beside the
// delay asked, and none of them ends before the 3 ms.
func TestRunRecordsAppDelay(t *testing.T) {
	o := labOptions(t, topology.ModeNone, 1, 37)
	o.AppFaults = workload.Faults{Delay: 3 * time.Millisecond}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	assertNothingLeft(t, res.Manifest)
	if got := res.Manifest.Options["app_delay"]; got != "3ms" {
		t.Errorf("app_delay %v, want 3ms", got)
	}
	ds, ok := res.Manifest.Options["app_delay_measured"].([]AppDelay)
	if !ok || len(ds) != 1 {
		t.Fatalf("app_delay_measured %#v: want one replica's", res.Manifest.Options["app_delay_measured"])
	}
	d := ds[0]
	// 100/s for 2 s after the warm-up; the window's edges may move a
	// few answers either way.
	if d.Answers < 150 || d.Answers > 250 {
		t.Errorf("%d answers measured, want about 200 (the window's)", d.Answers)
	}
	if m, err := time.ParseDuration(d.Min); err != nil || m < 3*time.Millisecond {
		t.Errorf("min %q: want at least 3ms (a wait never ends early)", d.Min)
	}
	if _, err := time.ParseDuration(d.P50); err != nil {
		t.Errorf("p50 %q: %v", d.P50, err)
	}
}
