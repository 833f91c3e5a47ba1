package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/meshbench/meshbench/internal/measure/sample"
	"github.com/meshbench/meshbench/internal/platform/kube/metricsapi"
	"github.com/meshbench/meshbench/internal/report"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

var updateMetricsFixture = flag.Bool("update-metrics-fixture", false,
	"rewrite testdata/metrics/kwok-raw.jsonl with TestMetricsSamplerAgainstCluster's raw data")

// metricsFixture is a raw capture of TestMetricsSamplerAgainstCluster
// (real kube-apiserver, kwok, metrics-server), replayed without a cluster
// by TestMetricsFromKwokFixture.
var metricsFixture = filepath.Join("testdata", "metrics", "kwok-raw.jsonl")

// The cluster test's namespaces; Istio's is the real istio-system.
const (
	clusterAppNS  = "mbm-app"
	clusterLoadNS = "mbm-load"
)

// clusterWant is what every fresh round must hold for a component: n
// container samples, each of exactly the usage kwok was told.
type clusterWant struct {
	component, category string
	n                   int
	cpuMillicores       float64
	memMi               uint64
}

// clusterWants, in the tables' order. kwok's usage-from-annotation gives
// every container of a pod the pod's annotated usage; the two containers
// of "client" get their own values from a kwok ResourceUsage object.
var clusterWants = []clusterWant{
	{"app client", sample.CategoryApp, 1, 50, 20},
	{"app web", sample.CategoryApp, 2, 250, 64},
	{"load", sample.CategoryLoad, 1, 10, 8},
	{"client sidecar", sample.CategoryDataPlane, 1, 20, 30},
	{"node proxy kwok-node-0", sample.CategoryDataPlane, 1, 30, 40},
	{"node proxy kwok-node-1", sample.CategoryDataPlane, 1, 30, 40},
	{"waypoint", sample.CategoryDataPlane, 1, 12, 22},
	{"istiod", sample.CategoryControlPlane, 1, 100, 128},
	{"gateway", sample.CategoryGateway, 1, 15, 25},
}

// The tables the measured rounds must render, byte for byte, but for the
// round counts of the last line (see clusterTableNote).
const (
	clusterComponentTable = `Component                CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
app client               50m       50m       50.00m    20Mi      20Mi      20.00Mi
app web                  500m      500m      500.00m   128Mi     128Mi     128.00Mi
load                     10m       10m       10.00m    8Mi       8Mi       8.00Mi
client sidecar           20m       20m       20.00m    30Mi      30Mi      30.00Mi
node proxy kwok-node-0   30m       30m       30.00m    40Mi      40Mi      40.00Mi
node proxy kwok-node-1   30m       30m       30.00m    40Mi      40Mi      40.00Mi
waypoint                 12m       12m       12.00m    22Mi      22Mi      22.00Mi
istiod                   100m      100m      100.00m   128Mi     128Mi     128.00Mi
gateway                  15m       15m       15.00m    25Mi      25Mi      25.00Mi
TOTAL                    767m      767m      767.00m   441Mi     441Mi     441.00Mi
CPU in millicores (1000m = one core); Mem is the working set (metrics.k8s.io: memory in use minus inactive file pages, per container) in Mi (2^20 bytes).
`
	clusterCategoryTable = `Category        CPU_min   CPU_max   CPU_avg   Mem_min   Mem_max   Mem_avg
app             550m      550m      550.00m   148Mi     148Mi     148.00Mi
load            10m       10m       10.00m    8Mi       8Mi       8.00Mi
data-plane      92m       92m       92.00m    132Mi     132Mi     132.00Mi
control-plane   100m      100m      100.00m   128Mi     128Mi     128.00Mi
gateway         15m       15m       15.00m    25Mi      25Mi      25.00Mi
TOTAL           767m      767m      767.00m   441Mi     441Mi     441.00Mi
CPU in millicores (1000m = one core); Mem is the working set (metrics.k8s.io: memory in use minus inactive file pages, per container) in Mi (2^20 bytes).
`
)

// clusterTableNote is the last line of both tables: fresh rounds of all
// rounds measured.
func clusterTableNote(fresh, all int) string {
	return fmt.Sprintf("Each row is summed over its containers' fresh samples in every round; min, max and avg are over the rounds with one (TOTAL: %d of %d; a round where metrics.k8s.io served only samples already counted has none).\n", fresh, all)
}

// roundCPU returns r with every sample's CPU rounded to the millicore, as
// kubectl top shows it. metrics-server divides kwok's exact cumulative
// counter by the time between its own scrapes, so its nanocores are off
// by a few parts in 10⁴ (250m comes back as 249.97m or 250.04m); the
// rounded figures are exact.
func roundCPU(r sample.Round) sample.Round {
	r.Samples = slices.Clone(r.Samples)
	for i := range r.Samples {
		r.Samples[i].CPUMillicores = math.Round(r.Samples[i].CPUMillicores)
	}
	return r
}

// completeRound reports whether r holds exactly clusterWants (CPU rounded
// to the millicore), and if not, what it holds.
func completeRound(r sample.Round) (bool, string) {
	type got struct {
		n   int
		bad []string
	}
	by := map[string]*got{}
	var other []string
	for _, x := range r.Samples {
		i := slices.IndexFunc(clusterWants, func(w clusterWant) bool { return w.component == x.Component })
		if i < 0 {
			other = append(other, x.Name+" as "+x.Component)
			continue
		}
		w := clusterWants[i]
		g := by[w.component]
		if g == nil {
			g = &got{}
			by[w.component] = g
		}
		g.n++
		if x.Category != w.category || math.Round(x.CPUMillicores) != w.cpuMillicores || x.RSSBytes != w.memMi<<20 || x.PSSBytes != w.memMi<<20 || !x.HasPSS {
			g.bad = append(g.bad, fmt.Sprintf("%s %s %.3fm %dB", x.Name, x.Category, x.CPUMillicores, x.RSSBytes))
		}
	}
	var problems []string
	for _, w := range clusterWants {
		g := by[w.component]
		switch {
		case g == nil:
			problems = append(problems, w.component+": none")
		case g.n != w.n || len(g.bad) > 0:
			problems = append(problems, fmt.Sprintf("%s: %d samples (want %d), wrong: %v", w.component, g.n, w.n, g.bad))
		}
	}
	if len(other) > 0 {
		problems = append(problems, fmt.Sprintf("unexpected: %v", other))
	}
	return len(problems) == 0, strings.Join(problems, "; ")
}

// measuredRounds returns the rounds from the first complete one on (CPU
// rounded) and how many of them are complete; every round after the first
// complete one must be complete or empty (all stale).
func measuredRounds(t *testing.T, rounds []sample.Round) (measured []sample.Round, fresh int) {
	t.Helper()
	first := slices.IndexFunc(rounds, func(r sample.Round) bool { ok, _ := completeRound(r); return ok })
	if first < 0 {
		t.Fatalf("no round holds every expected sample")
	}
	for _, r := range rounds[first:] {
		if len(r.Samples) == 0 {
			measured = append(measured, r)
			continue
		}
		if ok, what := completeRound(r); !ok {
			t.Errorf("round %d is neither complete nor all stale: %s", r.Index, what)
		}
		fresh++
		measured = append(measured, roundCPU(r))
	}
	return measured, fresh
}

// checkTables renders the measured rounds and expects the tables exactly.
func checkTables(t *testing.T, measured []sample.Round, fresh int) {
	t.Helper()
	sum := sample.Summarize(measured)
	for _, tt := range []struct {
		by   report.GroupBy
		want string
	}{
		{report.ByComponent, clusterComponentTable},
		{report.ByCategory, clusterCategoryTable},
	} {
		var b bytes.Buffer
		if err := report.ResourceTable(&b, sum, report.TableOptions{By: tt.by, Memory: sample.WorkingSet}); err != nil {
			t.Fatal(err)
		}
		if want := tt.want + clusterTableNote(fresh, len(measured)); b.String() != want {
			t.Errorf("table:\n%s\nwant\n%s", b.String(), want)
		} else {
			t.Logf("over %d rounds, %d of them fresh:\n%s", len(measured), fresh, b.String())
		}
	}
}

// checkNoDoubleCounting: no container has two samples of the same
// timestamp, and each pod has as many fresh records as distinct
// (timestamp, window) pairs.
func checkNoDoubleCounting(t *testing.T, rounds []sample.Round, recs []metricsapi.RawRecord) {
	t.Helper()
	seen := map[string]bool{}
	for _, r := range rounds {
		for _, x := range r.Samples {
			k := x.Name + " " + x.Time.String()
			if seen[k] {
				t.Errorf("%s counted twice for timestamp %s", x.Name, x.Time)
			}
			seen[k] = true
		}
	}
	distinct := map[string]map[string]bool{}
	freshRecs := map[string]int{}
	for _, rec := range recs {
		if rec.Kind != metricsapi.RawPodMetrics {
			continue
		}
		pod := rec.Namespace + "/" + rec.Name + " " + rec.UID
		if distinct[pod] == nil {
			distinct[pod] = map[string]bool{}
		}
		distinct[pod][fmt.Sprint(rec.Timestamp.UnixNano(), rec.WindowNs)] = true
		if !rec.Stale {
			freshRecs[pod]++
		}
	}
	for pod, d := range distinct {
		if freshRecs[pod] != len(d) {
			t.Errorf("pod %s: %d fresh records for %d distinct samples", pod, freshRecs[pod], len(d))
		}
	}
}

// TestMetricsSamplerAgainstCluster samples a real metrics.k8s.io
// (kube-apiserver, kwok nodes, metrics-server at its 10 s resolution)
// every 3 s: an app Deployment of 2 pods at 250m/64Mi, a load Deployment,
// a two-container pod (app + istio-proxy) with per-container usage, a
// waypoint, and in istio-system a ztunnel DaemonSet (one pod per node),
// istiod and an ingress gateway. From the first round where every pod's
// metrics are right, the per-component and per-category tables must be
// exactly the usage kwok was given, the stale samples (polling faster than
// metrics-server scrapes) must be flagged and never counted twice, and the
// node metrics must add up to the pods on each node.
func TestMetricsSamplerAgainstCluster(t *testing.T) {
	c := kubetest.Require(t)
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs, mc := clusterClients(t, c)

	if _, err := cs.CoreV1().Namespaces().Get(ctx, IstioNamespace, metav1.GetOptions{}); err == nil {
		t.Fatalf("namespace %s already exists: another test left it behind (this test creates and deletes it)", IstioNamespace)
	}
	for _, ns := range []string{clusterAppNS, clusterLoadNS, IstioNamespace} {
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { deleteNamespace(t, cs, ns) })
	}

	// Per-container usage for the two-container pod: a kwok ResourceUsage
	// named after the pod takes precedence over the annotations.
	ru := fmt.Sprintf(`{"apiVersion":"kwok.x-k8s.io/v1alpha1","kind":"ResourceUsage","metadata":{"name":"client","namespace":%q},
"spec":{"usages":[{"containers":["client"],"usage":{"cpu":{"value":"50m"},"memory":{"value":"20Mi"}}},
{"containers":["istio-proxy"],"usage":{"cpu":{"value":"20m"},"memory":{"value":"30Mi"}}}]}}`, clusterAppNS)
	if _, err := c.KubectlStdin(ctx, []byte(ru), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	apps := cs.AppsV1()
	for _, d := range []*appsv1.Deployment{
		testDeployment(clusterAppNS, "web", 2, map[string]string{"app": "web"}, "250m", "64Mi", "web"),
		testDeployment(clusterAppNS, "waypoint", 1, map[string]string{"app": "waypoint",
			"gateway.networking.k8s.io/gateway-class-name": "istio-waypoint"}, "12m", "22Mi", metricsapi.ContainerIstioProxy),
		testDeployment(clusterLoadNS, "load", 1, map[string]string{"app": "load"}, "10m", "8Mi", "load"),
		testDeployment(IstioNamespace, "istiod", 1, map[string]string{"app": "istiod"}, "100m", "128Mi", "discovery"),
		testDeployment(IstioNamespace, "istio-ingressgateway", 1, map[string]string{"istio": "ingressgateway"}, "15m", "25Mi", metricsapi.ContainerIstioProxy),
	} {
		if _, err := apps.Deployments(d.Namespace).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dsLabels := map[string]string{"app": "ztunnel"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: IstioNamespace, Name: "ztunnel"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: dsLabels},
			Template: testPodTemplate(dsLabels, "30m", "40Mi", metricsapi.ContainerIstioProxy),
		},
	}
	if _, err := apps.DaemonSets(IstioNamespace).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: clusterAppNS, Name: "client", Labels: map[string]string{"app": "client"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "client", Image: "example.invalid/client:1"},
			{Name: metricsapi.ContainerIstioProxy, Image: "example.invalid/proxy:1"},
		}},
	}
	// A bare pod is admitted once the namespace's default ServiceAccount
	// exists (kube-controller-manager creates it).
	kubetest.Poll(ctx, t, 30*time.Second, "the client pod to be created", func() (bool, string) {
		_, err := cs.CoreV1().Pods(clusterAppNS).Create(ctx, client, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return false, err.Error()
		}
		return true, ""
	})

	namespaces := []string{clusterAppNS, clusterLoadNS, IstioNamespace}
	var pods []corev1.Pod
	kubetest.Poll(ctx, t, 90*time.Second, "9 Ready pods", func() (bool, string) {
		pods = pods[:0]
		var state []string
		for _, ns := range namespaces {
			l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, p := range l.Items {
				state = append(state, fmt.Sprintf("%s/%s node=%q ready=%v", p.Namespace, p.Name, p.Spec.NodeName, PodReady(&p)))
				if PodReady(&p) {
					pods = append(pods, p)
				}
			}
		}
		return len(pods) == 9, strings.Join(state, "; ")
	})
	tReady := time.Now()
	t.Logf("9 pods Ready %.1fs after the test started", tReady.Sub(t0).Seconds())

	classifier, err := metricsapi.NewClassifier("waypoint", metricsapi.Namespaces{App: clusterAppNS, Load: clusterLoadNS})
	if err != nil {
		t.Fatal(err)
	}
	var raw bytes.Buffer
	s, err := metricsapi.NewMetricsSampler(mc, cs, metricsapi.MetricsOptions{Period: 3 * time.Second, Classifier: classifier, Namespaces: namespaces, Raw: &raw})
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	stopped := false
	stopSampler := func() {
		if !stopped {
			stopped = true
			stop()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		}
	}
	defer stopSampler()

	// metrics-server reports a pod's CPU after two scrapes that include it;
	// then three fresh rounds are measured (about three scrapes).
	var tFirst time.Time
	kubetest.Poll(ctx, t, 12*kubetest.MetricResolution, "every pod's metrics right, then 3 fresh rounds", func() (bool, string) {
		rounds := s.Rounds()
		first := slices.IndexFunc(rounds, func(r sample.Round) bool { ok, _ := completeRound(r); return ok })
		if first < 0 {
			last := "no round yet"
			if len(rounds) > 0 {
				_, last = completeRound(rounds[len(rounds)-1])
			}
			return false, fmt.Sprintf("%d rounds, none complete; last: %s; errors: %v", len(rounds), last, s.Errors())
		}
		if tFirst.IsZero() {
			tFirst = time.Now()
		}
		fresh := 0
		for _, r := range rounds[first:] {
			if len(r.Samples) > 0 {
				fresh++
			}
		}
		return fresh >= 3, fmt.Sprintf("%d fresh rounds from round %d", fresh, first)
	})
	t.Logf("metrics right %.1fs after the pods were Ready; 3 fresh rounds %.1fs later", tFirst.Sub(tReady).Seconds(), time.Since(tFirst).Seconds())
	stopSampler()

	rounds := s.Rounds()
	measured, fresh := measuredRounds(t, rounds)
	checkTables(t, measured, fresh)

	// Stale samples: polled every 3 s against a 10 s resolution, most
	// answers repeat the last one; they are flagged, never counted twice.
	stalePods, staleNodes := s.Stale()
	t.Logf("%d rounds: %d stale pod samples, %d stale node samples, %d mixed rounds, %d API errors",
		len(rounds), stalePods, staleNodes, s.MixedRounds(), len(s.Errors()))
	if stalePods == 0 || staleNodes == 0 {
		t.Errorf("no stale samples at a 3 s period: pods %d, nodes %d", stalePods, staleNodes)
	}
	if fresh >= len(measured) {
		t.Errorf("every measured round was fresh (%d of %d): stale rounds expected", fresh, len(measured))
	}
	recs, err := metricsapi.ReadRaw(bytes.NewReader(raw.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	checkNoDoubleCounting(t, rounds, recs)
	if got := metricsapi.FromRaw(recs); len(got.Rounds) != len(rounds) || got.StalePods != stalePods || got.StaleNodes != staleNodes {
		t.Errorf("the raw file rebuilds %d rounds, %d/%d stale; the sampler had %d, %d/%d",
			len(got.Rounds), got.StalePods, got.StaleNodes, len(rounds), stalePods, staleNodes)
	}

	// Node metrics: kwok sums the usage of the pods on each node. Other
	// tests' pods could run there too; then only a lower bound holds.
	checkNodes(ctx, t, cs, s.Nodes(), measured, pods)

	if *updateMetricsFixture {
		if err := os.MkdirAll(filepath.Dir(metricsFixture), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(metricsFixture, raw.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", metricsFixture)
	}

	checkMetricsAPIGone(ctx, t, c, s, mc, cs, classifier)
	t.Logf("test body %.1fs", time.Since(t0).Seconds())
}

// TestMetricsFromKwokFixture replays a raw capture of the cluster test
// (testdata/metrics/kwok-raw.jsonl, -update-metrics-fixture rewrites it)
// through ReadRaw and FromRaw: the same tables, the same stale handling.
func TestMetricsFromKwokFixture(t *testing.T) {
	f, err := os.Open(metricsFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := metricsapi.ReadRaw(f)
	if err != nil {
		t.Fatal(err)
	}
	run := metricsapi.FromRaw(recs)
	measured, fresh := measuredRounds(t, run.Rounds)
	checkTables(t, measured, fresh)
	checkNoDoubleCounting(t, run.Rounds, recs)
	if run.StalePods == 0 || run.StaleNodes == 0 || fresh >= len(measured) {
		t.Errorf("the capture has no stale samples: pods %d, nodes %d, %d of %d rounds fresh", run.StalePods, run.StaleNodes, fresh, len(measured))
	}
	if len(run.Errors) != 0 {
		t.Errorf("API errors in the capture: %+v", run.Errors)
	}
}

// checkNodes compares each fresh node sample of the measured rounds with
// the sum of the usage of the test's pods on that node: memory exactly,
// CPU within 1m (metrics-server's jitter on the node's larger figure).
func checkNodes(ctx context.Context, t *testing.T, cs kubernetes.Interface, nodeRounds []sample.NodeRound, measured []sample.Round, pods []corev1.Pod) {
	t.Helper()
	wantCPU, wantMem := map[string]float64{}, map[string]uint64{}
	for _, p := range pods {
		for _, x := range measured[0].Samples {
			if strings.HasPrefix(x.Name, p.Namespace+"/"+p.Name+"/") {
				wantCPU[p.Spec.NodeName] += x.CPUMillicores
				wantMem[p.Spec.NodeName] += x.RSSBytes
			}
		}
	}
	all, err := cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	exact := len(all.Items) == len(pods)
	if !exact {
		t.Logf("%d pods in the cluster, %d of them this test's: node figures are checked as lower bounds", len(all.Items), len(pods))
	}
	firstIndex := measured[0].Index
	checked := 0
	for _, nr := range nodeRounds {
		if nr.Index < firstIndex {
			continue
		}
		for _, n := range nr.Nodes {
			checked++
			cpu, mem := wantCPU[n.Name], wantMem[n.Name]
			if n.AllocatableCPUMillicores != 32000 || n.AllocatableMemoryBytes != 256<<30 {
				t.Errorf("node %s allocatable %vm %dB, want kubetest's 32 cores, 256Gi", n.Name, n.AllocatableCPUMillicores, n.AllocatableMemoryBytes)
			}
			switch {
			case exact && (math.Abs(n.CPUMillicores-cpu) > 1 || n.MemoryBytes != mem):
				t.Errorf("round %d node %s: %.3fm %dB, want %.0fm %dB (the sum of its pods)", nr.Index, n.Name, n.CPUMillicores, n.MemoryBytes, cpu, mem)
			case !exact && (n.CPUMillicores < cpu-1 || n.MemoryBytes < mem):
				t.Errorf("round %d node %s: %.3fm %dB, less than its pods' %.0fm %dB", nr.Index, n.Name, n.CPUMillicores, n.MemoryBytes, cpu, mem)
			}
		}
	}
	if checked == 0 {
		t.Error("no fresh node sample in the measured rounds")
	}
	var b bytes.Buffer
	if err := report.NodeTable(&b, sample.SummarizeNodes(nodeRounds[firstIndex:]), false); err != nil {
		t.Fatal(err)
	}
	t.Logf("nodes:\n%s", b.String())
}

// checkMetricsAPIGone deletes metrics.k8s.io's APIService, as on a cluster
// without metrics-server: a new sampler's first round must fail with
// ErrMetricsUnavailable, while a sampler that has had answers (s) records
// the error and goes on. The APIService is put back and waited for.
func checkMetricsAPIGone(ctx context.Context, t *testing.T, c *kubetest.Cluster, s *metricsapi.MetricsSampler,
	mc metricsclient.Interface, cs kubernetes.Interface, classifier *metricsapi.Classifier) {
	t.Helper()
	const apiService = "apiservice/v1beta1.metrics.k8s.io"
	saved, err := c.Kubectl(ctx, "get", apiService, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kubectl(ctx, "delete", apiService); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if restored {
			return
		}
		restored = true
		// Re-create it from the saved object, without its identity and
		// status.
		var obj map[string]any
		if err := json.Unmarshal(saved, &obj); err != nil {
			t.Fatal(err)
		}
		meta := obj["metadata"].(map[string]any)
		obj["metadata"] = map[string]any{"name": meta["name"]}
		delete(obj, "status")
		b, _ := json.Marshal(obj)
		if _, err := c.KubectlStdin(ctx, b, "create", "-f", "-"); err != nil {
			t.Errorf("restoring the APIService: %v", err)
			return
		}
		if _, err := c.Kubectl(ctx, "wait", "--for=condition=Available", apiService, "--timeout=60s"); err != nil {
			t.Errorf("the restored APIService is not Available: %v", err)
		}
	}
	defer restore()

	var gotErr error
	kubetest.Poll(ctx, t, 30*time.Second, "metrics.k8s.io to be gone", func() (bool, string) {
		fresh, err := metricsapi.NewMetricsSampler(mc, cs, metricsapi.MetricsOptions{Classifier: classifier, Namespaces: []string{clusterAppNS}})
		if err != nil {
			t.Fatal(err)
		}
		_, gotErr = fresh.SampleNow(ctx)
		return errors.Is(gotErr, metricsapi.ErrMetricsUnavailable), fmt.Sprint(gotErr)
	})
	t.Logf("without the APIService, a new sampler's first round: %v", gotErr)
	before := len(s.Errors())
	if _, err := s.SampleNow(ctx); err != nil {
		t.Errorf("a sampler that had answers returned %v; want the error recorded", err)
	}
	if errs := s.Errors(); len(errs) <= before || !strings.Contains(errs[len(errs)-1].Op, "Metrics") {
		t.Errorf("errors recorded: %+v", errs[before:])
	}
	restore()
}

func clusterClients(t *testing.T, c *kubetest.Cluster) (kubernetes.Interface, metricsclient.Interface) {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: c.Kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := metricsclient.NewForConfig(rest.CopyConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return cs, mc
}

func testPodTemplate(labels map[string]string, cpu, mem string, containers ...string) corev1.PodTemplateSpec {
	tpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels,
		Annotations: map[string]string{kubetest.AnnotationUsageCPU: cpu, kubetest.AnnotationUsageMemory: mem}}}
	for _, name := range containers {
		tpl.Spec.Containers = append(tpl.Spec.Containers, corev1.Container{Name: name, Image: "example.invalid/" + name + ":1"})
	}
	return tpl
}

func testDeployment(ns, name string, replicas int32, labels map[string]string, cpu, mem string, containers ...string) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: testPodTemplate(labels, cpu, mem, containers...),
		},
	}
}

// deleteNamespace deletes ns and waits until it is gone, so that a later
// test may create it again.
func deleteNamespace(t *testing.T, cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s: %v", ns, err)
		return
	}
	kubetest.Poll(ctx, t, 2*time.Minute, "namespace "+ns+" to be gone", func() (bool, string) {
		_, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprint(err)
	})
}
