package mesh

import "strings"

// Part is a mesh process a fault can hit by name (`kill:PART`,
// `cpu-limit:PART=MILLICORES`): the same four words for every mesh, each
// mesh saying in its descriptor which it has and where they run
// (Mesh.Parts).
type Part string

// The parts.
const (
	// PartNodeProxy is the node proxy of the node that runs the app's
	// first replica (ambient's ztunnel).
	PartNodeProxy Part = "node-proxy"
	// PartWaypoint is the waypoint of the app's service.
	PartWaypoint Part = "waypoint"
	// PartSidecar is the proxy beside the app's first replica.
	PartSidecar Part = "sidecar"
	// PartControlPlane is the mesh's control plane (istiod, Linkerd's
	// destination controller).
	PartControlPlane Part = "control-plane"
)

// Parts lists every part, in the order help texts show them.
var Parts = []Part{PartNodeProxy, PartWaypoint, PartSidecar, PartControlPlane}

// PartNames is "node-proxy, waypoint, sidecar, control-plane".
func PartNames() string {
	var s []string
	for _, p := range Parts {
		s = append(s, string(p))
	}
	return strings.Join(s, ", ")
}

// Scope says which of a part's pods a fault hits on a cluster.
type Scope string

// The scopes.
const (
	// ScopeAppPod: the app's first replica's pod itself (a sidecar lives
	// in it: killing it deletes that pod, limiting it resizes its proxy
	// container).
	ScopeAppPod Scope = "app-pod"
	// ScopeAppNode: the part's pod on the node of the app's first replica
	// (a DaemonSet's, as ztunnel's).
	ScopeAppNode Scope = "app-node"
	// ScopeAny: the first of the part's pods (istiod, a waypoint).
	ScopeAny Scope = "any"
)

// PartSpec is where one part of a mesh runs.
type PartSpec struct {
	// What names it in a few words ("ztunnel", "istiod").
	What string
	// NoLab says why the local lab has no such process to hit; "" when it
	// has one.
	NoLab string
	// On a cluster: the namespace of its pods ("" for the app's), their
	// label selector, the container a CPU limit resizes, and which of the
	// pods a fault hits. With ScopeAppPod the selector is the app's
	// (Selector is empty).
	Namespace, Selector, Container string
	Scope                          Scope
}

// Has reports whether the mesh has part p.
func (m *Mesh) Has(p Part) bool {
	_, ok := m.Parts[p]
	return ok
}

// PartList is "sidecar, control-plane": the mesh's parts in Parts order,
// "none" without any.
func (m *Mesh) PartList() string {
	var s []string
	for _, p := range Parts {
		if m.Has(p) {
			s = append(s, string(p))
		}
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// istiodPart is every Istio mode's control plane: the lab runs no istiod
// with its own control plane (its proxies' config comes from the
// topology, certificates from the lab's CA), one with control plane
// istiod.
var istiodPart = PartSpec{What: "istiod", NoLab: "the lab runs no istiod with control plane lab (its proxies' config comes from the topology, their certificates from the lab's CA); use control plane istiod",
	Namespace: IstioNamespace, Selector: "app=istiod", Container: "discovery", Scope: ScopeAny}

// ztunnelPart is ambient's node proxy.
var ztunnelPart = PartSpec{What: "ztunnel", Namespace: IstioNamespace, Selector: "app=ztunnel", Container: "istio-proxy", Scope: ScopeAppNode}
