package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestFaultPartsAgainstCluster: on a real control plane (its controller
// manager turns the Deployment into pods, kwok's nodes run them and mark
// them Ready), a sidecar kill deletes the app's first replica's pod and
// returns once a new pod is Ready in its place, naming it; a CPU limit on
// a container without one is refused before anything changes (a resize
// cannot remove a limit once set, so it could not be undone). The app's
// Deployment is a stand-in with the app's labels; the fault on real pods
// and proxies is internal/e2e's TestIstioOnRealNodes.
func TestFaultPartsAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)
	const ns = "mbflt-app"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, ns) })
	labels := map[string]string{LabelRole: RoleApp, LabelApp: "static"}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, testDeployment(ns, "static", 2, labels, "", "", "app", "istio-proxy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel := LabelRole + "=" + RoleApp + "," + LabelApp + "=static"
	waitPods(ctx, t, cs, ns, sel, 2)
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{AppNamespace: ns, Mesh: topology.Options{Mode: topology.ModeSidecar, App: topology.AppStatic}}
	var first string
	kubetest.Poll(ctx, t, time.Minute, "a Ready app pod", func() (bool, string) {
		p, _, err := c.servedPod(ctx, s)
		first = ns + "/" + p.Name
		return err == nil, first
	})

	kctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var deleted string
	rep, err := c.KillPart(kctx, s, mesh.PartSidecar, func(old string) { deleted = old })
	if err != nil || deleted != first || rep == "" || rep == first || !strings.HasPrefix(rep, ns+"/") {
		t.Fatalf("KillPart: deleted %q, replacement %q, %v; want %s replaced by a new pod", deleted, rep, err, first)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, strings.TrimPrefix(first, ns+"/"), metav1.GetOptions{}); err == nil {
		t.Errorf("%s still exists after the kill", first)
	}

	before, _, err := c.servedPod(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.LimitPart(ctx, s, mesh.PartSidecar, 100); err == nil || !strings.Contains(err.Error(), "has no CPU limit") {
		t.Errorf("LimitPart on a container without a CPU limit: %v; want it refused", err)
	}
	after, err := cs.CoreV1().Pods(ns).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil || after.Generation != before.Generation {
		t.Errorf("the refused limit changed pod %s: generation %d → %d (%v)", before.Name, before.Generation, after.Generation, err)
	}
}
