// Package ztunnel runs Istio's real ztunnel in the lab: the local
// configuration it reads instead of istiod's xDS (LOCAL_XDS_PATH, ztunnel's
// LocalConfig: workloads, services and L4 authorization policies), the ZDS
// agent that hands it pods as istio-cni does, and the process itself, one
// shared-mode ztunnel per node network namespace.
package ztunnel

import (
	"fmt"
	"net/netip"
	"os"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// Protocol is how ztunnel reaches a workload: "HBONE" for a captured
// (enrolled) pod, "TCP" for one outside the mesh.
type Protocol string

// The protocols.
const (
	ProtocolHBONE Protocol = "HBONE"
	ProtocolTCP   Protocol = "TCP"
)

// Config is ztunnel's LocalConfig (the YAML of LOCAL_XDS_PATH).
type Config struct {
	Workloads []Workload      `yaml:"workloads"`
	Services  []Service       `yaml:"services"`
	Policies  []Authorization `yaml:"policies"`
}

// Workload is one pod ztunnel knows about.
type Workload struct {
	UID            string   `yaml:"uid"`
	Name           string   `yaml:"name"`
	Namespace      string   `yaml:"namespace"`
	ServiceAccount string   `yaml:"serviceAccount"`
	WorkloadIPs    []string `yaml:"workloadIps"`
	Protocol       Protocol `yaml:"protocol"`
	Node           string   `yaml:"node"`
	Network        string   `yaml:"network"`
	// TrustDomain must be set, or the identity comes out as
	// spiffe:///ns/… (an empty trust domain).
	TrustDomain string `yaml:"trustDomain"`
	// Services maps "ns/hostname" to service port → target port.
	Services map[string]map[int]int `yaml:"services"`
	// AuthorizationPolicies are the "ns/name" keys of the
	// WorkloadSelector-scoped policies that apply to this workload.
	AuthorizationPolicies []string `yaml:"authorizationPolicies,omitempty"`
	// Waypoint sends traffic addressed to this pod through a waypoint.
	Waypoint *Waypoint `yaml:"waypoint,omitempty"`
}

// Service is a Kubernetes service: its VIPs and ports.
type Service struct {
	Name      string      `yaml:"name"`
	Namespace string      `yaml:"namespace"`
	Hostname  string      `yaml:"hostname"`
	VIPs      []string    `yaml:"vips"` // "network/IP", e.g. "/10.96.0.10"
	Ports     map[int]int `yaml:"ports"`
	Waypoint  *Waypoint   `yaml:"waypoint,omitempty"`
}

// Waypoint names a waypoint by its workload address; the address must also
// be a workload of the config (ztunnel takes the identity it expects from
// it).
type Waypoint struct {
	Destination   string `yaml:"destination"` // "network/IP"
	HBONEMTLSPort int    `yaml:"hboneMtlsPort"`
}

// Authorization is one ztunnel authorization policy (its RBAC).
type Authorization struct {
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
	Scope     string `yaml:"scope"`  // Global, Namespace or WorkloadSelector
	Action    string `yaml:"action"` // Allow or Deny
	// Rules: any rule matches if all its clauses match; a clause
	// matches if any of its matches does.
	Rules  [][][]Match `yaml:"rules"`
	DryRun bool        `yaml:"dryRun"`
}

// Match is one RBAC match: every field set must match.
type Match struct {
	Principals       []StringMatch `yaml:"principals,omitempty"`
	DestinationPorts []int         `yaml:"destinationPorts,omitempty"`
}

// StringMatch is ztunnel's string match; principals are matched without
// the "spiffe://" scheme. Exactly one field is set.
type StringMatch struct {
	Exact  string
	Prefix string
}

// MarshalYAML renders the match as ztunnel's serde enum wants it in YAML:
// a tagged scalar, `!Exact cluster.local/ns/default/sa/client`.
func (m StringMatch) MarshalYAML() (any, error) {
	switch {
	case m.Exact != "" && m.Prefix == "":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!Exact", Value: m.Exact, Style: yaml.DoubleQuotedStyle}, nil
	case m.Prefix != "" && m.Exact == "":
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!Prefix", Value: m.Prefix, Style: yaml.DoubleQuotedStyle}, nil
	}
	return nil, fmt.Errorf("string match %+v: set exactly one of Exact and Prefix", m)
}

// Key is the policy's "ns/name", what workloads list.
func (a Authorization) Key() string { return a.Namespace + "/" + a.Name }

// Policies turns the lab's L4 ALLOW rules into ztunnel policies in
// namespace ns, scoped to the workloads that list them. Each policy allows
// its principal on its ports; ztunnel then refuses every other peer of a
// workload that has at least one ALLOW policy.
func Policies(rules []topology.Policy, ns string) []Authorization {
	out := make([]Authorization, 0, len(rules))
	for i, r := range rules {
		var who StringMatch
		if r.Principal.Exact != "" {
			who.Exact = strings.TrimPrefix(r.Principal.Exact, "spiffe://")
		} else {
			who.Prefix = strings.TrimPrefix(r.Principal.Prefix, "spiffe://")
		}
		clauses := [][]Match{{{Principals: []StringMatch{who}}}}
		if len(r.Ports) > 0 {
			clauses = append(clauses, []Match{{DestinationPorts: append([]int(nil), r.Ports...)}})
		}
		out = append(out, Authorization{
			Name:      fmt.Sprintf("allow-%d", i),
			Namespace: ns,
			Scope:     "WorkloadSelector",
			Action:    "Allow",
			Rules:     [][][]Match{clauses},
		})
	}
	return out
}

// Addr renders ip as ztunnel's "network/IP" (the default network is "").
func Addr(ip netip.Addr) string { return "/" + ip.String() }

// Render returns the YAML of c with its workloads and services in a stable
// order.
func (c Config) Render() ([]byte, error) {
	ws := append([]Workload(nil), c.Workloads...)
	sort.SliceStable(ws, func(i, j int) bool { return ws[i].UID < ws[j].UID })
	c.Workloads = ws
	if c.Services == nil {
		c.Services = []Service{}
	}
	if c.Policies == nil {
		c.Policies = []Authorization{}
	}
	for i := range c.Workloads {
		if c.Workloads[i].Services == nil {
			c.Workloads[i].Services = map[string]map[int]int{}
		}
	}
	return yaml.Marshal(c)
}

// Write renders c to path (ztunnel watches the file).
func (c Config) Write(path string) error {
	b, err := c.Render()
	if err != nil {
		return fmt.Errorf("rendering ztunnel config: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing ztunnel config: %w", err)
	}
	return nil
}
