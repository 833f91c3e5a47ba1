package topology

import (
	"fmt"
	"strings"
)

// TrustDomain is the SPIFFE trust domain of every identity (Istio's
// default).
const TrustDomain = "cluster.local"

// Identity is an Istio workload identity: a Kubernetes service account in a
// namespace. Its certificate carries only the URI SAN SPIFFE().
type Identity struct {
	Namespace      string // e.g. "default"
	ServiceAccount string // e.g. "client"
}

// The identities of the lab (LAB.md §2).
var (
	// IdentityClient is the client pod (the load generator's pod).
	IdentityClient = Identity{"default", "client"}
	// IdentityServer is every server replica (app static).
	IdentityServer = Identity{"default", "server"}
	// IdentityFace, IdentitySmiley and IdentityColor are the pods of the
	// faces app's three services.
	IdentityFace   = Identity{"default", "face"}
	IdentitySmiley = Identity{"default", "smiley"}
	IdentityColor  = Identity{"default", "color"}
	// IdentityWaypoint is the server service's waypoint.
	IdentityWaypoint = Identity{"default", "waypoint"}
	// IdentityAttacker is a mesh workload that no policy allows.
	IdentityAttacker = Identity{"default", "attacker"}
	// IdentityIngress is the ingress gateway (Istio's default service
	// account name).
	IdentityIngress = Identity{"istio-system", "istio-ingressgateway-service-account"}
	// IdentityMonitoring is Prometheus; rule allow-monitoring names its
	// namespace.
	IdentityMonitoring = Identity{"monitoring", "prometheus"}
)

// NodeProxyIdentity is the own identity of the node proxy of node n
// (istio-system/ztunnel-nodeN). On HBONE a node proxy presents the
// workloads' identities instead (Proxy.Presents).
func NodeProxyIdentity(n int) Identity {
	return Identity{"istio-system", fmt.Sprintf("ztunnel-node%d", n)}
}

// SPIFFE returns spiffe://cluster.local/ns/<ns>/sa/<sa>.
func (id Identity) SPIFFE() string {
	return "spiffe://" + TrustDomain + "/ns/" + id.Namespace + "/sa/" + id.ServiceAccount
}

// String returns "<ns>/<sa>".
func (id Identity) String() string { return id.Namespace + "/" + id.ServiceAccount }

// Principal matches the URI SAN of a peer certificate: exactly one of Exact
// and Prefix is set.
type Principal struct {
	Exact  string // the whole SPIFFE ID
	Prefix string // a SPIFFE ID prefix such as "spiffe://cluster.local/ns/monitoring/"
}

// Matches reports whether id's SPIFFE ID matches p.
func (p Principal) Matches(id Identity) bool {
	if p.Exact != "" {
		return id.SPIFFE() == p.Exact
	}
	return p.Prefix != "" && strings.HasPrefix(id.SPIFFE(), p.Prefix)
}

// Policy is one L4 ALLOW rule, rendered as one policy of an Envoy RBAC
// filter: the peer's identity must match Principal and the destination
// port must be one of Ports.
type Policy struct {
	// Name is Istio's name for the rendered RBAC policy,
	// "ns[default]-policy[allow-client]-rule[0]".
	Name string
	// Principal matches the peer certificate's URI SAN.
	Principal Principal
	// Ports are the destination app ports allowed; empty allows any port.
	// The sidecar flavour also lists the inbound listener port (15006),
	// since without capture that is the port its RBAC filter sees; the
	// ambient flavour matches the CONNECT :authority's port.
	Ports []int
}

// Allows reports whether the rule lets id reach port.
func (p Policy) Allows(id Identity, port int) bool {
	if !p.Principal.Matches(id) {
		return false
	}
	if len(p.Ports) == 0 {
		return true
	}
	for _, q := range p.Ports {
		if q == port {
			return true
		}
	}
	return false
}

// defaultRules are LAB.md §(e)'s four ALLOW rules, in order.
//
// allow-ingress also allows the app port 8080: LAB.md lists 8443 (the
// gateway's own port) and the inbound listener port 15006, which the
// sidecar flavour sees. The ambient flavour matches the tunnelled
// destination port, which is the app's 8080 when the gateway calls the
// server, so without 8080 it would deny the gateway.
var defaultRules = []struct {
	name      string
	principal Principal
	ports     []int
}{
	{"allow-client", Principal{Exact: IdentityClient.SPIFFE()}, []int{PortApp}},
	{"allow-waypoint", Principal{Exact: IdentityWaypoint.SPIFFE()}, nil},
	{"allow-monitoring", Principal{Prefix: "spiffe://" + TrustDomain + "/ns/monitoring/"}, []int{PortMonitoring}},
	{"allow-ingress", Principal{Exact: IdentityIngress.SPIFFE()}, []int{PortGateway, PortApp}},
}

// facesRule is the fifth rule for the faces app: face calls smiley and
// color on the app port.
var facesRule = struct {
	name      string
	principal Principal
	ports     []int
}{"allow-face", Principal{Exact: IdentityFace.SPIFFE()}, []int{PortApp}}

// RulesFor returns the first n ALLOW rules for app: Rules(n), except that
// for the faces app the fifth rule is allow-face (default/face on the app
// port), which face's own calls need.
func RulesFor(app App, n int) []Policy {
	rules := Rules(n)
	if app == AppFaces && n > len(defaultRules) {
		r := &rules[len(defaultRules)]
		r.Name = fmt.Sprintf("ns[default]-policy[%s]-rule[0]", facesRule.name)
		r.Principal, r.Ports = facesRule.principal, append([]int(nil), facesRule.ports...)
	}
	return rules
}

// Rules returns the first n ALLOW rules: LAB.md §(e)'s four
// (allow-client, allow-waypoint, allow-monitoring, allow-ingress), then
// allow-svc-<i> for i = 4, 5, …: the exact identity default/svc-<i> on the
// app port, the same shape as allow-client. n ≤ 0 gives none.
func Rules(n int) []Policy {
	var out []Policy
	for i := 0; i < n; i++ {
		var name string
		var p Policy
		if i < len(defaultRules) {
			d := defaultRules[i]
			name, p.Principal, p.Ports = d.name, d.principal, append([]int(nil), d.ports...)
		} else {
			name = fmt.Sprintf("allow-svc-%d", i)
			p.Principal = Principal{Exact: Identity{"default", fmt.Sprintf("svc-%d", i)}.SPIFFE()}
			p.Ports = []int{PortApp}
		}
		p.Name = fmt.Sprintf("ns[default]-policy[%s]-rule[0]", name)
		out = append(out, p)
	}
	return out
}
