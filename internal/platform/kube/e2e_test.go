//go:build e2e

package kube

// The end-to-end recipe on a real cluster (k3d or kind; README, "End to
// end on a real cluster"). It is built only with the e2e tag and needs a
// cluster that runs containers, which the test cluster of the other
// tests (kwok) does not:
//
//	KUBECONFIG=~/.kube/config MESHBENCH_E2E_MESHES=none,sidecar,ambient \
//	  go test -tags e2e ./internal/platform/kube/ -run E2E -v -timeout 60m
//
// Environment:
//
//	KUBECONFIG               the cluster (required)
//	MESHBENCH_E2E_MESHES     meshes to run, in this order (default: none)
//	MESHBENCH_E2E_INSTALL    1: install each mesh with its CLI (run --install-mesh);
//	                         otherwise the installed mesh is verified
//	MESHBENCH_IMAGE          meshbench's image (default DefaultImage, as `make image` tags it)
//	MESHBENCH_E2E_DURATION   measured window per mesh (default 45s)
//	MESHBENCH_E2E_OUT        where results go (default: a temporary directory, kept on failure)

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/bench/plan"
	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/results"
)

// e2eRate and e2eWorkers are the load of every cell: 100/s over two load
// pods (50/s each).
const (
	e2eRate    = 100.0
	e2eWorkers = 2
)

// TestE2E runs one short cell per mesh on a real cluster and checks what
// a user relies on: the run is valid; the merged load result holds both
// workers and reaches the rate; the metrics tables have app and load rows
// (and data-plane rows for a mesh); the run's namespaces are gone
// afterwards.
func TestE2E(t *testing.T) {
	if os.Getenv("KUBECONFIG") == "" {
		t.Fatal("KUBECONFIG is not set: the e2e test needs a real cluster (see the README, \"End to end on a real cluster\")")
	}
	meshes := []string{"none"}
	if v := os.Getenv("MESHBENCH_E2E_MESHES"); v != "" {
		meshes = strings.Split(v, ",")
	}
	install := os.Getenv("MESHBENCH_E2E_INSTALL") == "1"
	image := os.Getenv("MESHBENCH_IMAGE")
	duration := 45 * time.Second
	if v := os.Getenv("MESHBENCH_E2E_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("MESHBENCH_E2E_DURATION %q: want a positive duration like 45s", v)
		}
		duration = d
	}
	outRoot := os.Getenv("MESHBENCH_E2E_OUT")
	if outRoot == "" {
		var err error
		if outRoot, err = os.MkdirTemp("", "meshbench-e2e-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("results kept in %s", outRoot)
				return
			}
			os.RemoveAll(outRoot)
		})
	}
	// One Istio profile for every Istio mode of the list: ambient's runs
	// sidecars too, while switching to the default profile would remove
	// ztunnel.
	istioProfile := ""
	if install && (slices.Contains(meshes, "ambient") || slices.Contains(meshes, "waypoint")) {
		istioProfile = "ambient"
	}

	for _, m := range meshes {
		m = strings.TrimSpace(m)
		t.Run(m, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
			defer cancel()
			mo := topology.DefaultOptions()
			mo.Mode, mo.Replicas = topology.Mode(m), 2
			spec := Spec{RunID: "e2e-" + m + "-" + time.Now().UTC().Format("150405"),
				AppNamespace: "meshbench-e2e-app", LoadNamespace: "meshbench-e2e-load", Image: image}
			o := Options{Settings: platform.Settings{Mesh: mo, Load: testLoad(t, strconv.FormatFloat(e2eRate, 'f', -1, 64)), Workers: e2eWorkers,
				Duration: duration, Warmup: 5 * time.Second, Drain: plan.KubeDrain(0)},
				Spec: spec, InstallMesh: install, IstioProfile: istioProfile, OutDir: filepath.Join(outRoot, m), Log: testLog{t}, Version: "e2e"}
			res, err := Run(ctx, o)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if !res.Manifest.Valid {
				t.Errorf("run invalid: %q (results in %s)", res.Manifest.Invalid, res.Dir)
			}

			// The load: both workers merged, at the rate asked for.
			lr := res.Load
			if lr == nil {
				t.Fatalf("no load result in %s", res.Dir)
			}
			if lr.Workers != e2eWorkers || lr.Worker != nil {
				t.Errorf("merged result of %d workers (worker %+v), want %d merged", lr.Workers, lr.Worker, e2eWorkers)
			}
			if d := lr.TargetRatePerSec - e2eRate; d < -1e-3 || d > 1e-3 {
				t.Errorf("target rate %.6f/s, want %.0f (the workers' shares summed)", lr.TargetRatePerSec, e2eRate)
			}
			if r := lr.AchievedRatePerSec(); r < e2eRate*(1-2*results.RateShortfallTolerance) || r > e2eRate*1.01 {
				t.Errorf("achieved %.2f/s, want %.0f", r, e2eRate)
			}
			if lr.Success != lr.Completed || lr.Completed == 0 {
				t.Errorf("%d of %d requests succeeded", lr.Success, lr.Completed)
			}

			// The metrics tables: app and load rows, data-plane rows when
			// there is a mesh.
			want := []string{sample.CategoryApp, sample.CategoryLoad}
			if m != "none" {
				want = append(want, sample.CategoryDataPlane)
			}
			for _, cat := range want {
				if g := res.Summary.Category(cat); g == nil || g.CPUMillicores.Max <= 0 {
					t.Errorf("no %s row with CPU in the metrics tables: %+v", cat, g)
				}
			}
			t.Logf("drain: %s; stale samples: %d pod, %d node; mixed rounds: %d", res.Drain, res.StalePods, res.StaleNodes, res.MixedRounds)

			// Nothing left behind.
			c, err := Connect(ctx, ConnectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{spec.AppNamespace, spec.LoadNamespace} {
				if _, err := c.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("namespace %s still there after the run: %v", ns, err)
				}
			}
		})
	}
}

// testLog writes a run's progress lines to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
