package kube

import (
	"cmp"
	"errors"
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/loadjob"
	"github.com/meshbench/meshbench/internal/platform/kube/policy"
	"github.com/meshbench/meshbench/internal/workload"
)

// Labels on everything meshbench creates. Every object carries
// LabelManagedBy=ManagedBy and LabelRun=<run ID>; the namespaces are
// meshbench's own and labelled the same, so deleting the namespaces
// labelled with a run removes everything of that run (Cluster.DeleteRun).
// Pods also carry LabelRole (RoleApp or RoleLoad) and LabelApp (their
// service's name, or "load").
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "meshbench"
	LabelRun       = "meshbench.dev/run"
	LabelRole      = "meshbench.dev/role"
	LabelApp       = "app"
	// LabelNodeRole is the node label meshbench sets on the nodes it
	// places pods on when there are more than 3 (NodeSelectorMinNodes):
	// RoleApp nodes run the app, RoleLoad nodes the load workers.
	LabelNodeRole = "meshbench.dev/node-role"
)

// Values of LabelRole and LabelNodeRole.
const (
	RoleApp  = "app"  // an app replica / a node for them
	RoleLoad = "load" // a load worker / a node for them
)

// ModeLinkerd is Linkerd (internal/mesh/linkerd.go) as a topology.Mode
// (Spec.Mesh.Mode): the Kubernetes-only mesh mode.
const ModeLinkerd = topology.Mode(mesh.NameLinkerd)

// Modes lists the mesh modes of the Kubernetes platform: every mesh
// internal/mesh describes.
var Modes = func() []topology.Mode {
	var out []topology.Mode
	for _, n := range mesh.Names(false) {
		out = append(out, topology.Mode(n))
	}
	return out
}()

// Defaults of Spec and names of the objects meshbench creates.
const (
	DefaultAppNamespace  = "meshbench-app"
	DefaultLoadNamespace = "meshbench-load"
	// DefaultImage is meshbench's own image (Dockerfile): the meshbench
	// binary as its entrypoint, running `serve …` in app pods and
	// `load …` in load workers.
	DefaultImage = "ghcr.io/meshbench/meshbench:dev"
	// DefaultClusterDomain is the cluster's DNS domain in service names.
	DefaultClusterDomain = "cluster.local"

	// AppContainer and LoadContainer name the containers of app pods and
	// load workers (a mesh adds its own beside them).
	AppContainer  = "app"
	LoadContainer = loadjob.Container
	// LoadJobName is the load Job's name; LoadServiceAccount its pods'
	// service account, the identity the ALLOW rules call the client
	// (topology.IdentityClient).
	LoadJobName        = "load"
	LoadServiceAccount = "client"
	// WaypointName is the waypoint Gateway's name (and so its service
	// account's, the identity of rule allow-waypoint).
	WaypointName = mesh.WaypointName

	// AntiAffinityMinNodes is the node count from which load workers and
	// app pods must run on different nodes (required pod anti-affinity
	// both ways, topology kubernetes.io/hostname), as the seed reports'
	// setups do, so the generator's CPU never competes with the app's or
	// the proxies'. Below NodeSelectorMinNodes the app pods also keep
	// together on one node (required pod affinity among them): the app is
	// deployed before the load, and app replicas spread over every node
	// would leave the workers nowhere to go. That is the local lab's
	// default layout: a client node and one app node.
	AntiAffinityMinNodes = 2
	// NodeSelectorMinNodes is the node count from which pods are pinned by
	// node label instead: app pods to nodes labelled
	// LabelNodeRole=RoleApp, load workers to LabelNodeRole=RoleLoad
	// (meshbench labels the nodes then), and one service's replicas are
	// spread over the app nodes (preferred, maxSkew 1).
	NodeSelectorMinNodes = 4
)

// Ports of the app.
const (
	// AppPort is where meshbench's workloads listen in app pods: the
	// local lab's app port.
	AppPort = topology.PortApp
	// AppImagePort is the port of a Spec.AppImage container (nginx's 80).
	AppImagePort = 80
	// ControlPort is where the replicas of Spec.ControlService serve
	// their control API (`serve --control`), on the pod's loopback only:
	// reached by a port-forward (which enters the pod's network
	// namespace), never from the network, so no mesh captures or counts
	// it.
	ControlPort = 9990
)

// Resource requests of every container meshbench creates: small, so that
// kwok and small clusters schedule them. There are no limits: a CPU limit
// throttles (CFS quota) and would show as latency the mesh did not cause.
const (
	RequestCPU    = "10m"
	RequestMemory = "16Mi"
)

// Spec is what meshbench deploys on a cluster for one cell: two
// namespaces of its own, the mesh's enrolment and policies, and the app.
type Spec struct {
	// RunID labels every object (LabelRun); a label value, required.
	RunID string
	// AppNamespace holds the app (default DefaultAppNamespace),
	// LoadNamespace the load Job (default DefaultLoadNamespace).
	AppNamespace, LoadNamespace string
	// Mesh is the cell's mesh options. Mode may also be ModeLinkerd. Nodes
	// and LoopbackNet belong to the local lab and are ignored; Gateway and
	// Attacker have no Kubernetes form yet and are rejected.
	Mesh topology.Options
	// Image is meshbench's image (default DefaultImage).
	Image string
	// AppImage, when set, replaces the static app's container with this
	// image (e.g. nginx pinned by digest), run as it is on AppImagePort
	// with no arguments. Static app only.
	AppImage string
	// NodeCount is the number of schedulable nodes (0: unknown, taken as
	// one): it chooses the placement rules (AntiAffinityMinNodes,
	// NodeSelectorMinNodes).
	NodeCount int
	// ClusterDomain is the cluster's DNS domain (default
	// DefaultClusterDomain), used in service names.
	ClusterDomain string
	// FacesChart deploys the faces app with Buoyant's Faces chart (helm,
	// FacesChartCommand) as the seed tool does, instead of meshbench's own
	// face/smiley/color workloads: AppObjects then holds the namespaces
	// and the mesh's objects only. Faces app only.
	FacesChart bool
	// BodySize is the static app's answer in bytes (`meshbench serve
	// static --body-size`; the plan's payload), 1 to
	// workload.MaxBodySize; 0: the app's default
	// (workload.DefaultBodySize). Meshbench's static app only: the faces
	// app answers what its callers ask for, an AppImage is run as it is.
	BodySize int
	// ControlService is the app service whose replicas serve their
	// control API on ControlPort (a slow-replica cell's slowed service);
	// "": none. Meshbench's own workloads only.
	ControlService string
}

// WithDefaults returns s with its empty fields set to their defaults.
func (s Spec) WithDefaults() Spec {
	s.AppNamespace = cmp.Or(s.AppNamespace, DefaultAppNamespace)
	s.LoadNamespace = cmp.Or(s.LoadNamespace, DefaultLoadNamespace)
	s.Image = cmp.Or(s.Image, DefaultImage)
	s.ClusterDomain = cmp.Or(s.ClusterDomain, DefaultClusterDomain)
	if s.Mesh.App == "" {
		s.Mesh.App = topology.AppStatic
	}
	if s.Mesh.Protocol == "" {
		s.Mesh.Protocol = topology.ProtocolHTTP
	}
	return s
}

// Validate reports every problem with s (after WithDefaults) at once, each
// a *topology.OptionError on one line, or nil.
func (s Spec) Validate() error {
	s = s.WithDefaults()
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, &topology.OptionError{Field: field, Value: value, Want: want})
	}
	if s.RunID == "" {
		bad("run-id", `""`, "required: a label value such as 20261122-101500")
	} else if msgs := validation.IsValidLabelValue(s.RunID); len(msgs) > 0 {
		bad("run-id", strconv.Quote(s.RunID), "allowed: a label value (up to 63 letters, digits, '-', '_', '.')")
	}
	for _, ns := range []struct{ field, name string }{{"app-namespace", s.AppNamespace}, {"load-namespace", s.LoadNamespace}} {
		if msgs := validation.IsDNS1123Label(ns.name); len(msgs) > 0 {
			bad(ns.field, strconv.Quote(ns.name), "allowed: a namespace name (up to 63 lower-case letters, digits and '-')")
		}
	}
	if s.AppNamespace == s.LoadNamespace {
		bad("load-namespace", s.LoadNamespace, "must differ from the app namespace: placement and policies tell the load from the app by namespace")
	}
	if s.NodeCount < 0 {
		bad("nodes", strconv.Itoa(s.NodeCount), "allowed: 0 (unknown) or more")
	}
	if s.AppImage != "" && s.Mesh.App != topology.AppStatic {
		bad("app-image", s.AppImage, "applies to the static app only (faces runs meshbench's own workloads)")
	}
	if s.ControlService != "" {
		ok := false
		for _, svc := range s.appServices() {
			ok = ok || svc.name == s.ControlService && svc.args != nil
		}
		switch {
		case s.FacesChart:
			bad("control-service", s.ControlService, "not with the Faces chart: its pods are not meshbench's and serve no control API")
		case s.AppImage != "":
			bad("control-service", s.ControlService, "not with an app image: only meshbench's own workloads serve a control API")
		case !ok:
			bad("control-service", s.ControlService, "not a service of the app")
		}
	}
	switch {
	case s.BodySize < 0 || s.BodySize > workload.MaxBodySize:
		bad("body-size", strconv.Itoa(s.BodySize), fmt.Sprintf("allowed: 1 to %d bytes (0: the app's default)", workload.MaxBodySize))
	case s.BodySize > 0 && s.Mesh.App != topology.AppStatic:
		bad("body-size", strconv.Itoa(s.BodySize), "applies to the static app only (faces answers what its callers ask for)")
	case s.BodySize > 0 && s.AppImage != "":
		bad("body-size", strconv.Itoa(s.BodySize), "applies to meshbench's static app only: --app-image runs its image as it is")
	}
	if s.FacesChart && s.sameNode() {
		bad("placement", string(s.Mesh.Placement), "the Faces chart places its own pods; run meshbench's faces workloads (no --faces-chart)")
	}
	if s.FacesChart {
		if s.Mesh.App != topology.AppFaces {
			bad("faces-chart", "true", "applies to the faces app only")
		} else if field, value, want, isBad := s.facesChartProblems(); isBad {
			bad(field, value, "allowed: "+want)
		}
	}
	if s.Mesh.Gateway {
		bad("gateway", "true", "the Kubernetes platform has no ingress gateway yet; run without it")
	}
	if s.Mesh.Attacker {
		bad("attacker", "true", "the Kubernetes platform has no attacker pod yet; run without it")
	}
	// The mesh options mean the same as in the local lab, without its
	// loopback limits. A mode with no local form is checked as the local
	// mode it follows (mesh.Mesh.RulesAs: Linkerd as sidecar mode, per-pod
	// proxies, the client's own identity reaching the app, mTLS always on).
	o := s.Mesh
	o.Nodes, o.LoopbackNet, o.Gateway, o.Attacker = topology.MaxAppNodes, 0, false, false
	if m, ok := mesh.Get(string(o.Mode)); !ok {
		bad("mode", strconv.Quote(string(o.Mode)), mesh.Allowed(false))
		o.Mode = topology.ModeSidecar // check the rest as for a mesh
	} else if m.RulesAs != "" {
		if !o.MTLS && !m.Plaintext {
			bad("mtls", "false", m.NoPlaintext+"; it has no plaintext variant")
		}
		o.Mode, o.MTLS = topology.Mode(m.RulesAs), true
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// desc is the descriptor of the spec's mesh mode (mesh.Get); an
// unknown mode (which Validate rejects) is described as none.
func (s Spec) desc() *mesh.Mesh {
	if m, ok := mesh.Get(string(s.Mesh.Mode)); ok {
		return m
	}
	m, _ := mesh.Get(string(topology.ModeNone))
	return m
}

// sameNode reports whether the load runs beside the app (placement
// same-node): the load pods on a node with an app pod.
func (s Spec) sameNode() bool { return s.Mesh.Placement == topology.PlacementSameNode }

// linkerd reports whether the mode is Linkerd.
func (s Spec) linkerd() bool { return s.desc().Product == mesh.Linkerd }

// appPort is the port the app's pods listen on.
func (s Spec) appPort() int {
	if s.AppImage != "" {
		return AppImagePort
	}
	return AppPort
}

// serviceHost is a service's DNS name in the app namespace.
func (s Spec) serviceHost(name string) string {
	return name + "." + s.AppNamespace + ".svc." + s.ClusterDomain
}

// LoadTarget is the URL the load workers call: the entry service of the
// app (static, or face for faces) by its cluster DNS name, e.g.
// http://static.meshbench-app.svc.cluster.local:8080/. The app speaks HTTP
// whatever Mesh.Protocol says (tcp keeps only the proxies at L4).
func LoadTarget(s Spec) string {
	s = s.WithDefaults()
	if s.FacesChart {
		return s.facesChartTarget()
	}
	return "http://" + s.serviceHost(s.appServices()[0].name) + ":" + strconv.Itoa(s.appPort()) + "/"
}

// labels are the labels of every object of the run.
func (s Spec) labels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelRun: s.RunID}
}

// podLabels are the labels of a pod of role and app.
func (s Spec) podLabels(role, app string) map[string]string {
	l := s.labels()
	l[LabelRole], l[LabelApp] = role, app
	return l
}

// policyCell is what the mesh's objects and ALLOW rules (policy)
// are rendered from.
func (s Spec) policyCell() policy.Cell {
	return policy.Cell{Mesh: s.desc(), Options: s.Mesh, AppNamespace: s.AppNamespace, LoadNamespace: s.LoadNamespace,
		AppPort: s.appPort(), LoadServiceAccount: LoadServiceAccount, Labels: s.labels(), AppPods: map[string]string{LabelRole: RoleApp}}
}
