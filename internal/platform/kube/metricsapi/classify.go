// Package metricsapi holds the cluster's resource sampling beside sample
// and kubelet: the metrics.k8s.io sampler (MetricsSampler, its raw
// records and their reading back) and the classifier that maps a pod's
// containers to sample's components and categories (Classifier), the seed
// tool's way. platform/kube drives them during a run.
package metricsapi

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh"
)

// ClassifyModes lists the mesh modes a Classifier knows: every mesh
// internal/mesh describes.
var ClassifyModes = mesh.Names(false)

// Container names and labels the classification looks at.
const (
	// ContainerIstioProxy is the Envoy container of Istio's sidecars,
	// gateways and waypoints, and ztunnel's container.
	ContainerIstioProxy = "istio-proxy"
	// ContainerLinkerdProxy is Linkerd's proxy container.
	ContainerLinkerdProxy = "linkerd-proxy"

	labelGatewayClass = "gateway.networking.k8s.io/gateway-class-name"
	labelIstioManaged = "gateway.istio.io/managed"
	labelIstio        = "istio"

	classWaypoint = "istio-waypoint"              // Istio's waypoint GatewayClass
	classGateway  = "istio"                       // Istio's ingress GatewayClass
	managedMesh   = "istio.io-mesh-controller"    // gateway.istio.io/managed of a waypoint
	managedGW     = "istio.io-gateway-controller" // … of a gateway of class istio
	ztunnelName   = "ztunnel"                     // Istio's ztunnel DaemonSet
)

// The Faces chart's GUI: its pods carry this component label. The GUI
// serves the browser page, not the load, so it is no part of the app
// under test.
const (
	LabelFacesComponent = "faces.buoyant.io/component"
	FacesGUIComponent   = "faces-gui"
	// ComponentFacesGUI is the component of the GUI's containers, its
	// sidecars included: category overhead, so neither the app's nor the
	// data plane's figures (sums, per replica, per 1000 rps) hold it.
	ComponentFacesGUI = "faces-gui (not measured)"
)

// A fault's own pods (the noisy-neighbour fault's CPU hog) carry
// LabelFault: category overhead, component ComponentFault, whatever
// their namespace, so the app's figures never hold the hog's CPU (the
// node's do: that is the fault).
const (
	LabelFault     = "meshbench.dev/fault"
	ComponentFault = "noisy neighbour (fault)"
)

// The node readers of a cluster cell's kernel CPU (platform/kube,
// nodekernel.go) carry LabelNodeReader: category overhead, component
// ComponentNodeReader, whatever their namespace.
const (
	LabelNodeReader     = "meshbench.dev/node-reader"
	ComponentNodeReader = "node reader (kernel CPU)"
)

// Namespaces names the namespaces the classification depends on.
type Namespaces struct {
	// App is the app's namespace (category app), Load the load
	// generator's (category load). Empty: no namespace is app or load.
	App, Load string
	// Istio is Istio's system namespace (empty: IstioNamespace), Linkerd
	// Linkerd's control-plane namespace (empty: LinkerdNamespace).
	Istio, Linkerd string
}

func (ns Namespaces) istio() string   { return cmpOr(ns.Istio, mesh.IstioNamespace) }
func (ns Namespaces) linkerd() string { return cmpOr(ns.Linkerd, mesh.LinkerdNamespace) }

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Classifier maps a pod's containers to the sample package's targets, the
// seed tool's way (its README's "data-plane", "control-plane", "k8s", …),
// with the local lab's component names. It is pure: a pod and a container
// name in, labels out. Build it with NewClassifier.
//
// The rules, first match wins:
//
//  1. Linkerd's namespace: everything is control-plane, its linkerd-proxy
//     containers included; component = the pod's workload
//     ("linkerd-destination"); in the modes that are not Linkerd's
//     (Linkerd and Istio both installed on the cluster, as a plan of both
//     leaves them) mesh-idle, "idle <workload>": shown, not the cell's
//     control plane.
//  2. ztunnel, the pods of the DaemonSet "ztunnel" in Istio's namespace
//     (or, when the pod has no owner, labelled app=ztunnel there):
//     data-plane, component "node proxy <node>", in the modes that run
//     ztunnel (ambient, waypoint); in the others (none, sidecar: the
//     ambient profile installed, the cell's namespaces not enrolled)
//     mesh-idle, "idle node proxy <node>": shown, not the cell's data
//     plane.
//  3. Waypoints, pods labelled gateway.networking.k8s.io/gateway-class-name
//     = istio-waypoint or gateway.istio.io/managed =
//     istio.io-mesh-controller, in any namespace: data-plane, "waypoint".
//  4. Gateways, pods labelled istio=ingressgateway|egressgateway, gateway
//     class istio or gateway.istio.io/managed =
//     istio.io-gateway-controller, in any namespace: gateway, "gateway".
//  5. Everything else in Istio's namespace (istiod, istio-cni-node):
//     control-plane, component = the pod's workload ("istiod"); in the
//     modes that run no Istio (none, linkerd) mesh-idle, "idle <workload>".
//  6. kube-* namespaces: overhead, "k8s".
//  7. istio-proxy and linkerd-proxy containers anywhere else but the
//     Faces GUI (sidecars, also as native sidecars): data-plane,
//     "<service> sidecar".
//  8. The Faces chart's GUI, pods of the app namespace labelled
//     faces.buoyant.io/component=faces-gui, every container (its
//     sidecars too): overhead, "faces-gui (not measured)" — shown, but
//     out of the app's and the data plane's figures.
//  9. A fault's own pods (LabelFault: the noisy neighbour's hog), in any
//     namespace: overhead, ComponentFault; the node readers
//     (LabelNodeReader): overhead, ComponentNodeReader.
//  10. The app namespace: app, "app <service>".
//  11. The load namespace: load, "load".
//  12. Anything else: overhead, "other <namespace>".
//
// Apart from the idle rules the rules do not depend on the mode: a mesh
// component the mode does not explain (a sidecar in a baseline run) is
// still counted as what it is, and Unexpected says so. <service> is the pod's app label, else its
// app.kubernetes.io/name label, else its workload. A workload is the
// pod's controller: a Deployment's name (the ReplicaSet's without its
// pod-template-hash), a DaemonSet's, a StatefulSet's, a Job's; the pod's
// own name without one. The target's Name is "<namespace>/<pod>/<container>".
type Classifier struct {
	mode string
	ns   Namespaces
}

// NewClassifier returns the classifier of a run in mode (one of
// ClassifyModes) with its namespaces.
func NewClassifier(mode string, ns Namespaces) (*Classifier, error) {
	if !slices.Contains(ClassifyModes, mode) {
		return nil, fmt.Errorf("mesh mode %q: allowed: %s", mode, strings.Join(ClassifyModes, ", "))
	}
	if ns.App != "" && ns.App == ns.Load {
		return nil, fmt.Errorf("app and load namespaces are both %q: they must differ", ns.App)
	}
	return &Classifier{mode: mode, ns: ns}, nil
}

// Mode returns the mode the classifier was built for.
func (c *Classifier) Mode() string { return c.mode }

// Namespaces returns the namespaces the classifier was built with.
func (c *Classifier) Namespaces() Namespaces { return c.ns }

// role is what a container is, before it is named.
type role int

const (
	roleOther role = iota
	roleLinkerdControl
	roleZtunnel
	roleWaypoint
	roleGateway
	roleIstioControl
	roleK8s
	roleIstioSidecar
	roleLinkerdSidecar
	roleFacesGUI
	roleFault
	roleNodeReader
	roleApp
	roleLoad
)

// component is the mesh component r is, "" for what no mesh runs.
func (r role) component() mesh.Component {
	switch r {
	case roleLinkerdControl:
		return mesh.LinkerdControl
	case roleZtunnel:
		return mesh.Ztunnel
	case roleWaypoint:
		return mesh.Waypoint
	case roleIstioControl:
		return mesh.IstioControl
	case roleIstioSidecar:
		return mesh.IstioSidecar
	case roleLinkerdSidecar:
		return mesh.LinkerdSidecar
	}
	return ""
}

func (c *Classifier) role(pod *corev1.Pod, container string) role {
	ns := pod.Namespace
	switch {
	case ns == c.ns.linkerd():
		return roleLinkerdControl
	case ns == c.ns.istio() && IsZtunnel(pod):
		return roleZtunnel
	case isWaypoint(pod):
		return roleWaypoint
	case isGateway(pod):
		return roleGateway
	case ns == c.ns.istio():
		return roleIstioControl
	case strings.HasPrefix(ns, "kube-"):
		return roleK8s
	case ns == c.ns.App && ns != "" && pod.Labels[LabelFacesComponent] == FacesGUIComponent:
		return roleFacesGUI
	case pod.Labels[LabelFault] != "":
		return roleFault
	case pod.Labels[LabelNodeReader] != "":
		return roleNodeReader
	case container == ContainerIstioProxy:
		return roleIstioSidecar
	case container == ContainerLinkerdProxy:
		return roleLinkerdSidecar
	case ns == c.ns.App && ns != "":
		return roleApp
	case ns == c.ns.Load && ns != "":
		return roleLoad
	}
	return roleOther
}

// Classify returns the target labels of container in pod: its name
// ("<namespace>/<pod>/<container>"), its component and its category (one
// of sample.Categories). pod needs its namespace, name and labels; its
// owner references and node name refine workloads and node proxies.
func (c *Classifier) Classify(pod *corev1.Pod, container string) (name, component, category string) {
	name = pod.Namespace + "/" + pod.Name + "/" + container
	switch r := c.role(pod, container); r {
	case roleLinkerdControl, roleIstioControl:
		if !c.runs(r.component()) {
			// Another mesh's control plane (both installed on the
			// cluster, a plan's cells take turns): it serves none of the
			// cell's pods.
			return name, "idle " + workloadName(pod), sample.CategoryMeshIdle
		}
		return name, workloadName(pod), sample.CategoryControlPlane
	case roleZtunnel:
		comp, cat := "node proxy", sample.CategoryDataPlane
		if !c.runs(mesh.Ztunnel) {
			// The cell's namespaces are not ambient-enrolled: ztunnel
			// serves none of its pods, so it is not the cell's data plane.
			comp, cat = "idle node proxy", sample.CategoryMeshIdle
		}
		if pod.Spec.NodeName == "" {
			return name, comp, cat
		}
		return name, comp + " " + pod.Spec.NodeName, cat
	case roleWaypoint:
		return name, "waypoint", sample.CategoryDataPlane
	case roleGateway:
		return name, "gateway", sample.CategoryGateway
	case roleK8s:
		return name, "k8s", sample.CategoryOverhead
	case roleIstioSidecar, roleLinkerdSidecar:
		return name, serviceName(pod) + " sidecar", sample.CategoryDataPlane
	case roleFacesGUI:
		return name, ComponentFacesGUI, sample.CategoryOverhead
	case roleFault:
		return name, ComponentFault, sample.CategoryOverhead
	case roleNodeReader:
		return name, ComponentNodeReader, sample.CategoryOverhead
	case roleApp:
		return name, "app " + serviceName(pod), sample.CategoryApp
	case roleLoad:
		return name, "load", sample.CategoryLoad
	}
	return name, "other " + pod.Namespace, sample.CategoryOverhead
}

// runs reports whether the classifier's mode runs mesh component m.
func (c *Classifier) runs(m mesh.Component) bool {
	mm, ok := mesh.Get(c.mode)
	return ok && slices.Contains(mm.Cluster.Components, m)
}

// Unexpected returns why container in pod is a mesh component the
// classifier's mode does not run ("istio-proxy sidecar in mode none"), or
// "" when the mode explains it. It never changes the classification: a
// run with such a component measures it, and the caller decides what it
// means for the run.
func (c *Classifier) Unexpected(pod *corev1.Pod, container string) string {
	r := c.role(pod, container)
	if r == roleFacesGUI { // its sidecars are still sidecars the mode must explain
		switch container {
		case ContainerIstioProxy:
			r = roleIstioSidecar
		case ContainerLinkerdProxy:
			r = roleLinkerdSidecar
		}
	}
	var want []mesh.Component
	if m, ok := mesh.Get(c.mode); ok {
		want = m.Cluster.Components // none runs no mesh component (gateways run in mode none too: the local lab's --gateway)
	}
	var what string
	switch r {
	case roleLinkerdControl:
		what = "Linkerd control plane (" + workloadName(pod) + ")"
	case roleZtunnel:
		what = "ztunnel"
	case roleWaypoint:
		what = "waypoint"
	case roleIstioControl:
		what = "Istio control plane (" + workloadName(pod) + ")"
	case roleIstioSidecar:
		what = "istio-proxy sidecar"
	case roleLinkerdSidecar:
		what = "linkerd-proxy sidecar"
	default:
		return ""
	}
	if slices.Contains(want, r.component()) {
		return ""
	}
	return fmt.Sprintf("%s in mode %s: %s/%s", what, c.mode, pod.Namespace, pod.Name)
}

// IsZtunnel: a pod of the ztunnel DaemonSet (or labelled app=ztunnel when
// it has no controller, e.g. a pod rebuilt from metrics alone).
func IsZtunnel(pod *corev1.Pod) bool {
	if ref := controllerOf(pod); ref != nil {
		return ref.Kind == "DaemonSet" && ref.Name == ztunnelName
	}
	return pod.Labels["app"] == ztunnelName
}

func isWaypoint(pod *corev1.Pod) bool {
	return pod.Labels[labelGatewayClass] == classWaypoint || pod.Labels[labelIstioManaged] == managedMesh
}

func isGateway(pod *corev1.Pod) bool {
	switch pod.Labels[labelIstio] {
	case "ingressgateway", "egressgateway":
		return true
	}
	return pod.Labels[labelGatewayClass] == classGateway || pod.Labels[labelIstioManaged] == managedGW
}

// controllerOf returns the pod's controlling owner reference, else its
// first owner reference, else nil.
func controllerOf(pod *corev1.Pod) *metav1.OwnerReference {
	for i := range pod.OwnerReferences {
		if ref := &pod.OwnerReferences[i]; ref.Controller != nil && *ref.Controller {
			return ref
		}
	}
	if len(pod.OwnerReferences) > 0 {
		return &pod.OwnerReferences[0]
	}
	return nil
}

// workloadName is the pod's controller's name: a ReplicaSet's without its
// pod-template-hash suffix (the Deployment's), a DaemonSet's, a
// StatefulSet's, a Job's; the pod's own name without a controller.
func workloadName(pod *corev1.Pod) string {
	ref := controllerOf(pod)
	if ref == nil {
		return pod.Name
	}
	if ref.Kind == "ReplicaSet" {
		if h := pod.Labels["pod-template-hash"]; h != "" {
			if d, ok := strings.CutSuffix(ref.Name, "-"+h); ok && d != "" {
				return d
			}
		}
	}
	return ref.Name
}

// serviceName is the pod's app label, else app.kubernetes.io/name, else
// its workload.
func serviceName(pod *corev1.Pod) string {
	if s := pod.Labels["app"]; s != "" {
		return s
	}
	if s := pod.Labels["app.kubernetes.io/name"]; s != "" {
		return s
	}
	return workloadName(pod)
}
