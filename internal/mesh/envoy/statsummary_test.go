package envoy

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/sys/pki"
)

// The captures in testdata/stats are the three admin answers Stats reads
// (GET /stats?format=json, then ?format=json&type=Counters and
// &type=Gauges), byte for byte, from real Envoy 1.40.0 processes of the
// local lab (local.Run, the engine of `meshbench run`) at the collect
// phase, on 127.77.N.x: 2 static replicas, --policies 4, rate 100/s,
// warm-up 0.5 s + 2 s measured (250 requests, all 200), drain 6 s so a
// stats flush (every 5 s) fell after the load and the histograms hold it.
//
//   - sidecar-server.*: server-0-sidecar of --mesh sidecar (mTLS inbound,
//     network RBAC, HCM virtualInbound, cluster inbound|8080||).
//   - waypoint.*: the waypoint of --mesh waypoint --gateway (HBONE
//     connect_terminate with HTTP RBAC, main_internal, the tcp_proxy
//     connect_originate_node2, internal listeners, three clusters).

// loadCapture builds the snapshot Stats would have built from a capture.
func loadCapture(t *testing.T, name string) *StatsSnapshot {
	t.Helper()
	read := func(kind string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "stats", name+"."+kind+".json"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	snap, err := parseStats(read("stats"))
	if err != nil {
		t.Fatal(err)
	}
	counters, err := statNames(read("counters"))
	if err != nil {
		t.Fatal(err)
	}
	gauges, err := statNames(read("gauges"))
	if err != nil {
		t.Fatal(err)
	}
	snap.classify(counters, gauges)
	return snap
}

func u(v uint64) *uint64 { return &v }

// eq reports whether a counter pointer holds want (nil: the counter is
// absent).
func eq(got, want *uint64) bool {
	if got == nil || want == nil {
		return got == want
	}
	return *got == *want
}

func str(p *uint64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

// checkCounters compares counters given as (name, got, want) triples.
func checkCounters(t *testing.T, what string, pairs ...any) {
	t.Helper()
	for i := 0; i+2 < len(pairs); i += 3 {
		name, got := pairs[i].(string), pairs[i+1].(*uint64)
		want, _ := pairs[i+2].(*uint64) // nil: must be absent
		if !eq(got, want) {
			t.Errorf("%s %s = %s, want %s", what, name, str(got), str(want))
		}
	}
}

func TestSummarizeSidecarCapture(t *testing.T) {
	ps := Summarize(loadCapture(t, "sidecar-server"))

	// 125 of the 250 requests reached this replica, over one mTLS
	// connection from the client sidecar.
	if got := slices.Sorted(maps.Keys(ps.HTTP)); !slices.Equal(got, []string{"virtualInbound"}) {
		t.Errorf("HCMs %v (admin must be left out)", got)
	}
	for what, h := range map[string]HTTPStats{"downstream": *ps.Downstream, "http.virtualInbound": ps.HTTP["virtualInbound"]} {
		checkCounters(t, what, "rq_total", h.RqTotal, u(125), "rq_completed", h.RqCompleted, u(125),
			"2xx", h.Rq2xx, u(125), "3xx", h.Rq3xx, u(0), "4xx", h.Rq4xx, u(0), "5xx", h.Rq5xx, u(0))
	}
	// The per-worker scope (worker_0) and the admin listener are left out.
	if got := slices.Sorted(maps.Keys(ps.Listeners)); !slices.Equal(got, []string{"127.77.2.10_15006"}) {
		t.Fatalf("listeners %v", got)
	}
	l := ps.Listeners["127.77.2.10_15006"]
	checkCounters(t, "listener", "cx_total", l.CxTotal, u(1), "no_filter_chain_match", l.NoFilterChainMatch, u(0))
	if l.TLS == nil || ps.DownstreamTLS == nil {
		t.Fatal("no TLS on the mTLS inbound listener")
	}
	for what, tl := range map[string]TLSStats{"listener TLS": *l.TLS, "downstream TLS": *ps.DownstreamTLS} {
		checkCounters(t, what, "handshake", tl.Handshakes, u(1), "connection_error", tl.ConnectionErrors, u(0),
			"fail_verify", tl.FailVerify, u(0), "no_certificate", tl.NoCertificate, u(0))
	}

	if got := slices.Sorted(maps.Keys(ps.Clusters)); !slices.Equal(got, []string{"inbound|8080||"}) {
		t.Fatalf("clusters %v", got)
	}
	c := ps.Clusters["inbound|8080||"]
	for what, c := range map[string]ClusterStats{"cluster": c, "upstream": *ps.Upstream} {
		// upstream_rq_5xx: Envoy never created it (no 5xx), so it is absent.
		checkCounters(t, what, "rq_total", c.RqTotal, u(125), "rq_completed", c.RqCompleted, u(125),
			"2xx", c.Rq2xx, u(125), "5xx", c.Rq5xx, nil, "cx_total", c.CxTotal, u(1),
			"connect_fail", c.CxConnectFail, u(0), "retry", c.RqRetry, u(0), "timeout", c.RqTimeout, u(0),
			"per_try_timeout", c.RqPerTryTimeout, u(0), "pending_overflow", c.RqPendingOverflow, u(0),
			"cx_overflow", c.CxOverflow, u(0))
	}
	if c.TLS != nil {
		t.Errorf("plaintext cluster to the app has TLS %+v", c.TLS)
	}
	if c.RqTimeMs == nil || *c.RqTimeMs != (Quantiles{P50: 0, P90: 0, P99: 3.05, P999: 4.05, Max: 4.05}) {
		t.Errorf("upstream_rq_time %+v", c.RqTimeMs)
	}
	if c.CxConnectMs == nil || *c.CxConnectMs != (Quantiles{}) {
		t.Errorf("upstream_cx_connect_ms %+v", c.CxConnectMs)
	}
	if ps.Upstream.RqTimeMs != nil {
		t.Error("the sum over clusters carries quantiles")
	}

	// Network RBAC (stat_prefix "virtualInbound.") counts the connection.
	if ps.RBAC == nil {
		t.Fatal("no RBAC")
	}
	checkCounters(t, "rbac", "allowed", ps.RBAC.Allowed, u(1), "denied", ps.RBAC.Denied, u(0))
	if got := slices.Sorted(maps.Keys(ps.RBAC.ByPrefix)); !slices.Equal(got, []string{"virtualInbound"}) {
		t.Errorf("RBAC prefixes %v", got)
	}
	checkCounters(t, "overflow", "total", ps.Overflow.Total, u(0),
		"global_cx_overflow", ps.Overflow.GlobalCxOverflow, u(0), "cx_overload_reject", ps.Overflow.CxOverloadReject, u(0))
	if ps.Overflow.NonZero != nil {
		t.Errorf("overflows %v", ps.Overflow.NonZero)
	}
	if ps.TCPProxies != nil {
		t.Errorf("tcp_proxies %v on an HTTP sidecar", ps.TCPProxies)
	}

	// JSON: absent counters are omitted, existing zeros kept.
	b, err := json.Marshal(ps)
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	if strings.Contains(js, "upstream_rq_5xx") || !strings.Contains(js, `"upstream_rq_retry":0`) {
		t.Errorf("JSON %s", js)
	}
	var back ProxyStats
	if err := json.Unmarshal(b, &back); err != nil || !eq(back.Downstream.Rq2xx, u(125)) {
		t.Errorf("JSON round trip: %v %+v", err, back.Downstream)
	}
}

func TestSummarizeWaypointCapture(t *testing.T) {
	ps := Summarize(loadCapture(t, "waypoint"))

	// The 250 requests arrived in one HBONE CONNECT stream
	// (connect_terminate) and were routed by main_internal.
	if got := slices.Sorted(maps.Keys(ps.HTTP)); !slices.Equal(got, []string{"connect_terminate", "main_internal"}) {
		t.Fatalf("HCMs %v", got)
	}
	checkCounters(t, "connect_terminate", "rq_total", ps.HTTP["connect_terminate"].RqTotal, u(1),
		"2xx", ps.HTTP["connect_terminate"].Rq2xx, u(1))
	checkCounters(t, "main_internal", "rq_total", ps.HTTP["main_internal"].RqTotal, u(250),
		"rq_completed", ps.HTTP["main_internal"].RqCompleted, u(250), "2xx", ps.HTTP["main_internal"].Rq2xx, u(250),
		"5xx", ps.HTTP["main_internal"].Rq5xx, u(0))
	checkCounters(t, "downstream", "rq_total", ps.Downstream.RqTotal, u(251), "2xx", ps.Downstream.Rq2xx, u(251))

	wantListeners := []string{"127.77.3.1_15008", "envoy_internal_connect_originate_node2", "envoy_internal_main_internal"}
	if got := slices.Sorted(maps.Keys(ps.Listeners)); !slices.Equal(got, wantListeners) {
		t.Fatalf("listeners %v, want %v", got, wantListeners)
	}
	for name, want := range map[string]uint64{"127.77.3.1_15008": 1, "envoy_internal_connect_originate_node2": 2, "envoy_internal_main_internal": 1} {
		checkCounters(t, name, "cx_total", ps.Listeners[name].CxTotal, u(want))
	}
	if ps.Listeners["envoy_internal_main_internal"].TLS != nil || ps.Listeners["127.77.3.1_15008"].TLS == nil {
		t.Error("TLS on the wrong listeners")
	}
	checkCounters(t, "downstream TLS", "handshake", ps.DownstreamTLS.Handshakes, u(1))

	wantClusters := []string{"hbone|node2", "main_internal", "outbound|8080||server.default.svc.cluster.local"}
	if got := slices.Sorted(maps.Keys(ps.Clusters)); !slices.Equal(got, wantClusters) {
		t.Fatalf("clusters %v, want %v", got, wantClusters)
	}
	hb := ps.Clusters["hbone|node2"]
	// Two CONNECT streams to node2, still open when the stats were read.
	checkCounters(t, "hbone|node2", "rq_total", hb.RqTotal, u(2), "rq_completed", hb.RqCompleted, u(0),
		"2xx", hb.Rq2xx, nil, "cx_total", hb.CxTotal, u(1))
	if hb.TLS == nil || !eq(hb.TLS.Handshakes, u(1)) || !eq(hb.TLS.FailVerify, u(0)) {
		t.Errorf("hbone|node2 TLS %+v", hb.TLS)
	}
	if hb.RqTimeMs != nil {
		t.Errorf("hbone|node2 upstream_rq_time %+v: Envoy reported no histogram", hb.RqTimeMs)
	}
	if hb.CxConnectMs == nil || *hb.CxConnectMs != (Quantiles{1.05, 1.05, 1.05, 1.05, 1.05}) {
		t.Errorf("hbone|node2 upstream_cx_connect_ms %+v", hb.CxConnectMs)
	}
	svc := ps.Clusters["outbound|8080||server.default.svc.cluster.local"]
	checkCounters(t, "outbound", "rq_total", svc.RqTotal, u(250), "2xx", svc.Rq2xx, u(250), "cx_total", svc.CxTotal, u(2),
		"retry", svc.RqRetry, u(0))
	if svc.RqTimeMs == nil || *svc.RqTimeMs != (Quantiles{P50: 0, P90: 0, P99: 1.0333333333333334, P999: 2.05, Max: 2.05}) {
		t.Errorf("outbound upstream_rq_time %+v", svc.RqTimeMs)
	}
	checkCounters(t, "upstream", "rq_total", ps.Upstream.RqTotal, u(253), "rq_completed", ps.Upstream.RqCompleted, u(251),
		"2xx", ps.Upstream.Rq2xx, u(251), "cx_total", ps.Upstream.CxTotal, u(4))
	if ps.Upstream.TLS == nil || !eq(ps.Upstream.TLS.Handshakes, u(1)) {
		t.Errorf("upstream TLS %+v", ps.Upstream.TLS)
	}

	// HTTP RBAC in connect_terminate counts the CONNECT stream.
	if ps.RBAC == nil || !slices.Equal(slices.Sorted(maps.Keys(ps.RBAC.ByPrefix)), []string{"http.connect_terminate"}) {
		t.Fatalf("RBAC %+v", ps.RBAC)
	}
	checkCounters(t, "rbac", "allowed", ps.RBAC.Allowed, u(1), "denied", ps.RBAC.Denied, u(0))

	if got := slices.Sorted(maps.Keys(ps.TCPProxies)); !slices.Equal(got, []string{"connect_originate_node2"}) {
		t.Fatalf("tcp_proxies %v", got)
	}
	tp := ps.TCPProxies["connect_originate_node2"]
	checkCounters(t, "tcp", "cx_total", tp.CxTotal, u(2), "no_route", tp.CxNoRoute, u(0), "idle_timeout", tp.IdleTimeout, u(0),
		"flush_total", tp.UpstreamFlushTotal, u(0), "flush_active (gauge)", tp.UpstreamFlushActive, u(0))
	checkCounters(t, "overflow", "total", ps.Overflow.Total, u(0))
}

// summaryConfig is a TLS listener on `listener` with network RBAC allowing
// only connections from allowIP, then an HTTP connection manager routing
// /starved to a cluster whose circuit breaker allows no pending request
// (each request overflows) and everything else to the cluster backend;
// both clusters point at upstream.
func summaryConfig(admin, listener, allowIP, upstream, cert, key string) string {
	ah, ap, _ := net.SplitHostPort(admin)
	lh, lp, _ := net.SplitHostPort(listener)
	uh, up, _ := net.SplitHostPort(upstream)
	endpoint := `{endpoints: [{lb_endpoints: [{endpoint: {address: {socket_address: {address: "` + uh + `", port_value: ` + up + `}}}}]}]}`
	return `stats_flush_interval: 0.1s
admin:
  address: {socket_address: {address: "` + ah + `", port_value: ` + ap + `}}
static_resources:
  listeners:
  - name: in
    address: {socket_address: {address: "` + lh + `", port_value: ` + lp + `}}
    filter_chains:
    - transport_socket:
        name: envoy.transport_sockets.tls
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext
          common_tls_context:
            tls_certificates: [{certificate_chain: {filename: "` + cert + `"}, private_key: {filename: "` + key + `"}}]
      filters:
      - name: envoy.filters.network.rbac
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.rbac.v3.RBAC
          stat_prefix: in.
          rules:
            action: ALLOW
            policies:
              client:
                permissions: [{any: true}]
                principals: [{direct_remote_ip: {address_prefix: "` + allowIP + `", prefix_len: 32}}]
      - name: envoy.filters.network.http_connection_manager
        typed_config:
          "@type": type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager
          stat_prefix: in
          http_filters:
          - name: envoy.filters.http.router
            typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.router.v3.Router}
          route_config:
            virtual_hosts:
            - name: all
              domains: ["*"]
              routes:
              - match: {prefix: "/starved"}
                route: {cluster: starved}
              - match: {prefix: "/"}
                route: {cluster: backend}
  clusters:
  - name: backend
    type: STATIC
    connect_timeout: 2s
    load_assignment: {cluster_name: backend, ` + strings.TrimPrefix(endpoint, "{") + `
  - name: starved
    type: STATIC
    connect_timeout: 2s
    circuit_breakers: {thresholds: [{max_pending_requests: 0}]}
    load_assignment: {cluster_name: starved, ` + strings.TrimPrefix(endpoint, "{") + `
`
}

// A real Envoy carries real HTTPS requests to a Go server; the summary of
// its /stats counts exactly what was sent.
func TestSummarizeRealTraffic(t *testing.T) {
	dir := t.TempDir()
	// 127.77.0.0/16 is this test's: one /24 picked at random per run.
	net3 := fmt.Sprintf("127.77.%d.", 100+rand.IntN(100))
	ip, deniedIP := net3+"10", net3+"11"

	// The upstream: 200 on /ok, 404 on /missing, 503 on /fail; it counts
	// the connections Envoy opens to it.
	var mu sync.Mutex
	upstreamConns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, "ok")
		case "/fail":
			http.Error(w, "failing", http.StatusServiceUnavailable)
		default:
			http.NotFound(w, r)
		}
	}))
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			mu.Lock()
			upstreamConns++
			mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)

	ca, err := pki.NewCA("cluster.local")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.IssueServing("summary-test", []netip.Addr{netip.MustParseAddr(ip)}, pki.Options{})
	if err != nil {
		t.Fatal(err)
	}
	files, err := serving.WriteFiles(filepath.Join(dir, "pki"), "listener")
	if err != nil {
		t.Fatal(err)
	}

	admin, listener := freeAddr(t, ip), freeAddr(t, ip)
	cfg := summaryConfig(admin, listener, ip, ln.Addr().String(), files.CertChain, files.PrivateKey)
	s := newTestSupervisor(t, SupervisorOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := s.Start(ctx, Spec{Name: "summary", ConfigPath: writeFile(t, dir, "summary.yaml", cfg, 0o644),
		AdminAddr: admin, LogPath: filepath.Join(dir, "summary.log")})
	if err != nil {
		t.Fatal(err)
	}

	// One connection (one TLS handshake) per request: no keep-alive.
	client := func(src string) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			Proxy:             nil,
			DialContext:       (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}).DialContext,
			TLSClientConfig:   &tls.Config{RootCAs: ca.Pool()},
			DisableKeepAlives: true,
		}}
	}
	allowed := client(ip)
	sent := map[string]int{"/ok": 4, "/missing": 2, "/fail": 1, "/starved": 2}
	wantCode := map[string]int{"/ok": 200, "/missing": 404, "/fail": 503, "/starved": 503}
	for _, path := range slices.Sorted(maps.Keys(sent)) {
		for range sent[path] {
			resp, err := allowed.Get("https://" + listener + path)
			if err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != wantCode[path] {
				t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, wantCode[path])
			}
		}
	}
	// RBAC refuses connections from another source address.
	denied := client(deniedIP)
	for range 2 {
		if resp, err := denied.Get("https://" + listener + "/ok"); err == nil {
			resp.Body.Close()
			t.Errorf("a connection from %s got %d, want it closed by RBAC", deniedIP, resp.StatusCode)
		}
	}

	// Counters are immediate; upstream_rq_time fills at the next stats
	// flush (every 100 ms here).
	var ps ProxyStats
	deadline := time.Now().Add(5 * time.Second)
	for {
		snap, err := Stats(ctx, p.AdminAddr)
		if err != nil {
			t.Fatal(err)
		}
		ps = Summarize(snap)
		if c, ok := ps.Clusters["backend"]; (ok && c.RqTimeMs != nil) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}

	// 9 requests reached the connection manager (the 2 refused connections
	// sent none through): 4 2xx, 2 4xx, 1 5xx from the upstream and 2 503s
	// from the overflowing circuit breaker.
	for what, h := range map[string]*HTTPStats{"downstream": ps.Downstream, "http.in": new(ps.HTTP["in"])} {
		if h == nil {
			t.Fatalf("%s: no HTTP stats", what)
		}
		checkCounters(t, what, "rq_total", h.RqTotal, u(9), "rq_completed", h.RqCompleted, u(9),
			"2xx", h.Rq2xx, u(4), "3xx", h.Rq3xx, u(0), "4xx", h.Rq4xx, u(2), "5xx", h.Rq5xx, u(3))
	}
	// 11 connections, 11 handshakes: network RBAC decides on the first
	// bytes after the handshake. The client sends no certificate.
	lname := strings.ReplaceAll(listener, ":", "_")
	l, ok := ps.Listeners[lname]
	if !ok || l.TLS == nil {
		t.Fatalf("listener %s: %+v (listeners %v)", lname, l, slices.Sorted(maps.Keys(ps.Listeners)))
	}
	checkCounters(t, "listener", "cx_total", l.CxTotal, u(11), "handshake", l.TLS.Handshakes, u(11),
		"no_certificate", l.TLS.NoCertificate, u(11), "connection_error", l.TLS.ConnectionErrors, u(0),
		"fail_verify", l.TLS.FailVerify, u(0))
	if ps.RBAC == nil || !slices.Equal(slices.Sorted(maps.Keys(ps.RBAC.ByPrefix)), []string{"in"}) {
		t.Fatalf("RBAC %+v", ps.RBAC)
	}
	checkCounters(t, "rbac", "allowed", ps.RBAC.Allowed, u(9), "denied", ps.RBAC.Denied, u(2))

	// backend: the 7 requests it was sent, on the connections the upstream
	// saw; no retry (no retry policy).
	mu.Lock()
	conns := uint64(upstreamConns)
	mu.Unlock()
	b := ps.Clusters["backend"]
	checkCounters(t, "backend", "rq_total", b.RqTotal, u(7), "rq_completed", b.RqCompleted, u(7), "2xx", b.Rq2xx, u(4),
		"5xx", b.Rq5xx, u(1), "cx_total", b.CxTotal, u(conns), "connect_fail", b.CxConnectFail, u(0),
		"retry", b.RqRetry, u(0), "pending_overflow", b.RqPendingOverflow, u(0))
	if b.RqTimeMs == nil || b.RqTimeMs.Max < b.RqTimeMs.P99 || b.RqTimeMs.P99 < b.RqTimeMs.P50 {
		t.Errorf("backend upstream_rq_time %+v", b.RqTimeMs)
	}
	// starved: both requests overflowed the pending queue; none went out.
	st := ps.Clusters["starved"]
	checkCounters(t, "starved", "rq_total", st.RqTotal, u(0), "cx_total", st.CxTotal, u(0),
		"pending_overflow", st.RqPendingOverflow, u(2))
	if st.RqTimeMs != nil {
		t.Errorf("starved upstream_rq_time %+v, from no request", st.RqTimeMs)
	}
	checkCounters(t, "overflow", "total", ps.Overflow.Total, u(2))
	if want := map[string]uint64{"cluster.starved.upstream_rq_pending_overflow": 2}; fmt.Sprint(ps.Overflow.NonZero) != fmt.Sprint(want) {
		t.Errorf("non-zero overflows %v, want %v", ps.Overflow.NonZero, want)
	}
	checkCounters(t, "upstream", "rq_total", ps.Upstream.RqTotal, u(7), "pending_overflow", ps.Upstream.RqPendingOverflow, u(2))
	if ps.TCPProxies != nil {
		t.Errorf("tcp_proxies %v", ps.TCPProxies)
	}
}
