package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/nodes"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// clusterState is what an install may add to a cluster and an uninstall
// must take away again: the names of namespaces, CRDs, cluster roles and
// bindings, admission webhooks, and every ConfigMap.
func clusterState(t *testing.T, c *kube.Cluster) map[string][]string {
	t.Helper()
	ctx := context.Background()
	st := map[string][]string{}
	list := func(kind string, gvr schema.GroupVersionResource, namespaced bool) {
		var names []string
		l, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing %s: %v", kind, err)
		}
		for _, it := range l.Items {
			n := it.GetName()
			if namespaced {
				n = it.GetNamespace() + "/" + n
			}
			names = append(names, n)
		}
		slices.Sort(names)
		st[kind] = names
	}
	list("namespaces", schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false)
	list("configmaps", schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true)
	list("crds", schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}, false)
	list("clusterroles", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false)
	list("clusterrolebindings", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false)
	list("mutatingwebhooks", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}, false)
	list("validatingwebhooks", schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}, false)
	return st
}

// uninstallIstio is `meshbench mesh uninstall`: istioctl uninstall
// --purge, the namespace waited for, the Gateway API CRDs meshbench's
// install applied (from its record) and the ConfigMaps istiod copied into
// every namespace.
func uninstallIstio(t *testing.T, b istio.Build, kubeconfig string) (time.Duration, string) {
	t.Helper()
	inv := meshbench(t, nil, "mesh", "uninstall", "--platform", "kube", "--mesh", "sidecar,ambient", "--istio-build", b.Dir, "--kubeconfig", kubeconfig)
	if inv.code != 0 {
		t.Errorf("meshbench mesh uninstall: exit %d\n%s", inv.code, inv.stdout)
	}
	return inv.took, inv.stdout
}

// loadIstioImages builds meshbench's Istio images (pilot, proxyv2,
// install-cni, ztunnel) from the build b and the Envoy at envoyPath and
// loads them into every real node's containerd, as both Istio tests start;
// it returns the command's time.
func loadIstioImages(t *testing.T, kc *kubetest.Cluster, b istio.Build, envoyPath string) time.Duration {
	t.Helper()
	args := []string{"image", "istio", "--istio-build", b.Dir, "--envoy", envoyPath, "--ctr", filepath.Join(nodes.BinDir(), "ctr")}
	for _, n := range kc.Real.Nodes {
		args = append(args, "--load", "containerd:"+n.Socket)
	}
	inv := meshbench(t, nil, args...)
	if inv.code != 0 || strings.Count(inv.stdout, "@sha256:") != len(istio.ImageNames) {
		t.Fatalf("meshbench image istio: exit %d; want %d images", inv.code, len(istio.ImageNames))
	}
	return inv.took
}

// TestIstioOnRealNodes is Istio built here on real pods, as a new user
// runs it: `meshbench image istio` loads the images (pilot, proxyv2 with
// upstream Envoy, install-cni, ztunnel) into the nodes; `run --platform
// kube --mesh sidecar --install-mesh --istio-build DIR --policies 4`
// installs Istio with the build's istioctl and the upstream-Envoy overlay,
// injects sidecars, applies the AuthorizationPolicies and measures; every
// proxy ACKs istiod's config (its syncz, read mid-run); mTLS is verified
// from the sidecars' own counters; every pod is classified; doctor is all
// ok. Then `run --mesh ambient` on the same install (istioctl upgrades it
// to the ambient profile: istio-cni and ztunnel on the real nodes) with
// mTLS verified from ztunnel's own counters and ztunnel, istio-cni and
// istiod classified; then `run --mesh waypoint`; doctor --mesh
// sidecar,ambient; istiod's ACK table, kept by every run, has every proxy
// ACKed;
// and `meshbench mesh uninstall` leaves the cluster (and the nodes' CNI
// chains) as it was. (A plan of every mesh, Linkerd's too, on one install
// is TestMeshesOnRealNodes.)
// One install for all of it: the install is the slow part (about a
// minute).
func TestIstioOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	env, err := envoy.Find(envoy.FindOptions{ProjectDir: "../.."})
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	c := connect(t, kc)
	before := clusterState(t, c)
	installed := false
	t.Cleanup(func() {
		if installed {
			uninstallIstio(t, b, kc.Kubeconfig)
		}
	})

	// The images, into every node's containerd.
	tImages := loadIstioImages(t, kc, b, env.Path)

	// One sidecar cell that installs Istio; the run reads istiod's ACK
	// table in its measured window (the app and load sidecars exist only
	// then) and keeps it in k8s/istiod-syncz.json.
	installed = true
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2i-app", "e2i-load", kube.IstioNamespace)
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2i",
		"--mesh", "sidecar", "--install-mesh", "--istio-build", b.Dir, "--envoy", env.Path, "--policies", "4",
		"--replicas", "2", "--workers", "1", "--rate", "40", "--duration", "25s", "--out", out)
	tRun := inv.took
	w.Stop()
	if inv.code != 0 {
		t.Fatalf("run --mesh sidecar: exit %d", inv.code)
	}
	// The two app sidecars, the load sidecar and the ingress gateway,
	// every type ACKed: upstream Envoy took all of istiod's config.
	syncs := ackTable(t, "sidecar", out, inv.stderr)
	if n := countType(syncs, "sidecar"); n < 3 {
		t.Errorf("%d sidecars in istiod's syncz; want 3 (2 app, 1 load)", n)
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	if lr.Sent != 1000 || lr.Success != 1000 {
		t.Errorf("%d sent, %d ok; want 1000 and 1000 through the sidecars", lr.Sent, lr.Success)
	}
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := m.Options["mesh_proxy"].(string); !m.Valid || !strings.Contains(p, "upstream Envoy") || !strings.Contains(p, "/1.40.") {
		t.Errorf("manifest: valid %v (%v), mesh_proxy %q; want valid and upstream Envoy 1.40 recorded", m.Valid, m.Invalid, p)
	}
	install, _ := os.ReadFile(filepath.Join(out, "k8s", "mesh-install.json"))
	for _, want := range []string{b.Path("istioctl"), "hub=" + istio.DefaultHub, "PILOT_ENABLE_METADATA_EXCHANGE=false"} {
		if !strings.Contains(string(install), want) {
			t.Errorf("k8s/mesh-install.json lacks %q", want)
		}
	}
	if objs, _ := os.ReadFile(filepath.Join(out, "k8s", "mesh-install-objects.yaml")); !strings.Contains(string(objs), "kind: EnvoyFilter") {
		t.Error("the overlay's EnvoyFilter is not in k8s/mesh-install-objects.yaml")
	}
	if app, _ := os.ReadFile(filepath.Join(out, "k8s", "app.yaml")); strings.Count(string(app), "kind: AuthorizationPolicy") != 4 {
		t.Errorf("k8s/app.yaml has %d AuthorizationPolicies, want 4", strings.Count(string(app), "kind: AuthorizationPolicy"))
	}
	// mTLS from the sidecars' own counters, on both app pods.
	if mt, _ := os.ReadFile(filepath.Join(out, "k8s", "mtls-checks.json")); strings.Count(string(mt), `"ok": true`) != 2 || strings.Contains(string(mt), `"ok": false`) {
		t.Errorf("k8s/mtls-checks.json: %s; want two passed checks", mt)
	}
	if !strings.Contains(inv.stderr, "mTLS verified from the sidecars' own counters on 2 app pod(s)") {
		t.Error("stderr does not say mTLS was verified")
	}
	// Every pod classified: sidecars as the data plane, istiod as the
	// control plane, the ingress gateway as a gateway; no unknown rows.
	for _, row := range []string{"static sidecar", "load sidecar", "istiod", "data-plane", "control-plane"} {
		if cpu := rowCPU(inv.stdout, row); cpu <= 0 {
			t.Errorf("%s CPU_avg %v, want > 0", row, cpu)
		}
	}
	if strings.Contains(inv.stdout, "unclassified") || strings.Contains(inv.stdout, "other ") {
		t.Errorf("stdout has unclassified pods")
	}
	if len(w.Pods(kube.IstioNamespace, "istiod-")) == 0 {
		t.Error("no istiod pod seen")
	}
	checkClean(t, c, "e2i-app", "e2i-load")

	// doctor with the mesh installed.
	inv = meshbench(t, nil, "doctor", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2i", "--mesh", "sidecar")
	if inv.code != 0 || strings.Contains(inv.stdout, "FAIL") || !strings.Contains(inv.stdout, "mesh sidecar installed        ok") {
		t.Errorf("doctor --mesh sidecar: exit %d", inv.code)
	}

	// A kill on the same install (faults_test.go): the server's pod, its
	// sidecar with it, deleted at +2s of an 8-s window.
	t0 := time.Now()
	killCell(t, kc, c, "sidecar", "kill:sidecar@2s", "e2f")
	tKillSidecar := time.Since(t0)
	// Its CPU limited in place, and the run interrupted: resized back.
	t0 = time.Now()
	limitCell(t, kc, c, "e2h")
	tLimitSidecar := time.Since(t0)
	// A noisy neighbour on the server's node, then one replica slowed.
	t0 = time.Now()
	noisyCell(t, kc, c, "e2fn")
	tNoisy := time.Since(t0)
	t0 = time.Now()
	slowCell(t, kc, c, "e2fs")
	tSlow := time.Since(t0)
	// istiod killed under sidecar: the proxies keep their config while a
	// new istiod starts.
	t0 = time.Now()
	killCell(t, kc, c, "sidecar", "kill:control-plane@2s", "e2fc")
	tKillIstiod := time.Since(t0)

	// Ambient on the same cluster and install: istioctl upgrades it to
	// the ambient profile (istio-cni and ztunnel DaemonSets on the real
	// nodes, which give each node its own CNI dirs, netns dir, ztunnel
	// socket dir and PID 1). 200 rps for 20 s: 4000 requests through two
	// ztunnels each, so the data plane's CPU is hundreds of 10-ms ticks
	// even on a fast quiet machine (at 40 rps a ztunnel showed 4–13 m,
	// about 10 ticks in 20 s: too close to 0 to assert on).
	aout := filepath.Join(t.TempDir(), "ambient")
	w = watchPods(c, "e2k-app", kube.IstioNamespace)
	inv = meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2k",
		"--mesh", "ambient", "--install-mesh", "--istio-build", b.Dir, "--envoy", env.Path, "--policies", "4",
		"--replicas", "2", "--workers", "1", "--rate", "200", "--duration", "20s", "--out", aout)
	w.Stop()
	tAmbient := inv.took
	if inv.code != 0 {
		t.Fatalf("run --mesh ambient: exit %d", inv.code)
	}
	if lr, err := results.ReadFile(filepath.Join(aout, results.LoadFile)); err != nil || lr.Sent != 4000 || lr.Success != 4000 {
		t.Errorf("ambient: %v; want 4000 sent and ok through ztunnel", err)
	}
	if app, _ := os.ReadFile(filepath.Join(aout, "k8s", "app.yaml")); strings.Count(string(app), "kind: AuthorizationPolicy") != 4 {
		t.Errorf("ambient: k8s/app.yaml has %d AuthorizationPolicies, want 4", strings.Count(string(app), "kind: AuthorizationPolicy"))
	}
	// mTLS from ztunnel's own counters: every connection the ztunnels
	// opened in the cell mutual TLS, the app's side among them.
	if mt, _ := os.ReadFile(filepath.Join(aout, "k8s", "mtls-checks.json")); strings.Count(string(mt), `"ok": true`) < 2 || strings.Contains(string(mt), `"ok": false`) {
		t.Errorf("ambient k8s/mtls-checks.json: %s; want every check passed", mt)
	}
	if !strings.Contains(inv.stderr, "mTLS verified from ztunnel's own counters") {
		t.Error("ambient: stderr does not say mTLS was verified")
	}
	// ztunnel as the data plane (one row per node), istio-cni and
	// istiod as the control plane; nothing unclassified.
	if n := strings.Count(inv.stdout, "\nnode proxy "); n != len(kc.Real.Nodes) {
		t.Errorf("ambient: %d node proxy rows, want %d (a ztunnel per node)", n, len(kc.Real.Nodes))
	}
	for _, row := range []string{"istio-cni-node", "istiod", "control-plane"} {
		if !strings.Contains(inv.stdout, "\n"+row+" ") {
			t.Errorf("ambient: no %s row", row)
		}
	}
	if cpu := rowCPU(inv.stdout, "data-plane"); cpu <= 0 {
		t.Errorf("ambient: data-plane CPU_avg %v, want > 0", cpu)
	}
	if strings.Contains(inv.stdout, "unclassified") || strings.Contains(inv.stdout, "other ") {
		t.Errorf("ambient: stdout has unclassified pods")
	}
	// istiod's ACK table: ztunnel on every node (its WDS types) ACKed.
	if n := countType(ackTable(t, "ambient", aout, inv.stderr), "ztunnel"); n != len(kc.Real.Nodes) {
		t.Errorf("ambient: %d ztunnels in istiod's ACK table, want %d", n, len(kc.Real.Nodes))
	}
	if len(w.Pods(kube.IstioNamespace, "ztunnel-")) != len(kc.Real.Nodes) || len(w.Pods(kube.IstioNamespace, "istio-cni-node-")) != len(kc.Real.Nodes) {
		t.Errorf("ambient: %d ztunnel and %d istio-cni pods seen, want one per node", len(w.Pods(kube.IstioNamespace, "ztunnel-")), len(w.Pods(kube.IstioNamespace, "istio-cni-node-")))
	}
	checkClean(t, c, "e2k-app", "e2k-load")
	// A kill on the same install: the ztunnel on the server's node.
	t0 = time.Now()
	killCell(t, kc, c, "ambient", "kill:node-proxy@2s", "e2g")
	ztunnelsReady(t, c)
	tKillZtunnel := time.Since(t0)

	// A waypoint from the Gateway API (the install applied the CRDs) for
	// the app's service: the traffic goes client ztunnel → waypoint (Envoy
	// with istiod's config and the overlay) → server ztunnel. 200 rps for
	// 20 s, for the CPU bound as above.
	wout := filepath.Join(t.TempDir(), "waypoint")
	w = watchPods(c, "e2w-app")
	inv = meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2w",
		"--mesh", "waypoint", "--install-mesh", "--istio-build", b.Dir, "--envoy", env.Path, "--policies", "4",
		"--replicas", "2", "--workers", "1", "--rate", "200", "--duration", "20s", "--out", wout)
	w.Stop()
	tWaypoint := inv.took
	if inv.code != 0 {
		t.Errorf("run --mesh waypoint: exit %d", inv.code)
	} else {
		if lr, err := results.ReadFile(filepath.Join(wout, results.LoadFile)); err != nil || lr.Sent != 4000 || lr.Success != 4000 {
			t.Errorf("waypoint: %v; want 4000 sent and ok through the waypoint", err)
		}
		if mt, _ := os.ReadFile(filepath.Join(wout, "k8s", "mtls-checks.json")); strings.Contains(string(mt), `"ok": false`) || !strings.Contains(string(mt), `"ok": true`) {
			t.Errorf("waypoint k8s/mtls-checks.json: %s; want every check passed", mt)
		}
		if cpu := rowCPU(inv.stdout, "waypoint"); cpu <= 0 {
			t.Errorf("waypoint: its row's CPU_avg %v, want > 0 (traffic through it, classified as data plane)", cpu)
		}
		if strings.Contains(inv.stdout, "unclassified") || strings.Contains(inv.stdout, "other ") {
			t.Errorf("waypoint: stdout has unclassified pods")
		}
		// istiod's ACK table: the waypoint (a router) and the ztunnels.
		syncs := ackTable(t, "waypoint", wout, inv.stderr)
		if countType(syncs, "ztunnel") != len(kc.Real.Nodes) || !slices.ContainsFunc(syncs, func(p istio.ProxySync) bool { return strings.Contains(p.Proxy, "waypoint") }) {
			t.Errorf("waypoint: istiod's ACK table lacks the waypoint or a ztunnel")
		}
	}
	checkClean(t, c, "e2w-app", "e2w-load")
	// A waypoint kill on the same install, by a run given none of the
	// install's flags: it must find the cluster's upstream-Envoy overlay
	// and give its waypoint the overlay's EnvoyFilter, or the waypoint
	// crash-loops before the load starts.
	t0 = time.Now()
	killCell(t, kc, c, "waypoint", "kill:waypoint@2s", "e2x")
	tKillWaypoint := time.Since(t0)
	inv = meshbench(t, nil, "doctor", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2i", "--mesh", "sidecar,ambient")
	if inv.code != 0 || strings.Contains(inv.stdout, "FAIL") || !strings.Contains(inv.stdout, "mesh ambient installed") {
		t.Errorf("doctor --mesh sidecar,ambient: exit %d", inv.code)
	}

	// Uninstall: the cluster as it was.
	tUninstall, unout := uninstallIstio(t, b, kc.Kubeconfig)
	installed = false
	t.Logf("meshbench mesh uninstall:\n%s", unout)
	// The record named the Gateway API CRDs the install applied (none
	// existed before here) and the overlay's EnvoyFilter.
	if !strings.Contains(unout, "CRDs meshbench applied: ") || strings.Contains(unout, "CRDs meshbench applied: 0 deleted") || strings.Contains(unout, "FAIL") {
		t.Errorf("mesh uninstall did not delete the Gateway API CRDs from its record, or a step failed")
	}
	after := clusterState(t, c)
	for kind, names := range before {
		if !slices.Equal(names, after[kind]) {
			t.Errorf("%s after the uninstall differ:\nbefore %v\nafter  %v", kind, names, after[kind])
		}
	}
	// istio-cni took its plugin out of every node's CNI chain again.
	for _, n := range kc.Real.Nodes {
		conf, _ := os.ReadFile(filepath.Join(n.Dir, "cni", "10-pods.conflist"))
		bins, _ := os.ReadDir(filepath.Join(n.Dir, "cni-bin"))
		if strings.Contains(string(conf), "istio-cni") || len(bins) > 0 {
			t.Errorf("%s after the uninstall: istio-cni still in its CNI chain (%v) or %d files in %s", n.Name, strings.Contains(string(conf), "istio-cni"), len(bins), nodes.NodeCNIBinDir)
		}
	}
	t.Logf("timings (a shared 2-core machine): images %.1fs, sidecar run with install %.1fs, ambient run with install %.1fs, waypoint run %.1fs, uninstall %.1fs; fault cells: sidecar kill %.1fs, sidecar cpu-limit and Ctrl-C %.1fs, noisy neighbour %.1fs, slow replica %.1fs, ztunnel kill %.1fs, istiod kill %.1fs, waypoint kill %.1fs",
		tImages.Seconds(), tRun.Seconds(), tAmbient.Seconds(), tWaypoint.Seconds(), tUninstall.Seconds(), tKillSidecar.Seconds(), tLimitSidecar.Seconds(),
		tNoisy.Seconds(), tSlow.Seconds(), tKillZtunnel.Seconds(), tKillIstiod.Seconds(), tKillWaypoint.Seconds())
}

// ackTable reads istiod's ACK table a run kept (k8s/istiod-syncz.json),
// checks the run printed it, and that every proxy ACKed every type.
func ackTable(t *testing.T, what, out, stderr string) []istio.ProxySync {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, "k8s", "istiod-syncz.json"))
	if err != nil {
		t.Errorf("%s: no ACK table in the results: %v", what, err)
		return nil
	}
	var ps []istio.ProxySync
	if err := json.Unmarshal(data, &ps); err != nil {
		t.Errorf("%s: k8s/istiod-syncz.json: %v", what, err)
	}
	table, _ := os.ReadFile(filepath.Join(out, "k8s", "istiod-acks.txt"))
	t.Logf("%s: istiod's ACK table in the measured window:\n%s", what, table)
	if !strings.Contains(stderr, "istiod's ACK table (") {
		t.Errorf("%s: the run did not print istiod's ACK table", what)
	}
	if bad := istio.NotACKed(ps); len(bad) > 0 || len(ps) == 0 {
		t.Errorf("%s: %d proxies in istiod's ACK table, not ACKed: %v; want every proxy's every type ACKed", what, len(ps), bad)
	}
	return ps
}

func countType(ps []istio.ProxySync, typ string) int {
	n := 0
	for _, p := range ps {
		if p.Type == typ {
			n++
		}
	}
	return n
}
