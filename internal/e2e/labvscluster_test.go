package e2e

import (
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/labapi"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLabVsClusterIstio runs examples/lab-vs-cluster-istio.yaml (the
// seed-002 shape: none/sidecar/ambient/waypoint at 200 rps, 2
// repetitions) twice, for docs/platforms/kubernetes.md's lab-vs-cluster
// table: first on the lab (the netns substrate) with istiod configuring
// the lab's proxies (`--control-plane istiod`), before the test nodes
// start, then on the test nodes with Istio built here; then it holds the
// two halves to istioLabVsCluster's bounds. About 15 minutes on two
// cores, so out of `make test`: it runs only with
// MESHBENCH_LAB_VS_CLUSTER=1 (MESHBENCH_LAB_VS_CLUSTER_OUT=DIR keeps the
// cluster's results there and the lab's in DIR-lab).
func TestLabVsClusterIstio(t *testing.T) {
	if os.Getenv("MESHBENCH_LAB_VS_CLUSTER") != "1" {
		t.Skip("set MESHBENCH_LAB_VS_CLUSTER=1 to run the lab-vs-cluster plan on the lab and the test nodes (about 15 minutes)")
	}
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	env, err := envoy.Find(envoy.FindOptions{ProjectDir: "../.."})
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	out := os.Getenv("MESHBENCH_LAB_VS_CLUSTER_OUT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "out")
	}
	lab := labHalf(t, "lab-vs-cluster-istio.yaml", "istiod", out+"-lab", "--envoy", env.Path)
	kc := kubetest.Require(t)
	c := connect(t, kc)
	before := clusterState(t, c)
	loadIstioImages(t, kc, b, env.Path)
	t.Cleanup(func() {
		uninstallIstio(t, b, kc.Kubeconfig)
		after := clusterState(t, c)
		for kind, names := range before {
			if !slices.Equal(names, after[kind]) {
				t.Errorf("%s after the uninstall differ:\nbefore %v\nafter  %v", kind, names, after[kind])
			}
		}
	})
	// The same plan, its platform kube and no substrate (a plan's axes
	// and the flags do not mix, so the copy says it).
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "lab-vs-cluster-istio.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(plan, clusterPlan(src), 0o644); err != nil {
		t.Fatal(err)
	}
	inv := meshbench(t, nil, "bench", plan, "--seed", "7", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2v",
		"--install-mesh", "--istio-build", b.Dir, "--envoy", env.Path)
	if inv.code != 0 {
		t.Errorf("bench on the cluster: exit %d", inv.code)
	}
	report, err := os.ReadFile(filepath.Join(out, "report", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the cluster's report.txt:\n%s", report)
	for _, m := range []string{"sidecar", "ambient", "waypoint"} {
		if !strings.Contains(string(report), m) {
			t.Errorf("the report has no %s row", m)
		}
	}
	checkLabVsCluster(t, lab, out, istioLabVsCluster)
}

// lvcBound bounds cluster ÷ lab for one figure of figures.csv (the
// median over a cell's repetitions) of one configuration's cells:
// "MESH/APP/pPOLICIES", e.g. "sidecar/static/p0".
type lvcBound struct {
	config, figure string
	lo, hi         float64
}

// istioLabVsCluster: what the lab with istiod's configs and the test
// nodes must agree on, cluster ÷ lab. Measured (docs/platforms/
// kubernetes.md; the lab 2026-11-28 at load 0.1–1.3, the cluster at load
// under 1.5 the day after; medians of 2): data-plane CPU sidecar 1.41,
// ambient 1.25, waypoint 1.02; p50 1.43, 1.18, 1.03; on a shared machine
// the cluster's ratios read 0.76–1.32. What stays different (the capture:
// iptables on the nodes, nftables in the lab; the nodes' veths, bridges
// and kube-proxy; one more HBONE hop where the waypoint lands on a third
// node) costs per packet, so the sidecar, with the most packets per
// request, is furthest apart. The bounds (0.7–1.7, the fast-path test's
// 1.7×) leave that room and fail what the lab's own configs show: their
// waypoint reads cluster ÷ lab 1.88 in CPU and 1.94 in p50. Memory is not
// bounded: PSS in the lab, the working set on the cluster
// (docs/method.md).
var istioLabVsCluster = []lvcBound{
	{"sidecar/static/p0", "cpu_m:data-plane", 0.7, 1.7}, {"sidecar/static/p0", "latency_p50_ms", 0.7, 1.7},
	{"ambient/static/p0", "cpu_m:data-plane", 0.7, 1.7}, {"ambient/static/p0", "latency_p50_ms", 0.7, 1.7},
	{"waypoint/static/p0", "cpu_m:data-plane", 0.7, 1.7}, {"waypoint/static/p0", "latency_p50_ms", 0.7, 1.7},
}

// labHalf runs examples/PLAN on the lab (its netns substrate) with the
// meshes' real control planes (control_plane: cp) into out, as `sudo
// meshbench bench PLAN --seed 7` does with that line added, and returns
// out. Every cell must be valid and configured by cp.
func labHalf(t *testing.T, plan, cp, out string, extra ...string) string {
	t.Helper()
	testutil.RequireRoot(t, "the lab's half needs root to make network namespaces")
	if _, _, err := labapi.Check(); err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The plan's copy names the control plane (a plan's settings and the
	// flags do not mix).
	src, err := os.ReadFile(filepath.Join(repo, "examples", plan))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), plan)
	if err := os.WriteFile(file, append(src, []byte("\ncontrol_plane: "+cp+"\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"bench", file, "--seed", "7", "--out", out}
	if zb, err := ztunnel.Find("", repo); err == nil {
		args = append(args, "--ztunnel", zb)
	}
	if lp, err := proxy.Find("", repo); err == nil {
		args = append(args, "--linkerd-proxy", lp)
	}
	cmd := exec.Command(testutil.BuildMeshbench(t), append(args, extra...)...)
	cmd.Dir = repo
	b, err := cmd.CombinedOutput()
	t.Logf("the lab's half: meshbench %s:\n%s", strings.Join(cmd.Args[1:], " "), b)
	if err != nil {
		t.Fatalf("the lab's half: %v", err)
	}
	report, err := os.ReadFile(filepath.Join(out, "report", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var cells, valid int
	if _, err := fmt.Sscanf(string(report), "meshbench plan: %d cells (%d valid)", &cells, &valid); err != nil || cells == 0 || valid != cells {
		t.Errorf("the lab's half: %d of %d cells valid (%v)", valid, cells, err)
	}
	want := map[string]string{"istiod": analysis.ControlPlaneIstiod, "linkerd": analysis.ControlPlaneLinkerd}[cp]
	for k, got := range readFigures(t, out).cp {
		if k != "none" && got != want {
			t.Errorf("the lab's half: mesh %s configured by %q, want %q", k, got, want)
		}
	}
	return out
}

// checkLabVsCluster holds every bound of bounds between the lab's
// figures.csv (lab) and the cluster's (cluster), and logs the ratios.
func checkLabVsCluster(t *testing.T, lab, cluster string, bounds []lvcBound) {
	t.Helper()
	l, c := readFigures(t, lab), readFigures(t, cluster)
	for _, b := range bounds {
		lv, lok := l.median[b.config+"\x00"+b.figure]
		cv, cok := c.median[b.config+"\x00"+b.figure]
		if !lok || !cok || lv <= 0 {
			t.Errorf("%s %s: lab %v (%v), cluster %v (%v): missing", b.config, b.figure, lv, lok, cv, cok)
			continue
		}
		r := cv / lv
		t.Logf("%s %s: cluster %.3g ÷ lab %.3g = %.2f (bound %.2g–%.2g)", b.config, b.figure, cv, lv, r, b.lo, b.hi)
		if r < b.lo || r > b.hi {
			t.Errorf("%s %s: cluster ÷ lab = %.2f (cluster %.3g, lab %.3g), outside %.2g–%.2g", b.config, b.figure, r, cv, lv, b.lo, b.hi)
		}
	}
}

// figures is a plan's report/figures.csv: each figure's median by
// "MESH/APP/pPOLICIES\x00FIGURE", the mesh without its control-plane
// label ("sidecar (config from istiod)" is sidecar), and each mesh's
// control_plane column. A configuration the plan ran at several rates or
// replicas keeps its first row; the lab-vs-cluster plans have one.
type figures struct {
	median map[string]float64
	cp     map[string]string
}

func readFigures(t *testing.T, dir string) figures {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "report", "figures.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: figures.csv: %v (%d rows)", dir, err, len(rows))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	out := figures{map[string]float64{}, map[string]string{}}
	for _, r := range rows[1:] {
		mesh, _, _ := strings.Cut(r[col["mesh"]], " (")
		out.cp[mesh] = r[col["control_plane"]]
		k := mesh + "/" + r[col["app"]] + "/p" + r[col["policies"]] + "\x00" + r[col["figure"]]
		if _, ok := out.median[k]; ok {
			continue
		}
		if v, err := strconv.ParseFloat(r[col["median"]], 64); err == nil {
			out.median[k] = v
		}
	}
	return out
}

// TestLabVsClusterLinkerd runs examples/lab-vs-cluster-linkerd.yaml (none
// and Linkerd, static and Faces, without and with policies, 200 rps, 2
// repetitions) twice, for docs/platforms/kubernetes.md's Linkerd
// lab-vs-cluster table: first on the lab (the netns substrate) with
// Linkerd's real controllers (`--control-plane linkerd`), before the test
// nodes start, then on the test nodes with Linkerd built here; then it
// holds the two halves to linkerdLabVsCluster's bounds. Every Linkerd
// cell on the cluster must verify mTLS from its proxies, and with
// policies the attacker must be refused. About 20 minutes on two cores,
// so out of `make test`: it runs only with MESHBENCH_LAB_VS_CLUSTER=1
// (MESHBENCH_LAB_VS_CLUSTER_OUT=DIR keeps the cluster's results there and
// the lab's in DIR-lab).
func TestLabVsClusterLinkerd(t *testing.T) {
	if os.Getenv("MESHBENCH_LAB_VS_CLUSTER") != "1" {
		t.Skip("set MESHBENCH_LAB_VS_CLUSTER=1 to run the lab-vs-cluster plan on the lab and the test nodes (about 20 minutes)")
	}
	b := openLinkerd(t)
	out := os.Getenv("MESHBENCH_LAB_VS_CLUSTER_OUT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "out")
	}
	lab := labHalf(t, "lab-vs-cluster-linkerd.yaml", "linkerd", out+"-lab")
	kc := kubetest.Require(t)
	c := connect(t, kc)
	before := clusterState(t, c)
	loadLinkerdImages(t, kc, b)
	t.Cleanup(func() {
		uninstallLinkerd(t, b, kc.Kubeconfig)
		sameState(t, before, clusterState(t, c))
	})
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "lab-vs-cluster-linkerd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(plan, clusterPlan(src), 0o644); err != nil {
		t.Fatal(err)
	}
	inv := meshbench(t, nil, "bench", plan, "--seed", "7", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2u",
		"--faces-chart=false", "--install-mesh", "--linkerd-build", b.Dir)
	if inv.code != 0 {
		t.Errorf("bench on the cluster: exit %d", inv.code)
	}
	report, err := os.ReadFile(filepath.Join(out, "report", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the cluster's report.txt:\n%s", report)
	cells, _ := filepath.Glob(filepath.Join(out, "cells", "linkerd-*", "k8s", "mtls-checks.json"))
	if len(cells) != 8 {
		t.Errorf("%d Linkerd cells with mTLS checks, want 8", len(cells))
	}
	for _, f := range cells {
		if data, _ := os.ReadFile(f); strings.Contains(string(data), `"ok": false`) {
			t.Errorf("%s: %s", f, data)
		}
		if strings.Contains(f, "-p5-") {
			if data, err := os.ReadFile(filepath.Join(filepath.Dir(f), kube.AttackerFile)); err != nil || !strings.Contains(string(data), `"refused": true`) {
				t.Errorf("%s: the attacker: %v %s", f, err, data)
			}
		}
	}
	checkLabVsCluster(t, lab, out, linkerdLabVsCluster)
}

// linkerdLabVsCluster: what the lab with Linkerd's controllers and the
// test nodes must agree on, cluster ÷ lab, per app and policies; the
// same 0.7–1.7 as Istio's (docs/platforms/kubernetes.md has the figures
// they were checked against).
var linkerdLabVsCluster = []lvcBound{
	{"linkerd/static/p0", "cpu_m:data-plane", 0.7, 1.7}, {"linkerd/static/p0", "latency_p50_ms", 0.7, 1.7},
	{"linkerd/static/p5", "cpu_m:data-plane", 0.7, 1.7}, {"linkerd/static/p5", "latency_p50_ms", 0.7, 1.7},
	{"linkerd/faces/p0", "cpu_m:data-plane", 0.7, 1.7}, {"linkerd/faces/p0", "latency_p50_ms", 0.7, 1.7},
	{"linkerd/faces/p5", "cpu_m:data-plane", 0.7, 1.7}, {"linkerd/faces/p5", "latency_p50_ms", 0.7, 1.7},
}

// clusterPlan is a lab plan for a cluster: its platform kube, its
// substrate line dropped (a plan's axes and the flags do not mix, so the
// copy says it).
func clusterPlan(lab []byte) []byte {
	var out []string
	for _, l := range strings.Split(string(lab), "\n") {
		switch {
		case l == "platform: local":
			l = "platform: kube"
		case strings.HasPrefix(l, "substrate:"):
			continue
		}
		out = append(out, l)
	}
	return []byte(strings.Join(out, "\n"))
}
