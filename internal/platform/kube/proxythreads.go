package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/mesh"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
)

// VerifyProxyThreads checks, from each running app pod's own proxy, that
// it runs the worker threads the cell asked for (Spec.withThreads set
// them): an Istio sidecar's Envoy by its server.concurrency gauge
// (envoy_server_concurrency on its stats port), a linkerd2-proxy by the
// runtime its log names at start ("multi-threaded proxy runtime
// cores=N", or the single-threaded one for 1); linkerd2-proxy caps its
// cores at the node's CPUs, so on a node of c CPUs min(n, c) is expected.
// seen maps each pod to the threads its proxy reported. Other modes
// return no checks.
func (c *Cluster) VerifyProxyThreads(ctx context.Context, mode, ns string, n int) (checks []Check, seen map[string]int, err error) {
	m, ok := mesh.Get(mode)
	if !ok || m.Cluster.ThreadsAnnotation == "" || n <= 0 {
		return nil, nil, nil
	}
	container := m.Cluster.Enrolled.Container
	pods, err := c.Core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: LabelRole + "=" + RoleApp})
	if err != nil {
		return nil, nil, err
	}
	seen = map[string]int{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodRunning || !hasContainer(p, container) {
			continue
		}
		want := n
		var got int
		var how string
		var rerr error
		if container == metricsapi.ContainerLinkerdProxy {
			how = "its log's proxy runtime"
			if cpus, err := c.nodeCPUs(ctx, p.Spec.NodeName); err == nil && cpus > 0 {
				want = min(n, cpus)
			}
			got, rerr = c.linkerdCores(ctx, p)
		} else {
			how = "Envoy's server.concurrency"
			got, rerr = c.envoyConcurrency(ctx, p)
		}
		chk := Check{What: fmt.Sprintf("pod %s: its %s runs %d worker thread(s) (%s)", p.Name, container, want, how)}
		if rerr != nil {
			chk.Detail = rerr.Error()
		} else {
			seen[p.Name] = got
			chk.OK = got == want
			chk.Detail = fmt.Sprintf("%d worker thread(s)", got)
		}
		checks = append(checks, chk)
	}
	if len(checks) == 0 {
		checks = append(checks, Check{What: "app pods with a " + container + " sidecar to read", Detail: "none running"})
	}
	return checks, seen, failed(checks)
}

// envoyConcurrency is an Istio sidecar's Envoy's worker threads, from its
// own stats (the server.concurrency gauge).
func (c *Cluster) envoyConcurrency(ctx context.Context, p *corev1.Pod) (int, error) {
	raw, err := c.Core.CoreV1().RESTClient().Get().Namespace(p.Namespace).Resource("pods").
		Name(fmt.Sprintf("%s:%d", p.Name, istioProxyStatsPort)).SubResource("proxy").Suffix("stats/prometheus").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading its proxy's stats: %w", err)
	}
	fams, err := parseProm(raw)
	if err != nil {
		return 0, err
	}
	f, ok := fams["envoy_server_concurrency"]
	if !ok || len(f.GetMetric()) == 0 {
		return 0, fmt.Errorf("no envoy_server_concurrency in its proxy's stats")
	}
	return int(f.GetMetric()[0].GetGauge().GetValue()), nil
}

// linkerdRuntime is linkerd2-proxy's line at start naming its runtime.
var linkerdRuntime = regexp.MustCompile(`(single|multi)-threaded proxy runtime(?: cores=(\d+))?`)

// linkerdCores is a linkerd2-proxy's cores, from the runtime its log
// names at start.
func (c *Cluster) linkerdCores(ctx context.Context, p *corev1.Pod) (int, error) {
	raw, err := c.Core.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: metricsapi.ContainerLinkerdProxy}).DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("reading its proxy's log: %w", err)
	}
	return LinkerdCores(raw)
}

// LinkerdCores reads linkerd2-proxy's cores from its log: the runtime it
// names at start.
func LinkerdCores(log []byte) (int, error) {
	m := linkerdRuntime.FindSubmatch(log)
	switch {
	case m == nil:
		return 0, fmt.Errorf("its log names no proxy runtime")
	case string(m[1]) == "single":
		return 1, nil
	case len(m[2]) == 0:
		return 0, fmt.Errorf("its log names a multi-threaded runtime without its cores")
	}
	return strconv.Atoi(string(m[2]))
}

// nodeCPUs is node name's CPU capacity in whole cores.
func (c *Cluster) nodeCPUs(ctx context.Context, name string) (int, error) {
	n, err := c.Core.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return int(n.Status.Capacity.Cpu().Value()), nil
}

// InjectedThreads is the worker threads a mesh's injector gave pod p's
// proxy, from the pod's spec: the concurrency of istio-proxy's
// PROXY_CONFIG (the pod's ProxyConfig, which pilot-agent starts Envoy
// with; a --concurrency argument where a template passes it so),
// Linkerd's LINKERD2_PROXY_CORES_MAX (or LINKERD2_PROXY_CORES where it
// sets no maximum); 0 when it set none. The
// load workers' proxies are read this way: they are gone by the time a
// cell could ask them.
func InjectedThreads(p *corev1.Pod) int {
	for _, ct := range slices.Concat(p.Spec.InitContainers, p.Spec.Containers) {
		switch ct.Name {
		case metricsapi.ContainerIstioProxy:
			for _, e := range ct.Env {
				if e.Name == "PROXY_CONFIG" {
					var pc struct {
						Concurrency int `json:"concurrency"`
					}
					_ = json.Unmarshal([]byte(e.Value), &pc)
					return pc.Concurrency
				}
			}
			if i := slices.Index(ct.Args, "--concurrency"); i >= 0 && i+1 < len(ct.Args) {
				n, _ := strconv.Atoi(ct.Args[i+1])
				return n
			}
		case metricsapi.ContainerLinkerdProxy:
			// edge-26.8.3's injector turns a CPU limit into the
			// runtime's maximum (CORES_MAX, CORES staying the minimum, 1);
			// older ones set CORES alone.
			env := map[string]string{}
			for _, e := range ct.Env {
				env[e.Name] = e.Value
			}
			n, _ := strconv.Atoi(cmp.Or(env["LINKERD2_PROXY_CORES_MAX"], env["LINKERD2_PROXY_CORES"]))
			return n
		}
	}
	return 0
}
