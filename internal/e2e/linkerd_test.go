package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/nodes"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// openLinkerd is the Linkerd build make linkerd-tools installed (skipped,
// or failed under make test, without it).
func openLinkerd(t *testing.T) release.Build {
	t.Helper()
	b, err := release.Open(release.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	return b
}

// loadLinkerdImages builds meshbench's Linkerd images (controller, proxy)
// from the build b and loads them into every real node's containerd, as
// a user runs `meshbench image linkerd --load`; it returns the command's
// time.
func loadLinkerdImages(t *testing.T, kc *kubetest.Cluster, b release.Build) time.Duration {
	t.Helper()
	args := []string{"image", "linkerd", "--linkerd-build", b.Dir, "--ctr", filepath.Join(nodes.BinDir(), "ctr")}
	for _, n := range kc.Real.Nodes {
		args = append(args, "--load", "containerd:"+n.Socket)
	}
	inv := meshbench(t, nil, args...)
	if inv.code != 0 || strings.Count(inv.stdout, "@sha256:") != len(release.ImageNames) {
		t.Fatalf("meshbench image linkerd: exit %d; want %d images", inv.code, len(release.ImageNames))
	}
	return inv.took
}

// uninstallLinkerd is `meshbench mesh uninstall --mesh linkerd` with the
// build's CLI.
func uninstallLinkerd(t *testing.T, b release.Build, kubeconfig string) (time.Duration, string) {
	t.Helper()
	inv := meshbench(t, nil, "mesh", "uninstall", "--platform", "kube", "--mesh", "linkerd", "--linkerd-build", b.Dir, "--kubeconfig", kubeconfig)
	if inv.code != 0 {
		t.Errorf("meshbench mesh uninstall --mesh linkerd: exit %d\n%s", inv.code, inv.stdout)
	}
	return inv.took, inv.stdout
}

// sameState fails t for every kind of object whose names differ between
// two clusterStates.
func sameState(t *testing.T, before, after map[string][]string) {
	t.Helper()
	for kind, names := range before {
		if !slices.Equal(names, after[kind]) {
			t.Errorf("%s after the uninstall differ:\nbefore %v\nafter  %v", kind, names, after[kind])
		}
	}
}

// TestLinkerdOnRealNodes is Linkerd built here on real pods, as a new user
// runs it: `meshbench image linkerd` loads the controller and proxy images
// into the nodes; `run --platform kube --mesh linkerd --install-mesh
// --linkerd-build DIR --policies 4` installs Linkerd edge-26.8.3 with its
// own CLI (CRDs with its Gateway API bundle, the control plane with
// meshbench's trust anchor and issuer, `linkerd check` until it passes),
// meshes the app and load namespaces through the proxy-injector, applies
// the Servers/AuthorizationPolicies/MeshTLSAuthentications, measures, and
// verifies mTLS from every app pod's proxy counters; the attacker (an
// identity no policy allows) is refused with 403, seen from both sides;
// the control plane is sampled as control plane, the sidecars as data
// plane; the per-namespace table is printed. doctor then verifies the
// installed mesh, a faces run with its own rules finds Linkerd installed
// and only checks it, and `meshbench mesh uninstall --mesh linkerd` leaves
// the cluster as it was.
func TestLinkerdOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	b := openLinkerd(t)
	c := connect(t, kc)
	before := clusterState(t, c)
	installed := false
	t.Cleanup(func() {
		if installed {
			uninstallLinkerd(t, b, kc.Kubeconfig)
		}
	})
	tImages := loadLinkerdImages(t, kc, b)

	installed = true
	out := filepath.Join(t.TempDir(), "run")
	w := watchPods(c, "e2l-app", "e2l-load", kube.LinkerdNamespace)
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2l",
		"--mesh", "linkerd", "--install-mesh", "--linkerd-build", b.Dir, "--policies", "4",
		"--replicas", "2", "--workers", "1", "--rate", "40", "--duration", "10s", "--out", out)
	tRun := inv.took
	w.Stop()
	if inv.code != 0 {
		t.Fatalf("run --mesh linkerd: exit %d", inv.code)
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	if lr.Sent != 400 || lr.Success != 400 {
		t.Errorf("%d sent, %d ok; want 400 and 400 through the proxies", lr.Sent, lr.Success)
	}
	// The install: the build's CLI, meshbench's images and identity,
	// linkerd check passed.
	var cmds []struct {
		Args    []string `json:"args"`
		Output  string   `json:"output"`
		Applied []string `json:"applied"`
	}
	data, _ := os.ReadFile(filepath.Join(out, "k8s", "mesh-install.json"))
	if err := json.Unmarshal(data, &cmds); err != nil || len(cmds) != 3 {
		t.Fatalf("k8s/mesh-install.json: %v, %d commands; want 3", err, len(cmds))
	}
	if cmds[0].Args[0] != b.Path(release.CLI) || !slices.Contains(cmds[1].Args, "controllerImage="+release.DefaultHub+"/controller") ||
		!slices.Contains(cmds[1].Args, "--identity-issuer-certificate-file") {
		t.Errorf("install commands %v, %v; want the build's linkerd with meshbench's images and identity", cmds[0].Args, cmds[1].Args)
	}
	if !strings.Contains(cmds[2].Output, "Status check results are √") || !strings.Contains(cmds[2].Output, "√ issuer cert is issued by the trust anchor") {
		t.Errorf("linkerd check did not pass:\n%s", cmds[2].Output)
	}
	t.Logf("linkerd check on the test cluster:\n%s", cmds[2].Output)
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := m.Options["mesh_proxy"].(string); !m.Valid || !strings.Contains(p, b.Provenance.Binaries[release.Proxy].SHA256) {
		t.Errorf("manifest: valid %v (%v), mesh_proxy %q; want valid, the proxy's sha256 recorded", m.Valid, m.Invalid, p)
	}
	// The policies, and the admin port's access for the API server.
	app, _ := os.ReadFile(filepath.Join(out, "k8s", "app.yaml"))
	kinds := func(kind string) int { return strings.Count(string(app), "\nkind: "+kind+"\n") } // top-level only
	if kinds("AuthorizationPolicy") != 5 || kinds("MeshTLSAuthentication") != 4 || kinds("Server") != 3 {
		t.Errorf("k8s/app.yaml: %d AuthorizationPolicies (want the 4 rules' and the admin port's), %d MeshTLSAuthentications (want 4), %d Servers (want the app port's, 9090's and the admin port's)",
			kinds("AuthorizationPolicy"), kinds("MeshTLSAuthentication"), kinds("Server"))
	}
	// mTLS from the app's proxies, and the attacker refused on both sides.
	mt, _ := os.ReadFile(filepath.Join(out, "k8s", "mtls-checks.json"))
	if strings.Count(string(mt), `"ok": true`) != 2 || strings.Contains(string(mt), `"ok": false`) {
		t.Errorf("k8s/mtls-checks.json: %s; want two passed checks", mt)
	}
	if !strings.Contains(string(mt), "from attacker.e2l-load.serviceaccount.identity.linkerd.cluster.local refused by its policies") {
		t.Errorf("k8s/mtls-checks.json: %s; want the app's proxies to have refused the attacker", mt)
	}
	var atk kube.AttackerReport
	data, _ = os.ReadFile(filepath.Join(out, "k8s", kube.AttackerFile))
	if err := json.Unmarshal(data, &atk); err != nil || !atk.Refused || atk.StatusCodes["403"] != kube.AttackerRequests {
		t.Errorf("attacker: %v %+v; want every request refused with 403", err, atk)
	}
	// Every pod classified: Linkerd's control plane, the sidecars as the
	// data plane, nothing unclassified; the per-namespace table.
	for _, row := range []string{"static sidecar", "load sidecar", "data-plane"} {
		if cpu := rowCPU(inv.stdout, row); cpu <= 0 {
			t.Errorf("%s CPU_avg %v, want > 0", row, cpu)
		}
	}
	for _, row := range []string{"linkerd-destination", "linkerd-identity", "linkerd-proxy-injector", "control-plane"} {
		if rowCPU(inv.stdout, row) < 0 {
			t.Errorf("no %s row", row)
		}
	}
	if strings.Contains(inv.stdout, "unclassified") || strings.Contains(inv.stdout, "other ") {
		t.Errorf("stdout has unclassified pods")
	}
	if !strings.Contains(inv.stdout, "\nNamespace ") || rowCPU(inv.stdout, kube.LinkerdNamespace) <= 0 || rowCPU(inv.stdout, "e2l-app") <= 0 {
		t.Errorf("no per-namespace table with linkerd and e2l-app rows")
	}
	if len(w.Pods(kube.LinkerdNamespace, "linkerd-destination-")) == 0 {
		t.Error("no linkerd-destination pod seen")
	}
	checkClean(t, c, "e2l-app", "e2l-load")

	// doctor verifies the installed mesh.
	inv = meshbench(t, nil, "doctor", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2l", "--mesh", "linkerd")
	if inv.code != 0 || strings.Contains(inv.stdout, "FAIL") || !strings.Contains(inv.stdout, "mesh linkerd installed") {
		t.Errorf("doctor --mesh linkerd: exit %d", inv.code)
	}

	// Faces (face calls smiley and color through their proxies) with its
	// fifth rule: Linkerd is installed, so it is only checked.
	fout := filepath.Join(t.TempDir(), "faces")
	inv = meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2l",
		"--mesh", "linkerd", "--install-mesh", "--linkerd-build", b.Dir, "--app", "faces", "--faces-chart=false", "--policies", "5",
		"--replicas", "1", "--workers", "1", "--rate", "40", "--duration", "8s", "--out", fout)
	tFaces := inv.took
	if inv.code != 0 {
		t.Errorf("run --mesh linkerd --app faces: exit %d", inv.code)
	} else {
		if !strings.Contains(inv.stderr, "Linkerd is installed already") {
			t.Error("the faces run did not say Linkerd was installed already")
		}
		if mt, _ := os.ReadFile(filepath.Join(fout, "k8s", "mtls-checks.json")); strings.Count(string(mt), `"ok": true`) != 3 || strings.Contains(string(mt), `"ok": false`) {
			t.Errorf("faces k8s/mtls-checks.json: %s; want face, smiley and color over mTLS", mt)
		}
		data, _ = os.ReadFile(filepath.Join(fout, "k8s", kube.AttackerFile))
		if err := json.Unmarshal(data, &atk); err != nil || !atk.Refused {
			t.Errorf("faces attacker: %v %+v; want refused", err, atk)
		}
	}
	checkClean(t, c, "e2l-app", "e2l-load")

	tUninstall, unout := uninstallLinkerd(t, b, kc.Kubeconfig)
	installed = false
	t.Logf("meshbench mesh uninstall --mesh linkerd:\n%s", unout)
	if !strings.Contains(unout, "CRDs meshbench applied: ") || strings.Contains(unout, "CRDs meshbench applied: 0 deleted") || strings.Contains(unout, "FAIL") {
		t.Errorf("mesh uninstall did not delete the CRDs from its record, or a step failed")
	}
	sameState(t, before, clusterState(t, c))
	t.Logf("timings (a shared 2-core machine): images %.1fs, run with the install %.1fs, faces run %.1fs, uninstall %.1fs",
		tImages.Seconds(), tRun.Seconds(), tFaces.Seconds(), tUninstall.Seconds())
}
