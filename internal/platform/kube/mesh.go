package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/kube/install"
)

// Namespaces the meshes install themselves into.
const (
	IstioNamespace   = mesh.IstioNamespace
	LinkerdNamespace = mesh.LinkerdNamespace
)

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// Install runs mode's install commands against c (install.Run).
func (c *Cluster) Install(ctx context.Context, cmds []install.Command, log io.Writer) ([]install.Command, error) {
	return install.Run(ctx, c, cmds, log)
}

// Check is one verified fact about an installed mesh.
type Check struct {
	What string `json:"what"`
	OK   bool   `json:"ok"`
	// Detail says what was found (or what is missing).
	Detail string `json:"detail"`
}

// VerifyMesh checks that mode's mesh runs on c: its control plane and
// node proxies are ready. After the app is up, VerifyEnrolment checks the
// app's pods are in the mesh. It returns every check, passed or not, and
// an error listing the failed ones.
func (c *Cluster) VerifyMesh(ctx context.Context, mode string) ([]Check, error) {
	var checks []Check
	apps := c.Core.AppsV1()
	deploy := func(ns, name string) {
		d, err := apps.Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		checks = append(checks, rolloutCheck("Deployment "+ns+"/"+name+" available", err, func() (bool, string, []corev1.Container) {
			want := int32(1)
			if d.Spec.Replicas != nil {
				want = *d.Spec.Replicas
			}
			return d.Status.AvailableReplicas >= want && want > 0,
				fmt.Sprintf("%d/%d available", d.Status.AvailableReplicas, want), d.Spec.Template.Spec.Containers
		}))
	}
	daemonset := func(ns, name string) {
		d, err := apps.DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		checks = append(checks, rolloutCheck("DaemonSet "+ns+"/"+name+" ready on every node", err, func() (bool, string, []corev1.Container) {
			st := d.Status
			return st.DesiredNumberScheduled > 0 && st.NumberReady == st.DesiredNumberScheduled,
				fmt.Sprintf("%d/%d ready", st.NumberReady, st.DesiredNumberScheduled), d.Spec.Template.Spec.Containers
		}))
	}
	m, ok := mesh.Get(mode)
	if !ok {
		return nil, fmt.Errorf("mesh %q: %s", mode, mesh.Allowed(false))
	}
	for _, n := range m.Cluster.Deployments {
		deploy(m.Cluster.Namespace, n)
	}
	for _, n := range m.Cluster.DaemonSets {
		daemonset(m.Cluster.Namespace, n)
	}
	if m.Cluster.GatewayAPI {
		checks = append(checks, c.servesKind(ctx, schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"}))
	}
	return checks, failed(checks)
}

// rolloutCheck is the check called what of a Deployment or DaemonSet that
// getting returned err for: "not found", the error, or else what ready
// says of the object (ready or not, how many of how many) with the image of
// its first container.
func rolloutCheck(what string, err error, ready func() (ok bool, detail string, containers []corev1.Container)) Check {
	chk := Check{What: what}
	switch {
	case apierrors.IsNotFound(err):
		chk.Detail = "not found"
	case err != nil:
		chk.Detail = err.Error()
	default:
		var containers []corev1.Container
		chk.OK, chk.Detail, containers = ready()
		if img := imageOf(containers); img != "" {
			chk.Detail += ", image " + img
		}
	}
	return chk
}

func (c *Cluster) servesKind(ctx context.Context, gvk schema.GroupVersionKind) Check {
	chk := Check{What: "the cluster serves " + gvk.Kind + " (" + gvk.GroupVersion().String() + ")"}
	if _, err := c.Resource(gvk, "default"); err != nil {
		chk.Detail = err.Error()
	} else {
		chk.OK, chk.Detail = true, "yes"
	}
	return chk
}

func imageOf(cs []corev1.Container) string {
	if len(cs) == 0 {
		return ""
	}
	return cs[0].Image
}

func failed(checks []Check) error {
	var bad []string
	for _, c := range checks {
		if !c.OK {
			bad = append(bad, c.What+": "+c.Detail)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return errors.New("mesh not ready: " + strings.Join(bad, "; "))
}

// VerifyEnrolment checks that every running pod of the app namespace is
// in mode's mesh: an istio-proxy container (sidecar), the ambient
// redirection annotation istio-cni sets (ambient, waypoint), a
// linkerd-proxy container (linkerd); for waypoint also a ready waypoint
// pod.
func (c *Cluster) VerifyEnrolment(ctx context.Context, mode, ns string) ([]Check, error) {
	m, ok := mesh.Get(mode)
	if !ok {
		return nil, fmt.Errorf("mesh %q: %s", mode, mesh.Allowed(false))
	}
	want := m.Cluster.Enrolled
	pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var checks []Check
	var in, total int
	var missing []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if isWaypointPod(p) {
			continue
		}
		total++
		if enrolled(p, want) {
			in++
		} else {
			missing = append(missing, p.Name)
		}
	}
	chk := Check{What: want.What, OK: total > 0 && in == total, Detail: fmt.Sprintf("%d of %d pods", in, total)}
	if len(missing) > 0 {
		chk.Detail += "; not: " + strings.Join(missing[:min(3, len(missing))], ", ")
	}
	checks = append(checks, chk)
	if m.Cluster.WaypointPod {
		var ready int
		for i := range pods.Items {
			if isWaypointPod(&pods.Items[i]) && PodReady(&pods.Items[i]) {
				ready++
			}
		}
		checks = append(checks, Check{What: "a waypoint pod runs in " + ns, OK: ready > 0, Detail: fmt.Sprintf("%d ready", ready)})
	}
	return checks, failed(checks)
}

// enrolled reports whether p shows the enrolment e asks for.
func enrolled(p *corev1.Pod, e mesh.Enrolment) bool {
	switch {
	case e.NoProxy:
		return !slices.ContainsFunc(mesh.ProxyContainers(), func(c string) bool { return hasContainer(p, c) })
	case e.Container != "":
		return hasContainer(p, e.Container)
	case e.Annotation != "":
		return p.Annotations[e.Annotation] == e.Value
	}
	return false
}

func hasContainer(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == name {
			return true
		}
	}
	for _, c := range p.Spec.InitContainers { // native sidecars (restartPolicy Always)
		if c.Name == name {
			return true
		}
	}
	return false
}

func isWaypointPod(p *corev1.Pod) bool {
	return p.Labels["gateway.networking.k8s.io/gateway-class-name"] == "istio-waypoint" ||
		p.Labels["istio.io/gateway-name"] != "" && p.Labels["gateway.istio.io/managed"] != ""
}

// PodReady reports whether p's Ready condition is True (false when it has
// none): all its containers are ready and it may receive traffic.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
