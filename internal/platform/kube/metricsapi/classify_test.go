package metricsapi

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/meshbench/meshbench/internal/measure/sample"
)

// testPod builds a pod in ns named name; opts add labels, owners, a node.
func testPod(ns, name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), Labels: map[string]string{}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func withLabels(kv ...string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		for i := 0; i+1 < len(kv); i += 2 {
			p.Labels[kv[i]] = kv[i+1]
		}
	}
}

// ownedBy sets the pod's controller; a ReplicaSet gets the Deployment's
// pod-template-hash label and name suffix when hash is given.
func ownedBy(kind, name string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: kind, Name: name, Controller: &yes})
	}
}

func onNode(n string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.NodeName = n } }

var testNamespaces = Namespaces{App: "mb-app", Load: "mb-load"}

func TestClassify(t *testing.T) {
	deployment := func(name, hash string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			withLabels("pod-template-hash", hash)(p)
			ownedBy("ReplicaSet", name+"-"+hash)(p)
		}
	}
	for _, tt := range []struct {
		name      string
		ns        *Namespaces // nil: testNamespaces
		pod       *corev1.Pod
		container string
		component string
		category  string
	}{
		// The app's own container, named after the pod's app label.
		{"app", nil, testPod("mb-app", "server-7d9-abcde", withLabels("app", "server"), deployment("server", "7d9")), "server",
			"app server", sample.CategoryApp},
		// Istio's sidecar beside it: data-plane, per service.
		{"istio sidecar", nil, testPod("mb-app", "server-7d9-abcde", withLabels("app", "server"), deployment("server", "7d9")), "istio-proxy",
			"server sidecar", sample.CategoryDataPlane},
		// Linkerd's sidecar, the same way.
		{"linkerd sidecar", nil, testPod("mb-app", "server-7d9-abcde", withLabels("app", "server")), "linkerd-proxy",
			"server sidecar", sample.CategoryDataPlane},
		// No app label: app.kubernetes.io/name.
		{"app k8s name label", nil, testPod("mb-app", "face-0", withLabels("app.kubernetes.io/name", "face")), "face",
			"app face", sample.CategoryApp},
		// No label at all: the workload (a StatefulSet's name).
		{"app workload", nil, testPod("mb-app", "db-0", ownedBy("StatefulSet", "db")), "db",
			"app db", sample.CategoryApp},
		// A ReplicaSet without the hash label keeps its own name.
		{"app replicaset without hash", nil, testPod("mb-app", "rs-x", ownedBy("ReplicaSet", "rs")), "c",
			"app rs", sample.CategoryApp},
		// The load generator: one component whatever the pod.
		{"load", nil, testPod("mb-load", "load-0-x7k2p", withLabels("app", "load"), ownedBy("Job", "load")), "load",
			"load", sample.CategoryLoad},
		// The load's sidecar: data-plane, named after the Job without an app label.
		{"load sidecar", nil, testPod("mb-load", "load-0-x7k2p", ownedBy("Job", "meshbench-load")), "istio-proxy",
			"meshbench-load sidecar", sample.CategoryDataPlane},
		// ztunnel: the DaemonSet's pods in istio-system, one component per node;
		// in mode sidecar (this table's) idle infrastructure, not data plane.
		{"ztunnel", nil, testPod("istio-system", "ztunnel-abcde", withLabels("app", "ztunnel"), ownedBy("DaemonSet", "ztunnel"), onNode("kwok-node-1")), "istio-proxy",
			"idle node proxy kwok-node-1", sample.CategoryMeshIdle},
		// A ztunnel pod known from its metrics only (no owner, no node).
		{"ztunnel from metrics", nil, testPod("istio-system", "ztunnel-abcde", withLabels("app", "ztunnel")), "istio-proxy",
			"idle node proxy", sample.CategoryMeshIdle},
		// Another DaemonSet of istio-system is control plane, even labelled app=ztunnel.
		{"not ztunnel", nil, testPod("istio-system", "istio-cni-node-x", withLabels("app", "ztunnel"), ownedBy("DaemonSet", "istio-cni-node")), "install-cni",
			"istio-cni-node", sample.CategoryControlPlane},
		// A DaemonSet named ztunnel elsewhere is not Istio's.
		{"ztunnel elsewhere", nil, testPod("tools", "ztunnel-x", ownedBy("DaemonSet", "ztunnel")), "main",
			"other tools", sample.CategoryOverhead},
		// istiod: control plane, named after its Deployment.
		{"istiod", nil, testPod("istio-system", "istiod-5d8f9c7b6-q2w3e", withLabels("app", "istiod"), deployment("istiod", "5d8f9c7b6")), "discovery",
			"istiod", sample.CategoryControlPlane},
		// An ingress gateway in istio-system: gateway, not control plane.
		{"ingress gateway", nil, testPod("istio-system", "istio-ingressgateway-6b-x", withLabels("istio", "ingressgateway"), deployment("istio-ingressgateway", "6b")), "istio-proxy",
			"gateway", sample.CategoryGateway},
		// An egress gateway too.
		{"egress gateway", nil, testPod("istio-system", "istio-egressgateway-6b-x", withLabels("istio", "egressgateway")), "istio-proxy",
			"gateway", sample.CategoryGateway},
		// A Gateway API gateway of class istio, in another namespace.
		{"gateway class istio", nil, testPod("mb-app", "gw-istio-7c-x", withLabels("gateway.networking.k8s.io/gateway-class-name", "istio")), "istio-proxy",
			"gateway", sample.CategoryGateway},
		// An Istio-managed gateway marked by its controller only.
		{"gateway managed", nil, testPod("mb-app", "gw-istio-7c-x", withLabels("gateway.istio.io/managed", "istio.io-gateway-controller")), "istio-proxy",
			"gateway", sample.CategoryGateway},
		// A waypoint: data-plane, in the app namespace.
		{"waypoint", nil, testPod("mb-app", "waypoint-5f-x", withLabels("gateway.networking.k8s.io/gateway-class-name", "istio-waypoint", "app", "waypoint")), "istio-proxy",
			"waypoint", sample.CategoryDataPlane},
		// A waypoint marked by the mesh controller only (older Istio).
		{"waypoint managed", nil, testPod("mb-app", "waypoint-5f-x", withLabels("gateway.istio.io/managed", "istio.io-mesh-controller")), "istio-proxy",
			"waypoint", sample.CategoryDataPlane},
		// A waypoint in istio-system is still a waypoint.
		{"waypoint in istio-system", nil, testPod("istio-system", "waypoint-5f-x", withLabels("gateway.networking.k8s.io/gateway-class-name", "istio-waypoint")), "istio-proxy",
			"waypoint", sample.CategoryDataPlane},
		// Linkerd's namespace: all control plane, named after the Deployment.
		{"linkerd destination", nil, testPod("linkerd", "linkerd-destination-7f-x", deployment("linkerd-destination", "7f")), "destination",
			"linkerd-destination", sample.CategoryControlPlane},
		// Its proxies too (the seed tool's rule).
		{"linkerd control-plane proxy", nil, testPod("linkerd", "linkerd-destination-7f-x", deployment("linkerd-destination", "7f")), "linkerd-proxy",
			"linkerd-destination", sample.CategoryControlPlane},
		// Proxies in Linkerd's extensions are data plane.
		{"linkerd-viz proxy", nil, testPod("linkerd-viz", "web-5c-x", withLabels("app", "web")), "linkerd-proxy",
			"web sidecar", sample.CategoryDataPlane},
		// The Faces chart's GUI (its component label): out of the app's
		// figures, by a component of its own …
		{"faces gui", nil, testPod("mb-app", "faces-gui-6c-x", withLabels("faces.buoyant.io/component", "faces-gui", "app", "faces-gui"), deployment("faces-gui", "6c")), "faces-gui",
			"faces-gui (not measured)", sample.CategoryOverhead},
		// … its sidecar too, out of the data plane's figures.
		// The noisy neighbour's hog, in the app namespace: not the app.
		{"fault hog", nil, testPod("mb-app", "noisy-neighbour-x7", withLabels("meshbench.dev/fault", "noisy-neighbour", "sidecar.istio.io/inject", "false")), "hog",
			"noisy neighbour (fault)", sample.CategoryOverhead},
		// A kernel CPU node reader, in the load's namespace or its own:
		// not the load's, not "other".
		{"node reader in load ns", nil, testPod("mb-load", "node-reader-x7", withLabels("meshbench.dev/node-reader", "true")), "nodestat",
			"node reader (kernel CPU)", sample.CategoryOverhead},
		{"node reader in its ns", nil, testPod("mb-load-nodes", "node-reader-x8", withLabels("meshbench.dev/node-reader", "true")), "nodestat",
			"node reader (kernel CPU)", sample.CategoryOverhead},
		{"faces gui sidecar", nil, testPod("mb-app", "faces-gui-6c-x", withLabels("faces.buoyant.io/component", "faces-gui")), "istio-proxy",
			"faces-gui (not measured)", sample.CategoryOverhead},
		{"faces gui linkerd proxy", nil, testPod("mb-app", "faces-gui-6c-x", withLabels("faces.buoyant.io/component", "faces-gui")), "linkerd-proxy",
			"faces-gui (not measured)", sample.CategoryOverhead},
		// The chart's other components are the app under test.
		{"faces face", nil, testPod("mb-app", "face-7d-x", withLabels("faces.buoyant.io/component", "face", "app", "face")), "face",
			"app face", sample.CategoryApp},
		// The label outside the app namespace means nothing to meshbench.
		{"faces gui label elsewhere", nil, testPod("demo", "faces-gui-x", withLabels("faces.buoyant.io/component", "faces-gui")), "faces-gui",
			"other demo", sample.CategoryOverhead},
		// Kubernetes' own namespaces: overhead "k8s".
		{"kube-system", nil, testPod("kube-system", "coredns-6d-x", withLabels("k8s-app", "kube-dns")), "coredns",
			"k8s", sample.CategoryOverhead},
		{"kube-public", nil, testPod("kube-public", "x"), "x",
			"k8s", sample.CategoryOverhead},
		// Anything else: overhead, by namespace.
		{"other", nil, testPod("monitoring", "prometheus-0", withLabels("app", "prometheus")), "prometheus",
			"other monitoring", sample.CategoryOverhead},
		// Without an app namespace, nothing is app.
		{"no app namespace", &Namespaces{}, testPod("mb-app", "server-0", withLabels("app", "server")), "server",
			"other mb-app", sample.CategoryOverhead},
		// A custom Istio namespace: ztunnel there …
		{"custom istio namespace", &Namespaces{Istio: "istio-custom"}, testPod("istio-custom", "ztunnel-x", ownedBy("DaemonSet", "ztunnel"), onNode("n1")), "istio-proxy",
			"idle node proxy n1", sample.CategoryMeshIdle},
		// … and istio-system is then just another namespace.
		{"istio-system not istio's", &Namespaces{Istio: "istio-custom"}, testPod("istio-system", "istiod-x"), "discovery",
			"other istio-system", sample.CategoryOverhead},
		// A custom Linkerd namespace.
		{"custom linkerd namespace", &Namespaces{Linkerd: "l5d"}, testPod("l5d", "linkerd-identity-0", ownedBy("Deployment", "linkerd-identity")), "identity",
			"linkerd-identity", sample.CategoryControlPlane},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ns := testNamespaces
			if tt.ns != nil {
				ns = *tt.ns
			}
			// Linkerd's control plane is the cell's in mode linkerd only
			// (TestClassifyControlPlaneByMode); the rest in sidecar mode.
			mode := "sidecar"
			if tt.pod.Namespace == ns.linkerd() {
				mode = "linkerd"
			}
			c, err := NewClassifier(mode, ns)
			if err != nil {
				t.Fatal(err)
			}
			name, component, category := c.Classify(tt.pod, tt.container)
			if want := tt.pod.Namespace + "/" + tt.pod.Name + "/" + tt.container; name != want {
				t.Errorf("name %q, want %q", name, want)
			}
			if component != tt.component || category != tt.category {
				t.Errorf("got %q (%s), want %q (%s)", component, category, tt.component, tt.category)
			}
			if !sample.ValidCategory(category) {
				t.Errorf("category %q is not a sample category", category)
			}
		})
	}
}

// TestClassifyZtunnelByMode: ztunnel is the data plane of the modes that
// enrol the cell's namespaces in ambient, and idle mesh infrastructure in
// the others (a none or sidecar cell on a cluster with the ambient
// profile installed: the baseline skew ztunnel's 2 m and 25 MiB were).
func TestClassifyZtunnelByMode(t *testing.T) {
	ztunnel := testPod("istio-system", "ztunnel-x", ownedBy("DaemonSet", "ztunnel"), onNode("n"))
	for _, tc := range []struct{ mode, component, category string }{
		{"none", "idle node proxy n", sample.CategoryMeshIdle},    // the baseline: no mesh serves the cell
		{"sidecar", "idle node proxy n", sample.CategoryMeshIdle}, // sidecars, the namespace not ambient
		{"linkerd", "idle node proxy n", sample.CategoryMeshIdle}, // another mesh
		{"ambient", "node proxy n", sample.CategoryDataPlane},     // ztunnel carries the cell's traffic
		{"waypoint", "node proxy n", sample.CategoryDataPlane},    // ztunnel on both ends of the waypoint
	} {
		c, err := NewClassifier(tc.mode, testNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		if _, comp, cat := c.Classify(ztunnel, "istio-proxy"); comp != tc.component || cat != tc.category {
			t.Errorf("mode %s: ztunnel is %q (%s), want %q (%s)", tc.mode, comp, cat, tc.component, tc.category)
		}
	}
}

// TestClassifyControlPlaneByMode: a mesh's control plane is the cell's
// control plane in that mesh's modes, and idle mesh infrastructure in the
// others (Istio and Linkerd both installed, as a plan of both leaves the
// cluster; none runs either).
func TestClassifyControlPlaneByMode(t *testing.T) {
	istiod := testPod("istio-system", "istiod-x", ownedBy("Deployment", "istiod"))
	cni := testPod("istio-system", "istio-cni-node-x", ownedBy("DaemonSet", "istio-cni-node"))
	l5d := testPod("linkerd", "linkerd-destination-x", ownedBy("Deployment", "linkerd-destination"))
	for _, tc := range []struct {
		mode      string
		pod       *corev1.Pod
		component string
		category  string
	}{
		{"sidecar", istiod, "istiod", sample.CategoryControlPlane},
		{"ambient", cni, "istio-cni-node", sample.CategoryControlPlane},
		{"linkerd", istiod, "idle istiod", sample.CategoryMeshIdle},
		{"linkerd", cni, "idle istio-cni-node", sample.CategoryMeshIdle},
		{"none", istiod, "idle istiod", sample.CategoryMeshIdle},
		{"linkerd", l5d, "linkerd-destination", sample.CategoryControlPlane},
		{"waypoint", l5d, "idle linkerd-destination", sample.CategoryMeshIdle},
		{"none", l5d, "idle linkerd-destination", sample.CategoryMeshIdle},
	} {
		c, err := NewClassifier(tc.mode, testNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		if _, comp, cat := c.Classify(tc.pod, "c"); comp != tc.component || cat != tc.category {
			t.Errorf("mode %s: %s is %q (%s), want %q (%s)", tc.mode, tc.pod.Name, comp, cat, tc.component, tc.category)
		}
	}
}

// TestClassifyModeIndependent: apart from ztunnel and the control planes
// (above) the mode never changes a container's labels.
func TestClassifyModeIndependent(t *testing.T) {
	pods := []struct {
		pod       *corev1.Pod
		container string
	}{
		{testPod("mb-app", "server-0", withLabels("app", "server")), "istio-proxy"},
		{testPod("mb-app", "server-0", withLabels("app", "server")), "linkerd-proxy"},
		{testPod("mb-load", "load-0", withLabels("app", "load")), "load"},
		{testPod("kube-system", "coredns-0"), "coredns"},
	}
	base, _ := NewClassifier("none", testNamespaces)
	for _, mode := range ClassifyModes {
		c, err := NewClassifier(mode, testNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			n1, c1, k1 := base.Classify(p.pod, p.container)
			n2, c2, k2 := c.Classify(p.pod, p.container)
			if n1 != n2 || c1 != c2 || k1 != k2 {
				t.Errorf("mode %s: %s/%s is %q %q, in mode none %q %q", mode, p.pod.Name, p.container, c2, k2, c1, k1)
			}
		}
	}
}

func TestUnexpected(t *testing.T) {
	sidecar := testPod("mb-app", "server-0", withLabels("app", "server"))
	ztunnel := testPod("istio-system", "ztunnel-x", ownedBy("DaemonSet", "ztunnel"))
	waypoint := testPod("mb-app", "waypoint-x", withLabels("gateway.networking.k8s.io/gateway-class-name", "istio-waypoint"))
	istiod := testPod("istio-system", "istiod-x", ownedBy("Deployment", "istiod"))
	linkerd := testPod("linkerd", "linkerd-destination-x", ownedBy("Deployment", "linkerd-destination"))
	gateway := testPod("istio-system", "gw-x", withLabels("istio", "ingressgateway"))
	app := testPod("mb-app", "server-0", withLabels("app", "server"))
	gui := testPod("mb-app", "faces-gui-x", withLabels("faces.buoyant.io/component", "faces-gui"))
	for _, tt := range []struct {
		mode      string
		pod       *corev1.Pod
		container string
		want      string // a part of the reason; "" expected
	}{
		{"none", app, "server", ""},
		{"none", gateway, "istio-proxy", ""}, // a gateway runs in mode none too
		{"none", sidecar, "istio-proxy", "istio-proxy sidecar in mode none"},
		{"none", istiod, "discovery", "Istio control plane (istiod) in mode none"},
		{"none", gui, "faces-gui", ""},
		{"none", gui, "istio-proxy", "istio-proxy sidecar in mode none"}, // the GUI's sidecar is still one
		{"sidecar", gui, "istio-proxy", ""},
		{"linkerd", gui, "istio-proxy", "istio-proxy sidecar in mode linkerd"},
		{"sidecar", sidecar, "istio-proxy", ""},
		{"sidecar", istiod, "discovery", ""},
		{"sidecar", ztunnel, "istio-proxy", "ztunnel in mode sidecar"},
		{"sidecar", sidecar, "linkerd-proxy", "linkerd-proxy sidecar in mode sidecar"},
		{"ambient", ztunnel, "istio-proxy", ""},
		{"ambient", waypoint, "istio-proxy", "waypoint in mode ambient"},
		{"ambient", sidecar, "istio-proxy", "istio-proxy sidecar in mode ambient"},
		{"waypoint", waypoint, "istio-proxy", ""},
		{"waypoint", ztunnel, "istio-proxy", ""},
		{"linkerd", sidecar, "linkerd-proxy", ""},
		{"linkerd", linkerd, "destination", ""},
		{"linkerd", istiod, "discovery", "Istio control plane (istiod) in mode linkerd: istio-system/istiod-x"},
		{"linkerd", ztunnel, "istio-proxy", "ztunnel in mode linkerd"},
	} {
		c, err := NewClassifier(tt.mode, testNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		got := c.Unexpected(tt.pod, tt.container)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("mode %s, %s/%s: Unexpected = %q, want %q", tt.mode, tt.pod.Name, tt.container, got, tt.want)
		}
	}
}

func TestNewClassifierErrors(t *testing.T) {
	if _, err := NewClassifier("cilium", testNamespaces); err == nil || !strings.Contains(err.Error(), `mesh mode "cilium": allowed: none, sidecar, ambient, waypoint, linkerd`) {
		t.Errorf("unknown mode: %v", err)
	}
	if _, err := NewClassifier("none", Namespaces{App: "x", Load: "x"}); err == nil {
		t.Error("the same app and load namespace was accepted")
	}
	c, err := NewClassifier("linkerd", testNamespaces)
	if err != nil || c.Mode() != "linkerd" || c.Namespaces() != testNamespaces {
		t.Errorf("NewClassifier(linkerd) = %+v, %v", c, err)
	}
}
