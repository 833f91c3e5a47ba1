package kube

import (
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
)

// TestTLSCounters reads a sidecar's listener TLS counters from Envoy's
// Prometheus text (the shape istio-proxy serves on 15090: Istio's tag
// extraction turns listener.ADDR.ssl.handshake into a labelled metric).
func TestTLSCounters(t *testing.T) {
	for _, tc := range []struct {
		name, text  string
		hs, errs    float64
		ok, wantErr bool
	}{
		// inbound (virtualInbound) and another listener: summed
		{"summed", "# TYPE envoy_listener_ssl_handshake counter\nenvoy_listener_ssl_handshake{listener_address=\"0.0.0.0_15006\"} 16\nenvoy_listener_ssl_handshake{listener_address=\"10.1.0.4_8080\"} 2\n# TYPE envoy_listener_ssl_connection_error counter\nenvoy_listener_ssl_connection_error{listener_address=\"0.0.0.0_15006\"} 0\n", 18, 0, true, false},
		// failed handshakes are reported
		{"errors", "# TYPE envoy_listener_ssl_handshake counter\nenvoy_listener_ssl_handshake{listener_address=\"0.0.0.0_15006\"} 3\n# TYPE envoy_listener_ssl_connection_error counter\nenvoy_listener_ssl_connection_error{listener_address=\"0.0.0.0_15006\"} 5\n", 3, 5, true, false},
		// the stats matcher dropped the counters: not found, not zero
		{"absent", "# TYPE envoy_server_uptime gauge\nenvoy_server_uptime 12\n", 0, 0, false, false},
		// not Prometheus text
		{"garbage", "envoy_listener_ssl_handshake{ 1\n", 0, 0, false, true},
	} {
		c, ok, err := tlsCounters([]byte(tc.text))
		if (err != nil) != tc.wantErr || ok != tc.ok || c.handshakes != tc.hs || c.errors != tc.errs {
			t.Errorf("%s: %+v ok=%v err=%v; want %v/%v ok=%v err=%v", tc.name, c, ok, err, tc.hs, tc.errs, tc.ok, tc.wantErr)
		}
	}
}

// The cluster's attacker is the lab's identity of that name
// (topology.IdentityAttacker), and runs only where policies can refuse it.
func TestAttacker(t *testing.T) {
	if AttackerServiceAccount != topology.IdentityAttacker.ServiceAccount {
		t.Errorf("attacker %q, the lab's %q", AttackerServiceAccount, topology.IdentityAttacker.ServiceAccount)
	}
	for _, tc := range []struct {
		mode     topology.Mode
		policies int
		want     bool
	}{
		{topology.ModeSidecar, 4, true},
		{ModeLinkerd, 4, true},
		{topology.ModeAmbient, 0, false}, // nothing to refuse it
		{topology.ModeNone, 0, false},
	} {
		s := spec(tc.mode, topology.AppStatic, tc.policies)
		if got := attackerRuns(s); got != tc.want {
			t.Errorf("%s with %d policies: attacker %v, want %v", tc.mode, tc.policies, got, tc.want)
		}
	}
	rep := AttackerReport{Sent: 10, StatusCodes: map[string]int64{"403": 9}, Errors: []results.ErrorCount{{Kind: "status", Count: 9}, {Kind: "reset", Count: 1}}}
	if got := rep.String(); got != "10 of 10 refused (403 ×9, reset ×1)" {
		t.Errorf("%q", got)
	}
	// An L4 refusal (ztunnel): no HTTP answer at all.
	rep = AttackerReport{Sent: 10, StatusCodes: map[string]int64{"0": 10}, Errors: []results.ErrorCount{{Kind: "reset", Count: 6}, {Kind: "closed", Count: 4}}}
	if got := rep.String(); got != "10 of 10 refused (reset ×6, closed ×4)" {
		t.Errorf("%q", got)
	}
}
