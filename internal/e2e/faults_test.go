package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/analysis"
	"github.com/meshbench/meshbench/internal/platform/fault"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// killCell runs one short cell of mesh on the test cluster's Istio install
// (TestIstioOnRealNodes') with the kill fault kill, as a user does: `run
// --platform kube --fault kill:PART@2s`. It checks that the part's pod was
// deleted and a new one was Ready in its place (the record, and the pods
// seen), that the cost is read from the workers' 250-ms intervals and is
// plausible (the kill inside the window, failed requests at most those
// sent, a p99 before and during), that `run` printed it, that the cell
// stayed valid, and that nothing of the run is left. It returns the cost
// (the figures docs/faults.md quotes).
func killCell(t *testing.T, kc *kubetest.Cluster, c *kube.Cluster, mesh, kill, prefix string) analysis.FaultCost {
	t.Helper()
	out := filepath.Join(t.TempDir(), prefix)
	w := watchPods(c, prefix+"-app", kube.IstioNamespace)
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", prefix,
		"--mesh", mesh, "--replicas", "2", "--workers", "1", "--rate", "100", "--duration", "8s", "--fault", kill, "--out", out)
	w.Stop()
	if inv.code != 0 {
		t.Fatalf("run --mesh %s --fault %s: exit %d", mesh, kill, inv.code)
	}
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Valid {
		t.Errorf("%s: the cell is invalid: %v", kill, m.Invalid)
	}
	var rec fault.Record
	b, _ := json.Marshal(m.Options["fault_record"])
	if err := json.Unmarshal(b, &rec); err != nil || rec.Start.IsZero() || rec.End.Before(rec.Start) || len(rec.Errors) > 0 {
		t.Fatalf("%s: options.fault_record %s (%v); want it applied, ended, no errors", kill, b, err)
	}
	// "deleted pod NS/OLD (the PART)", then "pod NS/NEW Ready in its
	// place, Ns after the delete".
	var old, rep string
	var took float64
	for _, e := range rec.Events {
		if s, ok := strings.CutPrefix(e.What, "deleted pod "); ok {
			old, _, _ = strings.Cut(s, " ")
		}
		if g := regexp.MustCompile(`^pod (\S+) Ready in its place, ([0-9.]+)s after`).FindStringSubmatch(e.What); g != nil {
			rep = g[1]
			took, _ = strconv.ParseFloat(g[2], 64)
		}
	}
	if old == "" || rep == "" || old == rep || took <= 0 {
		t.Fatalf("%s: events %+v; want a pod deleted and another Ready in its place", kill, rec.Events)
	}
	ns, name, _ := strings.Cut(rep, "/")
	seen := false
	for _, p := range w.Pods(ns, "") {
		seen = seen || p.Name == name
	}
	if !seen {
		t.Errorf("%s: the replacement %s was never seen", kill, rep)
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	// 8 s of 250 ms is 32 intervals; a request the kill left hanging
	// ends at the default 10-s timeout (seen: one, failed "after"), and
	// the intervals go on to its answer: at most 18 s of them then.
	if n, late := len(lr.Intervals), lateAnswer(t, lr); n < 28 || n > 34 && !late || n > 74 {
		t.Errorf("%s: %d intervals in the load result, want about 32 (8 s of 250 ms), up to 72 only with an answer past the window", kill, n)
	}
	fc, ok, err := analysis.FaultCostOf(m, lr)
	if err != nil || !ok {
		t.Fatalf("%s: no fault cost: %v", kill, err)
	}
	if fc.StartS < 1 || fc.StartS > 3.5 || fc.FailedDuring+fc.FailedAfter > int64(lr.Sent) || fc.P99BeforeMs <= 0 || fc.P99DuringMs <= 0 {
		t.Errorf("%s: cost %s; want the kill near +2s, failed ≤ %d sent, a p99 before and during", kill, fc, lr.Sent)
	}
	if !strings.Contains(inv.stdout, "Fault        "+rec.Fault) {
		t.Errorf("%s: run did not print the fault's cost", kill)
	}
	t.Logf("%s on %s: %s replaced by %s in %.2fs; %s; %d sent, %d ok", kill, mesh, old, rep, took, fc, lr.Sent, lr.Success)
	checkClean(t, c, prefix+"-app", prefix+"-load")
	return fc
}

// ztunnelsReady fails t unless the ztunnel DaemonSet has a Ready pod on
// every node it should (a killed one was replaced, none is missing).
func ztunnelsReady(t *testing.T, c *kube.Cluster) {
	t.Helper()
	ds, err := c.Core.AppsV1().DaemonSets(kube.IstioNamespace).Get(context.Background(), "ztunnel", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := ds.Status; s.DesiredNumberScheduled == 0 || s.NumberReady != s.DesiredNumberScheduled {
		t.Errorf("ztunnel DaemonSet: %d of %d Ready after the kill", s.NumberReady, s.DesiredNumberScheduled)
	}
}

// limitCell runs one sidecar cell with `--fault cpu-limit:sidecar=100@2s`
// (to the window's end) and interrupts it, as Ctrl-C does, once the server
// pod's istio-proxy container (Istio gives it a 2-core CPU limit) shows
// the 100m limit: the run must still undo it (the record: the limit
// applied, the old one named, then undone with no error; the undo returns
// only once the kubelet reports the original limit applied again), keep
// its results, exit 130 and leave nothing.
func limitCell(t *testing.T, kc *kubetest.Cluster, c *kube.Cluster, prefix string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), prefix)
	w := watchPods(c, prefix+"-app")
	defer w.Stop()
	sig := make(chan os.Signal, 1)
	done := make(chan invocation, 1)
	go func() {
		done <- meshbench(t, sig, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", prefix,
			"--mesh", "sidecar", "--replicas", "2", "--workers", "1", "--rate", "100", "--duration", "8s",
			"--fault", "cpu-limit:sidecar=100@2s", "--out", out)
	}()
	limited := func() bool {
		for _, p := range w.Pods(prefix+"-app", "") {
			for _, ct := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if q, ok := ct.Resources.Limits[corev1.ResourceCPU]; ok && ct.Name == "istio-proxy" && q.MilliValue() == 100 {
					return true
				}
			}
		}
		return false
	}
	waitFor(t, 3*time.Minute, "the sidecar limited to 100m", func() bool {
		select {
		case inv := <-done:
			t.Fatalf("run --fault cpu-limit ended (exit %d) before its limit was seen", inv.code)
		default:
		}
		return limited()
	})
	sig <- os.Interrupt
	inv := <-done
	if inv.code != 130 {
		t.Errorf("cpu-limit interrupted: exit %d, want 130", inv.code)
	}
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	var rec fault.Record
	b, _ := json.Marshal(m.Options["fault_record"])
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.Errors) > 0 || len(rec.Events) != 2 ||
		!regexp.MustCompile(`^pod \S+ container istio-proxy: CPU limit 100m \(was \S+\), applied by the kubelet`).MatchString(rec.Events[0].What) ||
		rec.Events[1].What != "undone" {
		t.Fatalf("cpu-limit interrupted: options.fault_record %s (%v); want the limit applied, then undone", b, err)
	}
	t.Logf("cpu-limit:sidecar=100@2s on sidecar, interrupted: %s; undone at +%.2fs", rec.Events[0].What, rec.EndS)
	checkClean(t, c, prefix+"-app", prefix+"-load")
}

// lateAnswer reports whether some answer of lr took over a second: a
// request the fault left hanging until its timeout.
func lateAnswer(t *testing.T, lr *results.LoadResult) bool {
	t.Helper()
	_, svc, _, err := lr.Histograms()
	if err != nil {
		t.Fatal(err)
	}
	return svc.MaxNs() > int64(time.Second)
}

// faultRun runs one short sidecar cell (2 replicas, 100 rps, 8 s) with
// fault flt as a user does, watching the app's pods, and returns its
// record, its cost, the pods seen and its stdout; the cell must have
// run, stayed valid, printed its cost and left nothing.
func faultRun(t *testing.T, kc *kubetest.Cluster, c *kube.Cluster, flt, prefix string) (fault.Record, analysis.FaultCost, *podWatch, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), prefix)
	w := watchPods(c, prefix+"-app")
	inv := meshbench(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", prefix,
		"--mesh", "sidecar", "--replicas", "2", "--workers", "1", "--rate", "100", "--duration", "8s", "--fault", flt, "--out", out)
	w.Stop()
	if inv.code != 0 {
		t.Fatalf("run --fault %s: exit %d", flt, inv.code)
	}
	m, err := results.ReadManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Valid {
		t.Errorf("%s: the cell is invalid: %v", flt, m.Invalid)
	}
	var rec fault.Record
	b, _ := json.Marshal(m.Options["fault_record"])
	if err := json.Unmarshal(b, &rec); err != nil || rec.Start.IsZero() || rec.End.Before(rec.Start) || len(rec.Errors) > 0 {
		t.Fatalf("%s: options.fault_record %s (%v); want it applied, undone, no errors", flt, b, err)
	}
	lr, err := results.ReadFile(filepath.Join(out, results.LoadFile))
	if err != nil {
		t.Fatal(err)
	}
	fc, ok, err := analysis.FaultCostOf(m, lr)
	if err != nil || !ok {
		t.Fatalf("%s: no fault cost: %v", flt, err)
	}
	if fc.StartS < 1 || fc.StartS > 4 || fc.FailedDuring+fc.FailedAfter > int64(lr.Sent) || fc.P99BeforeMs <= 0 || fc.P99DuringMs <= 0 {
		t.Errorf("%s: cost %s; want it near +2s, failed ≤ %d sent, a p99 before and during", flt, fc, lr.Sent)
	}
	if !strings.Contains(inv.stdout, "Fault        "+rec.Fault) {
		t.Errorf("%s: run did not print the fault's cost", flt)
	}
	checkClean(t, c, prefix+"-app", prefix+"-load")
	return rec, fc, w, inv.stdout
}

// noisyCell runs `--fault noisy-neighbour:500@2s+4s` on sidecar: the hog
// pod ran on the server's node (the record names both; the pods seen
// agree), requested and limited to 500m, out of the mesh, busy (its own
// account: CPU above 0 and within its limit; the kubelet's counters: a
// row of its own, as overhead, apart from the app's), and was deleted at
// the fault's end (the record says it was gone, with the hog's account).
func noisyCell(t *testing.T, kc *kubetest.Cluster, c *kube.Cluster, prefix string) {
	t.Helper()
	rec, fc, w, stdout := faultRun(t, kc, c, "noisy-neighbour:500@2s+4s", prefix)
	if len(rec.Events) != 3 || rec.Events[2].What != "undone" {
		t.Fatalf("noisy-neighbour: events %+v; want the hog running, deleted, undone", rec.Events)
	}
	g := regexp.MustCompile(`^hog pod (\S+)/(\S+) on node (\S+) \(the server's: pod (\S+)\), CPU 500m`).FindStringSubmatch(rec.Events[0].What)
	if g == nil {
		t.Fatalf("noisy-neighbour: %q; want the hog pod, its node and the server's pod", rec.Events[0].What)
	}
	ns, hog, node, server := g[1], g[2], g[3], g[4]
	var hogSeen, serverSeen bool
	for _, p := range w.Pods(ns, "") {
		switch p.Name {
		case server:
			serverSeen = p.Spec.NodeName == node
		case hog:
			ct := p.Spec.Containers
			hogSeen = p.Spec.NodeName == node && len(ct) == 1 && ct[0].Resources.Limits.Cpu().MilliValue() == 500 && ct[0].Resources.Requests.Cpu().MilliValue() == 500
		}
	}
	if !hogSeen || !serverSeen {
		t.Errorf("noisy-neighbour: hog %s seen on %s with 500m: %v; server %s seen there: %v", hog, node, hogSeen, server, serverSeen)
	}
	m := regexp.MustCompile(`^hog pod \S+ deleted, gone [0-9.]+s later; by its own account: busy ([0-9.]+)s on 1 thread\(s\) .*, CPU [0-9.]+s \(([0-9]+)m\)$`).FindStringSubmatch(rec.Events[1].What)
	if m == nil {
		t.Fatalf("noisy-neighbour: %q; want the hog deleted with its own account", rec.Events[1].What)
	}
	busy, _ := strconv.ParseFloat(m[1], 64)
	mc, _ := strconv.Atoi(m[2])
	if busy < 2 || busy > 8 || mc <= 0 || mc > 550 {
		t.Errorf("noisy-neighbour: busy %.2fs at %dm; want about the fault's 4 s, above 0 and within the 500m limit", busy, mc)
	}
	// The node's counters saw it busy, as overhead: not the app's CPU.
	if hogCPU, appCPU := rowCPU(stdout, "noisy neighbour (fault)"), rowCPU(stdout, "app static"); hogCPU <= 0 || appCPU <= 0 || appCPU >= hogCPU {
		t.Errorf("noisy-neighbour: its row's CPU_avg %vm, the app's %vm; want the hog busy in its own row, the app apart", hogCPU, appCPU)
	}
	t.Logf("noisy-neighbour:500@2s+4s on sidecar: %s; %s; %s", rec.Events[0].What, rec.Events[1].What, fc)
}

// slowCell runs `--fault slow-replica:1=200ms@2s+4s` on sidecar with 2
// replicas: the first replica (by name) answered 200 ms later, reached
// through a port-forward to its loopback control port, by its own
// measure (the record) and in the load's p99 during the fault; then the
// delay was taken away, and the pod was never changed or restarted.
func slowCell(t *testing.T, kc *kubetest.Cluster, c *kube.Cluster, prefix string) {
	t.Helper()
	rec, fc, w, _ := faultRun(t, kc, c, "slow-replica:1=200ms@2s+4s", prefix)
	if len(rec.Events) != 3 || rec.Events[2].What != "undone" {
		t.Fatalf("slow-replica: events %+v; want the replica slowed, back, undone", rec.Events)
	}
	g := regexp.MustCompile(`^replica 0 \(pod (\S+)/(\S+)\) answers 200ms later$`).FindStringSubmatch(rec.Events[0].What)
	if g == nil {
		t.Fatalf("slow-replica: %q; want replica 0's pod slowed", rec.Events[0].What)
	}
	m := regexp.MustCompile(`answers without the delay again; by its own measure ([0-9]+) answer\(s\) waited, p50 (\S+),`).FindStringSubmatch(rec.Events[1].What)
	if m == nil {
		t.Fatalf("slow-replica: %q; want its own measure", rec.Events[1].What)
	}
	n, _ := strconv.Atoi(m[1])
	p50, err := time.ParseDuration(m[2])
	if n == 0 || err != nil || p50 < 200*time.Millisecond || p50 > 400*time.Millisecond {
		t.Errorf("slow-replica: %d answers waited, p50 %s; want some, about 200ms", n, m[2])
	}
	if fc.P99DuringMs < 200 {
		t.Errorf("slow-replica: p99 during %.1f ms; want the slowed replica's 200 ms in it", fc.P99DuringMs)
	}
	for _, p := range w.Pods(g[1], "") {
		if p.Name != g[2] {
			continue
		}
		for _, st := range p.Status.ContainerStatuses {
			if st.RestartCount > 0 {
				t.Errorf("slow-replica: container %s of %s restarted", st.Name, p.Name)
			}
		}
		for _, ct := range p.Spec.Containers {
			if args := strings.Join(ct.Args, " "); ct.Name == kube.AppContainer && !strings.Contains(args, "--control 127.0.0.1:9990") {
				t.Errorf("slow-replica: the slowed pod runs %q; want its control on the pod's loopback", args)
			}
		}
	}
	t.Logf("slow-replica:1=200ms@2s+4s on sidecar: %s; %s; %s", rec.Events[0].What, rec.Events[1].What, fc)
}
