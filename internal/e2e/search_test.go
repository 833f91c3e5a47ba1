package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/results"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
)

// TestSearchOnRealNodes: a capacity search on a cluster of real nodes.
// Every probe is a real cell on the cluster (the app deployed, a load Job
// at the probe's rate, the kubelet's figures, the namespaces deleted),
// stored in the plan directory like any cell. An objective no light load
// misses (p99 ≤ 2 s at 20 and 40 rps against the static app) makes the
// search grow from 20/s to its upper end, 40/s, and end "≥ to" after
// exactly those two probes: the search's steps, not a known capacity
// (the cluster's app has no concurrency bound; the lab's known answers
// are in internal/cli).
func TestSearchOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte(`platform: kube
repetitions: 1
axes:
  mesh: [none]
duration: 5s
warmup: 1s
connections: 4
workers: 1
sample_interval: 10s
search: {slo: {p99: 2s, errors: 1%}, from: 20, to: 40, precision: 50%}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	inv := meshbench(t, nil, "bench", plan, "--seed", "5", "--out", out, "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2s")
	if inv.code != 0 {
		t.Fatalf("exit %d", inv.code)
	}
	m, err := results.ReadPlanManifest(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Platform != results.PlatformKube || !m.Complete || len(m.Order) != 2 {
		t.Fatalf("plan: platform %s, complete %v, probes %v; want kube, complete, 2 probes", m.Platform, m.Complete, m.Order)
	}
	for i, id := range m.Order {
		st := m.Cells[id]
		if st.State != results.CellDone || !st.Valid {
			t.Errorf("probe %s: %s, valid %v: %v %q", id, st.State, st.Valid, st.Invalid, st.Error)
		}
		cd := results.CellDir(out, id)
		for _, f := range []string{results.ManifestFile, results.LoadFile, results.ResourcesFile, "k8s/app.yaml", "k8s/load-job.yaml"} {
			if _, err := os.Stat(filepath.Join(cd, f)); err != nil {
				t.Errorf("probe %s: %v", id, err)
			}
		}
		lr, err := results.ReadFile(filepath.Join(cd, results.LoadFile))
		if err != nil {
			t.Fatal(err)
		}
		want := []float64{20, 40}[i]
		if lr.TargetRatePerSec != want || lr.Success != lr.Sent || lr.Sent == 0 {
			t.Errorf("probe %s: target %v/s, %d of %d ok; want %v/s, all ok", id, lr.TargetRatePerSec, lr.Success, lr.Sent, want)
		}
	}
	if !strings.Contains(inv.stdout, "≥ 40/s") {
		t.Errorf("the report does not say the capacity is at least 40/s:\n%s", inv.stdout)
	}
	for _, f := range []string{"report.txt", "probes.csv", "report.html"} {
		if _, err := os.Stat(filepath.Join(out, "report", f)); err != nil {
			t.Errorf("report file: %v", err)
		}
	}
	checkClean(t, connect(t, kc), "e2s-app", "e2s-load")
}
