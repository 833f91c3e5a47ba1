package labapi

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestLabAPIServer starts the real etcd and kube-apiserver, fills them
// with a small lab and Istio's CRDs from its own install manifests, and
// checks what a control plane would read: pods Running and Ready with
// their IPs, the EndpointSlice, a TokenRequest; then that Close leaves
// nothing.
func TestLabAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd and kube-apiserver (~5 s)")
	}
	if _, _, err := Check(); errors.Is(err, ErrNoBinaries) {
		testutil.SkipOrFail(t, err.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "api")
	s, err := Start(ctx, Options{Dir: dir, ServiceCIDR: netip.MustParsePrefix("10.98.254.0/23"), Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	etcdRSS, apiRSS, err := s.Memory()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ready in %v; RSS etcd %.0f MiB, kube-apiserver %.0f MiB", s.StartTime.Round(time.Millisecond), float64(etcdRSS)/(1<<20), float64(apiRSS)/(1<<20))

	base, err := s.Snapshot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("baseline: %d objects", base.Objects())

	labels := map[string]string{"app": "server"}
	o := Objects{
		Namespaces:      []string{"istio-system"},
		NamespaceLabels: map[string]map[string]string{"default": {"istio.io/use-waypoint": "waypoint"}},
		Nodes:           []string{"node1", "node2"},
		Pods: []Pod{
			{Name: "client", Namespace: "default", ServiceAccount: "client", Node: "node1", IP: netip.MustParseAddr("10.98.1.10"), Labels: map[string]string{"app": "client"}},
			{Name: "server-0", Namespace: "default", ServiceAccount: "server", Node: "node2", IP: netip.MustParseAddr("10.98.2.10"), Labels: labels},
			{Name: "server-1", Namespace: "default", ServiceAccount: "server", Node: "node2", IP: netip.MustParseAddr("10.98.2.11"), Labels: labels,
				Annotations: map[string]string{"linkerd.io/identity-mode": "default"}, Containers: []string{"app", "linkerd-proxy"},
				ContainerSpecs: map[string]corev1.Container{"linkerd-proxy": {Env: []corev1.EnvVar{{Name: "LINKERD2_PROXY_INBOUND_LISTEN_ADDR", Value: "0.0.0.0:4143"}}}}},
		},
		Services: []Service{{Name: "server", Namespace: "default", VIP: netip.MustParseAddr("10.98.255.1"), Port: 80, TargetPort: 8080, Selector: labels}},
	}
	if err := s.Populate(ctx, o); err != nil {
		t.Fatal(err)
	}
	core := s.Client.Core.CoreV1()
	pod, err := core.Pods("default").Get(ctx, "server-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Status.Phase != "Running" || pod.Status.PodIP != "10.98.2.11" || pod.Spec.ServiceAccountName != "server" {
		t.Errorf("server-1: phase %s, IP %s, service account %s", pod.Status.Phase, pod.Status.PodIP, pod.Spec.ServiceAccountName)
	}
	if pod.Annotations["linkerd.io/identity-mode"] != "default" || len(pod.Spec.Containers) != 2 ||
		pod.Spec.Containers[1].Name != "linkerd-proxy" || len(pod.Spec.Containers[1].Env) != 1 || pod.Spec.Containers[1].Env[0].Value != "0.0.0.0:4143" {
		t.Errorf("server-1: annotations %v, containers %+v: want the annotation and the proxy container's environment as given", pod.Annotations, pod.Spec.Containers)
	}
	slice, err := s.Client.Core.DiscoveryV1().EndpointSlices("default").Get(ctx, "server-lab", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, e := range slice.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	if len(addrs) != 2 || addrs[0] != "10.98.2.10" || addrs[1] != "10.98.2.11" {
		t.Errorf("server's endpoints %v, want the two server pods", addrs)
	}
	svc, err := core.Services("default").Get(ctx, "server", metav1.GetOptions{})
	if err != nil || svc.Spec.ClusterIP != "10.98.255.1" {
		t.Errorf("service server: %v, VIP %v", err, svc.Spec.ClusterIP)
	}

	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, "Istio's CRDs: "+err.Error())
	}
	crds, err := istio.CRDs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.ApplyCRDs(ctx, crds); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Istio CRDs established in %v", len(crds), time.Since(start).Round(time.Millisecond))
	apGVR := schema.GroupVersionResource{Group: "security.istio.io", Version: "v1", Resource: "authorizationpolicies"}
	if _, err := s.Client.Dynamic.Resource(apGVR).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing AuthorizationPolicies: %v", err)
	}
	ap := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
		"metadata": map[string]any{"name": "allow-client", "namespace": "default"}, "spec": map[string]any{"action": "ALLOW"}}}
	if err := s.Client.Apply(ctx, []runtime.Object{ap}); err != nil {
		t.Fatal(err)
	}

	// A plan's next topology gets the server as it was before this one,
	// but for the CRDs, which its own ApplyCRDs makes its own.
	start = time.Now()
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("reset to the baseline in %v", time.Since(start).Round(time.Millisecond))
	kept, err := s.Clean(ctx)
	if err != nil {
		t.Error(err)
	}
	if len(kept) != len(crds) {
		t.Errorf("after Reset: CRDs %v kept, want Istio's %d", kept, len(crds))
	}
	if pods, err := core.Pods("default").List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 0 {
		t.Errorf("after Reset: pods %v, %v; want none", pods, err)
	}
	if _, err := core.Namespaces().Get(ctx, "istio-system", metav1.GetOptions{}); err == nil {
		t.Error("after Reset: namespace istio-system still there")
	}
	if ns, err := core.Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil || ns.Labels["istio.io/use-waypoint"] != "" {
		t.Errorf("after Reset: namespace default %v, labels %v; want its own labels only", err, ns.Labels)
	}
	if aps, err := s.Client.Dynamic.Resource(apGVR).Namespace("default").List(ctx, metav1.ListOptions{}); err != nil || len(aps.Items) != 0 {
		t.Errorf("after Reset: AuthorizationPolicies %v, %v; want none", aps, err)
	}
	// The next lab takes one of the CRDs only: the others go.
	start = time.Now()
	if err := s.ApplyCRDs(ctx, crds[:1]); err != nil {
		t.Fatal(err)
	}
	t.Logf("the next lab's one CRD in %v", time.Since(start).Round(time.Millisecond))
	if kept, err = s.Clean(ctx); err != nil || len(kept) != 1 || kept[0] != crds[0].(*unstructured.Unstructured).GetName() {
		t.Errorf("after ApplyCRDs of one: CRDs %v (%v), want %s only", kept, err, crds[0].(*unstructured.Unstructured).GetName())
	}
	if err := s.Populate(ctx, o); err != nil {
		t.Fatalf("the same lab again after Reset: %v", err)
	}

	etcdPID, apiPID := s.PIDs()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{etcdPID, apiPID} {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
			t.Errorf("process %d still runs after Close", pid)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the API server's directory is still there: %v", err)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}
