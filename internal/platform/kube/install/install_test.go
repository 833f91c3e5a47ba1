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

// A MeshInstall swaps istioctl for its own and adds its arguments; other
// CLIs' commands are left alone.
func TestMeshInstallCommands(t *testing.T) {
	mi := &MeshInstall{Istioctl: "/b/istioctl", Args: []string{"--set", "hub=h"}}
	got := mi.Commands([]Command{{Args: []string{"istioctl", "install"}}, {Args: []string{"linkerd", "check"}}})
	if got[0].String() != "/b/istioctl install --set hub=h" || got[1].String() != "linkerd check" {
		t.Errorf("%v", got)
	}
	var nilMI *MeshInstall
	if got := nilMI.Commands([]Command{{Args: []string{"istioctl", "install"}}}); got[0].String() != "istioctl install" {
		t.Errorf("nil MeshInstall changed the command: %v", got)
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
}
