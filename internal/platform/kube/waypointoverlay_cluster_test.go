package kube

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestWaypointOverlayFromCluster: a waypoint run that does not install
// the mesh still gives its waypoint the upstream-Envoy overlay's
// EnvoyFilter when the cluster's Istio carries the overlay (meshbench's
// images installed earlier: without it the waypoint's Envoy crash-loops),
// and none on a cluster without Istio's CRDs or without the overlay.
// Istio's EnvoyFilter CRD is the istio.io/api module's.
func TestWaypointOverlayFromCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	r := &run{o: Options{Spec: Spec{AppNamespace: "mbo-app"}, Settings: platform.Settings{Mesh: topology.Options{Mode: topology.ModeWaypoint}}}, c: c}
	want := func(stage string, n int) {
		t.Helper()
		objs, err := r.waypointOverlay(ctx)
		if err != nil || len(objs) != n {
			t.Fatalf("%s: waypoint overlay %d objects, %v; want %d", stage, len(objs), err, n)
		}
	}
	want("no Istio CRDs", 0)

	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "istio.io/api").Output()
	if err != nil {
		t.Fatalf("go list -m istio.io/api: %v", err)
	}
	all, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "kubernetes", "customresourcedefinitions.gen.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd []byte
	for _, doc := range bytes.Split(all, []byte("\n---\n")) {
		if bytes.Contains(doc, []byte("name: envoyfilters.networking.istio.io")) {
			crd = doc
		}
	}
	if crd == nil {
		t.Fatal("istio.io/api has no EnvoyFilter CRD")
	}
	if out, err := kc.KubectlStdin(ctx, crd, "apply", "--server-side", "-f", "-"); err != nil {
		t.Fatalf("applying the EnvoyFilter CRD: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = kc.Kubectl(context.Background(), "delete", "crd", "envoyfilters.networking.istio.io", "--wait=false")
	})
	if out, err := kc.Kubectl(ctx, "wait", "--for=condition=Established", "crd/envoyfilters.networking.istio.io", "--timeout=60s"); err != nil {
		t.Fatalf("CRD not established: %v\n%s", err, out)
	}
	want("Istio's CRDs, no overlay", 0)

	if out, err := kc.Kubectl(ctx, "create", "namespace", "istio-system"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Gone before the next test makes it again (TestZtunnelThreadsRollout).
	cs, _ := clusterClients(t, kc)
	t.Cleanup(func() { deleteNamespace(t, cs, "istio-system") })
	efs, err := istio.EnvoyFilters()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, efs); err != nil {
		t.Fatalf("applying the overlay: %v", err)
	}
	objs, err := r.waypointOverlay(ctx)
	if err != nil || len(objs) != 1 {
		t.Fatalf("with the overlay: %d objects, %v; want the waypoint's EnvoyFilter", len(objs), err)
	}
	if got := objs[0].(interface{ GetNamespace() string }).GetNamespace(); got != "mbo-app" {
		t.Errorf("the waypoint's EnvoyFilter is in namespace %q, want the app's, mbo-app", got)
	}
}
