package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meshbench/meshbench/internal/mesh/istio"
	"github.com/meshbench/meshbench/internal/mesh/linkerd/release"
	"github.com/meshbench/meshbench/internal/testkit/testutil"
)

// TestDoctorInstallMesh: without a cluster (the kubeconfig names a file
// that does not exist), `doctor --mesh` lists a verification of each
// installed mesh (skipped: no API server) and only warns about a missing
// CLI; with --install-mesh the missing CLI fails and nothing is to be
// verified. An unknown mesh is a usage error.
func TestDoctorInstallMesh(t *testing.T) {
	t.Setenv("PATH", t.TempDir()) // neither istioctl nor linkerd
	kubeconfig := filepath.Join(t.TempDir(), "missing-kubeconfig")
	// row is the status and detail of check name in doctor's table.
	row := func(out, name string) (status, detail string) {
		for _, l := range strings.Split(out, "\n") {
			if rest, ok := strings.CutPrefix(l, name+"  "); ok {
				status, detail, _ = strings.Cut(strings.TrimSpace(rest), "  ")
				return status, strings.TrimSpace(detail)
			}
		}
		return "", ""
	}

	inv := runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "sidecar, linkerd")
	if inv.code != 1 {
		t.Errorf("doctor without a cluster: exit %d, want 1", inv.code)
	}
	for name, want := range map[string]string{
		"istioctl": "warn", "linkerd": "warn", // not needed without --install-mesh
		"mesh sidecar installed": "FAIL", "mesh linkerd installed": "FAIL", // cannot be verified
	} {
		if st, _ := row(inv.stdout, name); st != want {
			t.Errorf("row %q: status %q, want %s\n%s", name, st, want, inv.stdout)
		}
	}
	if _, d := row(inv.stdout, "mesh sidecar installed"); d != "skipped: no API server" {
		t.Errorf("mesh row without a cluster: %q", d)
	}
	if _, d := row(inv.stdout, "linkerd"); d != "linkerd not found on PATH; needed only with --install-mesh (the installed mesh is verified instead: linkerd)" {
		t.Errorf("linkerd CLI missing: %q", d)
	}

	inv = runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "sidecar", "--install-mesh")
	if st, d := row(inv.stdout, "istioctl"); st != "FAIL" || !strings.HasPrefix(d, "istioctl not found on PATH") {
		t.Errorf("istioctl with --install-mesh: %s %q\n%s", st, d, inv.stdout)
	}
	if st, _ := row(inv.stdout, "linkerd"); st != "warn" {
		t.Errorf("linkerd (not asked for) with --install-mesh: %s", st)
	}
	if strings.Contains(inv.stdout, "mesh sidecar installed") {
		t.Errorf("with --install-mesh the installed mesh is not verified:\n%s", inv.stdout)
	}

	inv = runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "sidecar,consul")
	if inv.code != ExitUsage || !strings.Contains(inv.stderr, `--mesh "consul": allowed: none, sidecar, ambient, waypoint, linkerd`) {
		t.Errorf("unknown mesh: exit %d, stderr %q", inv.code, inv.stderr)
	}
	if _, err := os.Stat(kubeconfig); err == nil {
		t.Error("doctor created the kubeconfig")
	}
}

// TestDoctorIstioBuild: `doctor --install-mesh --istio-build DIR` checks
// the build's istioctl, not PATH's (PATH has none here); --istio-build
// without --install-mesh, or naming a directory without a build, is a
// usage error.
func TestDoctorIstioBuild(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	kubeconfig := filepath.Join(t.TempDir(), "missing-kubeconfig")
	inv := runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "ambient", "--istio-build", t.TempDir())
	if inv.code != ExitUsage || !strings.Contains(inv.stderr, "needs --install-mesh") {
		t.Errorf("--istio-build without --install-mesh: exit %d, %q", inv.code, inv.stderr)
	}
	empty := t.TempDir()
	inv = runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "ambient", "--install-mesh", "--istio-build", empty)
	if inv.code != ExitUsage || !strings.Contains(inv.stderr, "no Istio build in "+empty) {
		t.Errorf("--istio-build of an empty dir: exit %d, %q", inv.code, inv.stderr)
	}
	b, err := istio.Open(istio.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	inv = runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "ambient", "--install-mesh", "--istio-build", b.Dir)
	want := "istioctl (" + b.Path("istioctl") + ")  "
	var line string
	for _, l := range strings.Split(inv.stdout, "\n") {
		if strings.HasPrefix(l, want) {
			line = l
		}
	}
	if !strings.Contains(line, " ok ") || !strings.Contains(line, "version ") {
		t.Errorf("the build's istioctl row: %q; want ok with its version\n%s", line, inv.stdout)
	}
}

// TestDoctorLinkerdBuild: `doctor --install-mesh --linkerd-build DIR`
// checks the build's linkerd, not PATH's (PATH has none here).
func TestDoctorLinkerdBuild(t *testing.T) {
	b, err := release.Open(release.DefaultDir())
	if err != nil {
		testutil.SkipOrFail(t, err.Error())
	}
	t.Setenv("PATH", t.TempDir())
	kubeconfig := filepath.Join(t.TempDir(), "missing-kubeconfig")
	inv := runCLI(t, nil, "doctor", "--kubeconfig", kubeconfig, "--mesh", "linkerd", "--install-mesh", "--linkerd-build", b.Dir)
	want := "linkerd (" + b.Path(release.CLI) + ")  "
	var line string
	for _, l := range strings.Split(inv.stdout, "\n") {
		if strings.HasPrefix(l, want) {
			line = l
		}
	}
	if !strings.Contains(line, " ok ") || !strings.Contains(line, "version "+release.Version) {
		t.Errorf("the build's linkerd row: %q; want ok with its version\n%s", line, inv.stdout)
	}
}
