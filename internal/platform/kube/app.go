package kube

import (
	"fmt"
	"maps"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/platform/kube/policy"
)

// appService is one service of the app.
type appService struct {
	name  string
	grpc  bool     // speaks gRPC (color), else HTTP
	args  []string // `meshbench` arguments; nil with AppImage
	image string
}

// appServices lists the app's services, the entry (the load's target)
// first: static, or face, smiley and color as in the local lab (face calls
// smiley over HTTP and color over gRPC, by their service names). The
// replicas of ControlService serve their control API on the pod's
// loopback (ControlPort).
func (s Spec) appServices() []appService {
	svcs := s.appServiceList()
	for i := range svcs {
		if svcs[i].name == s.ControlService && svcs[i].args != nil {
			svcs[i].args = append(svcs[i].args, "--control", controlAddr)
		}
	}
	return svcs
}

// controlAddr is the control API's address in an app pod: loopback only.
var controlAddr = "127.0.0.1:" + strconv.Itoa(ControlPort)

func (s Spec) appServiceList() []appService {
	listen := ":" + strconv.Itoa(AppPort)
	serve := func(kind string, extra ...string) []string {
		return append([]string{"serve", kind, "--listen", listen}, extra...)
	}
	if s.Mesh.App == topology.AppFaces {
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
	if s.BodySize > 0 {
		return []appService{{name: "static", image: s.Image, args: serve("static", "--body-size", strconv.Itoa(s.BodySize))}}
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
	if s.Mesh.Protocol == topology.ProtocolTCP {
		return "tcp-" + name
	}
	return name
}

// AppObjects returns everything meshbench creates for s before the load,
// in the order to apply it: the two namespaces with the mesh's enrolment,
// the service accounts (identities: one per app service, and
// LoadServiceAccount for the load), the mesh's objects (Istio's
// PeerAuthentication, the waypoint Gateway), the ALLOW rules, then each
// app service's Service and Deployment. Core and apps objects are typed;
// mesh objects are *unstructured.Unstructured, so no mesh's Go types are
// needed (policy renders the mesh's objects and the rules). Every
// object carries LabelManagedBy and LabelRun.
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
// Policies > 0 renders topology.RulesFor(app, Policies), the local lab's L4
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
		return append(objs, policy.MeshObjects(s.policyCell())...), nil
	}
	svcs := s.appServices()
	for _, svc := range svcs {
		objs = append(objs, s.serviceAccount(s.AppNamespace, svc.name))
	}
	objs = append(objs, policy.MeshObjects(s.policyCell())...)
	pol, err := policy.PolicyObjects(s.policyCell())
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

// opaqueAnnotations tell Linkerd to keep the app port at L4 when the
// protocol is tcp (Linkerd's form of Istio's tcp- port names).
func (s Spec) opaqueAnnotations() map[string]string {
	if s.linkerd() && s.Mesh.Protocol == topology.ProtocolTCP {
		return map[string]string{"config.linkerd.io/opaque-ports": strconv.Itoa(s.appPort())}
	}
	return nil
}

// appPodAnnotations are opaqueAnnotations plus, for Istio's sidecars,
// IstioStatsInclusion (VerifyMTLS reads those counters).
func (s Spec) appPodAnnotations() map[string]string {
	a := s.opaqueAnnotations()
	if s.Mesh.Mode == topology.ModeSidecar {
		a = maps.Clone(IstioStatsInclusion)
	}
	return s.withThreads(a)
}

// withThreads adds to a (nil: a new map) the mesh's annotation of its
// per-pod proxy's worker threads (mesh.Cluster.ThreadsAnnotation)
// when the cell sets them (Mesh.ProxyThreads > 0).
func (s Spec) withThreads(a map[string]string) map[string]string {
	c := s.desc().Cluster
	if s.Mesh.ProxyThreads <= 0 || c.ThreadsAnnotation == "" {
		return a
	}
	if a == nil {
		a = map[string]string{}
	}
	a[c.ThreadsAnnotation] = fmt.Sprintf(c.ThreadsValue, s.Mesh.ProxyThreads)
	maps.Copy(a, c.ThreadsExtra)
	return a
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
		pod.Affinity = &corev1.Affinity{}
		if !s.sameNode() {
			pod.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinity(RoleLoad, s.LoadNamespace)},
			}
		}
		if s.NodeCount < NodeSelectorMinNodes {
			// The first app pod matches its own term, so it may go anywhere;
			// the others follow it.
			pod.Affinity.PodAffinity = &corev1.PodAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{antiAffinity(RoleApp, s.AppNamespace)},
			}
		}
	}
	if pod.Affinity != nil && *pod.Affinity == (corev1.Affinity{}) {
		pod.Affinity = nil
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
