package kube

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorWithoutCluster: without an API server (the kubeconfig names a
// file that does not exist) the doctor still lists every check of its
// table, in the table's order: the API row fails with the reason, every
// row that needs the cluster (one per mesh to verify) fails as "skipped:
// no API server", and the mesh CLI rows, which need no cluster, run.
func TestDoctorWithoutCluster(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // neither istioctl nor linkerd
	o := DoctorOptions{Connect: ConnectOptions{Kubeconfig: filepath.Join(t.TempDir(), "missing")},
		Meshes: []string{"sidecar", "linkerd"}, Nodes: 2, Namespaces: []string{"a-app", "a-load"}}
	checks, c := Doctor(context.Background(), o)
	if c != nil {
		t.Fatal("a cluster without a kubeconfig")
	}
	var names []string
	for _, ch := range checks {
		names = append(names, ch.Name)
		switch {
		case ch.Name == "API server reachable":
			if ch.OK || ch.Warn || !strings.Contains(ch.Detail, "missing") {
				t.Errorf("API row: %+v", ch)
			}
		case ch.Name == "istioctl" || ch.Name == "linkerd":
			if !ch.Warn || !strings.Contains(ch.Detail, "not found on PATH") {
				t.Errorf("CLI row %s: %+v", ch.Name, ch)
			}
		default:
			if ch.OK || ch.Warn || ch.Detail != "skipped: no API server" {
				t.Errorf("row %s: %+v, want failed and skipped", ch.Name, ch)
			}
		}
	}
	want := "API server reachable, metrics API (metrics.k8s.io), resource source, nodes, istioctl, linkerd, " +
		"mesh sidecar installed, mesh linkerd installed, namespaces free, RBAC, RBAC for faults"
	if got := strings.Join(names, ", "); got != want {
		t.Errorf("rows\n%s\nwant\n%s", got, want)
	}
	// With --install-mesh nothing is verified: no mesh rows at all.
	o.InstallMesh = true
	checks, _ = Doctor(context.Background(), o)
	for _, ch := range checks {
		if strings.HasPrefix(ch.Name, "mesh ") {
			t.Errorf("with InstallMesh: row %s", ch.Name)
		}
	}
}
