package policy

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// API versions of Linkerd's policy objects.
const (
	// linkerdServerAPI is the Server version Linkerd serves from 2.16 on
	// (Aug 2024; v1beta1, of 2.14 and 2.15, is still served by edge-26,
	// with a deprecation warning on every apply).
	linkerdServerAPI = "policy.linkerd.io/v1beta3"
	// linkerdPolicyAPI serves AuthorizationPolicy and
	// MeshTLSAuthentication since Linkerd 2.12.
	linkerdPolicyAPI   = "policy.linkerd.io/v1alpha1"
	linkerdPolicyGroup = "policy.linkerd.io"
)

// linkerdServerName names the Server of an app-pod port.
func (c Cell) linkerdServerName(port int) string {
	if port == c.AppPort {
		return "app"
	}
	return "port-" + strconv.Itoa(port)
}

// linkerdTarget is the port whose Server a rule's AuthorizationPolicy
// targets (0: the namespace).
func (c Cell) linkerdTarget(r rule) int {
	if len(r.Ports) == 0 {
		return 0
	}
	if slices.Contains(r.Ports, c.AppPort) {
		return c.AppPort
	}
	return r.Ports[0]
}

// linkerdPolicies renders the rules for Linkerd: the Servers (each
// selecting every app pod on one port: once a Server exists, only what a
// policy authorizes reaches that port), then per rule a
// MeshTLSAuthentication and an AuthorizationPolicy.
func linkerdPolicies(c Cell, rules []rule) []runtime.Object {
	var out []runtime.Object
	var ports []int
	for _, r := range rules {
		if p := c.linkerdTarget(r); p != 0 && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	for _, p := range ports {
		spec := map[string]any{
			"podSelector": map[string]any{"matchLabels": toAny(c.AppPods)},
			"port":        int64(p),
		}
		if c.Options.Protocol == topology.ProtocolTCP {
			spec["proxyProtocol"] = "opaque"
		}
		out = append(out, c.object(linkerdServerAPI, "Server", c.AppNamespace, c.linkerdServerName(p), spec))
	}
	for _, r := range rules {
		var authn map[string]any
		if r.SA != "" {
			authn = map[string]any{"identityRefs": []any{map[string]any{
				"kind": "ServiceAccount", "name": r.SA, "namespace": r.Namespace}}}
		} else {
			authn = map[string]any{"identities": []any{
				"*." + r.Namespace + ".serviceaccount.identity.linkerd." + topology.TrustDomain}}
		}
		out = append(out, c.object(linkerdPolicyAPI, "MeshTLSAuthentication", c.AppNamespace, r.Name, authn))
		target := map[string]any{"kind": "Namespace", "name": c.AppNamespace}
		if p := c.linkerdTarget(r); p != 0 {
			target = map[string]any{"group": linkerdPolicyGroup, "kind": "Server", "name": c.linkerdServerName(p)}
		}
		out = append(out, c.object(linkerdPolicyAPI, "AuthorizationPolicy", c.AppNamespace, r.Name, map[string]any{
			"targetRef": target,
			"requiredAuthenticationRefs": []any{map[string]any{
				"group": linkerdPolicyGroup, "kind": "MeshTLSAuthentication", "name": r.Name}},
		}))
	}
	return out
}

// LinkerdAdminServer names the Server of LinkerdAdminAccess.
const LinkerdAdminServer = "linkerd-admin"

// LinkerdAdminAccess are meshbench's own objects that let the API server
// (its addresses: apiServerNets, CIDRs) read the app's proxies' admin
// port, where meshbench reads their request counters through the pods'
// proxy subresource to verify mTLS: a Server for the named port
// linkerd-admin of every pod in the app namespace, a NetworkAuthentication
// of those networks, and an AuthorizationPolicy for the Server requiring
// it. With the namespace's all-authenticated default policy the API
// server's plaintext requests are refused otherwise (403); the Server has
// no HTTPRoutes, so the policy controller keeps authorizing the kubelet's
// probes of /live and /ready there. None without networks.
func LinkerdAdminAccess(c Cell, apiServerNets []string) []runtime.Object {
	if len(apiServerNets) == 0 {
		return nil
	}
	nets := make([]any, len(apiServerNets))
	for i, n := range apiServerNets {
		nets[i] = map[string]any{"cidr": n}
	}
	const name = "meshbench-kube-apiserver"
	return []runtime.Object{
		c.object(linkerdServerAPI, "Server", c.AppNamespace, LinkerdAdminServer, map[string]any{
			"podSelector": map[string]any{}, "port": LinkerdAdminServer, "proxyProtocol": "HTTP/1"}),
		c.object(linkerdPolicyAPI, "NetworkAuthentication", c.AppNamespace, name, map[string]any{"networks": nets}),
		c.object(linkerdPolicyAPI, "AuthorizationPolicy", c.AppNamespace, name, map[string]any{
			"targetRef": map[string]any{"group": linkerdPolicyGroup, "kind": "Server", "name": LinkerdAdminServer},
			"requiredAuthenticationRefs": []any{map[string]any{
				"group": linkerdPolicyGroup, "kind": "NetworkAuthentication", "name": name}},
		}),
	}
}

// toAny is a label map as unstructured data.
func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
