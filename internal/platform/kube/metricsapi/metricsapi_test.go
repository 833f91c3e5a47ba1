package metricsapi

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	corefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/report"
)

func TestCPUMillicores(t *testing.T) {
	for _, tt := range []struct {
		q    string
		want float64
	}{
		{"250m", 250},
		{"250123456n", 250.123456}, // metrics-server's form: nanocores, kept exactly
		{"1", 1000},
		{"1.5", 1500},
		{"100u", 0.1},
		{"1n", 0.000001},
		{"0", 0},
		{"2k", 2e6},
	} {
		if got := CPUMillicores(resource.MustParse(tt.q)); got != tt.want {
			t.Errorf("CPUMillicores(%s) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

func TestMemoryBytes(t *testing.T) {
	for _, tt := range []struct {
		q    string
		want uint64
	}{
		{"64Mi", 64 << 20},
		{"65536Ki", 64 << 20}, // metrics-server's form
		{"1G", 1e9},           // decimal, not 2^30
		{"1Gi", 1 << 30},
		{"100", 100},
		{"0.5", 1}, // a fraction of a byte rounds up, as Quantity.Value does
		{"-1", 0},
	} {
		if got := MemoryBytes(resource.MustParse(tt.q)); got != tt.want {
			t.Errorf("MemoryBytes(%s) = %v, want %v", tt.q, got, tt.want)
		}
	}
}

// fakeAPI answers the sampler's list calls from what a test sets, through
// the fake clientsets' reactors.
type fakeAPI struct {
	mu          sync.Mutex
	pods        []corev1.Pod
	podMetrics  []metricsv1beta1.PodMetrics
	nodeMetrics []metricsv1beta1.NodeMetrics
	nodes       []corev1.Node
	errs        map[string]error // by call: pods, podmetrics, nodemetrics, nodes
	calls       map[string]int
}

func newFakeAPI() *fakeAPI { return &fakeAPI{errs: map[string]error{}, calls: map[string]int{}} }

func (f *fakeAPI) set(fn func(f *fakeAPI)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeAPI) react(call string, list func(ns string) runtime.Object) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls[call]++
		if err := f.errs[call]; err != nil {
			return true, nil, err
		}
		return true, list(a.GetNamespace()), nil
	}
}

func (f *fakeAPI) clients() (*metricsfake.Clientset, *corefake.Clientset) {
	mc, cc := metricsfake.NewSimpleClientset(), corefake.NewClientset()
	mc.PrependReactor("list", "pods", f.react("podmetrics", func(ns string) runtime.Object {
		l := &metricsv1beta1.PodMetricsList{}
		for _, pm := range f.podMetrics {
			if ns == "" || pm.Namespace == ns {
				l.Items = append(l.Items, *pm.DeepCopy())
			}
		}
		return l
	}))
	mc.PrependReactor("list", "nodes", f.react("nodemetrics", func(string) runtime.Object {
		l := &metricsv1beta1.NodeMetricsList{}
		for _, nm := range f.nodeMetrics {
			l.Items = append(l.Items, *nm.DeepCopy())
		}
		return l
	}))
	cc.PrependReactor("list", "pods", f.react("pods", func(ns string) runtime.Object {
		l := &corev1.PodList{}
		for _, p := range f.pods {
			if ns == "" || p.Namespace == ns {
				l.Items = append(l.Items, *p.DeepCopy())
			}
		}
		return l
	}))
	cc.PrependReactor("list", "nodes", f.react("nodes", func(string) runtime.Object {
		return &corev1.NodeList{Items: f.nodes}
	}))
	return mc, cc
}

// fakeClock: Now advances 1 ms per call; Tick is fed by the test.
type fakeClock struct {
	mu   sync.Mutex
	now  time.Time
	tick chan time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), tick: make(chan time.Time)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Millisecond)
	return c.now
}

func (c *fakeClock) Tick(time.Duration) (<-chan time.Time, func()) { return c.tick, func() {} }

func usageList(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

func podMetrics(ns, name string, ts time.Time, window time.Duration, ctrs ...metricsv1beta1.ContainerMetrics) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Timestamp: metav1.NewTime(ts), Window: metav1.Duration{Duration: window}, Containers: ctrs}
}

func ctr(name, cpu, mem string) metricsv1beta1.ContainerMetrics {
	return metricsv1beta1.ContainerMetrics{Name: name, Usage: usageList(cpu, mem)}
}

func nodeMetrics(name string, ts time.Time, window time.Duration, cpu, mem string) metricsv1beta1.NodeMetrics {
	return metricsv1beta1.NodeMetrics{ObjectMeta: metav1.ObjectMeta{Name: name},
		Timestamp: metav1.NewTime(ts), Window: metav1.Duration{Duration: window}, Usage: usageList(cpu, mem)}
}

func newTestSampler(t *testing.T, f *fakeAPI, o MetricsOptions) *MetricsSampler {
	t.Helper()
	if o.Classifier == nil {
		c, err := NewClassifier("ambient", testNamespaces)
		if err != nil {
			t.Fatal(err)
		}
		o.Classifier = c
	}
	if o.Clock == nil {
		o.Clock = newFakeClock()
	}
	mc, cc := f.clients()
	s, err := NewMetricsSampler(mc, cc, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sampleNow(t *testing.T, s *MetricsSampler) sample.Round {
	t.Helper()
	r, err := s.SampleNow(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const mi = 1 << 20

// TestMetricsSamplerStale follows two pods and a node through six polls:
// new samples, the same ones served again (stale), a round where one pod
// is new and the other stale (mixed), a pod recreated under the same name
// that metrics-server still serves its predecessor's sample for (stale:
// metrics-server keys its samples by name, not UID), and its first own
// sample.
func TestMetricsSamplerStale(t *testing.T) {
	t1 := time.Date(2026, 11, 22, 9, 59, 50, 0, time.UTC)
	t2, t3, t4 := t1.Add(10*time.Second), t1.Add(20*time.Second), t1.Add(30*time.Second)
	const w = 10 * time.Second
	web := testPod("mb-app", "web-0", withLabels("app", "web"), onNode("n1"))
	web.UID = "u1"
	zt := testPod("istio-system", "ztunnel-a", withLabels("app", "ztunnel"), ownedBy("DaemonSet", "ztunnel"), onNode("n1"))
	f := newFakeAPI()
	f.pods = []corev1.Pod{*web, *zt}
	f.nodes = []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Allocatable: usageList("4", "16Gi")}}}
	webAt := func(ts time.Time, cpu string) metricsv1beta1.PodMetrics {
		return podMetrics("mb-app", "web-0", ts, w, ctr("web", cpu, "64Mi"), ctr("istio-proxy", "20123456n", "30Mi"))
	}
	ztAt := func(ts time.Time) metricsv1beta1.PodMetrics {
		return podMetrics("istio-system", "ztunnel-a", ts, w, ctr("istio-proxy", "5m", "10Mi"))
	}
	var raw bytes.Buffer
	s := newTestSampler(t, f, MetricsOptions{Raw: &raw})

	// Round 0: everything new.
	f.set(func(f *fakeAPI) {
		f.podMetrics = []metricsv1beta1.PodMetrics{webAt(t1, "250m"), ztAt(t1)}
		f.nodeMetrics = []metricsv1beta1.NodeMetrics{nodeMetrics("n1", t1, w, "275123456n", "104Mi")}
	})
	r0 := sampleNow(t, s)
	want0 := []sample.Sample{
		{Target: sample.Target{Name: "istio-system/ztunnel-a/istio-proxy", Component: "node proxy n1", Category: sample.CategoryDataPlane},
			Time: t1, CPUMillicores: 5, RSSBytes: 10 * mi, PSSBytes: 10 * mi, HasPSS: true},
		{Target: sample.Target{Name: "mb-app/web-0/istio-proxy", Component: "web sidecar", Category: sample.CategoryDataPlane},
			Time: t1, CPUMillicores: 20.123456, RSSBytes: 30 * mi, PSSBytes: 30 * mi, HasPSS: true},
		{Target: sample.Target{Name: "mb-app/web-0/web", Component: "app web", Category: sample.CategoryApp},
			Time: t1, CPUMillicores: 250, RSSBytes: 64 * mi, PSSBytes: 64 * mi, HasPSS: true},
	}
	if !reflect.DeepEqual(r0.Samples, want0) {
		t.Errorf("round 0 samples:\n%+v\nwant\n%+v", r0.Samples, want0)
	}
	if r0.Index != 0 || r0.Overhead.Processes != 3 || r0.Overhead.Wall <= 0 {
		t.Errorf("round 0: index %d, overhead %+v", r0.Index, r0.Overhead)
	}

	// Round 1: metrics-server has not scraped again: all stale.
	if r := sampleNow(t, s); len(r.Samples) != 0 || r.Index != 1 {
		t.Errorf("round 1 (all stale): %d samples, index %d", len(r.Samples), r.Index)
	}
	// Round 2: a new scrape.
	f.set(func(f *fakeAPI) {
		f.podMetrics = []metricsv1beta1.PodMetrics{webAt(t2, "260m"), ztAt(t2)}
		f.nodeMetrics = []metricsv1beta1.NodeMetrics{nodeMetrics("n1", t2, w, "285m", "104Mi")}
	})
	if r := sampleNow(t, s); len(r.Samples) != 3 || r.Samples[2].CPUMillicores != 260 || !r.Samples[2].Time.Equal(t2) {
		t.Errorf("round 2: %+v", r.Samples)
	}
	// Round 3: web is new, ztunnel and the node are not.
	f.set(func(f *fakeAPI) { f.podMetrics = []metricsv1beta1.PodMetrics{webAt(t3, "270m"), ztAt(t2)} })
	if r := sampleNow(t, s); len(r.Samples) != 2 || r.Samples[0].Name != "mb-app/web-0/istio-proxy" {
		t.Errorf("round 3 (mixed): %+v", r.Samples)
	}
	// Round 4: web-0 is a new pod (new UID), served the old one's sample
	// (same timestamp and window): stale. ztunnel moves on.
	web2 := web.DeepCopy()
	web2.UID = "u2"
	f.set(func(f *fakeAPI) {
		f.pods = []corev1.Pod{*web2, *zt}
		f.podMetrics = []metricsv1beta1.PodMetrics{webAt(t3, "270m"), ztAt(t3)}
		f.nodeMetrics = []metricsv1beta1.NodeMetrics{nodeMetrics("n1", t3, w, "295m", "104Mi")}
	})
	if r := sampleNow(t, s); len(r.Samples) != 1 || r.Samples[0].Name != "istio-system/ztunnel-a/istio-proxy" {
		t.Errorf("round 4 (recreated pod, old sample): %+v", r.Samples)
	}
	// Round 5: the new pod's own sample.
	f.set(func(f *fakeAPI) {
		f.podMetrics = []metricsv1beta1.PodMetrics{webAt(t4, "240m"), ztAt(t4)}
		f.nodeMetrics = []metricsv1beta1.NodeMetrics{nodeMetrics("n1", t4, w, "265m", "104Mi")}
	})
	if r := sampleNow(t, s); len(r.Samples) != 3 || r.Samples[2].CPUMillicores != 240 {
		t.Errorf("round 5 (recreated pod, new sample): %+v", r.Samples)
	}
	if !strings.Contains(raw.String(), `"round":5,"t_unix_ns":`) || !strings.Contains(raw.String(), `"uid":"u2"`) {
		t.Errorf("the raw file lacks the new pod's UID:\n%s", raw.String())
	}

	if pods, nodes := s.Stale(); pods != 4 || nodes != 2 {
		t.Errorf("Stale() = %d pods, %d nodes; want 4, 2", pods, nodes)
	}
	if m := s.MixedRounds(); m != 2 {
		t.Errorf("MixedRounds() = %d, want 2", m)
	}
	if errs := s.Errors(); len(errs) != 0 {
		t.Errorf("Errors() = %+v", errs)
	}
	// Allocatable is read once, when the node is first seen.
	if n := f.calls["nodes"]; n != 1 {
		t.Errorf("nodes listed %d times, want 1", n)
	}
	nodes := s.Nodes()
	var fresh []string
	for _, nr := range nodes {
		for _, n := range nr.Nodes {
			fresh = append(fresh, n.Time.Format("15:04:05"))
		}
	}
	if want := []string{"09:59:50", "10:00:00", "10:00:10", "10:00:20"}; !reflect.DeepEqual(fresh, want) {
		t.Errorf("fresh node samples at %v, want %v", fresh, want)
	}
	if n := nodes[0].Nodes[0]; n != (sample.NodeSample{Name: "n1", Time: t1, Window: w, CPUMillicores: 275.123456, MemoryBytes: 104 * mi,
		AllocatableCPUMillicores: 4000, AllocatableMemoryBytes: 16 << 30}) {
		t.Errorf("node sample %+v", n)
	}

	// Raw data first: one line per object per round plus the round's, and
	// they rebuild exactly what the sampler returned.
	if lines := strings.Count(raw.String(), "\n"); lines != 6*4 {
		t.Errorf("%d raw lines, want 24:\n%s", lines, raw.String())
	}
	if !strings.Contains(raw.String(), `"kind":"PodMetrics","round":1,`) || !strings.Contains(raw.String(), `"stale":true`) ||
		!strings.Contains(raw.String(), `"usage":{"cpu":"20123456n","memory":"30Mi"}`) {
		t.Errorf("raw lines lack the API's objects as given:\n%s", raw.String())
	}
	recs, err := ReadRaw(&raw)
	if err != nil {
		t.Fatal(err)
	}
	got := FromRaw(recs)
	want := RawRun{Rounds: s.Rounds(), Nodes: s.Nodes(), StalePods: 4, StaleNodes: 2, MixedRounds: 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromRaw:\n%+v\nwant\n%+v", got, want)
	}
}

// TestMetricsSamplerNamespaces: with namespaces given, only their pods are
// listed and sampled.
func TestMetricsSamplerNamespaces(t *testing.T) {
	ts := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := newFakeAPI()
	f.pods = []corev1.Pod{*testPod("mb-app", "a"), *testPod("other", "b")}
	f.podMetrics = []metricsv1beta1.PodMetrics{
		podMetrics("mb-app", "a", ts, time.Second, ctr("a", "1m", "1Mi")),
		podMetrics("other", "b", ts, time.Second, ctr("b", "1m", "1Mi")),
	}
	s := newTestSampler(t, f, MetricsOptions{Namespaces: []string{"mb-app", "mb-load", "mb-app"}})
	r := sampleNow(t, s)
	if len(r.Samples) != 1 || r.Samples[0].Name != "mb-app/a/a" {
		t.Errorf("samples %+v, want mb-app/a/a only", r.Samples)
	}
	if f.calls["pods"] != 2 || f.calls["podmetrics"] != 2 {
		t.Errorf("calls %v: want 2 pod lists and 2 PodMetrics lists (one per namespace)", f.calls)
	}
}

// TestMetricsSamplerPodNotListed: a pod in the metrics but not in the pod
// list is classified from the metrics' own labels, keyed by name.
func TestMetricsSamplerPodNotListed(t *testing.T) {
	ts := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := newFakeAPI()
	pm := podMetrics("mb-app", "new-0", ts, time.Second, ctr("new", "3m", "2Mi"))
	pm.Labels = map[string]string{"app": "new"}
	f.podMetrics = []metricsv1beta1.PodMetrics{pm}
	var raw bytes.Buffer
	s := newTestSampler(t, f, MetricsOptions{Raw: &raw})
	if r := sampleNow(t, s); len(r.Samples) != 1 || r.Samples[0].Component != "app new" {
		t.Errorf("samples %+v", r.Samples)
	}
	if r := sampleNow(t, s); len(r.Samples) != 0 {
		t.Errorf("the same sample again was counted: %+v", r.Samples)
	}
	if strings.Contains(raw.String(), `"uid"`) {
		t.Errorf("a pod that was not listed has a UID in the raw file:\n%s", raw.String())
	}
}

func TestMetricsSamplerUnavailable(t *testing.T) {
	gr := schema.GroupResource{Group: "metrics.k8s.io", Resource: "pods"}
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"404 no APIService", apierrors.NewNotFound(gr, "")},
		{"503 metrics-server down", apierrors.NewServiceUnavailable("the server is currently unable to handle the request")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeAPI()
			f.errs["podmetrics"] = tt.err
			s := newTestSampler(t, f, MetricsOptions{})
			_, err := s.SampleNow(context.Background())
			if !errors.Is(err, ErrMetricsUnavailable) ||
				!strings.HasPrefix(err.Error(), "metrics.k8s.io is not available: is metrics-server installed? (listing PodMetrics: ") {
				t.Fatalf("SampleNow: %v", err)
			}
			t.Log(err)
			if err := s.Run(context.Background()); !errors.Is(err, ErrMetricsUnavailable) {
				t.Errorf("Run: %v, want ErrMetricsUnavailable", err)
			}
			// Once it has answered, the same error is recorded, not returned.
			f.set(func(f *fakeAPI) { delete(f.errs, "podmetrics") })
			sampleNow(t, s)
			f.set(func(f *fakeAPI) { f.errs["podmetrics"] = tt.err })
			r := sampleNow(t, s)
			errs := s.Errors()
			if len(errs) != 1 || errs[0].Op != "list PodMetrics" || errs[0].Round != r.Index {
				t.Errorf("Errors() = %+v", errs)
			}
		})
	}
}

// TestMetricsSamplerAPIErrors: a failed call is recorded and the round
// goes on without what it would have given; the next round is not misled.
func TestMetricsSamplerAPIErrors(t *testing.T) {
	ts := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := newFakeAPI()
	f.pods = []corev1.Pod{*testPod("mb-app", "a", withLabels("app", "a"))}
	f.podMetrics = []metricsv1beta1.PodMetrics{podMetrics("mb-app", "a", ts, time.Second, ctr("a", "1m", "1Mi"))}
	f.nodeMetrics = []metricsv1beta1.NodeMetrics{nodeMetrics("n1", ts, time.Second, "1m", "1Mi")}
	// A 500 in the first round is not "unavailable": recorded.
	f.errs["pods"] = apierrors.NewInternalError(errors.New("etcd timeout"))
	f.errs["nodes"] = apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New("no"))
	s := newTestSampler(t, f, MetricsOptions{})
	r := sampleNow(t, s)
	if len(r.Samples) != 0 {
		t.Errorf("round with a failed pod list has samples: %+v", r.Samples)
	}
	if n := s.Nodes()[0].Nodes; len(n) != 1 || n[0].AllocatableCPUMillicores != 0 {
		t.Errorf("node samples of the round: %+v", n)
	}
	// The pod's sample was not taken: it is fresh next round.
	f.set(func(f *fakeAPI) {
		delete(f.errs, "pods")
		f.errs["nodemetrics"] = errors.New("connection reset")
	})
	r = sampleNow(t, s)
	if len(r.Samples) != 1 {
		t.Errorf("round after the failed one: %+v", r.Samples)
	}
	var ops []string
	for _, e := range s.Errors() {
		ops = append(ops, e.Op)
	}
	if want := []string{"list pods", "list nodes", "list NodeMetrics"}; !reflect.DeepEqual(ops, want) {
		t.Errorf("errors %v, want %v", ops, want)
	}
	if e := s.Errors()[0]; e.Round != 0 || !strings.Contains(e.Error, "etcd timeout") {
		t.Errorf("first error %+v", e)
	}
}

// TestMetricsSamplerRun: a round at once, one per tick, nil when ctx ends.
func TestMetricsSamplerRun(t *testing.T) {
	f := newFakeAPI()
	clock := newFakeClock()
	rounds := make(chan sample.Round, 10)
	s := newTestSampler(t, f, MetricsOptions{Clock: clock, OnRound: func(r sample.Round) { rounds <- r }})
	if s.Period() != DefaultMetricsPeriod {
		t.Errorf("Period() = %v, want the default %v", s.Period(), DefaultMetricsPeriod)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	if r := <-rounds; r.Index != 0 {
		t.Errorf("first round %d", r.Index)
	}
	clock.tick <- time.Now()
	if r := <-rounds; r.Index != 1 {
		t.Errorf("second round %d", r.Index)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
	if n := len(s.Rounds()); n != 2 {
		t.Errorf("%d rounds, want 2", n)
	}
}

type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.n++
	return 0, errors.New("disk full")
}

func TestMetricsSamplerRawWriteError(t *testing.T) {
	f := newFakeAPI()
	w := &failingWriter{}
	s := newTestSampler(t, f, MetricsOptions{Raw: w})
	sampleNow(t, s)
	sampleNow(t, s)
	if err := s.Err(); err == nil || err.Error() != "writing raw metrics: disk full" {
		t.Errorf("Err() = %v", err)
	}
	if w.n != 1 {
		t.Errorf("%d writes after a failed one, want none", w.n-1)
	}
	if len(s.Rounds()) != 2 {
		t.Error("sampling stopped after a failed write")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Run(ctx); err == nil {
		t.Error("Run does not return the write error")
	}
}

func TestNewMetricsSamplerErrors(t *testing.T) {
	mc, cc := newFakeAPI().clients()
	if _, err := NewMetricsSampler(mc, cc, MetricsOptions{}); err == nil {
		t.Error("no classifier accepted")
	}
	c, _ := NewClassifier("none", testNamespaces)
	if _, err := NewMetricsSampler(nil, cc, MetricsOptions{Classifier: c}); err == nil {
		t.Error("no metrics client accepted")
	}
}

// TestWithin keeps the samples whose whole window lies inside [from, to].
func TestWithin(t *testing.T) {
	t1 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	f := newFakeAPI()
	f.pods = []corev1.Pod{*testPod("mb-app", "a"), *testPod("mb-app", "b")}
	s := newTestSampler(t, f, MetricsOptions{})
	for i, windows := range [][2]time.Duration{{10 * time.Second, 5 * time.Second}, {10 * time.Second, 15 * time.Second}} {
		ts := t1.Add(time.Duration(i) * 10 * time.Second)
		f.set(func(f *fakeAPI) {
			f.podMetrics = []metricsv1beta1.PodMetrics{
				podMetrics("mb-app", "a", ts, windows[0], ctr("a", "1m", "1Mi")),
				podMetrics("mb-app", "b", ts, windows[1], ctr("b", "1m", "1Mi")),
			}
		})
		sampleNow(t, s)
	}
	names := func(rs []sample.Round) []string {
		var out []string
		for _, r := range rs {
			for _, x := range r.Samples {
				out = append(out, x.Name+"@"+x.Time.Format("04:05"))
			}
		}
		return out
	}
	for _, tt := range []struct {
		from, to time.Time
		want     []string
	}{
		// Round 0 covers [09:59:50, 10:00:00] (a) and [09:59:55, 10:00:00] (b);
		// round 1 [10:00:00, 10:00:10] (a) and [09:59:55, 10:00:10] (b).
		{time.Time{}, time.Time{}, []string{"mb-app/a/a@00:00", "mb-app/b/b@00:00", "mb-app/a/a@00:10", "mb-app/b/b@00:10"}},
		{t1.Add(-5 * time.Second), time.Time{}, []string{"mb-app/b/b@00:00", "mb-app/a/a@00:10", "mb-app/b/b@00:10"}},
		{t1, time.Time{}, []string{"mb-app/a/a@00:10"}},
		{time.Time{}, t1.Add(9 * time.Second), []string{"mb-app/a/a@00:00", "mb-app/b/b@00:00"}},
		{t1.Add(time.Second), t1.Add(20 * time.Second), nil},
	} {
		if got := names(s.Within(tt.from, tt.to)); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Within(%v, %v) = %v, want %v", tt.from.Format("04:05"), tt.to.Format("04:05"), got, tt.want)
		}
	}
	if rs := s.Within(t1, time.Time{}); len(rs) != 1 || rs[0].Index != 1 {
		t.Errorf("Within keeps round indexes: %+v", rs)
	}
}

func TestReadRawErrors(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"{\"kind\":\"round\",\"round\":0,\"t_unix_ns\":1}\nnot json\n", "line 2"},
		{`{"kind":"Pod","round":0}`, `unknown kind "Pod"`},
	} {
		if _, err := ReadRaw(strings.NewReader(tt.in)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ReadRaw(%q) = %v, want an error with %q", tt.in, err, tt.want)
		}
	}
}

// TestRawRecordPodUID: the raw file names the pod's UID and node.
func TestRawRecordPodUID(t *testing.T) {
	f := newFakeAPI()
	p := testPod("mb-app", "a", onNode("n7"))
	p.UID = types.UID("1234")
	f.pods = []corev1.Pod{*p}
	f.podMetrics = []metricsv1beta1.PodMetrics{podMetrics("mb-app", "a", time.Unix(100, 0), time.Second, ctr("a", "1m", "1Mi"))}
	var raw bytes.Buffer
	s := newTestSampler(t, f, MetricsOptions{Raw: &raw})
	sampleNow(t, s)
	line, _, _ := strings.Cut(raw.String(), "\n")
	want := `{"kind":"PodMetrics","round":0,"t_unix_ns":1795341600001000000,"namespace":"mb-app","name":"a","timestamp":"1970-01-01T00:01:40Z","window_ns":1000000000,"uid":"1234","node":"n7","containers":[{"name":"a","usage":{"cpu":"1m","memory":"1Mi"},"component":"app a","category":"app"}]}`
	if line != want {
		t.Errorf("raw line\n%s\nwant\n%s", line, want)
	}
}

func TestNodeTable(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	rounds := []sample.NodeRound{
		{Index: 0, Time: t0, Nodes: []sample.NodeSample{
			{Name: "n2", Time: t0, CPUMillicores: 100, MemoryBytes: 100 * mi},
			{Name: "n1", Time: t0, CPUMillicores: 500.25, MemoryBytes: 128 * mi, AllocatableCPUMillicores: 32000, AllocatableMemoryBytes: 256 << 30},
		}},
		{Index: 1, Time: t0.Add(time.Second), Nodes: []sample.NodeSample{}},
		{Index: 2, Time: t0.Add(2 * time.Second), Nodes: []sample.NodeSample{
			{Name: "n1", Time: t0, CPUMillicores: 501.75, MemoryBytes: 130 * mi, AllocatableCPUMillicores: 32000, AllocatableMemoryBytes: 256 << 30},
		}},
	}
	sum := sample.SummarizeNodes(rounds)
	if len(sum) != 2 || sum[0].Name != "n1" || sum[0].Rounds != 2 || sum[0].CPUMillicores != (sample.Stats{Min: 500.25, Max: 501.75, Avg: 501}) {
		t.Errorf("sample.SummarizeNodes: %+v", sum)
	}
	var b bytes.Buffer
	if err := report.NodeTable(&b, sum, false); err != nil {
		t.Fatal(err)
	}
	const want = `Node   CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg    CPU_%avg   Mem_%avg
n1     500m      502m      501.00m   128Mi     130Mi     129.00Mi   1.57%      0.05%
n2     100m      100m      100.00m   100Mi     100Mi     100.00Mi   -          -
Node usage from metrics.k8s.io: every container on the node and the node's own processes; Mem is the working set in Mi (2^20 bytes); % of allocatable.
`
	if b.String() != want {
		t.Errorf("node table:\n%s\nwant\n%s", b.String(), want)
	}
}
