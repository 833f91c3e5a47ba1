package kube

import (
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// TestAppIdleAfter: the drain's rule. The app is idle again once every
// app pod has a sample taken wholly after the load's end and the newest
// of them sum under the idle gate's threshold (10m per app pod unless
// given); samples of other categories never count.
func TestAppIdleAfter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0).UTC()
	s := func(name, category string, sec int, cpu float64) sample.Sample {
		return sample.Sample{Target: sample.Target{Name: name, Category: category}, Time: t0.Add(time.Duration(sec) * time.Second), CPUMillicores: cpu}
	}
	a := func(sec int, cpu float64) sample.Sample {
		return s("mb-app/static-a/static", sample.CategoryApp, sec, cpu)
	}
	b := func(sec int, cpu float64) sample.Sample {
		return s("mb-app/static-b/static", sample.CategoryApp, sec, cpu)
	}
	proxyA := func(sec int, cpu float64) sample.Sample {
		return s("mb-app/static-a/istio-proxy", sample.CategoryDataPlane, sec, cpu)
	}
	round := func(xs ...sample.Sample) sample.Round { return sample.Round{Samples: xs} }
	// The run saw both pods busy during the load.
	all := []sample.Round{round(a(10, 300), b(10, 310), proxyA(10, 400))}
	tests := []struct {
		name      string
		after     []sample.Round // samples wholly after the load's end
		threshold float64
		want      idleState
	}{
		// No sample after the load's end yet: not idle, nothing summed.
		{"nothing yet", nil, 0, idleState{pods: 2, limitMillicores: 20}},
		// One pod idle, the other not sampled since (scraped later): wait.
		{"one pod of two", []sample.Round{round(a(40, 1))}, 0,
			idleState{pods: 2, sampled: 1, cpuMillicores: 1, limitMillicores: 20, sampleTime: t0.Add(40 * time.Second)}},
		// Both sampled, in different rounds (a mixed round): 1m + 2m < 20m.
		{"both, two rounds", []sample.Round{round(a(40, 1)), round(b(45, 2))}, 0,
			idleState{idle: true, pods: 2, sampled: 2, cpuMillicores: 3, limitMillicores: 20, sampleTime: t0.Add(45 * time.Second)}},
		// Still busy after the load (retries, a queue draining): not idle.
		{"still busy", []sample.Round{round(a(40, 15), b(40, 15))}, 0,
			idleState{pods: 2, sampled: 2, cpuMillicores: 30, limitMillicores: 20, sampleTime: t0.Add(40 * time.Second)}},
		// The newest sample of each container counts: busy, then idle.
		{"busy then idle", []sample.Round{round(a(40, 15), b(40, 15)), round(a(55, 2), b(55, 3))}, 0,
			idleState{idle: true, pods: 2, sampled: 2, cpuMillicores: 5, limitMillicores: 20, sampleTime: t0.Add(55 * time.Second)}},
		// A busy sidecar does not keep the app from idling.
		{"busy proxy", []sample.Round{round(a(40, 1), b(40, 1), proxyA(40, 500))}, 0,
			idleState{idle: true, pods: 2, sampled: 2, cpuMillicores: 2, limitMillicores: 20, sampleTime: t0.Add(40 * time.Second)}},
		// A threshold given for the whole app replaces 10m per pod.
		{"given threshold", []sample.Round{round(a(40, 3), b(40, 3))}, 5,
			idleState{pods: 2, sampled: 2, cpuMillicores: 6, limitMillicores: 5, sampleTime: t0.Add(40 * time.Second)}},
	}
	// A pod a fault deleted (kill:sidecar) is never sampled again: the
	// others' samples decide.
	if got, want := appIdleAfter(all, []sample.Round{round(a(40, 1))}, 0, "mb-app/static-b"),
		(idleState{idle: true, pods: 1, sampled: 1, cpuMillicores: 1, limitMillicores: 10, sampleTime: t0.Add(40 * time.Second)}); got != want {
		t.Errorf("one pod deleted by a fault: %+v, want %+v", got, want)
	}
	for _, tt := range tests {
		if got := appIdleAfter(all, tt.after, tt.threshold); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	// No app pod sampled at all: never idle (nothing shows it).
	if got := appIdleAfter(nil, nil, 0); got.idle || got.pods != 0 {
		t.Errorf("no app samples: %+v", got)
	}
}
