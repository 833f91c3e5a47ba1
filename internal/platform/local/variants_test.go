package local

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/mesh/topology"
	"github.com/meshbench/meshbench/internal/results"
)

// The variant tests run one short cell per option through real Envoys and
// check, from the raw Envoy stats the run kept, that the option did what it
// says. Each subtest has its own 127.<net>.0.0/16, 30..36 here.

// runVariant runs o and checks what every variant must give: no error, a
// valid run, 200 of 200 requests answered, nothing left running.
func runVariant(t *testing.T, o Options) *Result {
	t.Helper()
	res, err := Run(context.Background(), o)
	if res != nil && res.Manifest != nil {
		t.Cleanup(func() { assertNothingLeft(t, res.Manifest) })
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !res.Manifest.Valid {
		t.Errorf("run invalid: %v", res.Manifest.Invalid)
	}
	if res.Load.Sent != 200 || res.Load.Success != 200 {
		t.Fatalf("sent %d success %d, want 200/200 (codes %v errors %v)", res.Load.Sent, res.Load.Success, res.Load.StatusCodes, res.Load.Errors)
	}
	return res
}

// envoyStats is the numeric part (counters and gauges) of one Envoy's
// /stats?format=json as the run kept it in envoy/<proxy>.stats.json.
type envoyStats map[string]uint64

func readStats(t *testing.T, res *Result, proxy string) envoyStats {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(res.Dir, results.EnvoyDir, proxy+".stats.json"))
	if err != nil {
		t.Fatalf("stats of %s: %v", proxy, err)
	}
	var doc struct {
		Stats []struct {
			Name  string          `json:"name"`
			Value json.RawMessage `json:"value"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("stats of %s: %v", proxy, err)
	}
	s := envoyStats{}
	for _, st := range doc.Stats {
		var v uint64
		if st.Name != "" && json.Unmarshal(st.Value, &v) == nil {
			s[st.Name] = v
		}
	}
	if len(s) == 0 {
		t.Fatalf("stats of %s: no counters", proxy)
	}
	return s
}

// value returns a stat that must exist.
func (s envoyStats) value(t *testing.T, name string) uint64 {
	t.Helper()
	v, ok := s[name]
	if !ok {
		t.Errorf("no stat %s (have %s)", name, s.like(name))
	}
	return v
}

// sum adds every stat whose name starts with prefix and ends with suffix,
// skipping names that contain any of skip.
func (s envoyStats) sum(prefix, suffix string, skip ...string) uint64 {
	var n uint64
next:
	for name, v := range s {
		if !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, suffix) {
			continue
		}
		for _, k := range skip {
			if strings.Contains(name, k) {
				continue next
			}
		}
		n += v
	}
	return n
}

// like lists the non-zero stats sharing name's last two segments, for
// failure messages.
func (s envoyStats) like(name string) string {
	parts := strings.Split(name, ".")
	tail := strings.Join(parts[max(0, len(parts)-2):], ".")
	var out []string
	for n, v := range s {
		if strings.HasSuffix(n, tail) && v > 0 {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return "[" + strings.Join(out, " ") + "]"
}

// listenerStat is Envoy's per-listener stat name for a listener address:
// listener.127.30.3.10_8443.NAME.
func listenerStat(l *topology.Listener, name string) string {
	return "listener." + strings.ReplaceAll(l.Addr.String(), ":", "_") + "." + name
}

// serverProxy is the proxy that terminates the mesh hop in front of the
// first server replica: its sidecar, or its node's node proxy.
func serverProxy(t *testing.T, topo *topology.Topology) (*topology.Proxy, *topology.Listener) {
	t.Helper()
	pod := topo.ServerPods()[0]
	if p := topo.Sidecar(pod.Name); p != nil {
		return p, p.Listener(topology.ListenerInbound)
	}
	if p := topo.NodeProxy(pod.Node); p != nil {
		return p, p.Listener(topology.ListenerHBONE)
	}
	t.Fatalf("no proxy in front of %s", pod.Name)
	return nil, nil
}

// clientProxy is the proxy the client pod's traffic leaves through.
func clientProxy(t *testing.T, topo *topology.Topology) *topology.Proxy {
	t.Helper()
	if p := topo.Sidecar("client"); p != nil {
		return p
	}
	if p := topo.NodeProxy(topology.ClientNode); p != nil {
		return p
	}
	t.Fatal("no client proxy")
	return nil
}

// upstreamCompleted counts the requests a proxy's clusters completed
// (Envoy also splits them by origin, .external. / .internal.: not twice).
func upstreamCompleted(s envoyStats) uint64 {
	return s.sum("cluster.", ".upstream_rq_completed", ".external.", ".internal.", "cluster.xds")
}

// TestVariantsGateway: with the ingress gateway the load is HTTPS to the
// gateway, which terminates TLS and sends every request on into the mesh;
// the gateway is sampled as its own category.
func TestVariantsGateway(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	for i, mode := range []topology.Mode{topology.ModeSidecar, topology.ModeAmbient} {
		t.Run(string(mode), func(t *testing.T) {
			o := labOptions(t, mode, 1, uint8(30+i))
			o.Mesh.Gateway = true
			res := runVariant(t, o)
			topo := res.Topology
			gw := topo.ProxyByRole(topology.RoleGateway)
			if gw == nil {
				t.Fatal("no gateway in the topology")
			}
			for _, lt := range topo.LoadTargets {
				if !strings.HasPrefix(lt.URL, "https://") || lt.Proxy != gw.Name {
					t.Errorf("load target %s via %q, want https via %s", lt.URL, lt.Proxy, gw.Name)
				}
			}
			gs := readStats(t, res, gw.Name)
			if n := gs.value(t, listenerStat(gw.Listener(topology.ListenerGateway), "ssl.handshake")); n == 0 {
				t.Error("gateway listener: no TLS handshake")
			}
			if n := upstreamCompleted(gs); n < uint64(res.Load.Success) {
				t.Errorf("gateway upstream requests completed = %d, want >= %d (warm-up included)", n, res.Load.Success)
			}
			if n := gs.sum("cluster.", ".upstream_rq_2xx", ".external.", ".internal."); n < uint64(res.Load.Success) {
				t.Errorf("gateway upstream 2xx = %d, want >= %d", n, res.Load.Success)
			}

			// The mesh hop behind the gateway is mTLS: a handshake in which
			// the gateway presented its certificate.
			sp, sl := serverProxy(t, topo)
			ss := readStats(t, res, sp.Name)
			if n := ss.value(t, listenerStat(sl, "ssl.handshake")); n == 0 {
				t.Errorf("%s: no mTLS handshake on %s", sp.Name, sl.Name)
			}
			if n := ss[listenerStat(sl, "ssl.no_certificate")]; n != 0 {
				t.Errorf("%s: %d handshakes without a peer certificate: not mutual TLS", sp.Name, n)
			}

			var gwComponent, gwCategory bool
			for _, c := range res.Summary.Components {
				if c.Name == gw.Component {
					gwComponent = c.Category == sample.CategoryGateway && c.Rounds > 0
				}
			}
			for _, c := range res.Summary.Categories {
				gwCategory = gwCategory || (c.Name == sample.CategoryGateway && c.Processes == 1)
			}
			if !gwComponent || !gwCategory {
				t.Errorf("gateway component %q not sampled under category %q: components %+v", gw.Component, sample.CategoryGateway, res.Summary.Components)
			}
		})
	}
}

// TestVariantsPolicies: with LAB.md's four ALLOW rules every request is
// still answered, and the server side's RBAC filter counted them as
// allowed, none denied.
func TestVariantsPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	for i, mode := range []topology.Mode{topology.ModeSidecar, topology.ModeAmbient} {
		t.Run(string(mode), func(t *testing.T) {
			o := labOptions(t, mode, 1, uint8(32+i))
			o.Mesh.Policies = 4
			res := runVariant(t, o)
			if len(res.Topology.Policies) != 4 {
				t.Errorf("%d policies in the topology, want 4", len(res.Topology.Policies))
			}
			sp, sl := serverProxy(t, res.Topology)
			// The sidecar's inbound listener has a network RBAC filter with
			// stat prefix "<listener>."; a node proxy's HBONE listener an
			// HTTP RBAC filter in its HCM, "http.<listener>.".
			prefix := sl.Name + ".rbac."
			if sp.Role == topology.RoleNodeProxy {
				prefix = "http." + sl.Name + ".rbac."
			}
			ss := readStats(t, res, sp.Name)
			if n := ss.value(t, prefix+"allowed"); n == 0 {
				t.Errorf("%s: %sallowed = 0, want > 0", sp.Name, prefix)
			}
			if n := ss.value(t, prefix+"denied"); n != 0 {
				t.Errorf("%s: %sdenied = %d, want 0", sp.Name, prefix, n)
			}
			// No proxy of the lab denied anything.
			for _, p := range res.Topology.Proxies {
				if n := readStats(t, res, p.Name).sum("", ".rbac.denied"); n != 0 {
					t.Errorf("%s: %d connections or streams denied", p.Name, n)
				}
			}
		})
	}
}

// TestVariantsProtocolTCP: with protocol tcp the load and the app still
// speak HTTP, but no proxy parses it: the mesh carries connections through
// tcp_proxy, so there are TCP proxy counters and no HTTP requests (HBONE's
// CONNECT tunnels aside, one per connection).
func TestVariantsProtocolTCP(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	for i, mode := range []topology.Mode{topology.ModeSidecar, topology.ModeAmbient} {
		t.Run(string(mode), func(t *testing.T) {
			o := labOptions(t, mode, 1, uint8(34+i))
			o.Mesh.Protocol = topology.ProtocolTCP
			res := runVariant(t, o)
			if res.Load.BytesIn != 615*res.Load.Success {
				t.Errorf("bytes in %d, want the 615-byte page %d times", res.Load.BytesIn, res.Load.Success)
			}
			cp := clientProxy(t, res.Topology)
			sp, sl := serverProxy(t, res.Topology)
			cs, ss := readStats(t, res, cp.Name), readStats(t, res, sp.Name)
			cx := cs.sum("tcp.", ".downstream_cx_total")
			if cx == 0 {
				t.Errorf("%s: no tcp_proxy connections", cp.Name)
			}
			if n := cs.sum("http.", ".downstream_rq_total", "http.admin."); n != 0 {
				t.Errorf("%s: %d HTTP requests parsed, want 0", cp.Name, n)
			}
			switch sp.Role {
			case topology.RoleSidecar:
				if n := ss.sum("tcp.", ".downstream_cx_total"); n == 0 {
					t.Errorf("%s: no tcp_proxy connections", sp.Name)
				}
				if n := ss.sum("http.", ".downstream_rq_total", "http.admin."); n != 0 {
					t.Errorf("%s: %d HTTP requests parsed, want 0", sp.Name, n)
				}
			case topology.RoleNodeProxy:
				// HTTP/2 CONNECT streams, one per tunnelled connection: far
				// fewer than the requests inside them.
				hbone := "http." + sl.Name + "."
				if n := ss.sum("http.", ".downstream_rq_total", "http.admin.", hbone); n != 0 {
					t.Errorf("%s: %d HTTP requests parsed besides HBONE, want 0", sp.Name, n)
				}
				tunnels := ss.value(t, hbone+"downstream_rq_total")
				if tunnels == 0 || tunnels > cx || tunnels >= uint64(res.Load.Sent) {
					t.Errorf("%s: %d CONNECT streams for %d client connections and %d requests: want one per connection",
						sp.Name, tunnels, cx, res.Load.Sent)
				}
			}
		})
	}
}

// TestVariantsPlaintext: sidecars with mtls=false carry every request in
// the clear: the server sidecar saw no TLS handshake at all (the mTLS run
// of TestRunEveryMode sees some).
func TestVariantsPlaintext(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Envoys")
	}
	o := labOptions(t, topology.ModeSidecar, 1, 36)
	o.Mesh.MTLS = false
	res := runVariant(t, o)
	sp, sl := serverProxy(t, res.Topology)
	ss := readStats(t, res, sp.Name)
	if n := ss.sum("", "ssl.handshake"); n != 0 {
		t.Errorf("%s: %d TLS handshakes, want 0", sp.Name, n)
	}
	if n := ss.sum("http.", ".downstream_cx_ssl_total"); n != 0 {
		t.Errorf("%s: %d TLS connections, want 0", sp.Name, n)
	}
	if n := ss.value(t, "http."+sl.Name+".downstream_rq_2xx"); n < uint64(res.Load.Success) {
		t.Errorf("%s: %d requests answered 2xx, want >= %d", sp.Name, n, res.Load.Success)
	}
	cp := clientProxy(t, res.Topology)
	if n := readStats(t, res, cp.Name).sum("", "ssl.handshake"); n != 0 {
		t.Errorf("%s: %d TLS handshakes, want 0", cp.Name, n)
	}
}
