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
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
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

	// The noisy neighbour: a pod of its own on the server's node, CPU
	// requests = limits, out of every mesh, classified by its label;
	// deleted by its undo, gone when it returns.
	what, undo, err := c.HogPod(ctx, s, 250, 40*time.Second)
	if err != nil || undo == nil {
		t.Fatalf("HogPod: %q, %v", what, err)
	}
	hogs, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: metricsapi.LabelFault})
	if err != nil || len(hogs.Items) != 1 {
		t.Fatalf("hog pods: %v, %v; want one", hogs, err)
	}
	hog := hogs.Items[0]
	res := hog.Spec.Containers[0].Resources
	if hog.Spec.NodeName != before.Spec.NodeName || res.Limits.Cpu().MilliValue() != 250 || res.Requests.Cpu().MilliValue() != 250 ||
		hog.Labels["sidecar.istio.io/inject"] != "false" || hog.Labels["istio.io/dataplane-mode"] != "none" || hog.Annotations["linkerd.io/inject"] != "disabled" ||
		*hog.Spec.ActiveDeadlineSeconds != 41 || !strings.Contains(what, "on node "+before.Spec.NodeName+" (the server's: pod "+before.Name+")") {
		t.Errorf("hog pod %s on %s, resources %v, labels %v, annotations %v; record %q; want it on %s with 250m requested and limited, out of the meshes",
			hog.Name, hog.Spec.NodeName, res, hog.Labels, hog.Annotations, what, before.Spec.NodeName)
	}
	said, err := undo(ctx)
	if err != nil || !strings.Contains(said, "hog pod "+ns+"/"+hog.Name+" deleted, gone") {
		t.Errorf("the hog's undo: %q, %v", said, err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(ctx, hog.Name, metav1.GetOptions{}); err == nil {
		t.Errorf("hog pod %s still there after its undo", hog.Name)
	}
	// A slow replica needs the service's control API (a slow-replica
	// cell's ControlService): refused without it, nothing opened.
	if reps, closeAll, err := c.ReachReplicas(ctx, s, "", 1); err == nil || closeAll != nil || len(reps) != 0 || !strings.Contains(err.Error(), "serve no control API") {
		t.Errorf("ReachReplicas without a control service: %v, %v", reps, err)
	}
}
