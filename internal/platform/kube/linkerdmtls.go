package kube

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
	"github.com/meshbench/meshbench/internal/platform/kube/policy"
)

// apiServerNets are the API server's addresses as host CIDRs (/32, /128),
// from the kubernetes Service's EndpointSlices: where its requests to the
// pods' proxy subresource come from on clusters whose API server reaches
// pods directly (kubeadm, kind, k3d, the test nodes).
func (c *Cluster) apiServerNets(ctx context.Context) ([]string, error) {
	l, err := c.Core.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kubernetes"})
	if err != nil {
		return nil, fmt.Errorf("reading the API server's addresses: %w", err)
	}
	var out []string
	for _, s := range l.Items {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				if ip, err := netip.ParseAddr(a); err == nil {
					if n := netip.PrefixFrom(ip, ip.BitLen()).String(); !slices.Contains(out, n) {
						out = append(out, n)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// meshReadAccess are the objects a cell of s needs so that meshbench can
// read its proxies' own counters (VerifyMTLS): for Linkerd, the API
// server's access to the proxies' admin port (policy.LinkerdAdminAccess);
// none for other meshes.
func (c *Cluster) meshReadAccess(ctx context.Context, s Spec) ([]runtime.Object, error) {
	if !s.linkerd() {
		return nil, nil
	}
	nets, err := c.apiServerNets(ctx)
	if err != nil {
		return nil, err
	}
	return policy.LinkerdAdminAccess(s.policyCell(), nets), nil
}

// linkerdAdminPort is where linkerd2-proxy serves /metrics (the named port
// linkerd-admin of the injected container).
const linkerdAdminPort = proxy.PortAdmin

// verifyLinkerdMTLS checks, after the load, from each app pod's
// linkerd-proxy's own request counters (its /metrics through the pod's
// proxy subresource) that the traffic it served came over mutual TLS:
// every app pod's proxy took requests over mTLS (tls="true", with the
// client's identity) and none in plaintext (the kubelet's probes apart);
// the requests its policies refused are said by client identity. The Faces
// chart's GUI, which no load reaches, is left out.
func (c *Cluster) verifyLinkerdMTLS(ctx context.Context, ns string) ([]Check, error) {
	pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var checks []Check
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || !hasContainer(p, metricsapi.ContainerLinkerdProxy) ||
			p.Labels[metricsapi.LabelFacesComponent] == metricsapi.FacesGUIComponent {
			continue
		}
		chk := Check{What: "pod " + p.Name + ": its linkerd-proxy served mTLS only (its own request counters)"}
		raw, err := c.Core.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").
			Name(fmt.Sprintf("%s:%d", p.Name, linkerdAdminPort)).SubResource("proxy").Suffix("metrics").DoRaw(ctx)
		if err != nil {
			chk.Detail = "reading its proxy's metrics: " + err.Error()
			if strings.Contains(err.Error(), "Forbidden") {
				chk.Detail += " (the proxy's policy refused the API server: see the " + policy.LinkerdAdminServer + " Server in k8s/app.yaml)"
			}
			checks = append(checks, chk)
			continue
		}
		s, err := proxy.ParseStats(bytes.NewReader(raw))
		if err != nil {
			chk.Detail = err.Error()
			checks = append(checks, chk)
			continue
		}
		chk.OK = s.InboundTLS > 0 && s.InboundPlain == 0
		chk.Detail = fmt.Sprintf("%.0f requests in over mTLS (%s), %.0f in plaintext", s.InboundTLS, byID(s.ClientIDs), s.InboundPlain)
		if len(s.Denied) > 0 {
			chk.Detail += fmt.Sprintf(", %s refused by its policies", byID(s.Denied))
		}
		chk.Detail += fmt.Sprintf("; %.0f kubelet probes", s.Probes)
		checks = append(checks, chk)
	}
	if len(checks) == 0 {
		checks = append(checks, Check{What: "app pods with a linkerd-proxy sidecar to read", Detail: "none running"})
	}
	return checks, failed(checks)
}

// byID is counts by identity, "" as "no identity", sorted by identity:
// "402 from client.meshbench-load.serviceaccount.identity.linkerd.cluster.local".
func byID(m map[string]float64) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(m)) {
		who := id
		if who == "" {
			who = "no identity"
		}
		parts = append(parts, fmt.Sprintf("%.0f from %s", m[id], who))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// isLinkerd: mode is Linkerd's.
func isLinkerd(mode string) bool {
	m, ok := mesh.Get(mode)
	return ok && m.Product == mesh.Linkerd
}

// logChecks writes each check's subject and detail, indented.
func logChecks(w io.Writer, checks []Check) {
	for _, c := range checks {
		fmt.Fprintf(w, "  %s: %s\n", c.What, c.Detail)
	}
}
