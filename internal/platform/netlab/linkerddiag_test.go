package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
)

// TestDiagnostics: the table's rows come from each proxy's own counters
// (its certificate's validity, its requests to each controller by the
// address its pod's forwarder listens on, its endpoints and mTLS peers),
// and a proxy without a certificate from the identity controller, or
// that asked the policy controller nothing, makes the cell invalid.
func TestDiagnostics(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good := proxy.Stats{CertExpiry: float64(now.Add(24 * time.Hour).Unix()), CertRefreshed: float64(now.Unix()), CertRefreshes: 1,
		Control:   map[string]float64{"127.0.0.1:18080": 1, "127.0.0.1:18086": 2, "127.0.0.1:18090": 3},
		Endpoints: map[string]float64{"default/server": 2}, ServerIDs: map[string]float64{"server.default.serviceaccount.identity.linkerd.cluster.local": 9}}
	// The stand-in's address: no request to Linkerd's controllers, no
	// certificate.
	standIn := proxy.Stats{Control: map[string]float64{"127.0.0.1:8090": 4}}
	rows := diagnosticsRows(map[string]proxy.Stats{"client": good, "server-0": standIn}, func(pod string) string { return pod + ".id" }, now)
	if len(rows) != 2 || rows[0].Pod != "client" || rows[1].Pod != "server-0" {
		t.Fatalf("rows %+v", rows)
	}
	c := rows[0]
	if c.Identity != "client.id" || c.CertLeft != 24*time.Hour || c.IdentityRequests != 1 || c.DestinationRequests != 2 || c.PolicyRequests != 3 ||
		c.Endpoints != 2 || len(c.ServerIDs) != 1 {
		t.Errorf("client's row %+v", c)
	}
	table := diagnosticsTable(rows)
	for _, want := range []string{"CERT VALID", "client", "24.0h", "server.default", "none"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	bad := diagnosticsInvalid(rows, false)
	if len(bad) != 2 || !strings.Contains(bad[0], "server-0's proxy got no identity from Linkerd's identity controller") ||
		!strings.Contains(bad[1], "server-0's proxy asked Linkerd's policy controller nothing") {
		t.Errorf("invalid %q, want server-0's missing identity and policy only", bad)
	}
	if bad := diagnosticsInvalid(rows[:1], false); len(bad) != 0 {
		t.Errorf("a proxy the controllers configured is invalid: %q", bad)
	}

	// With the controllers in a pod of their own: destination and policy
	// at the pod's IP, over TLS to its verified identity; a request there
	// not over TLS makes the cell invalid.
	pod := good
	pod.Control = map[string]float64{"127.0.0.1:18080": 1, "10.9.0.5:8086": 2, "10.9.0.5:8090": 3}
	pod.ControlServerIDs = map[string]float64{linkerd.DestinationName: 5}
	half := pod
	half.ControlServerIDs = map[string]float64{linkerd.DestinationName: 4}
	rows = diagnosticsRows(map[string]proxy.Stats{"client": pod, "server-0": half}, func(pod string) string { return pod + ".id" }, now)
	if c := rows[0]; c.IdentityRequests != 1 || c.DestinationRequests != 2 || c.PolicyRequests != 3 || c.ControllersTLS != 5 {
		t.Errorf("client's row with the controllers' pod %+v", c)
	}
	bad = diagnosticsInvalid(rows, true)
	if len(bad) != 1 || !strings.Contains(bad[0], "server-0's proxy made 5 requests to Linkerd's destination and policy controllers, only 4 over TLS") {
		t.Errorf("invalid %q, want server-0's request outside mTLS only", bad)
	}
	if !strings.Contains(diagnosticsTable(rows), "CONTROL TLS") {
		t.Errorf("table lacks CONTROL TLS:\n%s", diagnosticsTable(rows))
	}

	// The destination pod's proxy's inbound counters: every request the
	// proxies sent arrived over TLS, none in plaintext; else invalid.
	in := proxy.Stats{InboundTLS: 7, ClientIDs: map[string]float64{"": 7}}
	if lines, invalid := podInboundCheck(in, 7); len(invalid) != 0 || !strings.Contains(lines[0], "7 requests over TLS") ||
		!strings.Contains(lines[0], "no client certificate: 7") {
		t.Errorf("pod inbound %q %q", lines, invalid)
	}
	in = proxy.Stats{InboundTLS: 4, InboundPlain: 1, ClientIDs: map[string]float64{"client.id": 4}}
	if _, invalid := podInboundCheck(in, 7); len(invalid) != 2 || !strings.Contains(invalid[0], "1 requests to Linkerd's controllers in plaintext") ||
		!strings.Contains(invalid[1], "received 4 requests over TLS, the proxies sent 7") {
		t.Errorf("pod inbound invalid %q, want the plaintext request and the missing ones", invalid)
	}
}
