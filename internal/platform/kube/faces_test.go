package kube

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// TestFacesChart: the helm command that installs the pinned Faces chart
// (faults off, the cell's replicas, the seed tool's placement by node
// count), the objects meshbench still applies itself (namespaces with the
// enrolment, the load's service account, the mesh's objects; no
// workload), the load's target, and what the chart cannot run.
func TestFacesChart(t *testing.T) {
	mo := topology.DefaultOptions()
	mo.App, mo.Mode, mo.Replicas = topology.AppFaces, topology.ModeAmbient, 3
	s := Spec{RunID: "r1", AppNamespace: "mb-app", LoadNamespace: "mb-load", Mesh: mo, FacesChart: true}

	for _, tc := range []struct {
		nodes int
		want  string
	}{
		{1, "helm install faces oci://ghcr.io/buoyantio/faces-chart --version 2.0.0-rc.7 --namespace mb-app " +
			"--set-string face.errorFraction=0 --set-string backend.errorFraction=0 --set-string face.delayBuckets= --set-string backend.delayBuckets= " +
			"--set defaultReplicas=3 --wait --timeout 10m --kubeconfig /k/c.yaml --kube-context k3d-x"},
		{2, "--set defaultReplicas=3 --set backend.antiaffinity=true --set face.antiaffinity=true --set gui.antiaffinity=true --wait"},
		{4, "--set gui.antiaffinity=true --set backend.affinity.key=meshbench.dev/node-role --set backend.affinity.value=app " +
			"--set face.affinity.key=meshbench.dev/node-role --set face.affinity.value=app --set gui.affinity.key=meshbench.dev/node-role --set gui.affinity.value=app --wait"},
	} {
		s.NodeCount = tc.nodes
		got := FacesChartCommand(s, "/k/c.yaml", "k3d-x").String()
		if !strings.Contains(got, tc.want) {
			t.Errorf("%d nodes:\n%s\nwant it to hold:\n%s", tc.nodes, got, tc.want)
		}
	}

	objs, err := AppObjects(s)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		switch o.(type) {
		case *appsv1.Deployment, *corev1.Service:
			t.Errorf("AppObjects with the chart holds a workload: %T", o)
		}
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind)
	}
	if len(objs) < 3 {
		t.Errorf("objects %v: want the two namespaces, the load's service account and the mesh's objects", kinds)
	}
	if got, want := LoadTarget(s), "http://face.mb-app.svc.cluster.local/"; got != want {
		t.Errorf("target %s, want %s", got, want)
	}

	// What the chart cannot do, one line each.
	bad := s
	bad.Mesh.Policies, bad.Mesh.Protocol = 4, topology.ProtocolTCP
	err = bad.Validate()
	var oe *topology.OptionError
	if !errors.As(err, &oe) || !strings.Contains(err.Error(), "0 with the Faces chart") {
		t.Errorf("policies with the chart: %v", err)
	}
	static := s
	static.Mesh.App = topology.AppStatic
	if err := static.Validate(); err == nil || !strings.Contains(err.Error(), "faces-chart true: applies to the faces app only") {
		t.Errorf("chart with the static app: %v", err)
	}
}
