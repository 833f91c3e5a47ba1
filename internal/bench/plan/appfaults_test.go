package plan

import (
	"strings"
	"testing"
	"time"
)

// TestAppFaults: the apps' workload options from a file and from flags,
// written back by YAML and read again to an equal plan.
func TestAppFaults(t *testing.T) {
	p, err := Parse("a.yaml", []byte("app_delay: 2ms\napp_delay_dist: exp:1ms\napp_error_ratio: 0.01\napp_error_status: 500\n"+
		"app_stall_every: 2s\napp_stall_for: 100ms\napp_seed: 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := p.AppFaults
	if f.Delay != 2*time.Millisecond || f.RandomDelay.String() != "exp:1ms" || f.ErrorRatio != 0.01 || f.ErrorStatus != 500 ||
		f.StallEvery != 2*time.Second || f.StallFor != 100*time.Millisecond || f.Seed != 7 {
		t.Fatalf("faults %+v", f)
	}
	y := string(p.YAML())
	for _, want := range []string{"app_delay: 2ms\n", "app_delay_dist: exp:1ms\n", "app_error_ratio: 0.01\n", "app_error_status: 500\n",
		"app_stall_every: 2s\n", "app_stall_for: 100ms\n", "app_seed: 7\n"} {
		if !strings.Contains(y, want) {
			t.Errorf("YAML lacks %q:\n%s", want, y)
		}
	}
	back, err := Parse("back.yaml", []byte(y))
	if err != nil || back.AppFaults.Delay != f.Delay || back.AppFaults.RandomDelay.String() != "exp:1ms" || back.AppFaults.Seed != 7 {
		t.Errorf("read back: %+v %v", back.AppFaults, err)
	}
	fp, err := FromFlags(Flags{AppDelay: "5ms", AppErrorRatio: "0.5"})
	if err != nil || fp.AppFaults.Delay != 5*time.Millisecond || fp.AppFaults.ErrorRatio != 0.5 {
		t.Errorf("flags: %+v %v", fp.AppFaults, err)
	}
	hp, err := Parse("h.yaml", []byte("hops: true\n"))
	if err != nil || !hp.Hops || !strings.Contains(string(hp.YAML()), "\nhops: true\n") {
		t.Errorf("hops: %+v %v", hp, err)
	}
	// Without any: nothing written.
	if d := string(Defaults().YAML()); strings.Contains(d, "app_") {
		t.Errorf("default plan writes app keys:\n%s", d)
	}
}

func TestAppFaultProblems(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		flags      *Flags
		want       []string
	}{
		// A negative delay and a distribution the app cannot draw from.
		{"delay", "app_delay: -1ms\napp_delay_dist: poisson:1ms\n", nil, []string{
			`f.yaml:1: app_delay "-1ms": allowed: a duration of 0 or more such as 0s, 2s or 500ms`,
			`f.yaml:2: app_delay_dist "poisson:1ms": allowed: uniform:MIN,MAX, exp:MEAN or normal:MEAN,STDDEV (durations, each at most 1h)`}},
		// Ratios above 1 and statuses that are not errors.
		{"errors", "app_error_ratio: 1.5\napp_error_status: 200\n", nil, []string{
			`f.yaml:1: app_error_ratio "1.5": allowed: a fraction of requests, 0 to 1`,
			`f.yaml:2: app_error_status "200": allowed: an HTTP error status, 400 to 599`}},
		// A stall without its period, checked as serve checks it.
		{"stall", "app_stall_for: 100ms\n", nil, []string{
			`f.yaml:1: app_stall_for 100ms: needs app_stall_every too (the stall period)`}},
		// The cluster runs its own images.
		{"kube", "platform: kube\napp_delay: 1ms\n", nil, []string{
			`f.yaml:2: app_delay: only on platform local (the lab's own app)`}},
		// hop timing: a boolean, and the lab's only.
		{"hops", "hops: yes please\n", nil, []string{`f.yaml:1: hops "yes please": allowed: true, false`}},
		{"hops kube", "platform: kube\nhops: true\n", nil, []string{
			`f.yaml:2: hops "true": allowed on platform kube: false (the lab's Envoys only; see the README for Istio's Telemetry API)`}},
		// Flags name their flag.
		{"flag", "", &Flags{AppSeed: "x"}, []string{`--app-seed "x": allowed: an integer (0: a random seed)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.flags != nil {
				_, err = FromFlags(*tc.flags)
			} else {
				_, err = Parse("f.yaml", []byte(tc.yaml))
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got := err.Error(); got != strings.Join(tc.want, "\n") {
				t.Errorf("problems:\n%s\nwant:\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}
