package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
)

// TestDiagnostics: the table's rows come from each proxy's own counters
// (its certificate's validity, its requests to each controller at its
// pod's IP, over TLS to the pod's verified identity, its endpoints and
// mTLS peers); a proxy without a certificate from the identity
// controller, that asked the policy controller nothing, or that reached
// a controller not over TLS to its identity makes the cell invalid; and
// the controllers' pods' proxies must have received every request the
// proxies sent them over TLS, none in plaintext.
func TestDiagnostics(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good := proxy.Stats{CertExpiry: float64(now.Add(24 * time.Hour).Unix()), CertRefreshed: float64(now.Unix()), CertRefreshes: 1,
		Control:          map[string]float64{"10.9.0.4:8080": 1, "10.9.0.5:8086": 2, "10.9.0.5:8090": 3},
		ControlServerIDs: map[string]float64{linkerd.IdentityName: 1, linkerd.DestinationName: 5},
		Endpoints:        map[string]float64{"default/server": 2}, ServerIDs: map[string]float64{"server.default.serviceaccount.identity.linkerd.cluster.local": 9}}
	// The stand-in's address (loopback): no request to Linkerd's
	// controllers, no certificate.
	standIn := proxy.Stats{Control: map[string]float64{"127.0.0.1:8090": 4}}
	rows := diagnosticsRows(map[string]proxy.Stats{"client": good, "server-0": standIn}, func(pod string) string { return pod + ".id" }, now)
	if len(rows) != 2 || rows[0].Pod != "client" || rows[1].Pod != "server-0" {
		t.Fatalf("rows %+v", rows)
	}
	c := rows[0]
	if c.Identity != "client.id" || c.CertLeft != 24*time.Hour || c.IdentityRequests != 1 || c.DestinationRequests != 2 || c.PolicyRequests != 3 ||
		c.ControllersTLS != 6 || c.Endpoints != 2 || len(c.ServerIDs) != 1 {
		t.Errorf("client's row %+v", c)
	}
	table := diagnosticsTable(rows)
	for _, want := range []string{"CERT VALID", "CONTROL TLS", "client", "24.0h", "server.default", "none"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	bad := diagnosticsInvalid(rows)
	if len(bad) != 2 || !strings.Contains(bad[0], "server-0's proxy got no identity from Linkerd's identity controller") ||
		!strings.Contains(bad[1], "server-0's proxy asked Linkerd's policy controller nothing") {
		t.Errorf("invalid %q, want server-0's missing identity and policy only", bad)
	}
	if bad := diagnosticsInvalid(rows[:1]); len(bad) != 0 {
		t.Errorf("a proxy the controllers configured is invalid: %q", bad)
	}

	// A Certify call not over TLS to the identity pod's identity makes
	// the cell invalid.
	half := good
	half.ControlServerIDs = map[string]float64{linkerd.DestinationName: 5}
	rows = diagnosticsRows(map[string]proxy.Stats{"client": good, "server-0": half}, func(pod string) string { return pod + ".id" }, now)
	bad = diagnosticsInvalid(rows)
	if len(bad) != 1 || !strings.Contains(bad[0], "server-0's proxy made 6 requests to Linkerd's controllers, only 5 over TLS") {
		t.Errorf("invalid %q, want server-0's request outside TLS only", bad)
	}

	// The controllers' pods' proxies' inbound counters against what the
	// proxies sent: the data plane's rows, and each pod's proxy's
	// requests to the other pod (not those on its own loopback).
	rows = rows[:1] // sent 1 to identity, 5 to destination and policy
	idPod := proxy.Stats{InboundTLS: 2, ClientIDs: map[string]float64{"": 2},
		Control: map[string]float64{"127.0.0.1:8080": 1, "10.9.0.5:8086": 1, "10.9.0.5:8090": 2}}
	dstPod := proxy.Stats{InboundTLS: 8, ClientIDs: map[string]float64{"": 5, linkerd.IdentityName: 3},
		Control: map[string]float64{"10.9.0.4:8080": 1, "127.0.0.1:8086": 4, "127.0.0.1:8090": 4}}
	p := controllersProof(map[string]proxy.Stats{identityPod: idPod, destinationPod: dstPod}, rows)
	if len(p.Invalid) != 0 || len(p.Lines) != 3 || !strings.Contains(p.Lines[2], "named "+linkerd.IdentityName+" on 3 of the 3 requests") || !strings.Contains(p.Lines[0], "identity pod's proxy (Linkerd's identity controller) received 2 requests over TLS") ||
		!strings.Contains(p.Lines[0], "the proxies sent 2 to it") || !strings.Contains(p.Lines[1], "no client certificate: 5, "+linkerd.IdentityName+": 3") ||
		!strings.Contains(p.Lines[1], "the proxies sent 8 to it") || p.InboundTLS[destinationPod] != 8 {
		t.Errorf("proof %+v", p)
	}
	// A request of the identity pod's proxy without its client identity
	// makes the cell invalid.
	dstPod.ClientIDs = map[string]float64{"": 6, linkerd.IdentityName: 2}
	p = controllersProof(map[string]proxy.Stats{identityPod: idPod, destinationPod: dstPod}, rows)
	if len(p.Invalid) != 1 || !strings.Contains(p.Invalid[0], "named "+linkerd.IdentityName+" on 2 of the 3 requests") {
		t.Errorf("proof invalid %q, want the identity pod's proxy's unnamed request", p.Invalid)
	}
	dstPod.ClientIDs = map[string]float64{"": 5, linkerd.IdentityName: 3}
	dstPod.InboundTLS, dstPod.InboundPlain = 7, 1
	p = controllersProof(map[string]proxy.Stats{identityPod: idPod, destinationPod: dstPod}, rows)
	if len(p.Invalid) != 2 || !strings.Contains(p.Invalid[0], "destination pod's proxy (Linkerd's destination and policy controllers) received 1 requests in plaintext") ||
		!strings.Contains(p.Invalid[1], "received 7 requests over TLS, the proxies sent 8") {
		t.Errorf("proof invalid %q, want the plaintext request and the missing one", p.Invalid)
	}
	if p := controllersProof(map[string]proxy.Stats{destinationPod: dstPod}, nil); len(p.Invalid) < 1 || !strings.Contains(p.Invalid[0], "no counters from "+identityPod) {
		t.Errorf("proof without the identity pod's counters: %q", p.Invalid)
	}
}
