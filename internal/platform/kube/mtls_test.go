package kube

import "testing"

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
