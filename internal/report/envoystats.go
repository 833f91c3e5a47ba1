package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/meshbench/meshbench/internal/mesh/envoy"
	"github.com/meshbench/meshbench/internal/mesh/topology"
)

// maxEnvoyRows is the most proxies printed one per line; above it, proxies
// of one component share a line.
const maxEnvoyRows = 12

// envoyRow is one line of the Envoy stats table: one proxy, or a
// component's proxies added up.
type envoyRow struct {
	label                           string
	downRq, upRq, tlsHandshakes     uint64
	allowed, denied                 uint64
	retries, overflow, connectFails uint64
	rbac                            bool    // some proxy of the row runs RBAC
	p99                             float64 // highest cluster upstream_rq_time p99, ms
	hasP99                          bool
}

// counter is a counter's value, 0 when Envoy did not report it.
func counter(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// add adds one proxy's summary to the row.
func (r *envoyRow) add(ps envoy.ProxyStats) {
	if ps.Downstream != nil {
		r.downRq += counter(ps.Downstream.RqTotal)
	}
	if ps.DownstreamTLS != nil {
		r.tlsHandshakes += counter(ps.DownstreamTLS.Handshakes)
	}
	if u := ps.Upstream; u != nil {
		r.upRq += counter(u.RqTotal)
		r.retries += counter(u.RqRetry)
		r.connectFails += counter(u.CxConnectFail)
		if u.TLS != nil {
			r.tlsHandshakes += counter(u.TLS.Handshakes)
		}
	}
	for _, c := range ps.Clusters {
		if c.RqTimeMs != nil && (!r.hasP99 || c.RqTimeMs.P99 > r.p99) {
			r.p99, r.hasP99 = c.RqTimeMs.P99, true
		}
	}
	if ps.RBAC != nil {
		r.rbac = true
		r.allowed += counter(ps.RBAC.Allowed)
		r.denied += counter(ps.RBAC.Denied)
	}
	r.overflow += counter(ps.Overflow.Total)
}

// envoyRows makes the table's rows in the topology's proxy order: one per
// proxy, or, with more than maxEnvoyRows proxies, one per component
// ("server sidecar (90)"). Proxies without a summary are left out.
func envoyRows(t *topology.Topology, stats map[string]envoy.ProxyStats) []*envoyRow {
	var names []string
	for _, p := range t.Proxies {
		if _, ok := stats[p.Name]; ok {
			names = append(names, p.Name)
		}
	}
	var rows []*envoyRow
	if len(names) <= maxEnvoyRows {
		for _, n := range names {
			r := &envoyRow{label: n}
			r.add(stats[n])
			rows = append(rows, r)
		}
		return rows
	}
	byComponent := map[string]*envoyRow{}
	count := map[string]int{}
	for _, n := range names {
		comp := t.Proxy(n).Component
		r := byComponent[comp]
		if r == nil {
			r = &envoyRow{}
			byComponent[comp] = r
			rows = append(rows, r)
		}
		r.add(stats[n])
		count[comp]++
		r.label = fmt.Sprintf("%s (%d)", comp, count[comp])
	}
	return rows
}

// EnvoyStats prints the Envoy stats table (under 100 columns).
func EnvoyStats(w io.Writer, t *topology.Topology, stats map[string]envoy.ProxyStats) {
	rows := envoyRows(t, stats)
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "Envoy stats (admin /stats at the end, warm-up included; a tunnel is one request; ms are whole):")
	const format = "  %-20s %8s %8s %9s %6s %12s %7s %8s %7s\n"
	fmt.Fprintf(w, format, "proxy", "down rq", "up rq", "up p99 ms", "TLS hs", "RBAC ok/deny", "retries", "overflow", "cx fail")
	n := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for _, r := range rows {
		p99, rbac := "-", "-"
		switch {
		case r.hasP99 && r.p99 == 0:
			p99 = "<1" // Envoy records upstream_rq_time in whole ms
		case r.hasP99:
			p99 = strconv.FormatFloat(r.p99, 'f', 2, 64)
		}
		if r.rbac {
			rbac = n(r.allowed) + "/" + n(r.denied)
		}
		fmt.Fprintf(w, format, r.label, n(r.downRq), n(r.upRq), p99, n(r.tlsHandshakes), rbac,
			n(r.retries), n(r.overflow), n(r.connectFails))
	}
}
