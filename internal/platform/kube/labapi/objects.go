package labapi

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod is one lab pod as the API server holds it.
type Pod struct {
	Name, Namespace, ServiceAccount string
	Node                            string
	IP                              netip.Addr
	Labels                          map[string]string
	// Annotations are what a mesh's node agent or injector would have
	// written on the pod (Istio's istio-cni:
	// ambient.istio.io/redirection; Linkerd's proxy injector:
	// linkerd.io/identity-mode).
	Annotations map[string]string
	// Containers are the pod's containers' names (default: "app"); none
	// runs, a mesh reads them (Istio: "istio-proxy" marks a sidecar).
	Containers []string
	// ContainerSpecs, by container name, add to a container what a mesh
	// reads of it besides its name (ports, environment: Linkerd's
	// destination reads its proxy container's listen addresses); name and
	// image are labapi's.
	ContainerSpecs map[string]corev1.Container
}

// Service is one lab service: its VIP and port, the pods' target port,
// the selector its pods carry.
type Service struct {
	Name, Namespace string
	VIP             netip.Addr
	Port            int
	TargetPort      int
	// PortName declares the protocol (Istio reads "http…" as HTTP).
	PortName string
	Selector map[string]string
	// Labels are the Service's own (a mesh's: Istio's
	// istio.io/ingress-use-waypoint).
	Labels map[string]string
}

// Objects are the lab as Kubernetes objects.
type Objects struct {
	// Namespaces are made besides those of the pods and services (a
	// control plane's own: istio-system).
	Namespaces []string
	// NamespaceLabels are labels by namespace (a mesh's: Istio's
	// istio.io/use-waypoint), also on a namespace the API server made.
	NamespaceLabels map[string]map[string]string
	Nodes           []string
	Pods            []Pod
	Services        []Service
}

// Populate creates the lab's namespaces, service accounts, nodes, pods
// (their status Running and Ready with their netns IP, as a kubelet would
// report), services and one EndpointSlice per service listing its ready
// pods.
func (s *Server) Populate(ctx context.Context, o Objects) error {
	core := s.Client.Core.CoreV1()
	namespaces, accounts := map[string]bool{}, map[string]bool{}
	for _, ns := range o.Namespaces {
		namespaces[ns] = true
	}
	for _, p := range o.Pods {
		namespaces[p.Namespace] = true
		accounts[p.Namespace+"/"+p.ServiceAccount] = true
	}
	for _, svc := range o.Services {
		namespaces[svc.Namespace] = true
	}
	for ns := range o.NamespaceLabels {
		namespaces[ns] = true
	}
	for _, ns := range sortedKeys(namespaces) {
		labels := o.NamespaceLabels[ns]
		_, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && len(labels) > 0 {
			err = s.labelNamespace(ctx, ns, labels)
		} else if apierrors.IsAlreadyExists(err) {
			err = nil
		}
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	for _, key := range sortedKeys(accounts) {
		ns, name, _ := strings.Cut(key, "/")
		if _, err := core.ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("service account %s: %w", key, err)
		}
	}
	for _, n := range o.Nodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}
		if _, err := core.Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("node %s: %w", n, err)
		}
	}
	for _, p := range o.Pods {
		if err := s.createPod(ctx, p); err != nil {
			return err
		}
	}
	for _, svc := range o.Services {
		if err := s.createService(ctx, svc, o.Pods); err != nil {
			return err
		}
	}
	return nil
}

// labelNamespace adds labels to namespace ns (one the API server made).
func (s *Server) labelNamespace(ctx context.Context, ns string, labels map[string]string) error {
	obj, err := s.Client.Core.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	maps.Copy(obj.Labels, labels)
	_, err = s.Client.Core.CoreV1().Namespaces().Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

// createPod creates p and writes its status as a kubelet would once its
// containers run and are ready.
func (s *Server) createPod(ctx context.Context, p Pod) error {
	pods := s.Client.Core.CoreV1().Pods(p.Namespace)
	names := p.Containers
	if len(names) == 0 {
		names = []string{"app"}
	}
	// Never run: the lab's processes run in the pod's netns.
	const image = "meshbench.invalid/lab-pod"
	var containers []corev1.Container
	var statuses []corev1.ContainerStatus
	now := metav1.NewTime(time.Now())
	for _, n := range names {
		c := p.ContainerSpecs[n]
		c.Name, c.Image = n, image
		containers = append(containers, c)
		statuses = append(statuses, corev1.ContainerStatus{Name: n, Ready: true, Image: image,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, Annotations: p.Annotations},
		Spec:       corev1.PodSpec{ServiceAccountName: p.ServiceAccount, NodeName: p.Node, Containers: containers},
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	created.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: p.IP.String(), PodIPs: []corev1.PodIP{{IP: p.IP.String()}},
		HostIP: p.IP.String(), StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: statuses,
	}
	if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("pod %s/%s status: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// createService creates svc with its VIP and an EndpointSlice of the
// pods its selector matches (no endpoint controller runs here).
func (s *Server) createService(ctx context.Context, svc Service, pods []Pod) error {
	name := svc.PortName
	if name == "" {
		name = "http"
	}
	obj := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name, Namespace: svc.Namespace, Labels: svc.Labels},
		Spec: corev1.ServiceSpec{
			ClusterIP: svc.VIP.String(), Selector: svc.Selector,
			Ports: []corev1.ServicePort{{Name: name, Port: int32(svc.Port), TargetPort: intstr.FromInt(svc.TargetPort), Protocol: corev1.ProtocolTCP}},
		},
	}
	if _, err := s.Client.Core.CoreV1().Services(svc.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	ready := true
	port, proto := int32(svc.TargetPort), corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: svc.Name + "-lab", Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "meshbench"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	for _, p := range pods {
		if p.Namespace != svc.Namespace || !matches(svc.Selector, p.Labels) {
			continue
		}
		node := p.Node
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{p.IP.String()}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName: &node, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name},
		})
	}
	if _, err := s.Client.Core.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("endpoint slice of %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

// Endpoints waits up to timeout for Service ns/name, which a controller
// makes (Istio's istiod a waypoint's), and writes its EndpointSlice: the
// pods its selector matches, on every port of the Service (what the
// EndpointSlice controller, which no lab runs, would do once).
func (s *Server) Endpoints(ctx context.Context, ns, name string, timeout time.Duration) error {
	core := s.Client.Core.CoreV1()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var svc *corev1.Service
	for {
		var err error
		if svc, err = core.Services(ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("service %s/%s: none made in %v: %v", ns, name, timeout, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	pods, err := core.Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-lab", Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "meshbench"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, sp := range svc.Spec.Ports {
		port, proto, pname := sp.TargetPort.IntVal, sp.Protocol, sp.Name
		if port == 0 {
			port = sp.Port
		}
		slice.Ports = append(slice.Ports, discoveryv1.EndpointPort{Name: &pname, Port: &port, Protocol: &proto, AppProtocol: sp.AppProtocol})
	}
	ready := true
	for _, p := range pods.Items {
		if !matches(svc.Spec.Selector, p.Labels) || p.Status.PodIP == "" {
			continue
		}
		node := p.Spec.NodeName
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses: []string{p.Status.PodIP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			NodeName: &node, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID},
		})
	}
	if _, err := s.Client.Core.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("endpoint slice of %s/%s: %w", ns, name, err)
	}
	return nil
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// ApplyCRDs applies crds (CustomResourceDefinitions, e.g. a mesh's from
// its install manifests) and waits until every one is Established. On a
// server with a Snapshot (shared by a plan's labs) it first deletes the
// CRDs an earlier lab left that crds do not name, so the server holds
// exactly this lab's.
func (s *Server) ApplyCRDs(ctx context.Context, crds []runtime.Object) error {
	if s.base != nil {
		if err := s.pruneCRDs(ctx, crds); err != nil {
			return err
		}
	}
	if err := s.Client.Apply(ctx, crds); err != nil {
		return err
	}
	ri, err := s.Client.Resource(crdGVK, "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, obj := range crds {
		name := obj.(*unstructured.Unstructured).GetName()
		for {
			u, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err == nil && established(u) {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CRD %s not established: %v", name, ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
