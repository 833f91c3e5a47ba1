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
