package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/meshbench/meshbench/internal/kubetest"
	"github.com/meshbench/meshbench/internal/platform/kube"
	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testutil"
)

// TestBenchOnCluster runs a plan on the real test cluster (API server,
// controllers, scheduler, kwok nodes, metrics-server): `meshbench bench`
// with platform kube, two cells, each deploying the app into fresh
// namespaces, sampling metrics.k8s.io, running an Indexed load Job of two
// workers, collecting and merging their logs and deleting everything;
// then the comparison and the reports, which read the cells as they read
// the local lab's.
//
// kwok runs no container: the one stand-in is the load workers, run on
// this machine with the Job's own arguments against a loopback server and
// served by kwok as the pods' logs (kubetest.StandInWorkers).
func TestBenchOnCluster(t *testing.T) {
	kc := kubetest.Require(t)
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

	dir := t.TempDir()
	planFile := filepath.Join(dir, "kube.yaml")
	os.WriteFile(planFile, []byte(`platform: kube
repetitions: 1
axes:
  mesh: [none]
  rate: [20, 40]
duration: 22s
warmup: 1s
connections: 4
workers: 2
sample_interval: 3s
`), 0o644)
	out := filepath.Join(dir, "out")
	inv := runCLI(t, nil, "bench", planFile, "--seed", "5", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "mbb")
	if inv.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", inv.code, inv.stdout, inv.stderr)
	}
	t.Logf("meshbench bench (stderr):\n%s\nstdout:\n%s", inv.stderr, inv.stdout)
	for _, want := range []string{"== static, 20 rps, 1 replica ==", "== static, 40 rps, 1 replica ==", "p50 ms", "Reports: "} {
		if !strings.Contains(inv.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, inv.stdout)
		}
	}
	for _, want := range []string{"2 cells", "on https://127.0.0.1:", "Kubernetes v1.", "phase idle", "phase collect", "idle: app CPU", "[2/2] none-static-r"} {
		if !strings.Contains(inv.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, inv.stderr)
		}
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Platform != "kube" || !m.Complete || len(m.Order) != 2 || len(m.Labs) != 0 {
		t.Errorf("plan manifest: platform %q, complete %v, %d cells, %d labs; want kube, true, 2, 0", m.Platform, m.Complete, len(m.Order), len(m.Labs))
	}
	for _, id := range m.Order {
		st := m.Cells[id]
		if st.State != results.CellDone || !st.Valid {
			t.Errorf("cell %s: %s, valid %v: %v %q", id, st.State, st.Valid, st.Invalid, st.Error)
		}
		cd := results.CellDir(out, id)
		for _, f := range []string{results.ManifestFile, results.LoadFile, results.ResourcesFile, "metrics-raw.jsonl", "k8s/app.yaml", "k8s/load-job.yaml"} {
			if _, err := os.Stat(filepath.Join(cd, f)); err != nil {
				t.Errorf("cell %s: %v", id, err)
			}
		}
		cm, err := results.ReadManifest(cd)
		if err != nil {
			t.Fatal(err)
		}
		if cm.Platform != "kube" || cm.Options["workers"] != float64(2) {
			t.Errorf("cell %s: platform %q, workers %v", id, cm.Platform, cm.Options["workers"])
		}
		lr, err := results.ReadFile(filepath.Join(cd, results.LoadFile))
		if err != nil {
			t.Fatal(err)
		}
		want := 20.0
		if strings.Contains(id, "-r40-") {
			want = 40
		}
		if r := lr.AchievedRatePerSec(); lr.Workers != 2 || r < want*0.95 || r > want*1.05 {
			t.Errorf("cell %s: %d workers merged at %.1f/s, want 2 at %.0f/s", id, lr.Workers, r, want)
		}
	}
	html, err := os.ReadFile(filepath.Join(out, ReportDir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"metrics.k8s.io", "working set", "<td>platform</td><td>kube</td>"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// Nothing left behind on the cluster.
	c, err := kube.Connect(context.Background(), kube.ConnectOptions{Kubeconfig: kc.Kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"mbb-app", "mbb-load"} {
		if _, err := c.Core.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s after the plan: %v", ns, err)
		}
	}
}

// TestBenchKubeFlagsNeedKube: a cluster flag with a local plan is one
// line and exit 2, and runs nothing.
func TestBenchKubeFlagsNeedKube(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	inv := runCLI(t, nil, "bench", "--mesh", "none", "--kubeconfig", "/nowhere", "--out", out)
	if inv.code != ExitUsage || !strings.Contains(inv.stderr, "--kubeconfig: only with platform kube") {
		t.Errorf("exit %d, stderr %s", inv.code, inv.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("results directory created")
	}
	inv = runCLI(t, nil, "bench", "--platform", "kube", "--mesh", "none", "--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--out", out)
	if inv.code == 0 || !strings.Contains(inv.stderr, "kubeconfig") || strings.Count(strings.TrimSpace(inv.stderr), "\n") > 0 {
		t.Errorf("missing kubeconfig: exit %d, stderr %q", inv.code, inv.stderr)
	}
}
