package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kubetest"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/sample"
	"github.com/meshbench/meshbench/internal/testutil"
)

// TestRunAgainstCluster runs a whole cell (mesh none, static app, 2
// replicas, 2 load workers) on the real API server with kwok nodes and
// metrics-server: namespaces and objects created and labelled, the app
// rolled out, metrics sampled and classified from kwok's numbers, the Job
// run with the right parallelism, the workers' logs collected and merged,
// and everything deleted.
//
// kwok runs no container. The stand-in, and the only one: once the Job's
// pods have completed, the test runs the two workers (real `meshbench
// load` processes, with the Job's worker flags) against an HTTP server on
// loopback and has kwok serve their output as the pods' logs; the run
// reads them through the API as it would on a cluster.
func TestRunAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	bin := testutil.BuildMeshbench(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 615))
	}))
	defer srv.Close()

	const appNS, loadNS = "mbr-app", "mbr-load"
	mo := mesh.DefaultOptions()
	mo.Replicas = 2
	out := filepath.Join(t.TempDir(), "run")
	var workerArgs [][]string
	o := Options{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig},
		Spec: Spec{RunID: "test-run", AppNamespace: appNS, LoadNamespace: loadNS, Mesh: mo},
		Rate: "40", Workers: 2, Duration: 24 * time.Second, Warmup: time.Second, Connections: 4,
		SampleInterval: 3 * time.Second, Drain: 45 * time.Second, IdleTimeout: time.Minute, ReadyTimeout: time.Minute,
		OutDir: out, Version: "test",
		// metrics.k8s.io's path: the kubelet's counters have their own
		// test (TestRunWithKubeletCounters).
		MetricsSource: SourceMetricsAPI}
	o.BeforeCollect = kc.StandInWorkers(bin, srv.URL+"/", LoadContainer, func(args []string) { workerArgs = append(workerArgs, args) })
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !res.Manifest.Valid {
		t.Errorf("run invalid: %q", res.Manifest.Invalid)
	}
	if res.Manifest.Platform != "kube" || res.Source != SourceMetricsAPI || res.Manifest.Options["metrics_source"] != SourceMetricsAPI {
		t.Errorf("platform %q, source %q (manifest %v)", res.Manifest.Platform, res.Source, res.Manifest.Options["metrics_source"])
	}

	// The Job as created: two indexed workers, each with half the rate.
	job, err := os.ReadFile(filepath.Join(out, "k8s", "load-job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"parallelism: 2", "completions: 2", "completionMode: Indexed", LabelRun + ": test-run", "--workers"} {
		if !bytes.Contains(job, []byte(want)) {
			t.Errorf("load Job has no %q:\n%s", want, job)
		}
	}
	if len(workerArgs) != 2 {
		t.Fatalf("worker args %v", workerArgs)
	}

	// Merged exactly: both workers' requests, at the whole rate.
	lr := res.Load
	if lr == nil || lr.Workers != 2 {
		t.Fatalf("load result %+v, want 2 workers merged", lr)
	}
	if lr.Success < 900 || lr.Success > 1000 || lr.Success != lr.Completed {
		t.Errorf("merged %d successes of %d completed, want about 40/s × 24 s = 960, all 200", lr.Success, lr.Completed)
	}
	if r := lr.AchievedRatePerSec(); r < 38 || r > 42 {
		t.Errorf("achieved %.1f/s, want about 40", r)
	}
	for _, f := range []string{results.ManifestFile, results.LoadFile, results.SamplesFile, results.ResourcesFile, "metrics-raw.jsonl", "k8s/app.yaml", "k8s/mesh-checks.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("results: %v", err)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(out, results.LogsDir, "load-*.log"))
	if len(logs) != 2 {
		t.Errorf("worker logs kept: %v", logs)
	}
	// Each worker's result says which share it is; the merge has none.
	indexes := map[int]bool{}
	for _, l := range logs {
		b, _ := os.ReadFile(l)
		if wr, err := parseWorkerLog(b); err != nil || wr.Worker == nil || wr.Worker.Count != 2 {
			t.Errorf("worker log %s: %v, worker %+v; want a share of 2", l, err, wr)
		} else {
			indexes[wr.Worker.Index] = true
		}
	}
	if !indexes[0] || !indexes[1] || lr.Worker != nil {
		t.Errorf("worker indexes %v, merged worker %+v; want 0 and 1, none", indexes, lr.Worker)
	}

	// Metrics: kwok's numbers, classified: the app's two pods at kwok's
	// default usage (usage-from-annotation: 1m and 1Mi a pod without the
	// annotations), inside the measured window. Other usages are checked
	// by TestMetricsSamplerAgainstCluster.
	app := res.Summary.Category(sample.CategoryApp)
	if app == nil {
		t.Fatalf("no app category in %+v", res.Summary.Categories)
	}
	if got := app.CPUMillicores.Avg; got < 1.9 || got > 2.1 {
		t.Errorf("app CPU %.2fm, want 2m (2 pods × 1m)", got)
	}
	if got := app.PSSBytes.Avg / (1 << 20); got != 2 {
		t.Errorf("app memory %.2f MiB, want 2 (2 × 1Mi working set)", got)
	}
	var comp *sample.GroupSummary
	for i := range res.Summary.Components {
		if res.Summary.Components[i].Name == "app static" {
			comp = &res.Summary.Components[i]
		}
	}
	if comp == nil {
		t.Errorf("no component \"app static\" in %+v", res.Summary.Components)
	}

	// Per node: both kwok nodes, from fresh node samples in the window.
	if len(res.Nodes) != 2 {
		t.Errorf("node summaries %+v, want the 2 kwok nodes", res.Nodes)
	}

	// The drain: kwok's app is idle (2m < 20m) all along, so it ends as
	// soon as both app pods have a sample whose whole window lies after
	// the load's end: within two metrics-server scrapes (10 s here) and a
	// polling period, well before its 45 s maximum. Recorded in the
	// manifest and resources.json alike.
	d := res.Manifest.Drain
	if d == nil || d.Ended != results.DrainIdle || d.AppPods != 2 || d.AppPodsSampled != 2 || d.AppCPUMillicores >= d.IdleMillicores ||
		d.IdleMillicores != 20 || d.Seconds <= 0 || d.Seconds >= 45 || d.MaxSeconds != 45 || !d.LoadEnded.Equal(lr.EndedAt) {
		t.Errorf("drain %+v, want ended idle within 45 s, 2 of 2 app pods, under 20m, load end %v", d, lr.EndedAt)
	} else if !d.SampleTime.After(d.LoadEnded.Add(5 * time.Second)) {
		// A whole window (10 s) after the load's end.
		t.Errorf("drain ended on a sample of %v, load ended %v: not a window after it", d.SampleTime, d.LoadEnded)
	}
	t.Logf("drain: %s", d)
	var stored struct {
		Drain results.Drain `json:"drain"`
	}
	b, err := os.ReadFile(filepath.Join(out, results.ResourcesFile))
	if err == nil {
		err = json.Unmarshal(b, &stored)
	}
	if got, want := mustJSON(t, stored.Drain), mustJSON(t, d); err != nil || got != want {
		t.Errorf("resources.json drain %s (%v), want the manifest's %s", got, err, want)
	}
	if m, err := results.ReadManifest(out); err != nil || m.Drain == nil || m.Drain.Ended != results.DrainIdle {
		t.Errorf("manifest.json drain: %v, %+v", err, m)
	}
	var drainPhase *results.Phase
	for i, p := range res.Manifest.Phases {
		if p.Name == "drain" {
			drainPhase = &res.Manifest.Phases[i]
		}
	}
	if drainPhase == nil || drainPhase.Ended.Sub(drainPhase.Started) >= 45*time.Second {
		t.Errorf("drain phase %+v, want shorter than its maximum", drainPhase)
	}

	// Everything it created is gone.
	cs, _ := clusterClients(t, kc)
	for _, ns := range []string{appNS, loadNS} {
		if _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s still there after the run: %v", ns, err)
		}
	}
}

// TestRunRefusesNamespaceInUse: a target namespace holding a Deployment
// meshbench did not create stops the run before anything is created.
func TestRunRefusesNamespaceInUse(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)
	const ns = "mbx-app"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, ns) })
	d := testDeployment(ns, "someones-app", 1, map[string]string{"app": "theirs"}, "1m", "1Mi", "main")
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	_, err := Run(ctx, Options{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig},
		Spec: Spec{RunID: "refused", AppNamespace: ns, LoadNamespace: "mbx-load", Mesh: mesh.DefaultOptions()},
		Rate: "10", Duration: time.Second, OutDir: out})
	var inUse *NamespaceInUseError
	if !errors.As(err, &inUse) || !strings.Contains(err.Error(), "deployment/someones-app") {
		t.Fatalf("run in a namespace in use: %v, want a NamespaceInUseError naming deployment/someones-app", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its results directory")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "mbx-load", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused run created the load namespace: %v", err)
	}
}

// TestDoctorAgainstCluster: every check passes on the healthy test
// cluster (the mesh CLIs are not installed here: warnings), and with the
// metrics API gone the metrics check fails and says what to install.
func TestDoctorAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	o := DoctorOptions{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig}, Nodes: 2, Namespaces: []string{"mbd-app", "mbd-load"}}
	checks, c := Doctor(ctx, o)
	if c == nil {
		t.Fatalf("no cluster: %+v", checks)
	}
	byName := map[string]DoctorCheck{}
	for _, ch := range checks {
		byName[ch.Name] = ch
		if !ch.OK && !ch.Warn {
			t.Errorf("healthy cluster: %s failed: %s", ch.Name, ch.Detail)
		}
	}
	for _, n := range []string{"API server reachable", "metrics API (metrics.k8s.io)", "resource source", "nodes", "istioctl", "linkerd", "namespaces free", "RBAC"} {
		if _, ok := byName[n]; !ok {
			t.Errorf("no check %q in %+v", n, checks)
		}
	}
	// The test cluster's node proxy reaches kwok's emulated kubelet
	// endpoint: a run would read the counters.
	if src := byName["resource source"]; !src.OK || !strings.Contains(src.Detail, "the kubelet's counters") {
		t.Errorf("resource source check %+v, want the kubelet's counters", src)
	}
	// Break the metrics API (put back afterwards: other tests use it).
	saved, err := kc.Kubectl(ctx, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Kubectl(ctx, "delete", "apiservice", "v1beta1.metrics.k8s.io"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Put it back as it was, less what the server owns.
		var obj map[string]any
		if err := json.Unmarshal(saved, &obj); err != nil {
			t.Fatal(err)
		}
		delete(obj, "status")
		md, _ := obj["metadata"].(map[string]any)
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
			delete(md, k)
		}
		back, _ := json.Marshal(obj)
		if _, err := kc.KubectlStdin(context.Background(), back, "create", "-f", "-"); err != nil {
			t.Errorf("restoring the metrics APIService: %v", err)
		}
	}()
	var metrics DoctorCheck
	deadline := time.Now().Add(30 * time.Second)
	apiOnly := o
	apiOnly.MetricsSource = SourceMetricsAPI
	for time.Now().Before(deadline) {
		checks, _ = Doctor(ctx, apiOnly)
		for _, ch := range checks {
			if ch.Name == "metrics API (metrics.k8s.io)" {
				metrics = ch
			}
		}
		if !metrics.OK && !metrics.Warn {
			break
		}
		time.Sleep(time.Second)
	}
	// Failed, not merely warned (an empty but served API warns), and it
	// says what is missing.
	if metrics.OK || metrics.Warn || !strings.Contains(metrics.Detail, "not available") || !strings.Contains(metrics.Detail, "metrics-server") {
		t.Errorf("metrics API gone: check %+v, want failed as not available, naming metrics-server", metrics)
	}
	// With the kubelet's counters readable (auto), metrics.k8s.io is only
	// the cross-check: its absence warns.
	checks, _ = Doctor(ctx, o)
	for _, ch := range checks {
		if ch.Name == "metrics API (metrics.k8s.io)" && (ch.OK || !ch.Warn || !strings.Contains(ch.Detail, "only the cross-check")) {
			t.Errorf("metrics API gone, counters readable: check %+v, want a warning", ch)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
