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

// TestBenchKubeFaultRefusals: a kube plan whose faults cannot run with the
// flags given (a slow replica with --app-image, any fault on the Faces
// chart's pods) is one line and exit 2, before anything is created, as
// run refuses them; with --faces-chart=false the Faces plan gets past it.
func TestBenchKubeFaultRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	slow := write("slow.yaml", "platform: kube\nduration: 10s\naxes:\n  mesh: [sidecar]\n  replicas: [2]\n  fault: [\"slow-replica:1=50ms@3s\"]\n")
	faces := write("faces.yaml", "platform: kube\nduration: 10s\naxes:\n  mesh: [sidecar]\n  app: [faces]\n  fault: [\"kill:control-plane@3s\"]\n")
	out := filepath.Join(dir, "out")
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", slow, "--app-image", "nginx:1.27"}, "--app-image nginx:1.27 with axes.fault slow-replica:1=50ms@3s: allowed with meshbench's own app only"},
		{[]string{"bench", faces}, "axes.fault kill:control-plane@3s with app faces and the Faces chart: not yet"},
	} {
		inv := runCLI(t, nil, append(tc.args, "--kubeconfig", missing, "--out", out)...)
		if inv.code != ExitUsage || !strings.Contains(inv.stderr, tc.want) || strings.Count(strings.TrimSpace(inv.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q, want exit 2 and %q", tc.args, inv.code, inv.stderr, tc.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%v: results directory created", tc.args)
		}
	}
	inv := runCLI(t, nil, "bench", faces, "--faces-chart=false", "--kubeconfig", missing, "--out", out)
	if inv.code == ExitUsage && strings.Contains(inv.stderr, "Faces chart") {
		t.Errorf("--faces-chart=false: still refused: %q", inv.stderr)
	}
}
