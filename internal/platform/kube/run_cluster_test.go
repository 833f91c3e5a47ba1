package kube

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestRunRefusesNamespaceInUse: a target namespace holding a Deployment
// meshbench did not create stops the run before anything is created.
func TestRunRefusesNamespaceInUse(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)
	const ns = "mbx-app"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, ns) })
	d := testDeployment(ns, "someones-app", 1, map[string]string{"app": "theirs"}, "1m", "1Mi", "main")
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	_, err := Run(ctx, Options{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig},
		Spec:     Spec{RunID: "refused", AppNamespace: ns, LoadNamespace: "mbx-load"},
		Settings: platform.Settings{Mesh: topology.DefaultOptions(), Load: testLoad(t, "10"), Duration: time.Second}, OutDir: out})
	var inUse *NamespaceInUseError
	if !errors.As(err, &inUse) || !strings.Contains(err.Error(), "deployment/someones-app") {
		t.Fatalf("run in a namespace in use: %v, want a NamespaceInUseError naming deployment/someones-app", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its results directory")
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, "mbx-load", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused run created the load namespace: %v", err)
	}
}

// TestDoctorAgainstCluster: every check passes on the healthy test
// cluster (the mesh CLIs are not installed here: warnings), and with the
// metrics API gone the metrics check fails and says what to install.
func TestDoctorAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	o := DoctorOptions{Connect: ConnectOptions{Kubeconfig: kc.Kubeconfig}, Nodes: 2, Namespaces: []string{"mbd-app", "mbd-load"}}
	checks, c := Doctor(ctx, o)
	if c == nil {
		t.Fatalf("no cluster: %+v", checks)
	}
	byName := map[string]DoctorCheck{}
	for _, ch := range checks {
		byName[ch.Name] = ch
		if !ch.OK && !ch.Warn {
			t.Errorf("healthy cluster: %s failed: %s", ch.Name, ch.Detail)
		}
	}
	for _, n := range []string{"API server reachable", "metrics API (metrics.k8s.io)", "resource source", "nodes", "istioctl", "linkerd", "namespaces free", "RBAC", "RBAC for faults"} {
		if _, ok := byName[n]; !ok {
			t.Errorf("no check %q in %+v", n, checks)
		}
	}
	// The test cluster's node proxy reaches kwok's emulated kubelet
	// endpoint: a run would read the counters.
	if src := byName["resource source"]; !src.OK || !strings.Contains(src.Detail, "the kubelet's counters") {
		t.Errorf("resource source check %+v, want the kubelet's counters", src)
	}
	// Break the metrics API (put back afterwards: other tests use it).
	saved, err := kc.Kubectl(ctx, "get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Kubectl(ctx, "delete", "apiservice", "v1beta1.metrics.k8s.io"); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Put it back as it was, less what the server owns.
		var obj map[string]any
		if err := json.Unmarshal(saved, &obj); err != nil {
			t.Fatal(err)
		}
		delete(obj, "status")
		md, _ := obj["metadata"].(map[string]any)
		for _, k := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
			delete(md, k)
		}
		back, _ := json.Marshal(obj)
		if _, err := kc.KubectlStdin(context.Background(), back, "create", "-f", "-"); err != nil {
			t.Errorf("restoring the metrics APIService: %v", err)
		}
	}()
	var metrics DoctorCheck
	deadline := time.Now().Add(30 * time.Second)
	apiOnly := o
	apiOnly.MetricsSource = SourceMetricsAPI
	for time.Now().Before(deadline) {
		checks, _ = Doctor(ctx, apiOnly)
		for _, ch := range checks {
			if ch.Name == "metrics API (metrics.k8s.io)" {
				metrics = ch
			}
		}
		if !metrics.OK && !metrics.Warn {
			break
		}
		time.Sleep(time.Second)
	}
	// Failed, not merely warned (an empty but served API warns), and it
	// says what is missing.
	if metrics.OK || metrics.Warn || !strings.Contains(metrics.Detail, "not available") || !strings.Contains(metrics.Detail, "metrics-server") {
		t.Errorf("metrics API gone: check %+v, want failed as not available, naming metrics-server", metrics)
	}
	// With the kubelet's counters readable (auto), metrics.k8s.io is only
	// the cross-check: its absence warns.
	checks, _ = Doctor(ctx, o)
	for _, ch := range checks {
		if ch.Name == "metrics API (metrics.k8s.io)" && (ch.OK || !ch.Warn || !strings.Contains(ch.Detail, "only the cross-check")) {
			t.Errorf("metrics API gone, counters readable: check %+v, want a warning", ch)
		}
	}
}
