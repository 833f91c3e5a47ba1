package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/kubemetrics"
	"github.com/meshbench/meshbench/internal/kubetest"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sample"
	"github.com/meshbench/meshbench/internal/testutil"
)

// TestRunWithKubeletCounters runs a cell whose CPU and memory come from
// the kubelet's counters, read through the real API server's node proxy.
// kwok emulates the kubelet's /metrics/resource (until the real test
// nodes land): every container's CPU counter grows at its pod's usage
// annotation (1m for a pod without one) and its working set is the
// annotated memory (1Mi), so the known answer is 2 app pods × 1m = 2m
// and 2 × 1Mi, exactly. metrics.k8s.io runs beside them (the
// cross-check), and its window summary and stale fraction are reported.
func TestRunWithKubeletCounters(t *testing.T) {
	kc := kubetest.Require(t)
	if !kc.NodeProxy {
		t.Skip("the test cluster's nodes are on 127.0.0.1, which the node proxy refuses (kubetest needs root to put them on lo)")
	}
	bin := testutil.BuildMeshbench(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 615))
	}))
	defer srv.Close()
	mo := mesh.DefaultOptions()
	mo.Replicas = 2
	out := filepath.Join(t.TempDir(), "run")
	o := Options{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig},
		Spec: Spec{RunID: "kubelet-run", AppNamespace: "mbk-app", LoadNamespace: "mbk-load", Mesh: mo},
		// 40 s: metrics-server shows a new pod only after two or three
		// 10 s scrapes, and its samples count only when their whole
		// window lies inside the measured window.
		Rate: "20", Workers: 1, Duration: 40 * time.Second, Warmup: time.Second, Connections: 2,
		SampleInterval: 3 * time.Second, Drain: 30 * time.Second, IdleTimeout: time.Minute, ReadyTimeout: time.Minute,
		OutDir: out, Version: "test", MetricsSource: SourceKubelet}
	o.BeforeCollect = kc.StandInWorkers(bin, srv.URL+"/", LoadContainer, nil)
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !res.Manifest.Valid {
		t.Errorf("run invalid: %q", res.Manifest.Invalid)
	}
	if res.Source != SourceKubelet || res.Manifest.Options["metrics_source"] != SourceKubelet || res.Manifest.Options["metrics_source_reason"] == "" {
		t.Errorf("source %q, manifest %v (%v); want kubelet with a reason", res.Source, res.Manifest.Options["metrics_source"], res.Manifest.Options["metrics_source_reason"])
	}
	app := res.Summary.Category(sample.CategoryApp)
	if app == nil {
		t.Fatalf("no app category in %+v", res.Summary.Categories)
	}
	// kwok's counters are exact: the interpolation only rounds.
	if got := app.CPUMillicores.Avg; math.Abs(got-2) > 0.01 {
		t.Errorf("app CPU %.4fm, want 2m (2 pods × 1m, by the counters over the window)", got)
	}
	if got := app.PSSBytes.Avg / (1 << 20); got != 2 {
		t.Errorf("app working set %.2f MiB, want 2", got)
	}
	// One interval per reading period over the 40 s window.
	if res.Summary.Rounds < 39 || res.Summary.Rounds > 41 || app.Rounds != res.Summary.Rounds {
		t.Errorf("%d intervals (app in %d), want 40", res.Summary.Rounds, app.Rounds)
	}
	if len(res.Nodes) != 2 {
		t.Errorf("node summaries %+v, want the 2 kwok nodes", res.Nodes)
	}
	c := res.Counters
	if c == nil || c.FreshReadings == 0 || c.Nodes != 2 || c.RoundCPUNs.Avg <= 0 || len(c.Resets) != 0 {
		t.Fatalf("counter report %+v, want fresh readings from 2 nodes, a measured cost, no reset", c)
	}
	for _, p := range c.Partial {
		if p.Category == sample.CategoryApp {
			t.Errorf("app container %s counted for part of the window only: it ran throughout", p.Key)
		}
	}
	// The drain ends on the first interval wholly after the load: about
	// one reading period, not metrics-server's two scrapes.
	if d := res.Drain; d.Ended != results.DrainIdle || d.Seconds > 10 {
		t.Errorf("drain %s (%+v), want idle within a few seconds", d, d)
	}
	// metrics.k8s.io over the same run, side by side.
	if res.MetricsAPI == nil || res.MetricsAPI.FreshPodSamples == 0 || res.MetricsAPI.StaleFraction < 0 || res.MetricsAPI.StaleFraction >= 1 {
		t.Errorf("metrics API report %+v, want fresh samples and a stale fraction", res.MetricsAPI)
	}
	if res.MetricsAPI != nil {
		apiApp := "-"
		if g := res.MetricsAPI.Summary.Category(sample.CategoryApp); g != nil {
			apiApp = formatMillicores(g.CPUMillicores.Avg)
		}
		t.Logf("app CPU: counters %.4fm; metrics.k8s.io %s (%d of %d pod samples stale, %.0f%%); sampler %.2f ms CPU per round with %d nodes (loaded machine)",
			app.CPUMillicores.Avg, apiApp, res.MetricsAPI.StalePodSamples, res.MetricsAPI.StalePodSamples+res.MetricsAPI.FreshPodSamples,
			res.MetricsAPI.StaleFraction*100, c.RoundCPUNs.Avg/1e6, c.Nodes)
	}
	// Raw data first: both raw files, and resources.json naming the
	// source; the counters' intervals rebuild from the raw file.
	f, err := os.Open(filepath.Join(out, KubeletRawFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := kubemetrics.ReadRaw(f)
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: %d records, %v", KubeletRawFile, len(recs), err)
	}
	w, err := kubemetrics.Window(recs, res.Load.StartedAt, res.Load.EndedAt, time.Second)
	if err != nil || math.Abs(sample.Summarize(w.Rounds).Category(sample.CategoryApp).CPUMillicores.Avg-app.CPUMillicores.Avg) > 1e-9 {
		t.Errorf("the window rebuilt from %s differs: %v", KubeletRawFile, err)
	}
	if _, err := os.Stat(filepath.Join(out, "metrics-raw.jsonl")); err != nil {
		t.Error(err)
	}
	var stored struct {
		Source   string            `json:"source"`
		Counters *CounterReport    `json:"counters"`
		API      *MetricsAPIReport `json:"metrics_api"`
	}
	b, err := os.ReadFile(filepath.Join(out, results.ResourcesFile))
	if err == nil {
		err = json.Unmarshal(b, &stored)
	}
	if err != nil || stored.Source != SourceKubelet || stored.Counters == nil || stored.API == nil {
		t.Errorf("resources.json: %v, source %q, counters %v, metrics_api %v", err, stored.Source, stored.Counters != nil, stored.API != nil)
	}
}

func formatMillicores(v float64) string {
	b, _ := json.Marshal(math.Round(v*100) / 100)
	return string(b) + "m"
}
