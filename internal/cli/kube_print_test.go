package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
)

// TestPrintKubeRunSamplingNotes: the kube run's printout says, in plain
// words, how many metrics samples were stale, in how many rounds only
// some pods had a new sample (MixedRounds), and how the drain ended.
func TestPrintKubeRunSamplingNotes(t *testing.T) {
	var out bytes.Buffer
	res := &kube.Result{Dir: "results/x", Manifest: &results.RunManifest{Valid: true},
		Summary: sample.Summary{Rounds: 3}, StalePods: 4, StaleNodes: 1, MixedRounds: 2,
		Drain: results.Drain{Ended: results.DrainMaximum, Seconds: 60, MaxSeconds: 60, AppPods: 2, AppPodsSampled: 1}}
	printKubeRun(&Env{Stdout: &out}, topology.DefaultOptions(), res)
	for _, want := range []string{
		"Metrics samples seen again (stale, not counted twice): 4 pod, 1 node.\n",
		"Metrics rounds where only some pods had a new sample: 2 (those rounds' totals leave out the pods whose sample was old).\n",
		"Drain: maximum of 1m0s reached before the app was seen idle again (1 of 2 app pods had a sample taken wholly after the load's end).\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
}

// TestPrintKubeRunCounters: with the kubelet's counters the printout
// names the source, the readings without new information, the counters'
// age, the sampler's cost, every reset and partial container, and what
// metrics.k8s.io said beside them.
func TestPrintKubeRunCounters(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	app := sample.GroupSummary{Name: sample.CategoryApp, Category: sample.CategoryApp,
		Figures: sample.Figures{Rounds: 60, CPUMillicores: sample.Stats{Avg: 250}}}
	apiApp := app
	apiApp.CPUMillicores.Avg = 240
	res := &kube.Result{Dir: "results/x", Manifest: &results.RunManifest{Valid: true},
		Load:   &results.LoadResult{StartedAt: t0, EndedAt: t0.Add(time.Minute)},
		Source: kube.SourceKubelet, SourceReason: "auto: nodes/proxy get allowed and /metrics/resource answers",
		Summary: sample.Summary{Rounds: 60, Categories: []sample.GroupSummary{app}},
		Counters: &sample.CounterReport{PeriodNs: int64(time.Second), FreshReadings: 300, StaleReadings: 700,
			Lag:        sample.CounterLag{Samples: 1000, Median: 4200 * time.Millisecond, Max: 14900 * time.Millisecond},
			RoundCPUNs: sample.Stats{Avg: 2.4e6, Max: 5.1e6}, Nodes: 2,
			Resets:  []sample.CounterReset{{Key: "app/web-0/web", Node: "node-1", Time: t0.Add(20 * time.Second), From: 12.5, To: 0.25}},
			Partial: []sample.ContainerWindow{{Key: "app/web-0/web", From: t0, To: t0.Add(19 * time.Second)}}},
		MetricsAPI: &sample.MetricsAPIReport{Summary: sample.Summary{Categories: []sample.GroupSummary{apiApp}},
			FreshPodSamples: 7, StalePodSamples: 13, StaleFraction: 0.65},
		Drain: results.Drain{Ended: results.DrainIdle, Seconds: 2, MaxSeconds: 60, AppCPUMillicores: 2, IdleMillicores: 20}}
	var out bytes.Buffer
	printKubeRun(&Env{Stdout: &out}, topology.DefaultOptions(), res)
	for _, want := range []string{
		"Resources from the kubelet's counters (auto: nodes/proxy get allowed and /metrics/resource answers).\n",
		"CPU by the kubelet's cumulative counters over 60 equal intervals",
		"Counter readings: 300 new, 700 with no new information (their timestamp had not advanced); counter age when read: median 4.2s, max 14.9s.\n",
		"Sampler: every 1s, 2 node(s), 2.4 ms CPU per round on average (max 5.1 ms); 0 failed read(s).\n",
		"Counter reset: app/web-0/web on node-1 at 07:00:20 (12.500 → 0.250 core-seconds): the container restarted;",
		"Counted for part of the window only: app/web-0/web, 07:00:00 to 07:00:19 of 07:00:00 to 07:01:00",
		"metrics.k8s.io over the same run (cross-check): app CPU 240.0m (counters: 250.0m); 13 of 20 pod samples stale (65%).\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "Metrics rounds where only some pods") {
		t.Errorf("metrics.k8s.io's round notes printed for a counter run:\n%s", out.String())
	}
}
