package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

func ptr(v uint64) *uint64 { return &v }

// sidecarSummary is what a server sidecar's summary holds after n requests
// over one mTLS connection, with RBAC when rbac is set.
func sidecarSummary(n uint64, p99 float64, rbac bool) envoy.ProxyStats {
	ps := envoy.ProxyStats{
		Downstream:    &envoy.HTTPStats{RqTotal: ptr(n), Rq2xx: ptr(n)},
		DownstreamTLS: &envoy.TLSStats{Handshakes: ptr(1)},
		Clusters: map[string]envoy.ClusterStats{"inbound|8080||": {RqTotal: ptr(n),
			RqTimeMs: &envoy.Quantiles{P99: p99}}},
		Upstream: &envoy.ClusterStats{RqTotal: ptr(n), RqRetry: ptr(0), CxConnectFail: ptr(0)},
		Overflow: envoy.OverflowStats{Total: ptr(0)},
	}
	if rbac {
		ps.RBAC = &envoy.RBACStats{Allowed: ptr(1), Denied: ptr(0)}
	}
	return ps
}

func planTopo(t *testing.T, replicas int) *topology.Topology {
	t.Helper()
	o := topology.DefaultOptions()
	o.Mode, o.Replicas = topology.ModeSidecar, replicas
	topo, err := topology.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// One line per proxy, in the topology's order; "-" where there is no
// histogram or no RBAC.
func TestRenderEnvoyStatsPerProxy(t *testing.T) {
	topo := planTopo(t, 2)
	client := envoy.ProxyStats{
		Downstream: &envoy.HTTPStats{RqTotal: ptr(250)},
		Clusters:   map[string]envoy.ClusterStats{"outbound": {RqTotal: ptr(251)}},
		Upstream: &envoy.ClusterStats{RqTotal: ptr(251), RqRetry: ptr(1), CxConnectFail: ptr(1),
			TLS: &envoy.TLSStats{Handshakes: ptr(2)}},
		Overflow: envoy.OverflowStats{Total: ptr(3)},
	}
	stats := map[string]envoy.ProxyStats{
		"client-sidecar":   client,
		"server-0-sidecar": sidecarSummary(125, 3.05, false),
		"server-1-sidecar": sidecarSummary(126, 4.5, true),
	}
	var buf bytes.Buffer
	EnvoyStats(&buf, topo, stats)
	want := `Envoy stats (admin /stats at the end, warm-up included; a tunnel is one request; ms are whole):
  proxy                 down rq    up rq up p99 ms TLS hs RBAC ok/deny retries overflow cx fail
  client-sidecar            250      251         -      2            -       1        3       1
  server-0-sidecar          125      125      3.05      1            -       0        0       0
  server-1-sidecar          126      126      4.50      1          1/0       0        0       0
`
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
	for _, line := range strings.Split(buf.String(), "\n") {
		if len(line) > 100 {
			t.Errorf("line of %d columns: %q", len(line), line)
		}
	}
}

// Past maxEnvoyRows proxies, a component is one line: sums, the highest
// p99, and how many proxies it adds up.
func TestRenderEnvoyStatsByComponent(t *testing.T) {
	topo := planTopo(t, 20)
	stats := map[string]envoy.ProxyStats{"client-sidecar": {Downstream: &envoy.HTTPStats{RqTotal: ptr(2000)}}}
	for i, pod := range topo.ServerPods() {
		stats[topo.Sidecar(pod.Name).Name] = sidecarSummary(100, float64(i)/4, i%2 == 0)
	}
	var buf bytes.Buffer
	EnvoyStats(&buf, topo, stats)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	wantClient := "  client sidecar (1)       2000        0         -      0            -       0        0       0"
	wantServer := "  server sidecar (20)      2000     2000      4.75     20         10/0       0        0       0"
	if lines[2] != wantClient || lines[3] != wantServer {
		t.Errorf("rows\n%s\n%s\nwant\n%s\n%s", lines[2], lines[3], wantClient, wantServer)
	}
}
