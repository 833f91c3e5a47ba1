package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
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
