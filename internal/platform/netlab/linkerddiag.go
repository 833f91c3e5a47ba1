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
	// to the controllers' pods' identities (linkerd.IdentityName,
	// linkerd.DestinationName), which the proxy verified (server_id).
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
			PolicyRequests: controlTo(s, ports.Policy), ControllersTLS: s.ControlServerIDs[linkerd.IdentityName] + s.ControlServerIDs[linkerd.DestinationName]}
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
// serving port (one of linkerd.ControllerPorts) at its pod's IP; not
// those on its own loopback (a controller pod's proxy to its own
// controllers; the stand-in's address).
func controlTo(s proxy.Stats, port int) float64 {
	var n float64
	for addr, v := range s.Control {
		a, err := netip.ParseAddrPort(addr)
		if err != nil {
			continue
		}
		if !a.Addr().IsLoopback() && int(a.Port()) == port {
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
// controller, or a request to a controller not over TLS to its pod's
// verified identity.
func diagnosticsInvalid(rows []DiagnosticsRow) []string {
	var out []string
	for _, r := range rows {
		if n := r.IdentityRequests + r.DestinationRequests + r.PolicyRequests; r.ControllersTLS < n {
			out = append(out, fmt.Sprintf("%s's proxy made %.0f requests to Linkerd's controllers, only %.0f over TLS to %s or %s",
				r.Pod, n, r.ControllersTLS, linkerd.IdentityName, linkerd.DestinationName))
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

// ControllersProof is the proof, from the controllers' pods' own
// proxies' counters, that every request to Linkerd's controllers came
// over TLS.
type ControllersProof struct {
	Lines, Invalid []string
	// InboundTLS and InboundPlain are the pods' proxies' inbound
	// requests over TLS and in plaintext, by pod.
	InboundTLS, InboundPlain map[string]float64
}

// ClientIDNote says why the controllers' pods' proxies count most
// control-plane requests without a client identity (client_id=""), from
// linkerd2-proxy's source at v2.366.0 (edge-26.8.3's proxy).
const ClientIDNote = "A proxy's TLS client presents a certificate only once its own identity is certified " +
	"(linkerd/meshtls/src/creds.rs: with_no_client_auth until store.rs publishes a config with its certificate), and each " +
	"connection takes the config current when it is made (linkerd/meshtls/src/client.rs). The control clients connect at " +
	"start-up, alongside the Certify call (linkerd/app/core/src/control.rs: the endpoint is driven ready by the balancer's " +
	"queue worker without a request), and keep that HTTP/2 connection for every later request: so the data-plane proxies' " +
	"requests to destination and policy carry client_id=\"\" (their Certify calls cannot carry one), while the identity pod's " +
	"proxy, whose connection to the destination pod can only succeed after it is certified, is named on every request. " +
	"The proof is TLS terminated by the controllers' proxies with each server's identity verified by the client, and a client " +
	"identity per request only where the proxy presents one."

// controllersProof checks the controllers' pods' proxies' inbound
// counters (pods, by pod name: identityPod, destinationPod) against what
// the proxies sent each (rows: the data plane's; and the pods' proxies'
// requests to the other pod): every request arrived over TLS, none in
// plaintext, and the identity pod's proxy's requests to the destination
// pod all named it (client_id): it can connect there only after it is
// certified. The data-plane proxies' requests carry no client identity
// (ClientIDNote).
func controllersProof(pods map[string]proxy.Stats, rows []DiagnosticsRow) ControllersProof {
	var toIdentity, toDestination float64
	for _, r := range rows {
		toIdentity += r.IdentityRequests
		toDestination += r.DestinationRequests + r.PolicyRequests
	}
	ports := linkerd.ControllerPorts
	for _, s := range pods {
		toIdentity += controlTo(s, ports.Identity)
		toDestination += controlTo(s, ports.Destination) + controlTo(s, ports.Policy)
	}
	p := ControllersProof{InboundTLS: map[string]float64{}, InboundPlain: map[string]float64{}}
	for _, c := range []struct {
		pod, who string
		sent     float64
	}{
		{identityPod, "The identity pod's proxy (Linkerd's identity controller)", toIdentity},
		{destinationPod, "The destination pod's proxy (Linkerd's destination and policy controllers)", toDestination},
	} {
		in, ok := pods[c.pod]
		if !ok {
			p.Invalid = append(p.Invalid, fmt.Sprintf("no counters from %s's proxy", c.pod))
			continue
		}
		lines, invalid := podInboundCheck(c.who, in, c.sent)
		p.Lines, p.Invalid = append(p.Lines, lines...), append(p.Invalid, invalid...)
		p.InboundTLS[c.pod], p.InboundPlain[c.pod] = in.InboundTLS, in.InboundPlain
	}
	if id, ok := pods[identityPod]; ok {
		sent := controlTo(id, ports.Destination) + controlTo(id, ports.Policy)
		named := pods[destinationPod].ClientIDs[linkerd.IdentityName]
		p.Lines = append(p.Lines, fmt.Sprintf("Client identities: the destination pod's proxy named %s on %.0f of the %.0f requests the identity pod's proxy sent it; the data-plane proxies' came without a client certificate. %s",
			linkerd.IdentityName, named, sent, ClientIDNote))
		if named < sent {
			p.Invalid = append(p.Invalid, fmt.Sprintf("the destination pod's proxy named %s on %.0f of the %.0f requests the identity pod's proxy sent it", linkerd.IdentityName, named, sent))
		}
	}
	return p
}

// podInboundCheck is the proof, from a controller pod's own proxy's
// inbound counters (in), that the proxies' requests to its controllers
// (sent: their control_request_total to them) all arrived over TLS
// (tls="true"), none in plaintext: its line (who names the pod's proxy),
// and what makes the cell invalid.
func podInboundCheck(who string, in proxy.Stats, sent float64) (lines, invalid []string) {
	var seen []string
	for _, id := range slices.Sorted(maps.Keys(in.ClientIDs)) {
		name := id
		if id == "" {
			name = "no client certificate"
		}
		seen = append(seen, fmt.Sprintf("%s: %.0f", name, in.ClientIDs[id]))
	}
	lines = append(lines, fmt.Sprintf("%s received %.0f requests over TLS (tls=\"true\"; %s) and %.0f in plaintext; the proxies sent %.0f to it (its inbound counters, theirs).",
		who, in.InboundTLS, strings.Join(seen, ", "), in.InboundPlain, sent))
	if in.InboundPlain > 0 {
		invalid = append(invalid, fmt.Sprintf("%s received %.0f requests in plaintext", who, in.InboundPlain))
	}
	if in.InboundTLS < sent {
		invalid = append(invalid, fmt.Sprintf("%s received %.0f requests over TLS, the proxies sent %.0f", who, in.InboundTLS, sent))
	}
	return lines, invalid
}
