package install

import (
	"context"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestInstallCommands(t *testing.T) {
	for _, tc := range []struct {
		mode, kubeconfig, context string
		want                      []string // the commands as typed
	}{
		// none installs nothing.
		{"none", "", "", nil},
		// sidecar: istioctl's default profile, the CLI's own cluster.
		{"sidecar", "", "", []string{"istioctl install -y --set profile=default"}},
		// ambient on a named cluster: the connection flags last.
		{"ambient", "/k", "c", []string{"istioctl install -y --set profile=ambient --kubeconfig /k --context c"}},
		// linkerd: its CRDs and control plane applied from the CLI's
		// output, then its check until it passes.
		{"linkerd", "/k", "", []string{"linkerd install --crds --kubeconfig /k | kubectl apply -f -",
			"linkerd install --kubeconfig /k | kubectl apply -f -", "linkerd check --wait 5m --kubeconfig /k"}},
	} {
		var got []string
		for _, c := range InstallCommands(tc.mode, tc.kubeconfig, tc.context) {
			got = append(got, c.String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.mode, got, tc.want)
		}
	}
}

// A MeshInstall swaps its CLI for its own and adds its arguments to the
// command that installs the control plane; other CLIs' commands are left
// alone.
func TestMeshInstallCommands(t *testing.T) {
	mi := &MeshInstall{For: "istioctl", CLI: "/b/istioctl", Args: []string{"--set", "hub=h"}}
	got := mi.Commands([]Command{{Args: []string{"istioctl", "install"}, ControlPlane: true}, {Args: []string{"linkerd", "check"}}})
	if got[0].String() != "/b/istioctl install --set hub=h" || got[1].String() != "linkerd check" {
		t.Errorf("%v", got)
	}
	l5d := &MeshInstall{For: "linkerd", CLI: "/b/linkerd", Args: []string{"--identity-trust-anchors-file", "ca.crt"}}
	var typed []string
	for _, c := range l5d.Commands(InstallCommands("linkerd", "", "")) {
		typed = append(typed, c.String())
	}
	if want := []string{"/b/linkerd install --crds | kubectl apply -f -", "/b/linkerd install --identity-trust-anchors-file ca.crt | kubectl apply -f -",
		"/b/linkerd check --wait 5m"}; !slices.Equal(typed, want) {
		t.Errorf("linkerd: %q, want %q", typed, want)
	}
	var nilMI *MeshInstall
	if got := nilMI.Commands([]Command{{Args: []string{"istioctl", "install"}}}); got[0].String() != "istioctl install" {
		t.Errorf("nil MeshInstall changed the command: %v", got)
	}
}

// Linkerd's CRDs come with its Gateway API bundle only on a cluster
// without the Gateway API; Istio's commands never change.
func TestWithGatewayAPI(t *testing.T) {
	for _, tc := range []struct {
		mode string
		crds []string
		want string // the first command as typed
	}{
		{"linkerd", nil, "linkerd install --crds --set installGatewayAPI=true | kubectl apply -f -"},
		{"linkerd", []string{"x.example.com", "httproutes.gateway.networking.k8s.io"}, "linkerd install --crds | kubectl apply -f -"},
		{"ambient", nil, "istioctl install -y --set profile=ambient"},
	} {
		if got := WithGatewayAPI(InstallCommands(tc.mode, "", ""), tc.crds)[0].String(); got != tc.want {
			t.Errorf("%s with CRDs %v: %q, want %q", tc.mode, tc.crds, got, tc.want)
		}
	}
}

// An installed Linkerd is only checked; Istio has nothing after its one
// command.
func TestAfterControlPlane(t *testing.T) {
	if got := AfterControlPlane(InstallCommands("linkerd", "", "")); len(got) != 1 || got[0].String() != "linkerd check --wait 5m" {
		t.Errorf("linkerd: %v", got)
	}
	if got := AfterControlPlane(InstallCommands("sidecar", "", "")); len(got) != 0 {
		t.Errorf("sidecar: %v", got)
	}
}

// recorder stands in for the API server: what Run hands to Apply is the
// unit here (client's Apply is tested against a real API server).
type recorder struct{ objs []runtime.Object }

func (r *recorder) Apply(_ context.Context, objs []runtime.Object) error {
	r.objs = append(r.objs, objs...)
	return nil
}

// Run runs real commands: one whose output is applied (two documents, one
// empty), then one that fails, which ends the run and comes back last with
// its output and error.
func TestRun(t *testing.T) {
	r := &recorder{}
	manifest := "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: a}\n"
	cmds := []Command{
		{Args: []string{"printf", "%s", manifest}, ApplyOutput: true},
		{Args: []string{"sh", "-c", "echo broken >&2; exit 3"}},
		{Args: []string{"true"}},
	}
	done, err := Run(context.Background(), r, cmds, nil)
	if err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("err %v, want the failing command's output", err)
	}
	if len(done) != 2 || done[1].Err == "" || done[0].Err != "" {
		t.Fatalf("done %+v; want the applied one and the failed one", done)
	}
	if len(r.objs) != 2 || r.objs[1].(*unstructured.Unstructured).GetName() != "b" {
		t.Errorf("applied %d objects, want the namespace and the ConfigMap", len(r.objs))
	}
	if want := []string{"/v1/Namespace /a", "/v1/ConfigMap a/b"}; !slices.Equal(done[0].Applied, want) {
		t.Errorf("the applied command records %q, want %q", done[0].Applied, want)
	}
}
