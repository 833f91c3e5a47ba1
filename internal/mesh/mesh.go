// Package mesh holds one descriptor per mesh meshbench runs: its name as
// plans and flags spell it, its kind (none, sidecar, node proxy, waypoint),
// what its data plane and control plane are, whether the local lab has a
// form of it, and how it is installed, enrolled and verified on a cluster.
// Every other package asks a descriptor instead of switching on mesh
// names, so a new mesh is one new file here (see the README's
// Architecture section for what else it touches).
//
// The package is data only: no I/O, no Kubernetes types. internal/mesh/topology
// turns a local mode into a topology; internal/platform/kube renders and
// checks a descriptor's Cluster on a real cluster.
package mesh

import (
	"slices"
	"strings"
)

// Kind is how a mesh's data plane sits in the request path.
type Kind string

// The kinds of mesh.
const (
	// KindNone is no mesh: the client calls the app directly.
	KindNone Kind = "none"
	// KindSidecar puts a proxy beside every pod (Istio sidecar mode,
	// Linkerd).
	KindSidecar Kind = "sidecar"
	// KindNodeProxy runs one L4 proxy per node (Istio ambient's ztunnel).
	KindNodeProxy Kind = "node-proxy"
	// KindWaypoint is a node proxy plus an L7 proxy per service (Istio
	// ambient with a waypoint).
	KindWaypoint Kind = "waypoint"
)

// The mesh projects (Mesh.Product): what renders a mode's policies and
// mesh objects on a cluster.
const (
	Istio   = "Istio"
	Linkerd = "Linkerd"
)

// Component is a kind of mesh process or pod a run may measure, as the
// component classifiers name them.
type Component string

// Each mesh's file declares the components it runs (istio.go, linkerd.go).

// Mesh describes one mesh mode.
type Mesh struct {
	// Name is the mode as plans, flags and results spell it ("sidecar").
	Name string
	// Order places the mode in help texts, tables and charts (none 0, then
	// ascending); every mesh has its own.
	Order int
	// Kind is where its data plane sits.
	Kind Kind
	// Product is the mesh project ("Istio", "Linkerd"); "" for none.
	Product string
	// DataPlane and ControlPlane say in a few words what runs.
	DataPlane, ControlPlane string
	// Local is true when the local lab runs this mode (as Envoy processes
	// on loopback "nodes"); NoLocal says why not when it is false.
	Local   bool
	NoLocal string
	// Plaintext is true when the mode can run without mTLS between its
	// proxies (Istio sidecar); a mode with proxies but no plaintext variant
	// always uses mTLS. Meaningless for KindNone.
	Plaintext bool
	// NoPlaintext says why mtls false cannot run (for problems and skipped
	// cells); "" when Plaintext or for KindNone.
	NoPlaintext string
	// RulesAs is the local mode whose option rules (policies, mTLS,
	// replicas) this mode follows where it has no local form: Linkerd's
	// options are a sidecar mesh's. "" means Name itself.
	RulesAs string
	// SMPType is the Service Mesh Performance spec's mesh_type ("ISTIO",
	// "LINKERD"); "" for none.
	SMPType string
	// SMPLabels are the labels of the SMP mesh_type ("istio.mode").
	SMPLabels map[string]string
	// Emulates names, for a mode the local lab runs as its own Envoy
	// emulation, the data plane it stands in for ("Istio ambient mode with
	// a waypoint"); "" when the local lab does not emulate one.
	Emulates string
	// Cluster is how the mesh runs on Kubernetes.
	Cluster Cluster
	// Parts are the mesh's processes a fault can hit, by part (parts.go);
	// none for mode none.
	Parts map[Part]PartSpec
}

// Cluster is how a mesh is installed, enrolled and verified on a cluster.
type Cluster struct {
	// CLI is the command that installs the mesh ("istioctl"); "" for none.
	CLI string
	// VersionArgs print the CLI's version.
	VersionArgs []string
	// Install are the commands that install the mesh, without the
	// --kubeconfig/--context flags the caller appends.
	Install []Command
	// Namespace is where the control plane runs.
	Namespace string
	// InstalledConfigMap, when set, is a ConfigMap of Namespace whose
	// presence means the mesh is installed and its CLI refuses to install
	// it again (Linkerd's linkerd-config: `linkerd install` says to run
	// `linkerd upgrade`); an install then runs only the commands after
	// the control plane's (the check). Istio's install is idempotent.
	InstalledConfigMap string
	// APIGroup is the suffix of the API groups of the mesh's own resources
	// ("istio.io"): a missing kind of such a group means the mesh is not
	// installed.
	APIGroup string
	// Deployments and DaemonSets of Namespace must be ready.
	Deployments, DaemonSets []string
	// GatewayAPI: the cluster must serve the Gateway API's Gateway kind.
	GatewayAPI bool
	// IstioProfile is the istioctl profile ("default", "ambient"), "" for
	// other meshes.
	IstioProfile string
	// NamespaceLabels and NamespaceAnnotations enrol a namespace (both the
	// load's and the app's); AppNamespaceLabels are added to the app's only.
	NamespaceLabels, NamespaceAnnotations, AppNamespaceLabels map[string]string
	// LoadPodAnnotations go on the load workers' pods (native sidecars, so
	// that a Job completes when its load container exits).
	LoadPodAnnotations map[string]string
	// ThreadsAnnotation is the pod annotation that sets a per-pod proxy's
	// worker threads (the proxy_threads axis) and ThreadsValue its value
	// for n threads ("%d" in it is n); "" when the mesh has no per-pod
	// setting (none, and ztunnel: one DaemonSet per cluster).
	ThreadsAnnotation, ThreadsValue string
	// ThreadsExtra are annotations set beside ThreadsAnnotation, as they
	// are (nil: none).
	ThreadsExtra map[string]string
	// Enrolled is how VerifyEnrolment knows a pod is in the mesh.
	Enrolled Enrolment
	// WaypointPod: a waypoint pod must run in the app namespace.
	WaypointPod bool
	// Components are the mesh components this mode runs; a component of
	// another mode found in a run is unexpected.
	Components []Component
}

// Enrolment is how an app pod shows it is in the mesh: a proxy container,
// an annotation with a value, or (for none) no proxy container of any mesh.
type Enrolment struct {
	// What says it in a sentence for the check ("every app pod has an
	// istio-proxy sidecar").
	What string
	// Container is a proxy container every pod must have.
	Container string
	// Annotation and Value: every pod must carry this annotation.
	Annotation, Value string
	// NoProxy: no pod may have any mesh's proxy container.
	NoProxy bool
}

// Command is one command of an install.
type Command struct {
	Args []string
	// ApplyOutput: the command prints manifests that meshbench applies.
	ApplyOutput bool
	// ControlPlane marks the command that installs the control plane: the
	// settings of a build meshbench installs (its images, its identity)
	// are added to it.
	ControlPlane bool
	// NoGatewayAPI are arguments added when the cluster serves no Gateway
	// API (no HTTPRoute CRD): Linkerd from edge-25 refuses to install its
	// CRDs without them unless told to install its own bundle of them.
	NoGatewayAPI []string
}

// GatewayAPICRD is the CRD whose presence says a cluster serves the
// Gateway API (what Linkerd's installer looks for).
const GatewayAPICRD = "httproutes.gateway.networking.k8s.io"

// all holds every descriptor in the order help texts, tables and charts
// show them (Mesh.Order); each mesh's file adds itself with register.
var all []*Mesh

func register(m *Mesh) {
	all = append(all, m)
	slices.SortFunc(all, func(a, b *Mesh) int { return a.Order - b.Order })
}

// All returns every mesh, in display order.
func All() []*Mesh { return slices.Clone(all) }

// Get returns the mesh called name; ok is false for an unknown name.
func Get(name string) (m *Mesh, ok bool) {
	for _, m := range all {
		if m.Name == name {
			return m, true
		}
	}
	return nil, false
}

// Names returns the names of every mesh (local == false) or of those the
// local lab runs (local == true), in display order.
func Names(local bool) []string {
	var out []string
	for _, m := range all {
		if !local || m.Local {
			out = append(out, m.Name)
		}
	}
	return out
}

// ClusterOnly returns the names of the meshes the local lab has no form
// of, in display order.
func ClusterOnly() []string {
	var out []string
	for _, m := range all {
		if !m.Local {
			out = append(out, m.Name)
		}
	}
	return out
}

// Allowed is "allowed: a, b, c" for Names(local), for a problem line.
func Allowed(local bool) string { return "allowed: " + strings.Join(Names(local), ", ") }

// Order is name's place in display order, 0 for none and counting up;
// unknown names sort after every known one.
func Order(name string) int {
	if i := slices.IndexFunc(all, func(m *Mesh) bool { return m.Name == name }); i >= 0 {
		return i
	}
	return len(all)
}

// Is reports whether name is a known mesh of kind k.
func Is(name string, k Kind) bool {
	m, ok := Get(name)
	return ok && m.Kind == k
}

// Rules returns the local mode whose option rules name follows (itself for
// a local mode, "sidecar" for Linkerd); name itself when unknown.
func Rules(name string) string {
	if m, ok := Get(name); ok && m.RulesAs != "" {
		return m.RulesAs
	}
	return name
}

// HasProxies reports whether name is a known mesh with a data plane.
func HasProxies(name string) bool {
	m, ok := Get(name)
	return ok && m.Kind != KindNone
}

// ProxyContainers are the proxy containers of every mesh ("istio-proxy",
// "linkerd-proxy"): what a pod of mode none must not have.
func ProxyContainers() []string {
	var out []string
	for _, m := range all {
		if c := m.Cluster.Enrolled.Container; c != "" && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}
