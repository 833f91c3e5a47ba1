package policy

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// API versions of Istio's objects.
const (
	istioSecurityAPI = "security.istio.io/v1"
	gatewayAPI       = "gateway.networking.k8s.io/v1"
)

// WaypointThreadsAnnotation and WaypointThreadsValue (with the worker
// threads) are the waypoint Gateway's infrastructure annotation that sets
// its Envoy's --concurrency: the pod's ProxyConfig, as for sidecars.
const (
	WaypointThreadsAnnotation = "proxy.istio.io/config"
	WaypointThreadsValue      = "concurrency: %d"
)

// istioObjects are Istio's own objects of the cell: a PeerAuthentication
// "default" per namespace (STRICT, or DISABLE for a mode with a plaintext
// variant and MTLS false: Istio's auto-mTLS then sends plaintext), and in
// waypoint mode the waypoint Gateway (with its proxy's worker threads
// when the cell sets them).
func istioObjects(c Cell) []runtime.Object {
	var out []runtime.Object
	mode := "STRICT"
	if !c.Options.MTLS && c.Mesh.Plaintext {
		mode = "DISABLE"
	}
	for _, ns := range []string{c.LoadNamespace, c.AppNamespace} {
		out = append(out, c.object(istioSecurityAPI, "PeerAuthentication", ns, "default",
			map[string]any{"mtls": map[string]any{"mode": mode}}))
	}
	if c.Mesh.Kind == mesh.KindWaypoint {
		gw := c.object(gatewayAPI, "Gateway", c.AppNamespace, mesh.WaypointName, map[string]any{
			"gatewayClassName": "istio-waypoint",
			"listeners": []any{map[string]any{
				"name": "mesh", "port": int64(topology.PortHBONE), "protocol": "HBONE",
			}},
		})
		l := gw.GetLabels()
		l["istio.io/waypoint-for"] = "service"
		gw.SetLabels(l)
		if n := c.Options.ProxyThreads; n > 0 {
			// The waypoint's Envoy threads, through the Gateway's own
			// setting: istiod's waypoint template copies
			// spec.infrastructure.annotations onto the pod, and
			// pilot-agent applies the pod's proxy.istio.io/config (read
			// through the downward API) over its PROXY_CONFIG.
			_ = unstructured.SetNestedStringMap(gw.Object, map[string]string{
				WaypointThreadsAnnotation: fmt.Sprintf(WaypointThreadsValue, n),
			}, "spec", "infrastructure", "annotations")
		}
		out = append(out, gw)
	}
	return out
}

// istioPolicies are the rules as Istio AuthorizationPolicies, one each;
// in waypoint mode each also bound to the waypoint (waypointPolicy).
func istioPolicies(c Cell, rules []rule) []runtime.Object {
	var out []runtime.Object
	for _, r := range rules {
		out = append(out, c.istioPolicy(r))
	}
	if c.Mesh.Kind == mesh.KindWaypoint {
		for _, r := range rules {
			if r.SA == topology.IdentityWaypoint.ServiceAccount && r.Namespace == c.AppNamespace {
				continue // the waypoint's own identity, for the servers' ztunnels
			}
			out = append(out, c.waypointPolicy(r))
		}
	}
	return out
}

// waypointPolicy is a rule bound to the waypoint Gateway (targetRefs), so
// that the waypoint enforces it on the client's own identity, as the
// lab's waypoint does with its HTTP RBAC. The namespace-wide policy alone
// is ztunnel's, and the server's ztunnel sees the waypoint's identity
// (allow-waypoint), not the client's: without this one any meshed
// identity reaches the app through the waypoint (the cluster's attacker
// got 200s).
func (c Cell) waypointPolicy(r rule) *unstructured.Unstructured {
	u := c.istioPolicy(r)
	u.SetName(r.Name + "-" + mesh.WaypointName)
	spec := u.Object["spec"].(map[string]any)
	spec["targetRefs"] = []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": mesh.WaypointName}}
	return u
}

// portStrings are ports as the strings Istio's operation.ports takes.
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
func (c Cell) istioPolicy(r rule) *unstructured.Unstructured {
	src := map[string]any{"namespaces": []any{r.Namespace}}
	if r.SA != "" {
		src = map[string]any{"principals": []any{topology.TrustDomain + "/ns/" + r.Namespace + "/sa/" + r.SA}}
	}
	rl := map[string]any{"from": []any{map[string]any{"source": src}}}
	if len(r.Ports) > 0 {
		rl["to"] = []any{map[string]any{"operation": map[string]any{"ports": portStrings(r.Ports)}}}
	}
	return c.object(istioSecurityAPI, "AuthorizationPolicy", c.AppNamespace, r.Name,
		map[string]any{"action": "ALLOW", "rules": []any{rl}})
}
