package kube

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Istio sidecars' Envoy serves its stats in Prometheus' text format on
// this port of the pod IP (istio-proxy's "http-envoy-prom"); the admin
// port itself listens on the pod's loopback only.
const istioProxyStatsPort = 15090

// IstioStatsInclusion is the pod annotation that makes an Istio sidecar
// keep the TLS handshake counters VerifyMTLS reads (Istio's default stats
// matcher drops them); set on meshbench's app pods in sidecar mode.
var IstioStatsInclusion = map[string]string{"sidecar.istio.io/statsInclusionSuffixes": "ssl.handshake,ssl.connection_error"}

// VerifyMTLS checks, after the load, from each app pod's own proxy's
// counters that the traffic it served came over mutual TLS: in sidecar
// mode every app pod's istio-proxy must count TLS handshakes on its
// listeners (envoy_listener_ssl_handshake) and no failed ones; with
// Linkerd every app pod's linkerd-proxy must count requests in over mTLS
// and none in plaintext (verifyLinkerdMTLS). Ambient's are ztunnel's
// (VerifyAmbientMTLS); other modes return no checks. It returns every
// check and an error listing the failed ones.
func (c *Cluster) VerifyMTLS(ctx context.Context, mode, ns string) ([]Check, error) {
	if isLinkerd(mode) {
		return c.verifyLinkerdMTLS(ctx, ns)
	}
	if mode != "sidecar" {
		return nil, nil
	}
	pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleApp})
	if err != nil {
		return nil, err
	}
	var checks []Check
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || !hasContainer(p, "istio-proxy") {
			continue
		}
		chk := Check{What: "pod " + p.Name + ": its sidecar served mTLS (its own TLS handshake counters)"}
		raw, err := c.Core.CoreV1().RESTClient().Get().Namespace(ns).Resource("pods").
			Name(fmt.Sprintf("%s:%d", p.Name, istioProxyStatsPort)).SubResource("proxy").Suffix("stats/prometheus").DoRaw(ctx)
		if err != nil {
			chk.Detail = "reading its proxy's stats: " + err.Error()
			checks = append(checks, chk)
			continue
		}
		hs, hsOK, cerr := tlsCounters(raw)
		switch {
		case cerr != nil:
			chk.Detail = cerr.Error()
		case !hsOK:
			chk.Detail = "no ssl.handshake counter in its proxy's stats (the pod lacks the " + strings.Join(keys(IstioStatsInclusion), ",") + " annotation?)"
		default:
			chk.OK = hs.handshakes > 0 && hs.errors == 0
			chk.Detail = fmt.Sprintf("%.0f TLS handshakes, %.0f TLS connection errors", hs.handshakes, hs.errors)
		}
		checks = append(checks, chk)
	}
	if len(checks) == 0 {
		checks = append(checks, Check{What: "app pods with an istio-proxy sidecar to read", Detail: "none running"})
	}
	return checks, failed(checks)
}

type tlsCount struct{ handshakes, errors float64 }

// tlsCounters sums a sidecar's listener TLS counters from its Prometheus
// text stats: ok is false when it has no handshake counter at all.
func tlsCounters(raw []byte) (c tlsCount, ok bool, err error) {
	fams, err := parseProm(raw)
	if err != nil {
		return c, false, err
	}
	sum := func(name string) (float64, bool) {
		f, found := fams[name]
		if !found {
			return 0, false
		}
		var v float64
		for _, m := range f.GetMetric() {
			v += m.GetCounter().GetValue()
		}
		return v, true
	}
	c.handshakes, ok = sum("envoy_listener_ssl_handshake")
	c.errors, _ = sum("envoy_listener_ssl_connection_error")
	return c, ok, nil
}

func parseProm(raw []byte) (fams map[string]*dto.MetricFamily, err error) {
	defer func() {
		if p := recover(); p != nil {
			fams, err = nil, fmt.Errorf("the proxy's stats: the text parser failed: %v", p)
		}
	}()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err = p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("the proxy's stats: %w", err)
	}
	return fams, nil
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
