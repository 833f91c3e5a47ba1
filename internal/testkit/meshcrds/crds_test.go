package meshcrds_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/platform/kube/policy"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

func TestMain(m *testing.M) { kubetest.Main(m, kubetest.Options{}) }

// gatewayAPIVersion is the Gateway API the pinned Istio requires (its
// go.mod; hack/istio/build.sh copies the same CRDs for waypoints).
const gatewayAPIVersion = "v1.6.0"

// moduleDir is a Go module's directory in the module cache, downloaded
// through the Go module proxy when missing.
func moduleDir(t *testing.T, mod string) string {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", mod)
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download %s: %v", mod, err)
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil || m.Dir == "" {
		t.Fatalf("go mod download %s: %s", mod, out)
	}
	return m.Dir
}

// TestMeshObjectsAgainstUpstreamCRDs installs Istio's and the Gateway
// API's CRDs into a test cluster (kwok nodes: nothing runs, the API server
// judges) and server-side dry-runs, with strict field validation, every
// mesh object AppObjects renders for sidecar, ambient and waypoint, with
// and without L4 policies (and sidecar without mTLS). A row with a field the CRD does not
// have must be refused, so the check is known to bite.
//
// Linkerd's objects (Servers, AuthorizationPolicies,
// MeshTLSAuthentications, NetworkAuthentications) against the CRDs the
// Linkerd build's own CLI renders (make linkerd-tools).
func TestMeshObjectsAgainstUpstreamCRDs(t *testing.T) {
	kc := kubetest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	istioAPI := moduleDir(t, "istio.io/api")
	gw := moduleDir(t, "sigs.k8s.io/gateway-api@"+gatewayAPIVersion)
	for _, f := range []string{filepath.Join(istioAPI, "kubernetes", "customresourcedefinitions.gen.yaml"),
		filepath.Join(gw, "config", "crd", "standard")} {
		// Server-side: Istio's CRDs are too big for the last-applied
		// annotation of a client-side apply.
		if out, err := kc.Kubectl(ctx, "apply", "--server-side", "-f", f); err != nil {
			t.Fatalf("installing the CRDs of %s: %v\n%s", f, err, out)
		}
	}
	if out, err := kc.Kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=120s"); err != nil {
		t.Fatalf("CRDs not established: %v\n%s", err, out)
	}

	n := 0
	for _, mode := range []topology.Mode{topology.ModeSidecar, topology.ModeAmbient, topology.ModeWaypoint} {
		for _, policies := range []int{0, 4} {
			for _, mtls := range []bool{true, false} {
				if !mtls && (mode != topology.ModeSidecar || policies > 0) {
					continue // plaintext is sidecar's alone, and L4 rules match mTLS identities
				}
				name := fmt.Sprintf("%s-p%d-mtls-%v", mode, policies, mtls)
				t.Run(name, func(t *testing.T) {
					o := topology.DefaultOptions()
					o.Mode, o.Policies, o.MTLS, o.Replicas = mode, policies, mtls, 2
					objs, err := kube.AppObjects(kube.Spec{RunID: fmt.Sprintf("crd%d", n), Mesh: o, NodeCount: 2})
					n++
					if err != nil {
						t.Fatal(err)
					}
					checked := dryRun(t, ctx, kc, objs)
					if checked == 0 && (policies > 0 || mode == topology.ModeWaypoint) {
						t.Errorf("no mesh object rendered for %s", name)
					}
					t.Logf("%d mesh objects accepted", checked)
				})
			}
		}
	}

	// Linkerd's: its CRDs as the build's CLI renders them (offline; the
	// Gateway API's are above), then every Linkerd object of a cell with
	// and without policies, and meshbench's access to the proxies' admin
	// port.
	if b, err := release.Open(release.DefaultDir()); err != nil {
		testutil.SkipOrFail(t, err.Error())
	} else {
		cmd := exec.CommandContext(ctx, b.Path(release.CLI), "install", "--crds", "--ignore-cluster", "--set", "installGatewayAPI=false")
		cmd.Env = append(os.Environ(), "KUBECONFIG=/nonexistent")
		crds, err := cmd.Output()
		if err != nil {
			t.Fatalf("linkerd install --crds: %v", err)
		}
		if out, err := kc.KubectlStdin(ctx, crds, "apply", "--server-side", "-f", "-"); err != nil {
			t.Fatalf("installing Linkerd's CRDs: %v\n%s", err, out)
		}
		if out, err := kc.Kubectl(ctx, "wait", "--for=condition=Established", "crd", "--all", "--timeout=120s"); err != nil {
			t.Fatalf("CRDs not established: %v\n%s", err, out)
		}
		for _, policies := range []int{0, 5} {
			t.Run(fmt.Sprintf("linkerd-p%d", policies), func(t *testing.T) {
				o := topology.DefaultOptions()
				o.Mode, o.Policies, o.App, o.Replicas = kube.ModeLinkerd, policies, topology.AppFaces, 2
				s := kube.Spec{RunID: fmt.Sprintf("crd%d", n), Mesh: o, NodeCount: 2}
				n++
				objs, err := kube.AppObjects(s)
				if err != nil {
					t.Fatal(err)
				}
				s = s.WithDefaults()
				cell := policy.Cell{Mesh: linkerdMesh(t), Options: o, AppNamespace: s.AppNamespace, LoadNamespace: s.LoadNamespace}
				objs = append(objs, policy.LinkerdAdminAccess(cell, []string{"10.99.0.1/32", "fd00::1/128"})...)
				checked := dryRun(t, ctx, kc, objs)
				// The admin port's Server, NetworkAuthentication and
				// AuthorizationPolicy; with rules, a Server per port they
				// name (the app's, 9090) and a MeshTLSAuthentication and
				// an AuthorizationPolicy per rule.
				want := 3
				if policies > 0 {
					want += 2 + 2*policies
				}
				if checked != want {
					t.Errorf("%d Linkerd objects checked, want %d", checked, want)
				}
				t.Logf("%d mesh objects accepted", checked)
			})
		}
		bad := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "policy.linkerd.io/v1beta3", "kind": "Server",
			"metadata": map[string]any{"name": "bad", "namespace": "default"},
			"spec":     map[string]any{"podSelector": map[string]any{}, "port": int64(8080), "proxyProtocl": "HTTP/1"},
		}}
		if err := dryRunOne(ctx, kc, bad); err == nil || !strings.Contains(err.Error(), "proxyProtocl") {
			t.Errorf("a Server with an unknown field: %v, want it refused naming the field", err)
		}
	}

	// The check bites: a PeerAuthentication with a field its CRD lacks.
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "security.istio.io/v1", "kind": "PeerAuthentication",
		"metadata": map[string]any{"name": "bad", "namespace": "default"},
		"spec":     map[string]any{"mtls": map[string]any{"mode": "STRICT", "modee": "STRICT"}},
	}}
	if err := dryRunOne(ctx, kc, bad); err == nil || !strings.Contains(err.Error(), "modee") {
		t.Errorf("a PeerAuthentication with an unknown field: %v, want it refused naming the field", err)
	}
}

// dryRun creates the run's namespaces for real (a namespaced dry-run
// needs its namespace) and dry-runs every mesh object (the objects of API
// groups the CRDs define); it returns how many it checked.
func dryRun(t *testing.T, ctx context.Context, kc *kubetest.Cluster, objs []runtime.Object) int {
	t.Helper()
	n := 0
	for _, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		obj := &unstructured.Unstructured{Object: u}
		switch {
		case obj.GetKind() == "Namespace":
			delete(obj.Object, "status")
			y, _ := yaml.Marshal(obj.Object)
			if out, err := kc.KubectlStdin(ctx, y, "apply", "-f", "-"); err != nil {
				t.Fatalf("namespace %s: %v\n%s", obj.GetName(), err, out)
			}
		case strings.Contains(obj.GetAPIVersion(), "istio.io/") || strings.Contains(obj.GetAPIVersion(), "gateway.networking.k8s.io/") ||
			strings.Contains(obj.GetAPIVersion(), "linkerd.io/"):
			if err := dryRunOne(ctx, kc, obj); err != nil {
				t.Errorf("%s %s/%s refused by the upstream CRD: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
			}
			n++
		}
	}
	return n
}

func dryRunOne(ctx context.Context, kc *kubetest.Cluster, obj *unstructured.Unstructured) error {
	y, err := yaml.Marshal(obj.Object)
	if err != nil {
		return err
	}
	out, err := kc.KubectlStdin(ctx, y, "create", "--dry-run=server", "--validate=strict", "-f", "-")
	if err != nil {
		return fmt.Errorf("%v: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func linkerdMesh(t *testing.T) *mesh.Mesh {
	t.Helper()
	m, ok := mesh.Get(mesh.NameLinkerd)
	if !ok {
		t.Fatal("no linkerd descriptor")
	}
	return m
}
