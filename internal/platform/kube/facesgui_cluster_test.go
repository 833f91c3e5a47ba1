package kube

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestScaleFacesGUIAgainstCluster: on a real control plane (its controller
// manager turns Deployments into pods, kwok's nodes run them), a GUI
// Deployment the chart's replica default scaled to 3 is scaled to one
// replica through the scale subresource and waited for, the other
// workloads keep their 3, and the pods left are classified as the run
// classifies them: the GUI's (its sidecar too) out of the app's and the
// data plane's figures, the face's as the app.
//
// The Deployments are stand-ins: the Faces chart is fetched from ghcr.io
// at run time, which this machine cannot reach. They carry the label
// meshbench selects the GUI by (faces.buoyant.io/component=faces-gui) and
// the shape the chart's workloads have (a Deployment per component, an
// app container and, with a sidecar mesh, istio-proxy beside it).
func TestScaleFacesGUIAgainstCluster(t *testing.T) {
	kc := kubetest.Require(t)
	ctx := context.Background()
	cs, _ := clusterClients(t, kc)
	const ns = "mbgui-app"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespace(t, cs, ns) })

	// No GUI yet: nothing scaled, no error; the run's step (after the
	// chart's install) notes it in the manifest.
	if names, err := ScaleFacesGUI(ctx, cs, ns, time.Minute); err != nil || len(names) != 0 {
		t.Fatalf("no GUI Deployment: scaled %v, %v", names, err)
	}
	c, err := Connect(ctx, ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	newRun := func() *run {
		return &run{o: Options{Spec: Spec{AppNamespace: ns}}, c: c, manifest: &results.RunManifest{Options: map[string]any{}}}
	}
	if r := newRun(); r.scaleFacesGUI(ctx) != nil || r.manifest.Options["faces_gui_scaled_to_one"] != "none labelled faces.buoyant.io/component=faces-gui" {
		t.Fatalf("the run's step without a GUI: manifest says %v", r.manifest.Options["faces_gui_scaled_to_one"])
	}

	gui := testDeployment(ns, "faces-gui", 3, map[string]string{"app": "faces-gui", metricsapi.LabelFacesComponent: metricsapi.FacesGUIComponent}, "", "", "faces-gui", "istio-proxy")
	gui.Labels = map[string]string{metricsapi.LabelFacesComponent: metricsapi.FacesGUIComponent}
	face := testDeployment(ns, "face", 3, map[string]string{"app": "face", metricsapi.LabelFacesComponent: "face"}, "", "", "face", "istio-proxy")
	for _, d := range []string{"faces-gui", "face"} {
		dep := gui
		if d == "face" {
			dep = face
		}
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// As after `helm install --wait`: every workload at its 3 pods.
	waitPods(ctx, t, cs, ns, "app=faces-gui", 3)
	waitPods(ctx, t, cs, ns, "app=face", 3)

	// The bound: a pod to stop on kwok's nodes takes seconds; a loaded
	// 2-core machine with other clusters running gets the minute.
	names, err := ScaleFacesGUI(ctx, cs, ns, 2*time.Minute)
	if err != nil || len(names) != 1 || names[0] != "faces-gui" {
		t.Fatalf("ScaleFacesGUI = %v, %v; want [faces-gui]", names, err)
	}
	sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "faces-gui", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 1 {
		t.Fatalf("faces-gui scale %+v, %v; want 1 replica", sc, err)
	}
	waitPods(ctx, t, cs, ns, "app=faces-gui", 1)
	if d, err := cs.AppsV1().Deployments(ns).Get(ctx, "face", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Fatalf("face: %v, %v; want its 3 replicas untouched", d.Spec.Replicas, err)
	}
	// Scaling again changes nothing; the run's step (after the chart's
	// install) records what it scaled in the manifest.
	r := newRun()
	if err := r.scaleFacesGUI(ctx); err != nil || r.manifest.Options["faces_gui_scaled_to_one"] != "faces-gui" {
		t.Fatalf("the run's step: %v, manifest says %v", err, r.manifest.Options["faces_gui_scaled_to_one"])
	}

	// The real pods, classified.
	cl, err := metricsapi.NewClassifier("sidecar", metricsapi.Namespaces{App: ns, Load: "mbgui-load"})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Spec.Containers {
			_, component, category := cl.Classify(&p, c.Name)
			got[component+" / "+category]++
		}
	}
	want := map[string]int{
		"faces-gui (not measured) / " + sample.CategoryOverhead: 2, // its app container and its sidecar
		"app face / " + sample.CategoryApp:                      3,
		"face sidecar / " + sample.CategoryDataPlane:            3,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("classified containers %v, want %v", got, want)
	}
}

// waitPods waits until ns has exactly n pods matching selector, none
// terminating, all running.
func waitPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns, selector string, n int) {
	t.Helper()
	kubetest.Poll(ctx, t, 2*time.Minute, fmt.Sprintf("%d pods %s", n, selector), func() (bool, string) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n && len(l.Items) == n, fmt.Sprintf("%d pods, %d running", len(l.Items), running)
	})
}
