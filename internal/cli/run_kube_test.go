package cli

import (
	"bytes"
	"flag"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/kubetest"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/testutil"
)

var kubeRunDuration = flag.Duration("kube-run-duration", 20*time.Second,
	"TestRunKubeCounters' measured window (60s for the issue's closing figures)")

// TestRunKubeCounters runs `meshbench run --platform kube` with the
// kubelet's counters on the test cluster (kwok emulates the kubelet's
// /metrics/resource; the load workers are stand-ins, see TestBenchOnCluster)
// and checks the printout a user sees: the source, the tables from the
// counters, the counter notes and the metrics.k8s.io cross-check.
func TestRunKubeCounters(t *testing.T) {
	kc := kubetest.Require(t)
	if !kc.NodeProxy {
		t.Skip("the test cluster's nodes are on 127.0.0.1, which the node proxy refuses (kubetest needs root to put them on lo)")
	}
	bin := testutil.BuildMeshbench(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte("x"), 615))
	}))
	defer srv.Close()
	kubeCellHook = func(o *kube.Options) {
		o.BeforeCollect = kc.StandInWorkers(bin, srv.URL+"/", kube.LoadContainer, nil)
		o.IdleTimeout, o.ReadyTimeout = time.Minute, time.Minute
	}
	defer func() { kubeCellHook = nil }()
	out := filepath.Join(t.TempDir(), "run")
	inv := runCLI(t, nil, "run", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "mbc",
		"--metrics-source", "kubelet", "--replicas", "2", "--rate", "20", "--connections", "2",
		"--duration", kubeRunDuration.String(), "--warmup", "1s", "--metrics-interval", "10s", "--out", out)
	t.Logf("meshbench run --platform kube --metrics-source kubelet (stdout):\n%s", inv.stdout)
	if inv.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", inv.code, inv.stderr)
	}
	for _, want := range []string{
		"Resources from the kubelet's counters (asked for (--metrics-source kubelet)",
		"Component ", "Category ", "CPU by the kubelet's cumulative counters over ",
		"Node usage from the kubelet's counters", "Counter readings: ", "Sampler: every 1s, 2 node(s)",
		"metrics.k8s.io over the same run (cross-check)", "Drain: app idle again",
	} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	if !strings.Contains(inv.stderr, "resources from the kubelet's counters") {
		t.Errorf("stderr does not say the source:\n%s", inv.stderr)
	}
}

// TestRunKubeMetricsSourceFlag: a wrong --metrics-source is one line and
// exit 2, before any cluster is contacted.
func TestRunKubeMetricsSourceFlag(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--platform", "kube", "--metrics-source", "prometheus"},
		{"run", "--platform", "kube", "--kubelet-interval", "0s"},
		{"doctor", "--metrics-source", "cadvisor"},
	} {
		inv := runCLI(t, nil, args...)
		if inv.code != 2 || !strings.Contains(inv.stderr, "allowed: auto, kubelet, metrics-api") && !strings.Contains(inv.stderr, "must be > 0") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and what is allowed", args, inv.code, inv.stderr)
		}
	}
}
