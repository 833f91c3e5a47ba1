package kube

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meshbench/meshbench/internal/kubeload"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/meshbench/meshbench/internal/loadgen"
	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/meshes"
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

// ModeLinkerd is Linkerd (internal/meshes/linkerd.go) as a mesh.Mode
// (Spec.Mesh.Mode): the Kubernetes-only mesh mode.
const ModeLinkerd = mesh.Mode(meshes.NameLinkerd)

// Modes lists the mesh modes of the Kubernetes platform: every mesh
// internal/meshes describes.
var Modes = func() []mesh.Mode {
	var out []mesh.Mode
	for _, n := range meshes.Names(false) {
		out = append(out, mesh.Mode(n))
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
	LoadContainer = kubeload.Container
	// LoadJobName is the load Job's name; LoadServiceAccount its pods'
	// service account, the identity the ALLOW rules call the client
	// (mesh.IdentityClient).
	LoadJobName        = "load"
	LoadServiceAccount = "client"
	// WaypointName is the waypoint Gateway's name (and so its service
	// account's, the identity of rule allow-waypoint).
	WaypointName = meshes.WaypointName

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
	AppPort = mesh.PortApp
	// AppImagePort is the port of a Spec.AppImage container (nginx's 80).
	AppImagePort = 80
)

// Resource requests of every container meshbench creates: small, so that
// kwok and small clusters schedule them. There are no limits: a CPU limit
// throttles (CFS quota) and would show as latency the mesh did not cause.
const (
	RequestCPU    = "10m"
	RequestMemory = "16Mi"
)

// API versions of the mesh objects.
const (
	istioSecurityAPI = "security.istio.io/v1"
	gatewayAPI       = "gateway.networking.k8s.io/v1"
	// linkerdServerAPI is the Server version every Linkerd from stable
	// 2.14 on serves (v1beta3, with accessPolicy, is 2.16+ only; later
	// releases still serve v1beta1, with a deprecation warning).
	linkerdServerAPI = "policy.linkerd.io/v1beta1"
	// linkerdPolicyAPI serves AuthorizationPolicy and
	// MeshTLSAuthentication since Linkerd 2.12.
	linkerdPolicyAPI   = "policy.linkerd.io/v1alpha1"
	linkerdPolicyGroup = "policy.linkerd.io"
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
	Mesh mesh.Options
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
}

// WithDefaults returns s with its empty fields set to their defaults.
func (s Spec) WithDefaults() Spec {
	s.AppNamespace = cmp.Or(s.AppNamespace, DefaultAppNamespace)
	s.LoadNamespace = cmp.Or(s.LoadNamespace, DefaultLoadNamespace)
	s.Image = cmp.Or(s.Image, DefaultImage)
	s.ClusterDomain = cmp.Or(s.ClusterDomain, DefaultClusterDomain)
	if s.Mesh.App == "" {
		s.Mesh.App = mesh.AppStatic
	}
	if s.Mesh.Protocol == "" {
		s.Mesh.Protocol = mesh.ProtocolHTTP
	}
	return s
}

// Validate reports every problem with s (after WithDefaults) at once, each
// a *mesh.OptionError on one line, or nil.
func (s Spec) Validate() error {
	s = s.WithDefaults()
	var errs []error
	bad := func(field, value, want string) {
		errs = append(errs, &mesh.OptionError{Field: field, Value: value, Want: want})
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
	if s.AppImage != "" && s.Mesh.App != mesh.AppStatic {
		bad("app-image", s.AppImage, "applies to the static app only (faces runs meshbench's own workloads)")
	}
	if s.FacesChart {
		if s.Mesh.App != mesh.AppFaces {
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
	// mode it follows (meshes.Mesh.RulesAs: Linkerd as sidecar mode, per-pod
	// proxies, the client's own identity reaching the app, mTLS always on).
	o := s.Mesh
	o.Nodes, o.LoopbackNet, o.Gateway, o.Attacker = mesh.MaxAppNodes, 0, false, false
	if m, ok := meshes.Get(string(o.Mode)); !ok {
		bad("mode", strconv.Quote(string(o.Mode)), meshes.Allowed(false))
		o.Mode = mesh.ModeSidecar // check the rest as for a mesh
	} else if m.RulesAs != "" {
		if !o.MTLS && !m.Plaintext {
			bad("mtls", "false", m.NoPlaintext+"; it has no plaintext variant")
		}
		o.Mode, o.MTLS = mesh.Mode(m.RulesAs), true
	}
	if err := o.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// desc is the descriptor of the spec's mesh mode (meshes.Get); an
// unknown mode (which Validate rejects) is described as none.
func (s Spec) desc() *meshes.Mesh {
	if m, ok := meshes.Get(string(s.Mesh.Mode)); ok {
		return m
	}
	m, _ := meshes.Get(string(mesh.ModeNone))
	return m
}

// istio reports whether the mode is one of Istio's.
func (s Spec) istio() bool { return s.desc().Product == meshes.Istio }

// linkerd reports whether the mode is Linkerd.
func (s Spec) linkerd() bool { return s.desc().Product == meshes.Linkerd }

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

// appService is one service of the app.
type appService struct {
	name  string
	grpc  bool     // speaks gRPC (color), else HTTP
	args  []string // `meshbench` arguments; nil with AppImage
	image string
}

// appServices lists the app's services, the entry (the load's target)
// first: static, or face, smiley and color as in the local lab (face calls
// smiley over HTTP and color over gRPC, by their service names).
func (s Spec) appServices() []appService {
	listen := ":" + strconv.Itoa(AppPort)
	serve := func(kind string, extra ...string) []string {
		return append([]string{"serve", kind, "--listen", listen}, extra...)
	}
	if s.Mesh.App == mesh.AppFaces {
		return []appService{
			{name: "face", image: s.Image, args: serve("face",
				"--smiley-url", "http://"+s.serviceHost("smiley")+":"+strconv.Itoa(AppPort)+"/",
				"--color-addr", s.serviceHost("color")+":"+strconv.Itoa(AppPort))},
			{name: "smiley", image: s.Image, args: serve("static")},
			{name: "color", image: s.Image, args: serve("grpc"), grpc: true},
		}
	}
	if s.AppImage != "" {
		return []appService{{name: "static", image: s.AppImage}}
	}
	return []appService{{name: "static", image: s.Image, args: serve("static")}}
}

// portName is the Service and container port name: Istio takes the
// protocol from it, so with Protocol tcp it is tcp-<what the app speaks>
// and the proxies stay at L4.
func (s Spec) portName(svc appService) string {
	name := "http"
	if svc.grpc {
		name = "grpc"
	}
	if s.Mesh.Protocol == mesh.ProtocolTCP {
		return "tcp-" + name
	}
	return name
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

// AppObjects returns everything meshbench creates for s before the load,
// in the order to apply it: the two namespaces with the mesh's enrolment,
// the service accounts (identities: one per app service, and
// LoadServiceAccount for the load), the mesh's objects (Istio's
// PeerAuthentication, the waypoint Gateway), the ALLOW rules, then each
// app service's Service and Deployment. Core and apps objects are typed;
// mesh objects are *unstructured.Unstructured, so no mesh's Go types are
// needed. Every object carries LabelManagedBy and LabelRun.
//
// Enrolment by namespace: sidecar labels istio-injection=enabled; ambient
// istio.io/dataplane-mode=ambient; waypoint that plus
// istio.io/use-waypoint=waypoint on the app namespace and a Gateway of
// class istio-waypoint; linkerd annotates linkerd.io/inject=enabled and
// config.linkerd.io/default-inbound-policy=all-authenticated (strict
// mTLS). Mode none opts out of sidecar injection explicitly, so a mesh
// installed on the cluster cannot enrol the baseline. Istio modes get a
// PeerAuthentication "default" per namespace: STRICT, or DISABLE for
// sidecar mode with MTLS false (Istio's auto-mTLS then sends plaintext).
//
// Policies > 0 renders mesh.RulesFor(app, Policies), the local lab's L4
// ALLOW rules, with the local identities mapped to the cluster's: the
// client is LoadServiceAccount in the load namespace, the other
// "default/…" identities (waypoint, face, svc-N) are service accounts of
// the app namespace, and the app port is the app's. Istio: one
// AuthorizationPolicy (security.istio.io/v1) per rule, namespace-wide in
// the app namespace, action ALLOW, from.source.principals (or
// .namespaces for a namespace-wide rule) and to.operation.ports. Linkerd:
// a Server (policy.linkerd.io/v1beta1) per port the rules name (the app
// port's is "app"), and per rule a MeshTLSAuthentication and an
// AuthorizationPolicy (policy.linkerd.io/v1alpha1) targeting the Server
// of the app port when the rule allows it (ports the app pods do not
// listen on mean nothing there), else the Server of its first port, or
// the app namespace for a rule without ports.
func AppObjects(s Spec) ([]runtime.Object, error) {
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	objs := []runtime.Object{s.namespace(s.LoadNamespace, false), s.namespace(s.AppNamespace, true)}
	objs = append(objs, s.serviceAccount(s.LoadNamespace, LoadServiceAccount))
	if s.FacesChart {
		// The chart brings the workloads (FacesChartCommand).
		return append(objs, s.meshObjects()...), nil
	}
	svcs := s.appServices()
	for _, svc := range svcs {
		objs = append(objs, s.serviceAccount(s.AppNamespace, svc.name))
	}
	objs = append(objs, s.meshObjects()...)
	pol, err := s.policyObjects()
	if err != nil {
		return nil, err
	}
	objs = append(objs, pol...)
	for _, svc := range svcs {
		objs = append(objs, s.service(svc), s.deployment(svc))
	}
	return objs, nil
}

// namespace is one of the run's namespaces with the mesh's enrolment.
func (s Spec) namespace(name string, app bool) *corev1.Namespace {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: s.labels()},
	}
	c := s.desc().Cluster
	maps.Copy(ns.Labels, c.NamespaceLabels)
	if app {
		maps.Copy(ns.Labels, c.AppNamespaceLabels)
	}
	if len(c.NamespaceAnnotations) > 0 {
		ns.Annotations = maps.Clone(c.NamespaceAnnotations)
	}
	return ns
}

func (s Spec) serviceAccount(ns, name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: s.labels()},
	}
}

// object is a mesh object as unstructured data.
func (s Spec) object(apiVersion, kind, ns, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(s.labels())
	return u
}

// meshObjects are the mesh's own objects: Istio's PeerAuthentications and
// the waypoint.
func (s Spec) meshObjects() []runtime.Object {
	var out []runtime.Object
	if s.istio() {
		mode := "STRICT"
		if !s.Mesh.MTLS && s.desc().Plaintext {
			mode = "DISABLE"
		}
		for _, ns := range []string{s.LoadNamespace, s.AppNamespace} {
			out = append(out, s.object(istioSecurityAPI, "PeerAuthentication", ns, "default",
				map[string]any{"mtls": map[string]any{"mode": mode}}))
		}
	}
	if s.desc().Kind == meshes.KindWaypoint {
		gw := s.object(gatewayAPI, "Gateway", s.AppNamespace, WaypointName, map[string]any{
			"gatewayClassName": "istio-waypoint",
			"listeners": []any{map[string]any{
				"name": "mesh", "port": int64(mesh.PortHBONE), "protocol": "HBONE",
			}},
		})
		l := gw.GetLabels()
		l["istio.io/waypoint-for"] = "service"
		gw.SetLabels(l)
		out = append(out, gw)
	}
	return out
}

// rule is one of mesh.RulesFor's ALLOW rules in cluster terms: peers with
// service account SA in Namespace (any service account when SA is empty)
// may reach Ports of the app pods (any port when empty).
type rule struct {
	Name          string // e.g. "allow-client"
	Namespace, SA string
	Ports         []int
}

// rules maps mesh.RulesFor(app, Policies) to the cluster.
func (s Spec) rules() ([]rule, error) {
	var out []rule
	spiffeNS := "spiffe://" + mesh.TrustDomain + "/ns/"
	for _, p := range mesh.RulesFor(s.Mesh.App, s.Mesh.Policies) {
		var r rule
		_, after, ok1 := strings.Cut(p.Name, "-policy[")
		name, _, ok2 := strings.Cut(after, "]")
		if !ok1 || !ok2 || name == "" {
			return nil, fmt.Errorf("ALLOW rule %q: cannot read its name", p.Name)
		}
		r.Name = name
		switch {
		case strings.HasPrefix(p.Principal.Exact, spiffeNS):
			ns, sa, ok := strings.Cut(strings.TrimPrefix(p.Principal.Exact, spiffeNS), "/sa/")
			if !ok || ns == "" || sa == "" || strings.Contains(sa, "/") {
				return nil, fmt.Errorf("ALLOW rule %s: principal %q is not a SPIFFE workload identity", name, p.Principal.Exact)
			}
			r.Namespace, r.SA = ns, sa
		case strings.HasPrefix(p.Principal.Prefix, spiffeNS) && strings.HasSuffix(p.Principal.Prefix, "/"):
			ns := strings.TrimSuffix(strings.TrimPrefix(p.Principal.Prefix, spiffeNS), "/")
			if ns == "" || strings.Contains(ns, "/") {
				return nil, fmt.Errorf("ALLOW rule %s: principal prefix %q is not a namespace", name, p.Principal.Prefix)
			}
			r.Namespace = ns
		default:
			return nil, fmt.Errorf("ALLOW rule %s: principal %+v has no Kubernetes form", name, p.Principal)
		}
		// The local lab's one namespace holds the client and the app; here
		// the client is the load namespace's and the rest the app's.
		if r.Namespace == mesh.IdentityClient.Namespace {
			r.Namespace = s.AppNamespace
			if r.SA == mesh.IdentityClient.ServiceAccount {
				r.Namespace = s.LoadNamespace
			}
		}
		if r.SA == mesh.IdentityClient.ServiceAccount && r.Namespace == s.LoadNamespace {
			r.SA = LoadServiceAccount
		}
		for _, port := range p.Ports {
			if port == mesh.PortApp {
				port = s.appPort()
			}
			if !slices.Contains(r.Ports, port) {
				r.Ports = append(r.Ports, port)
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// policyObjects renders the ALLOW rules for the mesh (see AppObjects).
func (s Spec) policyObjects() ([]runtime.Object, error) {
	if s.Mesh.Policies <= 0 {
		return nil, nil
	}
	rules, err := s.rules()
	if err != nil {
		return nil, err
	}
	var out []runtime.Object
	switch {
	case s.istio():
		for _, r := range rules {
			out = append(out, s.istioPolicy(r))
		}
	case s.linkerd():
		out = s.linkerdPolicies(rules)
	}
	return out, nil
}

func portStrings(ports []int) []any {
	out := make([]any, len(ports))
	for i, p := range ports {
		out[i] = strconv.Itoa(p)
	}
	return out
}

// istioPolicy is one rule as an Istio AuthorizationPolicy: namespace-wide
// (no selector) in the app namespace, so sidecars and, in ambient modes,
// ztunnel enforce it (L4 only: principals, namespaces, ports).
func (s Spec) istioPolicy(r rule) *unstructured.Unstructured {
	src := map[string]any{"namespaces": []any{r.Namespace}}
	if r.SA != "" {
		src = map[string]any{"principals": []any{mesh.TrustDomain + "/ns/" + r.Namespace + "/sa/" + r.SA}}
	}
	rl := map[string]any{"from": []any{map[string]any{"source": src}}}
	if len(r.Ports) > 0 {
		rl["to"] = []any{map[string]any{"operation": map[string]any{"ports": portStrings(r.Ports)}}}
	}
	return s.object(istioSecurityAPI, "AuthorizationPolicy", s.AppNamespace, r.Name,
		map[string]any{"action": "ALLOW", "rules": []any{rl}})
}

// linkerdServerName names the Server of an app-pod port.
func (s Spec) linkerdServerName(port int) string {
	if port == s.appPort() {
		return "app"
	}
	return "port-" + strconv.Itoa(port)
}

// linkerdTarget is the port whose Server a rule's AuthorizationPolicy
// targets (0: the namespace).
func (s Spec) linkerdTarget(r rule) int {
	if len(r.Ports) == 0 {
		return 0
	}
	if slices.Contains(r.Ports, s.appPort()) {
		return s.appPort()
	}
	return r.Ports[0]
}

// linkerdPolicies renders the rules for Linkerd: the Servers (each
// selecting every app pod on one port: once a Server exists, only what a
// policy authorizes reaches that port), then per rule a
// MeshTLSAuthentication and an AuthorizationPolicy.
func (s Spec) linkerdPolicies(rules []rule) []runtime.Object {
	var out []runtime.Object
	var ports []int
	for _, r := range rules {
		if p := s.linkerdTarget(r); p != 0 && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	for _, p := range ports {
		spec := map[string]any{
			"podSelector": map[string]any{"matchLabels": map[string]any{LabelRole: RoleApp}},
			"port":        int64(p),
		}
		if s.Mesh.Protocol == mesh.ProtocolTCP {
			spec["proxyProtocol"] = "opaque"
		}
		out = append(out, s.object(linkerdServerAPI, "Server", s.AppNamespace, s.linkerdServerName(p), spec))
	}
	for _, r := range rules {
		var authn map[string]any
		if r.SA != "" {
			authn = map[string]any{"identityRefs": []any{map[string]any{
				"kind": "ServiceAccount", "name": r.SA, "namespace": r.Namespace}}}
		} else {
			authn = map[string]any{"identities": []any{
				"*." + r.Namespace + ".serviceaccount.identity.linkerd." + mesh.TrustDomain}}
		}
		out = append(out, s.object(linkerdPolicyAPI, "MeshTLSAuthentication", s.AppNamespace, r.Name, authn))
		target := map[string]any{"kind": "Namespace", "name": s.AppNamespace}
		if p := s.linkerdTarget(r); p != 0 {
			target = map[string]any{"group": linkerdPolicyGroup, "kind": "Server", "name": s.linkerdServerName(p)}
		}
		out = append(out, s.object(linkerdPolicyAPI, "AuthorizationPolicy", s.AppNamespace, r.Name, map[string]any{
			"targetRef": target,
			"requiredAuthenticationRefs": []any{map[string]any{
				"group": linkerdPolicyGroup, "kind": "MeshTLSAuthentication", "name": r.Name}},
		}))
	}
	return out
}

// opaqueAnnotations tell Linkerd to keep the app port at L4 when the
// protocol is tcp (Linkerd's form of Istio's tcp- port names).
func (s Spec) opaqueAnnotations() map[string]string {
	if s.linkerd() && s.Mesh.Protocol == mesh.ProtocolTCP {
		return map[string]string{"config.linkerd.io/opaque-ports": strconv.Itoa(s.appPort())}
	}
	return nil
}

// appPodAnnotations are opaqueAnnotations plus, for Istio's sidecars,
// IstioStatsInclusion (VerifyMTLS reads those counters).
func (s Spec) appPodAnnotations() map[string]string {
	if s.Mesh.Mode == mesh.ModeSidecar {
		return maps.Clone(IstioStatsInclusion)
	}
	return s.opaqueAnnotations()
}

func (s Spec) service(svc appService) *corev1.Service {
	name := s.portName(svc)
	l := s.labels()
	l[LabelApp] = svc.name
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: svc.name, Namespace: s.AppNamespace, Labels: l,
			Annotations: s.opaqueAnnotations()},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelApp: svc.name, LabelRole: RoleApp},
			Ports: []corev1.ServicePort{{Name: name, Port: int32(s.appPort()), Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromString(name)}},
		},
	}
}

// requests are every container's resource requests.
func requests() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(RequestCPU),
		corev1.ResourceMemory: resource.MustParse(RequestMemory),
	}}
}

// restricted is the security context of meshbench's own containers: the
// image's non-root user, nothing more (Pod Security "restricted").
func restricted() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             new(true),
		AllowPrivilegeEscalation: new(false),
		ReadOnlyRootFilesystem:   new(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// antiAffinity is a pod (anti-)affinity term for the nodes of the pods of
// role in ns.
func antiAffinity(role, ns string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: role}},
		Namespaces:    []string{ns},
		TopologyKey:   corev1.LabelHostname,
	}
}

func (s Spec) deployment(svc appService) *appsv1.Deployment {
	port := s.appPort()
	c := corev1.Container{
		Name: AppContainer, Image: svc.image, Args: svc.args,
		Ports:     []corev1.ContainerPort{{Name: s.portName(svc), ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}},
		Resources: requests(),
	}
	// Readiness only: a liveness probe could restart a pod under load.
	// meshbench's workloads answer GET /healthz without faults or backend
	// calls (GET / on face would call smiley and color); the color gRPC
	// server is probed by TCP; a plain image (nginx) by GET /.
	probe := &corev1.Probe{PeriodSeconds: 2, FailureThreshold: 3, TimeoutSeconds: 1}
	switch {
	case svc.grpc:
		probe.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}
	case svc.args == nil:
		probe.HTTPGet = &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(port))}
	default:
		probe.HTTPGet = &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(int32(port))}
	}
	c.ReadinessProbe = probe
	if svc.args != nil {
		c.SecurityContext = restricted()
	}
	pod := corev1.PodSpec{ServiceAccountName: svc.name, Containers: []corev1.Container{c}}
	selector := map[string]string{LabelApp: svc.name, LabelRole: RoleApp}
	switch {
	case s.NodeCount >= NodeSelectorMinNodes:
		pod.NodeSelector = map[string]string{LabelNodeRole: RoleApp}
		pod.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
		}}
		fallthrough
	case s.NodeCount >= AntiAffinityMinNodes:
		pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinity(RoleLoad, s.LoadNamespace)},
		}}
		if s.NodeCount < NodeSelectorMinNodes {
			// The first app pod matches its own term, so it may go anywhere;
			// the others follow it.
			pod.Affinity.PodAffinity = &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinity(RoleApp, s.AppNamespace)},
			}
		}
	}
	l := s.labels()
	l[LabelApp] = svc.name
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: svc.name, Namespace: s.AppNamespace, Labels: l},
		Spec: appsv1.DeploymentSpec{
			Replicas: new(int32(s.Mesh.Replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: s.podLabels(RoleApp, svc.name), Annotations: s.appPodAnnotations()},
				Spec:       pod,
			},
		},
	}
}

// LoadSpec is the load of one cell on this platform: the load
// (kubeload.Spec: W workers, the pods of an Indexed Job, that each run
// `meshbench load` with their share of the rate and the connections) and
// the Spec it runs against.
type LoadSpec struct {
	Spec
	// Load is the total load: an open-loop rate, split among the workers,
	// or loadgen.ClosedLoop; required.
	Load loadgen.Load
	// Workers is the number of load pods, 1 or more.
	Workers int
	// Duration is the measured window (required), Warmup the load sent
	// before it (0: none), Timeout the per-request timeout (0: the CLI's
	// default, 30 s).
	Duration, Warmup, Timeout time.Duration
	// Connections is the total number of connections (0: the CLI's
	// default, 16 per worker).
	Connections int
	// Target is the URL to load (default LoadTarget(Spec)).
	Target string
	// Generator is the load generator the workers run (`meshbench load
	// --generator`): "" or extgen.Meshbench for meshbench's engine,
	// extgen.Oha or extgen.Wrk2 (in the image beside meshbench).
	Generator string
}

// load is ls's load as kubeload's, Target as given.
func (ls LoadSpec) load() kubeload.Spec {
	return kubeload.Spec{Load: ls.Load, Workers: ls.Workers, Duration: ls.Duration, Warmup: ls.Warmup,
		Timeout: ls.Timeout, Connections: ls.Connections, Target: ls.Target, Generator: ls.Generator}
}

// resolved is ls's load with its Target defaulted to LoadTarget(Spec).
func (ls LoadSpec) resolved() kubeload.Spec {
	l := ls.load()
	l.Target = cmp.Or(l.Target, LoadTarget(ls.Spec))
	return l
}

// Validate reports every problem with ls at once (Spec's included), each
// on one line, or nil.
func (ls LoadSpec) Validate() error {
	var errs []error
	if err := ls.Spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, ls.load().Problems()...)
	if len(errs) == 0 {
		if err := ls.resolved().CheckGenerator(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LoadArgs are the arguments of worker index's `meshbench load`
// (kubeload.Args, the target defaulted).
func LoadArgs(ls LoadSpec, index string) []string {
	ls.Spec = ls.Spec.WithDefaults()
	return kubeload.Args(ls.resolved(), index)
}

// LoadJob returns the load Job of ls, in the load namespace
// (kubeload.Job: an Indexed Job of Workers pods, no retries, no TTL).
// Placement: workers prefer distinct nodes, and from AntiAffinityMinNodes
// nodes must avoid app pods' nodes; from NodeSelectorMinNodes they run
// only on nodes labelled LabelNodeRole=RoleLoad. With sidecar meshes the
// proxy runs as a native sidecar (Kubernetes 1.29+), so the Job completes
// when the load ends: Istio's sidecar.istio.io/nativeSidecar, Linkerd's
// proxy-enable-native-sidecar (2.15+; Linkerd stable 2.14's proxy would
// keep the pod running).
func LoadJob(ls LoadSpec) (*batchv1.Job, error) {
	ls.Spec = ls.Spec.WithDefaults()
	if err := ls.Validate(); err != nil {
		return nil, err
	}
	s := ls.Spec
	p := kubeload.Pod{
		Namespace: s.LoadNamespace, Name: LoadJobName, Labels: s.labels(),
		PodLabels: s.podLabels(RoleLoad, LoadJobName), PodAnnotations: maps.Clone(s.desc().Cluster.LoadPodAnnotations),
		Image: s.Image, ServiceAccount: LoadServiceAccount,
		Resources: requests(), SecurityContext: restricted(),
		Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: antiAffinity(RoleLoad, s.LoadNamespace)}},
		}},
	}
	if s.NodeCount >= AntiAffinityMinNodes {
		p.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution = []corev1.PodAffinityTerm{antiAffinity(RoleApp, s.AppNamespace)}
	}
	if s.NodeCount >= NodeSelectorMinNodes {
		p.NodeSelector = map[string]string{LabelNodeRole: RoleLoad}
	}
	return kubeload.Job(ls.resolved(), p), nil
}
