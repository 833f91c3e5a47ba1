package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLabVsClusterIstio runs examples/lab-vs-cluster-istio.yaml (the
// seed-002 shape: none/sidecar/ambient/waypoint at 200 rps, 2
// repetitions) on the test nodes with Istio built here, for the README's
// lab-vs-cluster table; the lab's half is the same plan with `bench
// --substrate netns` (under the lab lock). About 15 minutes on two cores,
// so out of `make test`: it runs only with MESHBENCH_LAB_VS_CLUSTER=1
// (MESHBENCH_LAB_VS_CLUSTER_OUT=DIR keeps the results there).
func TestLabVsClusterIstio(t *testing.T) {
	if os.Getenv("MESHBENCH_LAB_VS_CLUSTER") != "1" {
		t.Skip("set MESHBENCH_LAB_VS_CLUSTER=1 to run the lab-vs-cluster plan on the test nodes (about 15 minutes)")
	}
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
	out := os.Getenv("MESHBENCH_LAB_VS_CLUSTER_OUT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "out")
	}
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
}

// TestLabVsClusterLinkerd runs examples/lab-vs-cluster-linkerd.yaml (none
// and Linkerd, static and Faces, without and with policies, 200 rps, 2
// repetitions) on the test nodes with Linkerd built here, for the
// Linkerd lab-vs-cluster table (docs/platforms/kubernetes.md); the lab's
// half is the same plan with `bench` on the netns substrate. Every Linkerd
// cell must verify mTLS from its proxies, and with policies the attacker
// must be refused. About 15 minutes on two cores, so out of `make test`:
// it runs only with MESHBENCH_LAB_VS_CLUSTER=1
// (MESHBENCH_LAB_VS_CLUSTER_OUT=DIR keeps the results there).
func TestLabVsClusterLinkerd(t *testing.T) {
	if os.Getenv("MESHBENCH_LAB_VS_CLUSTER") != "1" {
		t.Skip("set MESHBENCH_LAB_VS_CLUSTER=1 to run the lab-vs-cluster plan on the test nodes (about 15 minutes)")
	}
	kc := kubetest.Require(t)
	b := openLinkerd(t)
	c := connect(t, kc)
	before := clusterState(t, c)
	loadLinkerdImages(t, kc, b)
	t.Cleanup(func() {
		uninstallLinkerd(t, b, kc.Kubeconfig)
		sameState(t, before, clusterState(t, c))
	})
	out := os.Getenv("MESHBENCH_LAB_VS_CLUSTER_OUT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "out")
	}
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
