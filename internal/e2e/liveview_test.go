package e2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/meshbench/meshbench/internal/cli"
	"github.com/meshbench/meshbench/internal/testkit/kubetest"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestLiveViewOnRealNodes: `bench` on a cluster with stderr a terminal
// draws the seed tool's view with what the cluster gives while the cell
// runs: the metrics source, a line per node from metrics.k8s.io, and the
// two load workers' running figures read back from their pods' logs
// (--progress-log, followed with client-go) and merged: the rate summed,
// near the cell's 40/s. The frames are checked in the bytes written to
// the "terminal".
func TestLiveViewOnRealNodes(t *testing.T) {
	kc := kubetest.Require(t)
	out := filepath.Join(t.TempDir(), "out")
	var so, se testutil.SyncBuffer
	env := &cli.Env{Stdout: &so, Stderr: &se, Getenv: os.Getenv, Now: time.Now, StderrIsTTY: true,
		StderrWidth: func() int { return 250 }} // no line cut
	args := []string{"bench", "--platform", "kube", "--kubeconfig", kc.Kubeconfig, "--namespace-prefix", "e2lv",
		"--mesh", "none", "--rate", "40", "--workers", "2", "--repetitions", "1",
		// 25 s: metrics-server's 10-s node samples need that long to
		// give at least one round inside the measured window.
		"--duration", "25s", "--warmup", "2s", "--out", out}
	code := cli.Run(context.Background(), env, args)
	stderr := se.String()
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// The source the cell chose (auto), and the node lines' own.
	if !regexp.MustCompile(`\nmetrics: (kubelet \(/metrics/resource\)|metrics\.k8s\.io); nodes: metrics\.k8s\.io`).MatchString(stderr) {
		t.Error("no metrics source line naming the source chosen and the nodes' in the view")
	}
	// Real nodes report their allocatable: a share in % on each line.
	if !regexp.MustCompile(`\nNode \S+ +[0-9.]+% CPU, +[0-9.]+% mem: +\d+ mC`).MatchString(stderr) {
		t.Error("no node line with its shares of allocatable in the view")
	}
	// The running figures of both workers, merged.
	re := regexp.MustCompile(`load: ([0-9.]+)/s  p50 ≤\S+  p99 ≤\S+  sent (\d+)  errors (\d+) \(running, measured window; 2 workers`)
	ms := re.FindAllStringSubmatch(stderr, -1)
	if len(ms) == 0 {
		t.Fatalf("no running load line of 2 workers in the view:\n%s", tail(stderr, 4000))
	}
	last := ms[len(ms)-1]
	rate, _ := strconv.ParseFloat(last[1], 64)
	sent, _ := strconv.Atoi(last[2])
	// 2 × 20/s, open loop: each worker's rate is its sent count over its
	// elapsed time, so the sum sits near 40/s once the window has run a
	// few seconds; 30 to 50 allows for a late start on a loaded machine.
	if rate < 30 || rate > 50 || sent < 100 || last[3] != "0" {
		t.Errorf("last running load line %q: want about 40/s, ≥ 100 sent, no errors", last[0])
	}
	t.Logf("%d running load lines; last: %s", len(ms), last[0])
	checkClean(t, connect(t, kc), "e2lv-app", "e2lv-load")
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
