package netlab

import (
	"strings"
	"testing"
	"time"

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
	bad := diagnosticsInvalid(rows)
	if len(bad) != 2 || !strings.Contains(bad[0], "server-0's proxy got no identity from Linkerd's identity controller") ||
		!strings.Contains(bad[1], "server-0's proxy asked Linkerd's policy controller nothing") {
		t.Errorf("invalid %q, want server-0's missing identity and policy only", bad)
	}
	if bad := diagnosticsInvalid(rows[:1]); len(bad) != 0 {
		t.Errorf("a proxy the controllers configured is invalid: %q", bad)
	}
}
