package kube

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh/ztunnel"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
	"github.com/meshbench/meshbench/internal/results"
)

// ztunnelStatsPort is where ztunnel serves its Prometheus metrics (its
// istio_tcp_* counters with connection_security_policy), on its pod IP.
const ztunnelStatsPort = 15020

// ZtunnelCounters scrapes every running ztunnel pod's own counters: the
// baseline VerifyAmbientMTLS subtracts, so a cell is judged by its own
// connections only (ztunnel outlives the cells of a plan). Keyed by pod
// name; a pod that cannot be read is left out (it then counts from 0).
func (c *Cluster) ZtunnelCounters(ctx context.Context) map[string]ztunnel.Counters {
	out := map[string]ztunnel.Counters{}
	pods, err := c.ztunnelPods(ctx)
	if err != nil {
		return out
	}
	for _, p := range pods {
		if cs, err := c.scrapeZtunnel(ctx, p); err == nil {
			out[p.Name] = cs
		}
	}
	return out
}

func (c *Cluster) ztunnelPods(ctx context.Context) ([]corev1.Pod, error) {
	l, err := c.Core.CoreV1().Pods(IstioNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if metricsapi.IsZtunnel(&p) && p.Status.Phase == corev1.PodRunning {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (c *Cluster) scrapeZtunnel(ctx context.Context, p corev1.Pod) (ztunnel.Counters, error) {
	raw, err := c.Core.CoreV1().RESTClient().Get().Namespace(p.Namespace).Resource("pods").
		Name(fmt.Sprintf("%s:%d", p.Name, ztunnelStatsPort)).SubResource("proxy").Suffix("metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return ztunnel.ParseMetrics(string(raw))
}

// VerifyAmbientMTLS checks, after the load, from ztunnel's own counters
// (each ztunnel pod's istio_tcp_connections_opened_total since base)
// that every connection the node proxies opened during the cell was
// mutual TLS (connection_security_policy="mutual_tls") and that the app's
// side (reporter destination) saw some: one check per ztunnel that
// carried traffic, and one for the destination side as a whole. It
// returns every check and an error listing the failed ones.
func (c *Cluster) VerifyAmbientMTLS(ctx context.Context, base map[string]ztunnel.Counters) ([]Check, error) {
	pods, err := c.ztunnelPods(ctx)
	if err != nil {
		return nil, err
	}
	var checks []Check
	var dest uint64
	for _, p := range pods {
		cs, err := c.scrapeZtunnel(ctx, p)
		chk := Check{What: "ztunnel " + p.Name + " on " + p.Spec.NodeName + ": every connection it opened was mutual TLS (its own counters)"}
		if err != nil {
			chk.Detail = "reading its metrics: " + err.Error()
			checks = append(checks, chk)
			continue
		}
		st := cs.Sub(base[p.Name]).Stats()
		if st.ConnectionsOpened == 0 {
			continue // a node without traffic of this cell
		}
		dest += st.OpenedByReporter["destination"]
		mtls := st.OpenedBySecurity[results.SecurityMutualTLS]
		chk.OK = mtls == st.ConnectionsOpened
		chk.Detail = fmt.Sprintf("%d connections opened, %d mutual TLS (by reporter %v)", st.ConnectionsOpened, mtls, st.OpenedByReporter)
		checks = append(checks, chk)
	}
	checks = append(checks, Check{What: "the app's ztunnels (reporter destination) took connections in this cell",
		OK: dest > 0, Detail: fmt.Sprintf("%d connections", dest)})
	return checks, failed(checks)
}
