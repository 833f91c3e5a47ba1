package proxy

import (
	"fmt"
	"io"
	"maps"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Stats is the TLS state of a proxy's traffic, summed from its admin
// /metrics: HTTP requests (request_total) by direction and TLS, the peer
// identities, the requests its inbound policy denied, and its balancers'
// ready endpoints. Requests to the proxy's own admin port are left out, and
// so are the kubelet's probes of the app's ports (on a cluster: the policy
// controller's default "probe" route, plaintext by design), counted apart.
type Stats struct {
	// InboundTLS and InboundPlain are inbound requests over mTLS and
	// without (probes apart).
	InboundTLS, InboundPlain float64
	// Probes are inbound requests on the probe route: the kubelet's
	// health checks of the app's container.
	Probes float64
	// OutboundTLS and OutboundPlain are outbound requests over mTLS and
	// without.
	OutboundTLS, OutboundPlain float64
	// ClientIDs counts inbound mTLS requests by the client's identity.
	ClientIDs map[string]float64
	// ServerIDs counts outbound mTLS requests by the server's identity.
	ServerIDs map[string]float64
	// Denied counts inbound requests the policy refused
	// (inbound_http_authz_deny_total) by client identity; "" is a client
	// without one.
	Denied map[string]float64
	// Endpoints counts the ready endpoints of each outbound balancer
	// (outbound_http_balancer_endpoints) by backend "NS/NAME".
	Endpoints map[string]float64
	// CertExpiry and CertRefreshed are when the proxy's identity
	// certificate expires and when it was last issued (seconds since the
	// epoch; 0: the proxy has none), CertRefreshes how many times the
	// identity service certified it.
	CertExpiry, CertRefreshed, CertRefreshes float64
	// Control counts the proxy's requests to its control plane
	// (control_request_total) by address: identity, destination and
	// policy.
	Control map[string]float64
	// ControlServerIDs counts the control-plane requests made over mTLS
	// (tls="true") by the server's identity the proxy verified.
	ControlServerIDs map[string]float64
}

// ParseStats reads a Prometheus text exposition of linkerd2-proxy.
func ParseStats(r io.Reader) (Stats, error) {
	s := Stats{ClientIDs: map[string]float64{}, ServerIDs: map[string]float64{}, Denied: map[string]float64{}, Endpoints: map[string]float64{},
		Control: map[string]float64{}, ControlServerIDs: map[string]float64{}}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return s, fmt.Errorf("parsing linkerd2-proxy metrics: %w", err)
	}
	admin := strconv.Itoa(PortAdmin)
	for _, m := range fams["request_total"].GetMetric() {
		l := labels(m)
		if l["target_port"] == admin {
			continue
		}
		v := m.GetCounter().GetValue()
		tls := l["tls"] == "true"
		if l["direction"] == "inbound" && l["route_kind"] == "default" && l["route_name"] == "probe" {
			s.Probes += v
			continue
		}
		switch l["direction"] {
		case "inbound":
			if tls {
				s.InboundTLS += v
				s.ClientIDs[l["client_id"]] += v
			} else {
				s.InboundPlain += v
			}
		case "outbound":
			if tls {
				s.OutboundTLS += v
				s.ServerIDs[l["server_id"]] += v
			} else {
				s.OutboundPlain += v
			}
		}
	}
	for _, m := range fams["inbound_http_authz_deny_total"].GetMetric() {
		l := labels(m)
		if l["target_port"] == admin {
			continue
		}
		s.Denied[l["client_id"]] += m.GetCounter().GetValue()
	}
	for _, m := range fams["outbound_http_balancer_endpoints"].GetMetric() {
		if l := labels(m); l["endpoint_state"] == "ready" {
			s.Endpoints[l["backend_namespace"]+"/"+l["backend_name"]] += m.GetGauge().GetValue()
		}
	}
	for _, m := range fams["control_request_total"].GetMetric() {
		l := labels(m)
		s.Control[l["addr"]] += m.GetCounter().GetValue()
		if l["tls"] == "true" {
			s.ControlServerIDs[l["server_id"]] += m.GetCounter().GetValue()
		}
	}
	for _, m := range fams["control_identity_cert_expiration_timestamp_seconds"].GetMetric() {
		s.CertExpiry = m.GetGauge().GetValue()
	}
	for _, m := range fams["control_identity_cert_refresh_timestamp_seconds"].GetMetric() {
		s.CertRefreshed = m.GetGauge().GetValue()
	}
	// Declared as family control_identity_cert_refreshes (OpenMetrics'
	// counter naming), its samples named ..._total: the text parser
	// keeps them apart, untyped.
	for _, name := range []string{"control_identity_cert_refreshes", "control_identity_cert_refreshes_total"} {
		for _, m := range fams[name].GetMetric() {
			if labels(m)["result"] == "ok" {
				s.CertRefreshes += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			}
		}
	}
	return s, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, lp := range m.GetLabel() {
		out[lp.GetName()] = lp.GetValue()
	}
	return out
}

// Sub is s minus an earlier scrape base of the same proxy: the requests
// between the two (a proxy's counters only grow; the gauges of
// Endpoints are s's own). A counter that went down belongs to a proxy
// started again in between (a fault's kill): it counts from 0.
func (s Stats) Sub(base Stats) Stats {
	d := func(v, b float64) float64 {
		if v < b {
			return v
		}
		return v - b
	}
	sub := func(a, b map[string]float64) map[string]float64 {
		out := map[string]float64{}
		for k, v := range a {
			if x := d(v, b[k]); x != 0 {
				out[k] = x
			}
		}
		return out
	}
	return Stats{
		InboundTLS: d(s.InboundTLS, base.InboundTLS), InboundPlain: d(s.InboundPlain, base.InboundPlain), Probes: d(s.Probes, base.Probes),
		OutboundTLS: d(s.OutboundTLS, base.OutboundTLS), OutboundPlain: d(s.OutboundPlain, base.OutboundPlain),
		ClientIDs: sub(s.ClientIDs, base.ClientIDs), ServerIDs: sub(s.ServerIDs, base.ServerIDs),
		Denied: sub(s.Denied, base.Denied), Endpoints: maps.Clone(s.Endpoints),
		CertExpiry: s.CertExpiry, CertRefreshed: s.CertRefreshed, CertRefreshes: s.CertRefreshes, Control: sub(s.Control, base.Control),
		ControlServerIDs: sub(s.ControlServerIDs, base.ControlServerIDs),
	}
}
