package envoy

import (
	"sort"
	"strings"
)

// ProxyStats is the part of one Envoy's /stats a benchmark reads: requests
// and responses per HTTP connection manager, connections and TLS per
// listener, requests, latency, retries and failures per upstream cluster,
// RBAC decisions, overflows and tcp_proxy figures. Values are Envoy's
// counters since the process started (warm-up included), read at the end
// of a run.
//
// A counter Envoy did not report is left out (nil, omitted from JSON), never
// taken for 0: Envoy creates some counters only when they first count
// (cluster.NAME.upstream_rq_5xx, say). Sums are over the counters that
// exist, nil when none does. The admin listener and its connection manager
// ("admin", which answers the scrapes themselves) are left out everywhere.
type ProxyStats struct {
	// Downstream sums HTTP over every connection manager.
	Downstream *HTTPStats `json:"downstream_http,omitempty"`
	// HTTP holds each HTTP connection manager by stat prefix
	// (http.PREFIX.*), e.g. "virtualInbound", "connect_terminate".
	HTTP map[string]HTTPStats `json:"http,omitempty"`
	// Listeners holds each listener by its stat name (listener.NAME.*):
	// "127.0.2.10_15006" for a socket, "envoy_internal_main_internal" for
	// an internal listener.
	Listeners map[string]ListenerStats `json:"listeners,omitempty"`
	// DownstreamTLS sums TLS over the listeners that terminate it; nil when
	// none does.
	DownstreamTLS *TLSStats `json:"downstream_tls,omitempty"`
	// Clusters holds each upstream cluster by name (cluster.NAME.*), e.g.
	// "outbound|8080||server.default.svc.cluster.local".
	Clusters map[string]ClusterStats `json:"clusters,omitempty"`
	// Upstream sums the clusters' counters; it carries no quantiles (they
	// do not add up: see each cluster's).
	Upstream *ClusterStats `json:"upstream,omitempty"`
	// RBAC is nil when the proxy runs no RBAC filter.
	RBAC *RBACStats `json:"rbac,omitempty"`
	// Overflow counts requests and connections refused for a limit.
	Overflow OverflowStats `json:"overflow"`
	// TCPProxies holds each tcp_proxy filter by stat prefix (tcp.PREFIX.*).
	TCPProxies map[string]TCPProxyStats `json:"tcp_proxies,omitempty"`
	// Concurrency is the proxy's worker threads as it reports them (the
	// server.concurrency gauge: --concurrency); 0 when not reported.
	Concurrency uint64 `json:"concurrency,omitempty"`
}

// HTTPStats are an HTTP connection manager's downstream request counters
// (http.PREFIX.downstream_rq_*). Every stream counts as a request,
// HBONE's CONNECT streams (one per tunnelled connection) included.
type HTTPStats struct {
	RqTotal     *uint64 `json:"downstream_rq_total,omitempty"`
	RqCompleted *uint64 `json:"downstream_rq_completed,omitempty"`
	Rq2xx       *uint64 `json:"downstream_rq_2xx,omitempty"`
	Rq3xx       *uint64 `json:"downstream_rq_3xx,omitempty"`
	Rq4xx       *uint64 `json:"downstream_rq_4xx,omitempty"`
	Rq5xx       *uint64 `json:"downstream_rq_5xx,omitempty"`
}

// ListenerStats are one listener's connection counters.
type ListenerStats struct {
	// CxTotal is listener.NAME.downstream_cx_total: connections accepted.
	CxTotal *uint64 `json:"downstream_cx_total,omitempty"`
	// NoFilterChainMatch counts connections closed for matching no filter
	// chain (plaintext to a TLS-only listener, say).
	NoFilterChainMatch *uint64 `json:"no_filter_chain_match,omitempty"`
	// TLS is nil on a listener that terminates no TLS.
	TLS *TLSStats `json:"ssl,omitempty"`
}

// TLSStats are the ssl.* counters of a listener (downstream) or a cluster
// (upstream).
type TLSStats struct {
	// Handshakes is ssl.handshake: TLS connections established.
	Handshakes *uint64 `json:"handshake,omitempty"`
	// ConnectionErrors is ssl.connection_error: handshakes that failed.
	ConnectionErrors *uint64 `json:"connection_error,omitempty"`
	// FailVerify sums ssl.fail_verify_* (error, no_cert, san, cert_hash):
	// peer certificates refused.
	FailVerify *uint64 `json:"fail_verify,omitempty"`
	// NoCertificate is ssl.no_certificate: connections whose peer sent no
	// certificate (every client of a gateway that does not ask for one).
	NoCertificate *uint64 `json:"no_certificate,omitempty"`
}

// ClusterStats are one upstream cluster's counters (cluster.NAME.*, the
// JSON names are Envoy's) and latency quantiles.
type ClusterStats struct {
	RqTotal           *uint64 `json:"upstream_rq_total,omitempty"`
	RqCompleted       *uint64 `json:"upstream_rq_completed,omitempty"`
	Rq2xx             *uint64 `json:"upstream_rq_2xx,omitempty"`
	Rq5xx             *uint64 `json:"upstream_rq_5xx,omitempty"`
	CxTotal           *uint64 `json:"upstream_cx_total,omitempty"`
	CxConnectFail     *uint64 `json:"upstream_cx_connect_fail,omitempty"`
	RqRetry           *uint64 `json:"upstream_rq_retry,omitempty"`
	RqTimeout         *uint64 `json:"upstream_rq_timeout,omitempty"`
	RqPerTryTimeout   *uint64 `json:"upstream_rq_per_try_timeout,omitempty"`
	RqPendingOverflow *uint64 `json:"upstream_rq_pending_overflow,omitempty"`
	CxOverflow        *uint64 `json:"upstream_cx_overflow,omitempty"`
	// TLS is nil for a cluster without a TLS transport socket.
	TLS *TLSStats `json:"ssl,omitempty"`
	// RqTimeMs is the histogram upstream_rq_time over Envoy's last flush
	// interval (between its last two stats flushes: the lab flushes when a
	// cell starts, with StartInterval, and again just before it scrapes,
	// so this is the cell); nil when Envoy reported none: no request in
	// the interval. Envoy records whole milliseconds: 0 is under 1 ms.
	RqTimeMs *Quantiles `json:"upstream_rq_time_ms,omitempty"`
	// CxConnectMs is upstream_cx_connect_ms likewise.
	CxConnectMs *Quantiles `json:"upstream_cx_connect_ms,omitempty"`
}

// Quantiles are a histogram's quantiles over Envoy's last flush interval,
// in its unit.
type Quantiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// RBACStats are the RBAC filters' decisions. A network RBAC filter counts
// connections, an HTTP one requests (streams).
type RBACStats struct {
	Allowed *uint64 `json:"allowed,omitempty"`
	Denied  *uint64 `json:"denied,omitempty"`
	// ByPrefix holds each filter by the stat prefix its counters carry,
	// without the trailing dot: "virtualInbound" (network RBAC with
	// stat_prefix "virtualInbound.") or "http.hbone_inbound" (HTTP RBAC in
	// that connection manager).
	ByPrefix map[string]RBACCounts `json:"by_prefix"`
}

// RBACCounts are one RBAC filter's rbac.allowed and rbac.denied.
type RBACCounts struct {
	Allowed *uint64 `json:"allowed,omitempty"`
	Denied  *uint64 `json:"denied,omitempty"`
}

// OverflowStats count what a limit refused.
type OverflowStats struct {
	// Total sums every counter named *_overflow (circuit breakers:
	// upstream_cx_overflow, upstream_rq_pending_overflow,
	// upstream_rq_retry_overflow…; listeners: downstream_cx_overflow,
	// downstream_global_cx_overflow; HTTP/2 header_overflow).
	Total *uint64 `json:"total,omitempty"`
	// NonZero names the *_overflow counters that counted, with their values.
	NonZero map[string]uint64 `json:"non_zero,omitempty"`
	// GlobalCxOverflow sums listener.*.downstream_global_cx_overflow:
	// connections refused for the overload manager's global downstream
	// connection limit.
	GlobalCxOverflow *uint64 `json:"downstream_global_cx_overflow,omitempty"`
	// CxOverloadReject sums listener.*.downstream_cx_overload_reject:
	// connections refused by an overload action.
	CxOverloadReject *uint64 `json:"downstream_cx_overload_reject,omitempty"`
}

// TCPProxyStats are one tcp_proxy filter's counters (tcp.PREFIX.*) and its
// upstream_flush_active gauge.
type TCPProxyStats struct {
	CxTotal             *uint64 `json:"downstream_cx_total,omitempty"`
	CxNoRoute           *uint64 `json:"downstream_cx_no_route,omitempty"`
	IdleTimeout         *uint64 `json:"idle_timeout,omitempty"`
	UpstreamFlushTotal  *uint64 `json:"upstream_flush_total,omitempty"`
	UpstreamFlushActive *uint64 `json:"upstream_flush_active,omitempty"`
}

// adminScope is the stat name of the admin listener and its connection
// manager.
const adminScope = "admin"

// Summarize extracts a ProxyStats from a snapshot (from Stats).
func Summarize(s *StatsSnapshot) ProxyStats {
	ps := ProxyStats{Concurrency: s.Gauges["server.concurrency"]}

	for _, p := range scopes(s.Counters, "http.", ".downstream_rq_total") {
		if p == adminScope {
			continue
		}
		h := HTTPStats{}
		for _, f := range h.fields() {
			*f.p = s.counter("http." + p + ".downstream_rq_" + f.name)
		}
		if ps.HTTP == nil {
			ps.HTTP, ps.Downstream = map[string]HTTPStats{}, &HTTPStats{}
		}
		ps.HTTP[p] = h
		ps.Downstream.add(h)
	}

	for _, name := range listenerNames(s.Counters) {
		sc := "listener." + name + "."
		l := ListenerStats{CxTotal: s.counter(sc + "downstream_cx_total"),
			NoFilterChainMatch: s.counter(sc + "no_filter_chain_match"), TLS: s.tls(sc)}
		if ps.Listeners == nil {
			ps.Listeners = map[string]ListenerStats{}
		}
		ps.Listeners[name] = l
		if l.TLS != nil {
			if ps.DownstreamTLS == nil {
				ps.DownstreamTLS = &TLSStats{}
			}
			ps.DownstreamTLS.add(*l.TLS)
		}
	}

	for _, name := range clusterNames(s.Counters) {
		sc := "cluster." + name + "."
		c := ClusterStats{TLS: s.tls(sc),
			RqTimeMs: s.quantiles(sc + "upstream_rq_time"), CxConnectMs: s.quantiles(sc + "upstream_cx_connect_ms")}
		for _, f := range c.fields() {
			*f.p = s.counter(sc + f.name)
		}
		if ps.Clusters == nil {
			ps.Clusters, ps.Upstream = map[string]ClusterStats{}, &ClusterStats{}
		}
		ps.Clusters[name] = c
		ps.Upstream.add(c)
	}

	for name, v := range s.Counters {
		key, allowed := strings.CutSuffix(name, "rbac.allowed")
		if !allowed {
			var denied bool
			if key, denied = strings.CutSuffix(name, "rbac.denied"); !denied {
				continue
			}
		}
		key = strings.TrimSuffix(key, ".")
		if ps.RBAC == nil {
			ps.RBAC = &RBACStats{ByPrefix: map[string]RBACCounts{}}
		}
		rc := ps.RBAC.ByPrefix[key]
		if allowed {
			addTo(&rc.Allowed, &v)
			addTo(&ps.RBAC.Allowed, &v)
		} else {
			addTo(&rc.Denied, &v)
			addTo(&ps.RBAC.Denied, &v)
		}
		ps.RBAC.ByPrefix[key] = rc
	}

	for name, v := range s.Counters {
		if isAdmin(name) {
			continue
		}
		if strings.HasSuffix(name, "_overflow") {
			addTo(&ps.Overflow.Total, &v)
			if v > 0 {
				if ps.Overflow.NonZero == nil {
					ps.Overflow.NonZero = map[string]uint64{}
				}
				ps.Overflow.NonZero[name] = v
			}
		}
	}
	for name := range ps.Listeners {
		sc := "listener." + name + "."
		addTo(&ps.Overflow.GlobalCxOverflow, s.counter(sc+"downstream_global_cx_overflow"))
		addTo(&ps.Overflow.CxOverloadReject, s.counter(sc+"downstream_cx_overload_reject"))
	}

	for _, p := range scopes(s.Counters, "tcp.", ".downstream_cx_total") {
		sc := "tcp." + p + "."
		t := TCPProxyStats{CxTotal: s.counter(sc + "downstream_cx_total"), CxNoRoute: s.counter(sc + "downstream_cx_no_route"),
			IdleTimeout: s.counter(sc + "idle_timeout"), UpstreamFlushTotal: s.counter(sc + "upstream_flush_total")}
		if v, ok := s.Gauges[sc+"upstream_flush_active"]; ok {
			t.UpstreamFlushActive = &v
		}
		if ps.TCPProxies == nil {
			ps.TCPProxies = map[string]TCPProxyStats{}
		}
		ps.TCPProxies[p] = t
	}
	return ps
}

// field is one counter of a stats struct: its name and where it goes.
type field struct {
	name string
	p    **uint64
}

// fields lists HTTPStats' counters by the suffix after downstream_rq_.
func (h *HTTPStats) fields() []field {
	return []field{{"total", &h.RqTotal}, {"completed", &h.RqCompleted},
		{"2xx", &h.Rq2xx}, {"3xx", &h.Rq3xx}, {"4xx", &h.Rq4xx}, {"5xx", &h.Rq5xx}}
}

func (h *HTTPStats) add(o HTTPStats) {
	for i, f := range o.fields() {
		addTo(h.fields()[i].p, *f.p)
	}
}

// fields lists ClusterStats' counters by name within the cluster's scope.
func (c *ClusterStats) fields() []field {
	return []field{{"upstream_rq_total", &c.RqTotal}, {"upstream_rq_completed", &c.RqCompleted},
		{"upstream_rq_2xx", &c.Rq2xx}, {"upstream_rq_5xx", &c.Rq5xx},
		{"upstream_cx_total", &c.CxTotal}, {"upstream_cx_connect_fail", &c.CxConnectFail},
		{"upstream_rq_retry", &c.RqRetry}, {"upstream_rq_timeout", &c.RqTimeout},
		{"upstream_rq_per_try_timeout", &c.RqPerTryTimeout},
		{"upstream_rq_pending_overflow", &c.RqPendingOverflow}, {"upstream_cx_overflow", &c.CxOverflow}}
}

// add sums o's counters and TLS into c; quantiles are not added.
func (c *ClusterStats) add(o ClusterStats) {
	for i, f := range o.fields() {
		addTo(c.fields()[i].p, *f.p)
	}
	if o.TLS != nil {
		if c.TLS == nil {
			c.TLS = &TLSStats{}
		}
		c.TLS.add(*o.TLS)
	}
}

func (t *TLSStats) add(o TLSStats) {
	addTo(&t.Handshakes, o.Handshakes)
	addTo(&t.ConnectionErrors, o.ConnectionErrors)
	addTo(&t.FailVerify, o.FailVerify)
	addTo(&t.NoCertificate, o.NoCertificate)
}

// addTo adds *v to *dst, making *dst when it is nil; a nil v adds nothing.
func addTo(dst **uint64, v *uint64) {
	if v == nil {
		return
	}
	if *dst == nil {
		*dst = new(uint64)
	}
	**dst += *v
}

// counter returns a pointer to a copy of the counter's value, nil when the
// snapshot has no such counter.
func (s *StatsSnapshot) counter(name string) *uint64 {
	if v, ok := s.Counters[name]; ok {
		return &v
	}
	return nil
}

// tls reads the ssl.* counters of scope ("listener.NAME." or
// "cluster.NAME."); nil when it has no ssl.handshake (no TLS there).
func (s *StatsSnapshot) tls(scope string) *TLSStats {
	hs := s.counter(scope + "ssl.handshake")
	if hs == nil {
		return nil
	}
	t := &TLSStats{Handshakes: hs, ConnectionErrors: s.counter(scope + "ssl.connection_error"),
		NoCertificate: s.counter(scope + "ssl.no_certificate")}
	for name, v := range s.Counters {
		if strings.HasPrefix(name, scope+"ssl.fail_verify_") {
			addTo(&t.FailVerify, &v)
		}
	}
	return t
}

// quantiles reads a histogram's p50, p90, p99, p99.9 and max over the last
// flush interval; nil unless Envoy reported all five. The interval, not the
// cumulative values: counters are reset when a cell starts on a running
// lab, and Envoy's reset does not reach cumulative histograms.
func (s *StatsSnapshot) quantiles(name string) *Quantiles {
	h, ok := s.Histograms[name]
	if !ok {
		return nil
	}
	var q Quantiles
	for _, x := range []struct {
		percent float64
		dst     *float64
	}{{50, &q.P50}, {90, &q.P90}, {99, &q.P99}, {99.9, &q.P999}, {100, &q.Max}} {
		v, ok := h.IntervalAt(x.percent)
		if !ok {
			return nil
		}
		*x.dst = v
	}
	return &q
}

// scopes returns, sorted, every X for which a counter root+X+suffix exists
// (X non-empty; X may itself contain dots).
func scopes(counters map[string]uint64, root, suffix string) []string {
	var out []string
	for name := range counters {
		if x, ok := strings.CutPrefix(name, root); ok {
			if x, ok = strings.CutSuffix(x, suffix); ok && x != "" {
				out = append(out, x)
			}
		}
	}
	sort.Strings(out)
	return out
}

// listenerNames lists the listeners (listener.NAME.downstream_cx_total),
// the admin listener and the per-handler scopes (NAME.worker_0,
// NAME.main_thread, which repeat the listener's counts) left out.
func listenerNames(counters map[string]uint64) []string {
	all := scopes(counters, "listener.", ".downstream_cx_total")
	set := make(map[string]bool, len(all))
	for _, n := range all {
		set[n] = true
	}
	var out []string
	for _, n := range all {
		if n == adminScope {
			continue
		}
		if i := strings.LastIndexByte(n, '.'); i > 0 && set[n[:i]] && isHandler(n[i+1:]) {
			continue
		}
		out = append(out, n)
	}
	return out
}

// isHandler reports whether s names a listener's per-thread scope:
// main_thread or worker_N.
func isHandler(s string) bool {
	if s == "main_thread" {
		return true
	}
	n, ok := strings.CutPrefix(s, "worker_")
	if !ok || n == "" {
		return false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// clusterNames lists the clusters: names with both
// cluster.NAME.upstream_cx_total and cluster.NAME.upstream_rq_total, which
// tells a cluster (whose name may hold dots) from its sub-scopes
// (cluster.NAME.external.*, which have no upstream_cx_total).
func clusterNames(counters map[string]uint64) []string {
	var out []string
	for _, n := range scopes(counters, "cluster.", ".upstream_cx_total") {
		if _, ok := counters["cluster."+n+".upstream_rq_total"]; ok {
			out = append(out, n)
		}
	}
	return out
}

// isAdmin reports whether a stat belongs to the admin listener or its
// connection manager.
func isAdmin(name string) bool {
	return strings.HasPrefix(name, "listener."+adminScope+".") || strings.HasPrefix(name, "http."+adminScope+".")
}
