package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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

// TestBenchKubePayloadWithAppImage: a payload axis with --app-image (an
// image run as it is, whose answer meshbench does not size) is one line
// and exit 2, before anything is created.
func TestBenchKubePayloadWithAppImage(t *testing.T) {
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.yaml")
	if err := os.WriteFile(plan, []byte("platform: kube\naxes:\n  mesh: [none]\n  payload: [1024]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	inv := runCLI(t, nil, "bench", plan, "--app-image", "nginx:1.27", "--kubeconfig", filepath.Join(dir, "missing"), "--out", out)
	if inv.code != ExitUsage || !strings.Contains(inv.stderr, "--app-image nginx:1.27 with axes.payload") || strings.Count(strings.TrimSpace(inv.stderr), "\n") > 0 {
		t.Errorf("exit %d, stderr %q", inv.code, inv.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("results directory created")
	}
}
