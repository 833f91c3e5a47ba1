package netlab

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meshbench/meshbench/internal/mesh/linkerd"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/proxy"
)

// DiagnosticsRow is one proxy as its own metrics show what Linkerd's
// controllers gave it (what `linkerd diagnostics proxy-metrics` reads on
// a cluster): its identity certificate, its requests to each controller,
// the endpoints destination resolved, the peers it met over mTLS.
type DiagnosticsRow struct {
	Pod, Identity string
	// CertLeft is how long the certificate stays valid from the scrape
	// (0: the proxy has none); CertRefreshes how often it was issued.
	CertLeft      time.Duration
	CertRefreshes float64
	// IdentityRequests, DestinationRequests and PolicyRequests are the
	// proxy's requests to each controller.
	IdentityRequests, DestinationRequests, PolicyRequests float64
	// ControllersTLS are its control-plane requests over TLS (tls="true")
	// to the destination pod's identity (linkerd.DestinationName), which
	// the proxy verified (server_id).
	ControllersTLS float64
	// Endpoints are the ready endpoints of its outbound balancers.
	Endpoints float64
	// ClientIDs and ServerIDs are the peers' identities it saw over
	// mTLS, inbound and outbound.
	ClientIDs, ServerIDs []string
}

// linkerdDiagnostics scrapes every proxy of m.
func linkerdDiagnostics(ctx context.Context, m *linkerd.Mesh) ([]DiagnosticsRow, error) {
	stats, err := m.Stats(ctx)
	if err != nil {
		return nil, err
	}
	return diagnosticsRows(stats, func(pod string) string {
		if p := m.Proxies[pod]; p != nil {
			return p.Spec.Name
		}
		return ""
	}, time.Now()), nil
}

// diagnosticsRows are the table's rows from each proxy's counters (by
// pod) at time now.
func diagnosticsRows(stats map[string]proxy.Stats, identity func(pod string) string, now time.Time) []DiagnosticsRow {
	ports := linkerd.ControllerPorts
	var rows []DiagnosticsRow
	for _, pod := range slices.Sorted(maps.Keys(stats)) {
		s := stats[pod]
		r := DiagnosticsRow{Pod: pod, Identity: identity(pod), CertRefreshes: s.CertRefreshes,
			IdentityRequests: controlTo(s, ports.Identity), DestinationRequests: controlTo(s, ports.Destination),
			PolicyRequests: controlTo(s, ports.Policy), ControllersTLS: s.ControlServerIDs[linkerd.DestinationName]}
		if s.CertExpiry > 0 {
			r.CertLeft = time.Unix(int64(s.CertExpiry), 0).Sub(now)
		}
		for _, n := range s.Endpoints {
			r.Endpoints += n
		}
		for id, n := range s.ClientIDs {
			if n > 0 {
				r.ClientIDs = append(r.ClientIDs, id)
			}
		}
		for id, n := range s.ServerIDs {
			if n > 0 {
				r.ServerIDs = append(r.ServerIDs, id)
			}
		}
		slices.Sort(r.ClientIDs)
		slices.Sort(r.ServerIDs)
		rows = append(rows, r)
	}
	return rows
}

// controlTo is how many requests s's proxy made to the controller
// serving port (one of linkerd.ControllerPorts): to the controllers'
// pod (its IP and port) or through the forwarder on its own loopback
// (port plus linkerd.ControllerPortOffset; the stand-in's loopback
// address is neither).
func controlTo(s proxy.Stats, port int) float64 {
	var n float64
	for addr, v := range s.Control {
		a, err := netip.ParseAddrPort(addr)
		if err != nil {
			continue
		}
		p := int(a.Port())
		if a.Addr().IsLoopback() && p == port+linkerd.ControllerPortOffset || !a.Addr().IsLoopback() && p == port {
			n += v
		}
	}
	return n
}

// diagnosticsTable prints rows as a table.
func diagnosticsTable(rows []DiagnosticsRow) string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "PROXY\tIDENTITY\tCERT VALID\tCERTIFIED\tTO IDENTITY\tTO DESTINATION\tTO POLICY\tCONTROL TLS\tENDPOINTS\tMTLS FROM\tMTLS TO")
	short := func(ids []string) string {
		if len(ids) == 0 {
			return "-"
		}
		var out []string
		for _, id := range ids {
			out = append(out, strings.TrimSuffix(id, ".serviceaccount.identity.linkerd.cluster.local"))
		}
		return strings.Join(out, ",")
	}
	for _, r := range rows {
		cert := "none"
		if r.CertLeft > 0 {
			cert = fmt.Sprintf("%.1fh", r.CertLeft.Hours())
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%s\t%s\n", r.Pod, r.Identity, cert, r.CertRefreshes,
			r.IdentityRequests, r.DestinationRequests, r.PolicyRequests, r.ControllersTLS, r.Endpoints, short(r.ClientIDs), short(r.ServerIDs))
	}
	_ = w.Flush()
	return b.String()
}

// diagnosticsInvalid says what makes the cell invalid: a proxy with no
// certificate from the identity controller, or no policy from the policy
// controller; with the controllers in a pod of their own (podMTLS), a
// request to destination or policy not over TLS to the pod's verified
// identity.
func diagnosticsInvalid(rows []DiagnosticsRow, podMTLS bool) []string {
	var out []string
	for _, r := range rows {
		if n := r.DestinationRequests + r.PolicyRequests; podMTLS && r.ControllersTLS < n {
			out = append(out, fmt.Sprintf("%s's proxy made %.0f requests to Linkerd's destination and policy controllers, only %.0f over TLS to %s",
				r.Pod, n, r.ControllersTLS, linkerd.DestinationName))
		}
		if r.CertLeft <= 0 || r.CertRefreshes < 1 || r.IdentityRequests < 1 {
			out = append(out, fmt.Sprintf("%s's proxy got no identity from Linkerd's identity controller (certificate valid %v, certified %.0f times, %.0f requests to it)",
				r.Pod, r.CertLeft.Round(time.Second), r.CertRefreshes, r.IdentityRequests))
		}
		if r.PolicyRequests < 1 {
			out = append(out, fmt.Sprintf("%s's proxy asked Linkerd's policy controller nothing", r.Pod))
		}
	}
	return out
}

// podInboundCheck is the proof, from the destination pod's own proxy's
// inbound counters (in), that the proxies' requests to Linkerd's
// destination and policy controllers (sent: their control_request_total
// to them) all arrived over TLS (tls="true"), none in plaintext: its
// lines, and what makes the cell invalid. The client identities are
// those the counters name; linkerd2-proxy's control clients present no
// certificate here (client_id=""), so the proof is TLS with the server's
// identity verified by each client, not a client identity per request.
func podInboundCheck(in proxy.Stats, sent float64) (lines, invalid []string) {
	var seen []string
	for _, id := range slices.Sorted(maps.Keys(in.ClientIDs)) {
		name := id
		if id == "" {
			name = "no client certificate"
		}
		seen = append(seen, fmt.Sprintf("%s: %.0f", name, in.ClientIDs[id]))
	}
	lines = append(lines, fmt.Sprintf("The destination pod's proxy (Linkerd's destination and policy controllers) received %.0f requests over TLS (tls=\"true\"; %s) and %.0f in plaintext; the proxies sent %.0f to them (its inbound counters, theirs).",
		in.InboundTLS, strings.Join(seen, ", "), in.InboundPlain, sent))
	if in.InboundPlain > 0 {
		invalid = append(invalid, fmt.Sprintf("the destination pod's proxy received %.0f requests to Linkerd's controllers in plaintext", in.InboundPlain))
	}
	if in.InboundTLS < sent {
		invalid = append(invalid, fmt.Sprintf("the destination pod's proxy received %.0f requests over TLS, the proxies sent %.0f to destination and policy", in.InboundTLS, sent))
	}
	return lines, invalid
}
