package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestDoctorMeshesAgainstCluster: without InstallMesh, every mesh asked
// for is verified on the cluster (one check per mode, none for "none") and
// a missing CLI is only a warning; with it, the CLIs of the meshes asked
// for are required and nothing is verified. On the test cluster istioctl
// is a stand-in script on PATH and linkerd is missing. Istio's objects
// are made as an installed Istio has them (istiod Deployment, ztunnel
// DaemonSet in istio-system, kwok makes their pods ready): the sidecar and
// ambient checks then pass, waypoint still fails on the Gateway API, and
// linkerd on its missing control plane.
func TestDoctorMeshesAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)

	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "istioctl"), []byte("#!/bin/sh\necho 1.28.0-fake\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)

	o := DoctorOptions{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig}, Nodes: 2, Namespaces: []string{"mbdm-app", "mbdm-load"},
		Meshes: []string{"none", "sidecar", "ambient", "waypoint", "linkerd", "sidecar"}}
	doctor := func(o DoctorOptions) map[string]DoctorCheck {
		t.Helper()
		checks, c := Doctor(ctx, o)
		if c == nil {
			t.Fatalf("no cluster: %+v", checks)
		}
		byName := map[string]DoctorCheck{}
		for _, ch := range checks {
			if _, dup := byName[ch.Name]; dup {
				t.Errorf("check %q twice", ch.Name)
			}
			byName[ch.Name] = ch
		}
		return byName
	}
	failed := func(ch DoctorCheck) bool { return !ch.OK && !ch.Warn }
	meshRows := func(checks map[string]DoctorCheck) []string {
		var out []string
		for n := range checks {
			if strings.HasPrefix(n, "mesh ") {
				out = append(out, n)
			}
		}
		return out
	}

	// Nothing installed, no --install-mesh: a mesh check per mode asked
	// for, each failed with what is missing; the missing CLI warns.
	checks := doctor(o)
	if ch := checks["istioctl"]; !ch.OK || ch.Detail != "version 1.28.0-fake" {
		t.Errorf("istioctl (stand-in on PATH): %+v", ch)
	}
	if ch := checks["linkerd"]; !ch.Warn || ch.OK || !strings.Contains(ch.Detail, "linkerd not found on PATH; needed only with --install-mesh (the installed mesh is verified instead: linkerd)") {
		t.Errorf("linkerd CLI missing without --install-mesh: %+v, want a warning", ch)
	}
	if rows := meshRows(checks); len(rows) != 4 {
		t.Errorf("mesh checks %v, want one per mesh asked for: sidecar, ambient, waypoint, linkerd", rows)
	}
	for mode, want := range map[string]string{
		"sidecar":  "Deployment istio-system/istiod available: not found",
		"ambient":  "DaemonSet istio-system/ztunnel ready on every node: not found",
		"waypoint": "Gateway",
		"linkerd":  "Deployment linkerd/linkerd-destination available: not found",
	} {
		ch, ok := checks["mesh "+mode+" installed"]
		if !ok || !failed(ch) || !strings.Contains(ch.Detail, want) || !strings.Contains(ch.Detail, "--install-mesh") {
			t.Errorf("mesh %s not installed: %+v, want failed naming %q and --install-mesh", mode, ch, want)
		}
	}
	for n, ch := range checks {
		if failed(ch) && !strings.HasPrefix(n, "mesh ") {
			t.Errorf("%s failed on the healthy cluster: %s", n, ch.Detail)
		}
	}

	// --install-mesh: the linkerd CLI is required; nothing is verified.
	withInstall := o
	withInstall.InstallMesh = true
	checks = doctor(withInstall)
	if ch := checks["linkerd"]; !failed(ch) || !strings.Contains(ch.Detail, "linkerd not found on PATH") {
		t.Errorf("linkerd CLI missing with --install-mesh: %+v, want failed", ch)
	}
	if ch := checks["istioctl"]; !ch.OK {
		t.Errorf("istioctl with --install-mesh: %+v", ch)
	}
	if rows := meshRows(checks); len(rows) != 0 {
		t.Errorf("with --install-mesh, mesh checks %v, want none", rows)
	}

	// Istio as installed: istiod and the ztunnel DaemonSet.
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: IstioNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, IstioNamespace) })
	if _, err := cs.AppsV1().Deployments(IstioNamespace).Create(ctx,
		testDeployment(IstioNamespace, "istiod", 1, map[string]string{"app": "istiod"}, "5m", "64Mi", "discovery"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ztunnel := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: IstioNamespace, Name: "ztunnel"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ztunnel"}},
			Template: testPodTemplate(map[string]string{"app": "ztunnel"}, "2m", "16Mi", "istio-proxy")}}
	if _, err := cs.AppsV1().DaemonSets(IstioNamespace).Create(ctx, ztunnel, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Poll(ctx, t, 90*time.Second, "doctor to find Istio installed", func() (bool, string) {
		checks = doctor(o)
		side, amb := checks["mesh sidecar installed"], checks["mesh ambient installed"]
		return side.OK && amb.OK, fmt.Sprintf("sidecar %+v; ambient %+v", side, amb)
	})
	if ch := checks["mesh sidecar installed"]; !strings.Contains(ch.Detail, "Deployment istio-system/istiod available: 1/1 available") {
		t.Errorf("sidecar check: %+v, want istiod's state in the detail", ch)
	}
	if ch := checks["mesh ambient installed"]; !strings.Contains(ch.Detail, "DaemonSet istio-system/ztunnel ready on every node: 2/2 ready") {
		t.Errorf("ambient check: %+v, want ztunnel on both nodes", ch)
	}
	// Waypoints need the Gateway API too, which the cluster does not serve.
	if ch := checks["mesh waypoint installed"]; !failed(ch) || !strings.Contains(ch.Detail, "Gateway") || strings.Contains(ch.Detail, "istiod") {
		t.Errorf("waypoint check with Istio but no Gateway API: %+v, want failed on the Gateway API alone", ch)
	}
	if ch := checks["mesh linkerd installed"]; !failed(ch) {
		t.Errorf("linkerd check with only Istio installed: %+v", ch)
	}
}
