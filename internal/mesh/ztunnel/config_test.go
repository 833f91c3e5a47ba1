package ztunnel

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestRenderGolden renders a two-pod config with a service, a waypoint and
// the four ALLOW rules; the real ztunnel reads this shape
// (TestInPodRealZtunnel), so the golden file records what it accepted.
func TestRenderGolden(t *testing.T) {
	policies := Policies(topology.Rules(4), "default")
	server := Workload{
		UID: "lab//v1/Pod/default/server-0", Name: "server-0", Namespace: "default", ServiceAccount: "server",
		WorkloadIPs: []string{"10.98.0.12"}, Protocol: ProtocolHBONE, Node: "node1", TrustDomain: topology.TrustDomain,
		Services: map[string]map[int]int{"default/server.default.svc.cluster.local": {80: 8080}},
	}
	for _, p := range policies {
		server.AuthorizationPolicies = append(server.AuthorizationPolicies, p.Key())
	}
	cfg := Config{
		Workloads: []Workload{server, {
			UID: "lab//v1/Pod/default/client", Name: "client", Namespace: "default", ServiceAccount: "client",
			WorkloadIPs: []string{"10.98.0.11"}, Protocol: ProtocolHBONE, Node: "node1", TrustDomain: topology.TrustDomain,
		}},
		Services: []Service{{Name: "server", Namespace: "default", Hostname: "server.default.svc.cluster.local",
			VIPs: []string{Addr(netip.MustParseAddr("10.98.0.250"))}, Ports: map[int]int{80: 8080},
			Waypoint: &Waypoint{Destination: "/10.98.0.13", HBONEMTLSPort: 15008}}},
		Policies: policies,
	}
	b, err := cfg.Render()
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, "config.yaml", b)
}

// TestPolicies checks the translation of each kind of lab rule.
func TestPolicies(t *testing.T) {
	got := Policies(topology.Rules(4), "default")
	tests := []struct {
		i         int
		principal StringMatch
		ports     []int
	}{
		// allow-client: exact identity on the app port
		{0, StringMatch{Exact: "cluster.local/ns/default/sa/client"}, []int{topology.PortApp}},
		// allow-waypoint: exact identity, any port (no port clause)
		{1, StringMatch{Exact: "cluster.local/ns/default/sa/waypoint"}, nil},
		// allow-monitoring: a namespace prefix
		{2, StringMatch{Prefix: "cluster.local/ns/monitoring/"}, []int{topology.PortMonitoring}},
		// allow-ingress: two ports
		{3, StringMatch{Exact: "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"}, []int{topology.PortGateway, topology.PortApp}},
	}
	if len(got) != len(tests) {
		t.Fatalf("%d policies, want %d", len(got), len(tests))
	}
	for _, tc := range tests {
		a := got[tc.i]
		if a.Action != "Allow" || a.Scope != "WorkloadSelector" || len(a.Rules) != 1 {
			t.Errorf("policy %d: %+v", tc.i, a)
			continue
		}
		clauses := a.Rules[0]
		if clauses[0][0].Principals[0] != tc.principal {
			t.Errorf("policy %d principal %+v, want %+v", tc.i, clauses[0][0].Principals[0], tc.principal)
		}
		if tc.ports == nil {
			if len(clauses) != 1 {
				t.Errorf("policy %d has a port clause, want none", tc.i)
			}
			continue
		}
		if len(clauses) != 2 || !slices.Equal(clauses[1][0].DestinationPorts, tc.ports) {
			t.Errorf("policy %d clauses %+v, want ports %v", tc.i, clauses, tc.ports)
		}
	}
}

// TestStringMatchRefusesBoth: a match with both or neither field set is a
// programming error the renderer reports instead of writing a config ztunnel
// would refuse.
func TestStringMatchRefusesBoth(t *testing.T) {
	for _, m := range []StringMatch{{}, {Exact: "a", Prefix: "b"}} {
		if _, err := (Config{Policies: []Authorization{{Name: "x", Rules: [][][]Match{{{{Principals: []StringMatch{m}}}}}}}}).Render(); err == nil {
			t.Errorf("%+v rendered", m)
		}
	}
}
