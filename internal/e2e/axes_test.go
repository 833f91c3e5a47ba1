package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// axesPlan crosses the factor axes a cluster takes on Istio's sidecars:
// proxy_threads [1, 2] × placement [same-node, cross-node], every cell
// with 1 KiB answers, a connection per request and Poisson arrivals (one
// value each: they add no cells). One short cell each.
const axesPlan = `platform: kube
repetitions: 1
axes:
  mesh: [sidecar]
  rate: [40]
  payload: [1024]
  proxy_threads: [1, 2]
  placement: [same-node, cross-node]
  requests_per_connection: [1]
  arrivals: [poisson]
duration: 5s
warmup: 1s
connections: 2
workers: 1
sample_interval: 10s
compare: [proxy_threads, placement]
`

// TestFactorAxesOnRealNodes runs axesPlan on the test cluster with
// Istio installed by the plan, and checks that each setting reached the
// pods: every app pod's Envoy reports the cell's worker threads itself
// (server.concurrency, k8s/proxy-threads-checks.json) and the load pod's
// sidecar was injected with them; the answers were 1024 bytes each (the
// load's bytes in per answer); the load pod ran beside the app pod
// (same-node) or on another node (cross-node) by the node names the cell
// recorded; the load opened a connection per request with Poisson
// arrivals (its own result says so). Then Istio's uninstall leaves the
// cluster as it was.
func TestFactorAxesOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	ib, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	env, err := envoy.Find(envoy.FindOptions{ProjectDir: "../.."})
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	c := connect(t, kc)
	before := clusterState(t, c)
	t.Cleanup(func() {
		uninstallIstio(t, ib, kc.Kubeconfig)
		sameState(t, before, clusterState(t, c))
	})
	loadIstioImages(t, kc, ib, env.Path)

	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(axesPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	inv := meshbench(t, nil, "bench", plan, "--seed", "7", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2x",
		"--install-mesh", "--istio-build", ib.Dir, "--envoy", env.Path)
	if inv.code != 0 {
		t.Errorf("bench: exit %d", inv.code)
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Order) != 4 {
		t.Errorf("%d cells, want 4 (2 thread counts × 2 placements)", len(m.Order))
	}
	for _, id := range m.Order {
		st := m.Cells[id]
		if st.State != results.CellDone || !st.Valid {
			t.Errorf("cell %s: %s, valid %v: %v %q", id, st.State, st.Valid, st.Invalid, st.Error)
			continue
		}
		cd := results.CellDir(out, id)
		threads := 1
		if strings.Contains(id, "-t2-") {
			threads = 2
		}
		// The app pods' Envoys, by their own stats.
		data, err := os.ReadFile(filepath.Join(cd, "k8s", "proxy-threads-checks.json"))
		if err != nil || strings.Contains(string(data), `"ok": false`) || !strings.Contains(string(data), `"ok": true`) {
			t.Errorf("%s: k8s/proxy-threads-checks.json: %v %s; want every check passed", id, err, data)
		}
		var man struct {
			Options struct {
				PodNodes struct {
					App, Load []string
					Threads   map[string]int `json:"injected_threads"`
				} `json:"pod_nodes"`
				Seen map[string]int `json:"proxy_threads_seen"`
			} `json:"options"`
		}
		raw, err := os.ReadFile(filepath.Join(cd, results.ManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &man); err != nil {
			t.Fatal(err)
		}
		o := man.Options
		if len(o.Seen) == 0 {
			t.Errorf("%s: no proxy_threads_seen", id)
		}
		for pod, n := range o.Seen {
			if n != threads {
				t.Errorf("%s: pod %s's Envoy runs %d worker threads, want %d", id, pod, n, threads)
			}
		}
		loadThreads := 0
		for pod, n := range o.PodNodes.Threads {
			if strings.HasPrefix(pod, "e2x-load/") {
				loadThreads++
				if n != threads {
					t.Errorf("%s: load pod %s's sidecar injected with %d threads, want %d", id, pod, n, threads)
				}
			}
		}
		if loadThreads != 1 {
			t.Errorf("%s: %d load pods with injected threads, want 1: %v", id, loadThreads, o.PodNodes.Threads)
		}
		// Placement by the nodes the pods ran on.
		app, load := o.PodNodes.App, o.PodNodes.Load
		beside := len(load) == 1 && slices.Contains(app, load[0])
		if want := strings.Contains(id, "-same-node-"); len(app) == 0 || len(load) != 1 || beside != want {
			t.Errorf("%s: app on %v, load on %v; want the load beside the app: %v", id, app, load, want)
		}
		// The answers' size, the connection per request, the arrivals.
		lr, err := results.ReadFile(filepath.Join(cd, results.LoadFile))
		if err != nil {
			t.Fatal(err)
		}
		if lr.Success == 0 || lr.BytesIn != 1024*lr.Success {
			t.Errorf("%s: %d bytes in over %d answers; want 1024 each", id, lr.BytesIn, lr.Success)
		}
		if lr.RequestsPerConnection != 1 || lr.Arrivals != "poisson" || lr.Seed == 0 {
			t.Errorf("%s: load result: %d requests per connection, arrivals %q seed %d; want 1, poisson, a seed", id, lr.RequestsPerConnection, lr.Arrivals, lr.Seed)
		}
	}
	checkClean(t, c, "e2x-app", "e2x-load")
}

// ambientThreadsPlan is ambient at proxy_threads 1 and 2, %s the mesh
// and threads; one short cell each.
const ambientThreadsPlan = `platform: kube
repetitions: 1
axes:
  mesh: [%s]
  rate: [40]
  proxy_threads: [%s]
duration: 3s
warmup: 1s
connections: 2
workers: 1
sample_interval: 10s
`

// TestAmbientThreadsOnRealNodes runs ambient at proxy_threads [1, 2] and
// waypoint at [2] (two plans on one Istio install) and checks that every
// node's ztunnel (the config its log printed at start) and the waypoint
// (its Envoy's server.concurrency) ran the cell's worker threads, that
// ztunnel's DaemonSet was rolled out for a new value only, and that after
// each plan the DaemonSet and its pods are as before (no
// ZTUNNEL_WORKER_THREADS, no note); then Istio's uninstall leaves the
// cluster as it was.
func TestAmbientThreadsOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	ib, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	env, err := envoy.Find(envoy.FindOptions{ProjectDir: "../.."})
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	c := connect(t, kc)
	before := clusterState(t, c)
	t.Cleanup(func() {
		uninstallIstio(t, ib, kc.Kubeconfig)
		sameState(t, before, clusterState(t, c))
	})
	loadIstioImages(t, kc, ib, env.Path)

	for _, tc := range []struct {
		mesh    string
		threads []int
	}{{"ambient", []int{1, 2}}, {"waypoint", []int{2}}} {
		dir := t.TempDir()
		plan := filepath.Join(dir, "plan.yaml")
		var list []string
		for _, n := range tc.threads {
			list = append(list, strconv.Itoa(n))
		}
		if err := os.WriteFile(plan, []byte(fmt.Sprintf(ambientThreadsPlan, tc.mesh, strings.Join(list, ", "))), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "out")
		inv := meshbench(t, nil, "bench", plan, "--seed", "7", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2z",
			"--install-mesh", "--istio-build", ib.Dir, "--envoy", env.Path)
		if inv.code != 0 {
			t.Errorf("%s bench: exit %d", tc.mesh, inv.code)
		}
		m, err := results.ReadPlanManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Order) != len(tc.threads) {
			t.Errorf("%s: %d cells, want %d", tc.mesh, len(m.Order), len(tc.threads))
		}
		prev := 0 // ztunnel's setting before the plan: unset
		for _, id := range m.Order {
			st := m.Cells[id]
			if st.State != results.CellDone || !st.Valid {
				t.Errorf("cell %s: %s, valid %v: %v %q", id, st.State, st.Valid, st.Invalid, st.Error)
				continue
			}
			cd := results.CellDir(out, id)
			threads := 1
			if strings.Contains(id, "-t2-") || strings.HasSuffix(id, "-t2-rep1") {
				threads = 2
			}
			data, err := os.ReadFile(filepath.Join(cd, "k8s", "proxy-threads-checks.json"))
			if err != nil || strings.Contains(string(data), `"ok": false`) || !strings.Contains(string(data), `"ok": true`) {
				t.Errorf("%s: k8s/proxy-threads-checks.json: %v %s; want every check passed", id, err, data)
			}
			var man struct {
				Options struct {
					Seen   map[string]int `json:"proxy_threads_seen"`
					Change *struct {
						From, To string
						Seconds  float64 `json:"rollout_seconds"`
					} `json:"ztunnel_threads_change"`
				} `json:"options"`
			}
			raw, err := os.ReadFile(filepath.Join(cd, results.ManifestFile))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &man); err != nil {
				t.Fatal(err)
			}
			zt, wp := 0, 0
			for pod, n := range man.Options.Seen {
				switch {
				case strings.HasPrefix(pod, kube.IstioNamespace+"/ztunnel-"):
					zt++
				case strings.HasPrefix(pod, "e2z-app/waypoint-"):
					wp++
				default:
					t.Errorf("%s: threads seen of pod %s", id, pod)
				}
				if n != threads {
					t.Errorf("%s: %s runs %d worker threads, want %d", id, pod, n, threads)
				}
			}
			if zt != len(kc.Real.Nodes) || (tc.mesh == "waypoint") != (wp > 0) {
				t.Errorf("%s: threads seen of %d ztunnels and %d waypoints, want %d and waypoint mode %v: %v", id, zt, wp, len(kc.Real.Nodes), tc.mesh == "waypoint", man.Options.Seen)
			}
			// A rollout for a new value only.
			if ch := man.Options.Change; (ch != nil) != (threads != prev) || ch != nil && ch.To != strconv.Itoa(threads) {
				t.Errorf("%s: ztunnel change %+v, want one to %d only when it ran %d before", id, ch, threads, prev)
			} else if ch != nil {
				t.Logf("%s: ztunnel rolled out to %s threads in %.1fs (shared)", id, ch.To, ch.Seconds)
			}
			prev = threads
		}
		// Nothing left changed: the DaemonSet and its pods as before.
		ds, err := c.Core.AppsV1().DaemonSets(kube.IstioNamespace).Get(context.Background(), "ztunnel", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ds.Annotations[kube.ZtunnelThreadsBefore]; ok {
			t.Errorf("%s: ztunnel DaemonSet still has %s after the plan", tc.mesh, kube.ZtunnelThreadsBefore)
		}
		pods, err := c.Core.CoreV1().Pods(kube.IstioNamespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app=ztunnel"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range append([]corev1.PodSpec{ds.Spec.Template.Spec}, podSpecs(pods.Items)...) {
			for _, ct := range p.Containers {
				for _, e := range ct.Env {
					if e.Name == kube.ZtunnelThreadsEnv {
						t.Errorf("%s: ztunnel still has %s=%s after the plan", tc.mesh, e.Name, e.Value)
					}
				}
			}
		}
		if !strings.Contains(inv.stderr, "ztunnel's worker threads restored") {
			t.Errorf("%s: stderr does not say ztunnel's threads were restored", tc.mesh)
		}
		checkClean(t, c, "e2z-app", "e2z-load")
	}
}

func podSpecs(pods []corev1.Pod) []corev1.PodSpec {
	var out []corev1.PodSpec
	for _, p := range pods {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Spec)
		}
	}
	return out
}
