package local

import (
	"slices"
	"testing"
	"time"

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
