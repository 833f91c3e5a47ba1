package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// meshesPlan is the sidecar-debate seed's plan shape on the test
// cluster: every mesh — none, Istio's sidecar, ambient and ambient with a
// waypoint (the seed always gave ambient a waypoint), Linkerd — with the
// Faces app (face calls smiley and color) and the static one, compared
// with none, one short repetition each (the seed's rate ladder and
// repetitions are for a real cluster: examples/sidecar-debate.yaml).
const meshesPlan = `platform: kube
repetitions: 1
axes:
  mesh: [none, sidecar, ambient, waypoint, linkerd]
  app: [static, faces]
  rate: [40]
duration: 6s
warmup: 1s
connections: 4
workers: 1
sample_interval: 10s
baseline: none
compare: [mesh]
`

// TestMeshesOnRealNodes runs every mesh on the same test cluster in one
// plan, as a user with both builds does: `bench --install-mesh
// --istio-build DIR --linkerd-build DIR` installs Istio (the ambient
// profile, for sidecars too) and Linkerd at their first cells and both stay
// for the plan. Every cell is valid, every mesh cell's proxies were ready
// and meshed (the run's enrolment checks) and carried mTLS (their own
// counters); each mesh's components are the data plane or control plane
// only in its own cells and mesh-idle in the others (ztunnel in none,
// sidecar and linkerd cells; istiod in linkerd cells; Linkerd's control
// plane in Istio's); the report has a row per mesh and the seed reports'
// per-namespace tables. Then both uninstalls leave the cluster, and the
// nodes' CNI chains, as they were.
func TestMeshesOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	ib, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	env, err := envoy.Find(envoy.FindOptions{ProjectDir: "../.."})
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	lb := openLinkerd(t)
	c := connect(t, kc)
	before := clusterState(t, c)
	t.Cleanup(func() {
		uninstallLinkerd(t, lb, kc.Kubeconfig)
		uninstallIstio(t, ib, kc.Kubeconfig)
		sameState(t, before, clusterState(t, c))
		for _, n := range kc.Real.Nodes {
			if conf, _ := os.ReadFile(filepath.Join(n.Dir, "cni", "10-pods.conflist")); strings.Contains(string(conf), "istio-cni") {
				t.Errorf("%s after the uninstall: istio-cni still in its CNI chain", n.Name)
			}
		}
	})
	tImages := loadIstioImages(t, kc, ib, env.Path) + loadLinkerdImages(t, kc, lb)

	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(meshesPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	inv := meshbench(t, nil, "bench", plan, "--seed", "7", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2m",
		"--faces-chart=false", "--install-mesh", "--istio-build", ib.Dir, "--envoy", env.Path, "--linkerd-build", lb.Dir)
	if inv.code != 0 {
		t.Errorf("bench of every mesh: exit %d", inv.code)
	}
	report, err := os.ReadFile(filepath.Join(out, "report", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the plan's report.txt:\n%s", report)
	for _, want := range []string{"linkerd vs none:", "waypoint vs none:", "ambient vs sidecar:", "linkerd vs sidecar:",
		"== Per namespace", "-- linkerd, static", "-- linkerd, faces", "-- ambient, faces"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Order) != 10 {
		t.Errorf("%d cells, want 10 (5 meshes × 2 apps)", len(m.Order))
	}
	for _, id := range m.Order {
		st := m.Cells[id]
		if st.State != results.CellDone || !st.Valid {
			t.Errorf("cell %s: %s, valid %v: %v %q", id, st.State, st.Valid, st.Invalid, st.Error)
			continue
		}
		cd := results.CellDir(out, id)
		mode := strings.SplitN(id, "-", 2)[0]
		if mode != "none" {
			// Ready and meshed (the run's enrolment checks), and mTLS from
			// the proxies' own counters.
			for _, f := range []string{"enrolment-checks.json", "mtls-checks.json"} {
				data, err := os.ReadFile(filepath.Join(cd, "k8s", f))
				if err != nil || !strings.Contains(string(data), `"ok": true`) || strings.Contains(string(data), `"ok": false`) {
					t.Errorf("%s: k8s/%s: %v %s; want every check passed", id, f, err, data)
				}
			}
		}
		res, err := os.ReadFile(filepath.Join(cd, results.ResourcesFile))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Summary struct {
				Components []struct{ Name, Category string }
			}
			Namespaces struct {
				Rows []struct{ Name string }
			}
		}
		if err := json.Unmarshal(res, &doc); err != nil {
			t.Fatal(err)
		}
		cat := map[string]string{} // component -> category
		for _, g := range doc.Summary.Components {
			cat[g.Name] = g.Category
		}
		var ztunnel, istiod, l5d string // their categories in this cell
		for name, c := range cat {
			switch {
			case strings.Contains(name, "node proxy"):
				ztunnel = c
			case strings.HasSuffix(name, "istiod"):
				istiod = c
			case strings.HasSuffix(name, "linkerd-destination"):
				l5d = c
			}
		}
		want := map[string][3]string{ // ztunnel, istiod, linkerd-destination
			"none":     {"mesh-idle", "mesh-idle", "mesh-idle"},
			"sidecar":  {"mesh-idle", "control-plane", "mesh-idle"},
			"ambient":  {"data-plane", "control-plane", "mesh-idle"},
			"waypoint": {"data-plane", "control-plane", "mesh-idle"},
			"linkerd":  {"mesh-idle", "mesh-idle", "control-plane"},
		}[mode]
		// A mesh installed later in the plan is not there in earlier cells.
		for i, got := range []string{ztunnel, istiod, l5d} {
			if got != "" && got != want[i] {
				t.Errorf("%s: %s is %s, want %s", id, []string{"ztunnel", "istiod", "linkerd-destination"}[i], got, want[i])
			}
		}
		if mode == "linkerd" && (l5d != "control-plane" || cat["static sidecar"]+cat["face sidecar"] == "") {
			t.Errorf("%s: linkerd-destination %q; want Linkerd's control plane and sidecars", id, l5d)
		}
		if rows := doc.Namespaces.Rows; len(rows) == 0 || rows[len(rows)-1].Name != "e2m-app" || (mode != "none") != (len(rows) == 2) {
			t.Errorf("%s: per-namespace rows %v; want the mesh's namespace (but for none) and e2m-app", id, rows)
		}
	}
	checkClean(t, c, "e2m-app", "e2m-load")
	t.Logf("timings (a shared 2-core machine): images %.1fs, bench of 10 cells with both installs %.1fs", tImages.Seconds(), inv.took.Seconds())
}
