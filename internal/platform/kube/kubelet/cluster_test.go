package kubelet

import (
	"bytes"
	"context"
	"math"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// requireNodeProxy returns the shared cluster and a clientset, skipping
// (failing with MESHBENCH_REQUIRE_K8S=1) when the API server's node proxy
// cannot reach the nodes (kubetest could not put the nodes on a non-loopback
// address: not root).
func requireNodeProxy(t *testing.T) (*kubetest.Cluster, *rest.Config, kubernetes.Interface) {
	t.Helper()
	c := kubetest.Require(t)
	if !c.NodeProxy {
		msg := "the test cluster's nodes are on 127.0.0.1, which the API server's node proxy refuses (kubetest needs root to add its node address to lo)"
		if os.Getenv(kubetest.RequireEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	// As kube.Connect sets them: the default 5 QPS would throttle a
	// 500 ms period's requests and skew their read times.
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg, cs
}

// TestSamplerAgainstKwok reads the counters through the real API server's
// node proxy. kwok emulates the kubelet's /metrics/resource (until the
// real test nodes land): a container's CPU counter grows at the rate of
// its pod's usage annotation, its memory is the annotated quantity, and
// its samples carry no timestamps (so no lag and no stale reading here).
// The known answer is that annotation: 200m and 48Mi.
func TestSamplerAgainstKwok(t *testing.T) {
	testutil.Timing(t) // kwok's counters follow its wall clock, read against the sampler's
	c, _, cs := requireNodeProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const ns = "kubemetrics-test"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: ns, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{kubetest.AnnotationUsageCPU: "200m", kubetest.AnnotationUsageMemory: "48Mi"}},
		Spec: corev1.PodSpec{NodeName: c.Nodes[1], Containers: []corev1.Container{{Name: "app", Image: "kubetest.invalid/app"}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Probe(ctx, cs); err != nil {
		t.Fatalf("Probe: %v", err)
	}
	var raw bytes.Buffer
	classified := 0
	s, err := New(cs, Options{Period: 500 * time.Millisecond, Raw: &raw,
		Classify: func(p *corev1.Pod, container string) (string, string) {
			if p.Namespace == ns && p.Labels["app"] == "web" {
				classified++
				return "app web", sample.CategoryApp
			}
			return "other", sample.CategoryOverhead
		}})
	if err != nil {
		t.Fatal(err)
	}
	// Until kwok runs the pod and serves its counter.
	kubetest.Poll(ctx, t, 60*time.Second, "the pod's counter", func() (bool, string) {
		sc, err := ReadNode(ctx, cs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: c.Nodes[1],
			Annotations: map[string]string{AnnotationPath: "/metrics/nodes/" + c.Nodes[1] + "/metrics/resource"}}})
		if err != nil {
			return false, err.Error()
		}
		for _, x := range sc.Containers {
			if x.Namespace == ns {
				return true, ""
			}
		}
		return false, "not served yet"
	})
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	time.Sleep(500 * time.Millisecond)
	from := time.Now()
	time.Sleep(6 * time.Second)
	to := time.Now()
	time.Sleep(time.Second) // a reading after the window's end
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if errs := s.Errors(); len(errs) > 0 {
		t.Fatalf("request errors: %+v", errs)
	}
	res, err := Window(s.Records(), from, to, s.Period())
	if err != nil {
		t.Fatal(err)
	}
	var web *sample.ContainerWindow
	for i := range res.Containers {
		if res.Containers[i].Key == ns+"/web-0/app" {
			web = &res.Containers[i]
		}
	}
	if web == nil || classified == 0 {
		t.Fatalf("no window for the pod (classified %d): %+v", classified, res.Containers)
	}
	// kwok's counter is exact and linear, and so is the interpolation;
	// but kwok's samples carry no timestamp, so a reading is timed by
	// the middle of its request, and the request's jitter (a few ms to
	// tens of ms on a loaded 2-core machine) shifts each edge: 3% of
	// 200m is 36 ms over the 6 s window.
	if math.Abs(web.CPUMillicores-200) > 6 || web.Partial || web.Node != c.Nodes[1] || web.Category != sample.CategoryApp {
		t.Errorf("window %+v, want 200m over the whole window on %s, category app", web, c.Nodes[1])
	}
	sum := sample.Summarize(res.Rounds)
	if comp := sum.Components; len(comp) == 0 || sum.Category(sample.CategoryApp) == nil ||
		math.Abs(sum.Category(sample.CategoryApp).PSSBytes.Avg-48<<20) > 0 {
		t.Errorf("app memory %+v, want 48Mi every interval", sum.Category(sample.CategoryApp))
	}
	if len(res.Nodes) == 0 || len(res.Nodes[0].Nodes) != len(c.Nodes) {
		t.Errorf("node intervals %+v, want both nodes", res.Nodes)
	}
	// The raw file holds everything: rebuilt from it, the intervals are
	// the sampler's.
	recs, err := ReadRaw(&raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(Intervals(recs)), len(s.Rounds()); got != want || len(recs) != len(s.Records()) {
		t.Errorf("from the raw file: %d rounds, %d records; the sampler had %d, %d", got, len(recs), want, len(s.Records()))
	}
	var cpu time.Duration
	for _, r := range s.Rounds() {
		cpu += r.Overhead.CPU
	}
	t.Logf("%d rounds, %d records; the sampler's cost: %.2f ms CPU per round with %d nodes (process CPU during the round; loaded machine)",
		len(s.Rounds()), len(recs), cpu.Seconds()*1000/float64(len(s.Rounds())), len(c.Nodes))
	if cpu <= 0 {
		t.Errorf("no CPU cost measured")
	}
}

// TestProbeWithoutPermission: a user without get on nodes/proxy is told
// so (impersonated by the admin, who may).
func TestProbeWithoutPermission(t *testing.T) {
	_, cfg, _ := requireNodeProxy(t)
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "meshbench-nobody"}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = Probe(context.Background(), cs)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("nodes/proxy is not allowed")) {
		t.Fatalf("Probe as a user without nodes/proxy = %v, want it refused", err)
	}
}

// resetMetric is a kwok Metric emulating a container that restarts
// every 6 s: its CPU counter grows at 500m and drops back to 0 whenever
// the pod's age is a multiple of 6 s (a sawtooth), as a real container
// killed and restarted would show on the kubelet.
const resetMetric = `kind: Metric
apiVersion: kwok.x-k8s.io/v1alpha1
metadata:
  name: kubemetrics-reset
spec:
  path: "/metrics/nodes/{nodeName}/metrics/reset"
  metrics:
  - name: container_cpu_usage_seconds_total
    dimension: container
    help: "[TEST] a counter that resets every 6 s"
    kind: counter
    labels:
    - {name: container, value: 'container.name'}
    - {name: namespace, value: 'pod.metadata.namespace'}
    - {name: pod, value: 'pod.metadata.name'}
    value: '(pod.SinceSecond() - double(int(pod.SinceSecond() / 6.0)) * 6.0) * 0.5'
`

// TestResetAgainstKwok: a container whose counter drops (restarted)
// mid-window is reported as a reset, never turned into negative or huge
// CPU, and each incarnation is counted for its own part. kwok emulates
// the restarts (resetMetric) on a node of its own, whose
// metrics.k8s.io/resource-metrics-path points at it; everything else is
// real: the API server's node proxy, the sampler, the raw records.
func TestResetAgainstKwok(t *testing.T) {
	testutil.Timing(t) // kwok's counters follow its wall clock, read against the sampler's
	c, _, cs := requireNodeProxy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.KubectlStdin(ctx, []byte(resetMetric), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	const node, ns = "kwok-reset-node", "kubemetrics-reset"
	nodeObj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node,
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", AnnotationPath: "/metrics/nodes/" + node + "/metrics/reset"},
		Labels:      map[string]string{"type": "kwok"}}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, nodeObj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		bg := context.Background()
		_ = cs.CoreV1().Namespaces().Delete(bg, ns, metav1.DeleteOptions{})
		_ = cs.CoreV1().Nodes().Delete(bg, node, metav1.DeleteOptions{})
		_, _ = c.Kubectl(bg, "delete", "metric", "kubemetrics-reset")
	})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "db-0", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "db", Image: "kubetest.invalid/db"}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubetest.Poll(ctx, t, 60*time.Second, "the pod's sawtooth counter", func() (bool, string) {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		sc, err := ReadNode(ctx, cs, n)
		if err != nil {
			return false, err.Error()
		}
		for _, x := range sc.Containers {
			if x.Namespace == ns {
				return true, ""
			}
		}
		return false, "not served yet"
	})
	s, err := New(cs, Options{Period: 500 * time.Millisecond,
		Classify: func(*corev1.Pod, string) (string, string) { return "db", sample.CategoryApp }})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	time.Sleep(time.Second)
	from := time.Now()
	time.Sleep(14 * time.Second) // two or three restarts
	to := time.Now()
	time.Sleep(time.Second)
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	res, err := Window(s.Records(), from, to, s.Period())
	if err != nil {
		t.Fatal(err)
	}
	key := ns + "/db-0/db"
	if len(res.Resets) < 2 || len(res.Resets) > 3 {
		t.Fatalf("resets %+v, want 2 or 3 of %s in 14 s", res.Resets, key)
	}
	for _, r := range res.Resets {
		if r.Key != key || r.To >= r.From || r.Node != node {
			t.Errorf("reset %+v: want %s on %s, the counter lower after", r, key, node)
		}
	}
	// Every incarnation at 500m over the part it was counted: the
	// interpolation is linear between readings of the same incarnation,
	// and the time between an incarnation's last reading and the restart
	// is not counted.
	n := 0
	for _, cw := range res.Containers {
		if cw.Key != key {
			continue
		}
		n++
		if !cw.Partial {
			t.Errorf("incarnation %+v not marked partial", cw)
		}
		if span := cw.To.Sub(cw.From).Seconds(); span >= 1.5 {
			if rate := cw.CPUSeconds / span * 1000; rate < 450 || rate > 550 {
				t.Errorf("incarnation %+v: %.0fm over its %.1f s, want 500m", cw, rate, span)
			}
		}
	}
	if n != len(res.Resets)+1 {
		t.Errorf("%d incarnations for %d resets", n, len(res.Resets))
	}
	for _, r := range res.Rounds {
		for _, x := range r.Samples {
			if x.CPUMillicores < 0 || x.CPUMillicores > 550 {
				t.Errorf("interval %v: %s at %.0fm: a reset must never give negative or huge CPU", r.Time, x.Name, x.CPUMillicores)
			}
		}
	}
	for _, r := range s.Rounds() {
		for _, x := range r.Samples {
			if x.CPUMillicores < 0 || x.CPUMillicores > 550 {
				t.Errorf("reading interval %v: %s at %.0fm", r.Time, x.Name, x.CPUMillicores)
			}
		}
	}
	t.Logf("%d resets, first %+v", len(res.Resets), res.Resets[0])
}
